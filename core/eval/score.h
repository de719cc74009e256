/* Corpus scores of hypotheses against one reference each, through an evaluator plugin
 * (what `intrus run` reports). */
#ifndef INTRUS_SCORE_H
#define INTRUS_SCORE_H

#include <stddef.h>

#include "intrus/plugin.h"

/* Scores with their names copied out of the plugin (which is closed on return). */
struct score_result {
  int count;
  char names[INTRUS_EVAL_MAX_SCORES][32];
  double values[INTRUS_EVAL_MAX_SCORES];
  char signature[256];
};

/* Loads evaluator `name` from search, creates it with cfg (its settings group, or NULL
 * for defaults), and scores hyps[i] against refs[i]. */
enum intrus_status score_corpus(const struct intrus_plugin_search *search, const char *name,
                                const intrus_cfg *cfg, char *const *hyps, char *const *refs,
                                size_t n, struct score_result *out,
                                struct intrus_error *err);

/* The same against several references per segment: refs[r][i] is segment i's r-th
 * reference (r < nrefs); an empty line (after the first reference) means that segment
 * has no r-th reference. */
enum intrus_status score_corpus_refs(const struct intrus_plugin_search *search, const char *name,
                                     const intrus_cfg *cfg, char *const *hyps,
                                     char **const *refs, int nrefs, size_t n,
                                     struct score_result *out, struct intrus_error *err);
/* Scores hyps_a and hyps_b (n lines each) against refs with evaluator `name` (settings
 * cfg) and resamples them as a pair: intrus_paired_bootstrap with samples and seed. */
#include "intrus/eval.h"
enum intrus_status score_compare(const struct intrus_plugin_search *search, const char *name,
                                 const intrus_cfg *cfg, char *const *hyps_a,
                                 char *const *hyps_b, char *const *refs, size_t n,
                                 int samples, uint64_t seed, struct score_result *a,
                                 struct score_result *b, struct intrus_bootstrap_result *bs,
                                 struct intrus_error *err);

/* The same against several references per segment (as score_corpus_refs). */
enum intrus_status score_compare_refs(const struct intrus_plugin_search *search, const char *name,
                                      const intrus_cfg *cfg, char *const *hyps_a,
                                      char *const *hyps_b, char **const *refs, int nrefs,
                                      size_t n, int samples, uint64_t seed,
                                      struct score_result *a, struct score_result *b,
                                      struct intrus_bootstrap_result *bs,
                                      struct intrus_error *err);
#endif

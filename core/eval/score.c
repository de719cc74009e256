#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score.h"

/* The most references per segment scored at once (the image data sets' limit). */
#define DATASET_REFS_MAX 64

static void copy_scores(const struct intrus_eval_scores *sc, struct score_result *out) {
  out->count = sc->count;
  for (int i = 0; i < sc->count && i < INTRUS_EVAL_MAX_SCORES; i++) {
    snprintf(out->names[i], sizeof out->names[i], "%s", sc->names[i]);
    out->values[i] = sc->values[i];
  }
  snprintf(out->signature, sizeof out->signature, "%s", sc->signature);
}

/* Reference r of segment i: an empty line after the first reference is a reference the
 * segment does not have (NULL; the image data sets write one where an image has fewer
 * references), for every metric, as the MSCOCO evaluation scores each image against
 * its own references. (`intrus eval bleu` reads an empty line as sacreBLEU does: a
 * reference of length 0.) */
static const char *segment_ref(char **const *refs, int r, size_t i) {
  const char *line = refs[r][i];
  return r > 0 && !*line ? NULL : line;
}

/* Shows the evaluator every segment's references. */
static enum intrus_status prepare_refs(const struct intrus_evaluator_vtable *vt, void *self,
                                       char **const *refs, int nrefs, size_t n,
                                       struct intrus_error *err) {
  if (!vt->prepare) return INTRUS_OK;
  const char *const **refsets = malloc((n ? n : 1) * sizeof *refsets);
  const char **all = malloc((n ? n : 1) * (size_t)nrefs * sizeof *all);
  if (!refsets || !all) {
    free(refsets);
    free(all);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    for (int r = 0; r < nrefs; r++) all[i * (size_t)nrefs + (size_t)r] = segment_ref(refs, r, i);
    refsets[i] = all + i * (size_t)nrefs;
  }
  enum intrus_status st = vt->prepare(self, (int)n, refsets, nrefs, err);
  free(refsets);
  free(all);
  return st;
}

struct evaluator {
  struct intrus_plugin *plugin;
  const struct intrus_evaluator_vtable *vt;
  void *self;
  int k; /* statistics per segment */
};

/* Loads evaluator `name`, creates it with cfg and shows it the references. */
static enum intrus_status evaluator_open(const struct intrus_plugin_search *search,
                                         const char *name, const intrus_cfg *cfg,
                                         char **const *refs, int nrefs, size_t n,
                                         struct evaluator *e, struct intrus_error *err) {
  memset(e, 0, sizeof *e);
  enum intrus_status st =
      intrus_plugin_load(search, INTRUS_KIND_EVALUATOR, name, &e->plugin, err);
  if (st) return st;
  e->vt = intrus_plugin_descriptor(e->plugin)->vtable;
  if (!(st = e->vt->create(cfg, &e->self, err)) &&
      !(st = prepare_refs(e->vt, e->self, refs, nrefs, n, err)))
    e->k = e->vt->stats_size(e->self);
  return st;
}

static void evaluator_close(struct evaluator *e) {
  if (e->self) e->vt->destroy(e->self);
  if (e->plugin) intrus_plugin_close(e->plugin);
}

/* Per-segment statistics of hyps (n rows of k) and their corpus scores. */
static enum intrus_status system_stats(const struct evaluator *e, char *const *hyps,
                                       char **const *refs, int nrefs, size_t n, double **stats,
                                       struct score_result *out, struct intrus_error *err) {
  const struct intrus_evaluator_vtable *vt = e->vt;
  void *self = e->self;
  const int k = e->k;
  double *s = calloc(n * (size_t)k + (size_t)k, sizeof *s), *sum = s + n * (size_t)k;
  if (!s) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  enum intrus_status st = INTRUS_OK;
  const char *seg[DATASET_REFS_MAX];
  const int m = nrefs < DATASET_REFS_MAX ? nrefs : DATASET_REFS_MAX;
  for (size_t i = 0; i < n && !st; i++) {
    /* segment_stats gets the references the segment has (prepare above saw NULL for the
     * others, which only the corpus-level weights of CIDEr-D read). */
    int have = 0;
    for (int r = 0; r < m; r++)
      if ((seg[have] = segment_ref(refs, r, i))) have++;
    st = vt->segment_stats(self, hyps[i], seg, have, s + i * (size_t)k, err);
    for (int j = 0; j < k && !st; j++) sum[j] += s[i * (size_t)k + j];
  }
  struct intrus_eval_scores sc = {0};
  if (!st && !(st = vt->score(self, sum, &sc, err))) copy_scores(&sc, out);
  if (st) free(s);
  else *stats = s;
  return st;
}

enum intrus_status score_corpus(const struct intrus_plugin_search *search, const char *name,
                                const intrus_cfg *cfg, char *const *hyps, char *const *refs,
                                size_t n, struct score_result *out,
                                struct intrus_error *err) {
  char **one[1] = {(char **)refs};
  return score_corpus_refs(search, name, cfg, hyps, one, 1, n, out, err);
}

enum intrus_status score_corpus_refs(const struct intrus_plugin_search *search, const char *name,
                                     const intrus_cfg *cfg, char *const *hyps,
                                     char **const *refs, int nrefs, size_t n,
                                     struct score_result *out, struct intrus_error *err) {
  struct evaluator e;
  double *stats = NULL;
  enum intrus_status st = evaluator_open(search, name, cfg, refs, nrefs, n, &e, err);
  if (!st) st = system_stats(&e, hyps, refs, nrefs, n, &stats, out, err);
  free(stats);
  evaluator_close(&e);
  return st;
}

enum intrus_status score_compare(const struct intrus_plugin_search *search, const char *name,
                                 const intrus_cfg *cfg, char *const *hyps_a,
                                 char *const *hyps_b, char *const *refs, size_t n,
                                 int samples, uint64_t seed, struct score_result *a,
                                 struct score_result *b, struct intrus_bootstrap_result *bs,
                                 struct intrus_error *err) {
  char **one[1] = {(char **)refs};
  return score_compare_refs(search, name, cfg, hyps_a, hyps_b, one, 1, n, samples, seed, a, b,
                            bs, err);
}

enum intrus_status score_compare_refs(const struct intrus_plugin_search *search, const char *name,
                                      const intrus_cfg *cfg, char *const *hyps_a,
                                      char *const *hyps_b, char **const *refs, int nrefs,
                                      size_t n, int samples, uint64_t seed,
                                      struct score_result *a, struct score_result *b,
                                      struct intrus_bootstrap_result *bs,
                                      struct intrus_error *err) {
  struct evaluator e;
  double *sa = NULL, *sb = NULL;
  enum intrus_status st = evaluator_open(search, name, cfg, refs, nrefs, n, &e, err);
  if (!st && !(st = system_stats(&e, hyps_a, refs, nrefs, n, &sa, a, err)) &&
      !(st = system_stats(&e, hyps_b, refs, nrefs, n, &sb, b, err)))
    st = intrus_paired_bootstrap(e.vt, e.self, (int)n, sa, sb, samples, seed, bs, err);
  free(sa);
  free(sb);
  evaluator_close(&e);
  return st;
}

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score.h"

static void copy_scores(const struct intrus_eval_scores *sc, struct score_result *out) {
  out->count = sc->count;
  for (int i = 0; i < sc->count && i < INTRUS_EVAL_MAX_SCORES; i++) {
    snprintf(out->names[i], sizeof out->names[i], "%s", sc->names[i]);
    out->values[i] = sc->values[i];
  }
  snprintf(out->signature, sizeof out->signature, "%s", sc->signature);
}

/* Segment i's references: refs[r][i] for every r whose line is not empty (a caption
 * set gives some images fewer references); at least the first. Returns the count. */
static int segment_refs(char **const *refs, int nrefs, size_t i, const char **out) {
  int k = 0;
  for (int r = 0; r < nrefs; r++)
    if (r == 0 || refs[r][i][0]) out[k++] = refs[r][i];
  return k;
}

/* Shows the evaluator every segment's references (nrefs per segment at most; prepare
 * takes the same count for every segment, so empty ones stand in as ""). */
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
    for (int r = 0; r < nrefs; r++) all[i * (size_t)nrefs + (size_t)r] = refs[r][i];
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
static enum intrus_status system_stats(const struct intrus_evaluator_vtable *vt, void *self,
                                       int k, char *const *hyps, char **const *refs, int nrefs,
                                       size_t n, double **stats, struct score_result *out,
                                       struct intrus_error *err) {
  double *s = calloc(n * (size_t)k + (size_t)k, sizeof *s), *sum = s + n * (size_t)k;
  if (!s) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  enum intrus_status st = INTRUS_OK;
  const char *seg[64];
  for (size_t i = 0; i < n && !st; i++) {
    int m = segment_refs(refs, nrefs < 64 ? nrefs : 64, i, seg);
    st = vt->segment_stats(self, hyps[i], seg, m, s + i * (size_t)k, err);
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
  if (!st) st = system_stats(e.vt, e.self, e.k, hyps, refs, nrefs, n, &stats, out, err);
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
  struct evaluator e;
  double *sa = NULL, *sb = NULL;
  char **one[1] = {(char **)refs};
  enum intrus_status st = evaluator_open(search, name, cfg, one, 1, n, &e, err);
  if (!st && !(st = system_stats(e.vt, e.self, e.k, hyps_a, one, 1, n, &sa, a, err)) &&
      !(st = system_stats(e.vt, e.self, e.k, hyps_b, one, 1, n, &sb, b, err)))
    st = intrus_paired_bootstrap(e.vt, e.self, (int)n, sa, sb, samples, seed, bs, err);
  free(sa);
  free(sb);
  evaluator_close(&e);
  return st;
}

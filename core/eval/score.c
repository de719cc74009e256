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

static enum intrus_status prepare_refs(const struct intrus_evaluator_vtable *vt, void *self,
                                       char *const *refs, size_t n, struct intrus_error *err) {
  if (!vt->prepare) return INTRUS_OK;
  const char *const **refsets = malloc((n ? n : 1) * sizeof *refsets);
  if (!refsets) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) refsets[i] = (const char *const *)&refs[i];
  enum intrus_status st = vt->prepare(self, (int)n, refsets, 1, err);
  free(refsets);
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
                                         char *const *refs, size_t n, struct evaluator *e,
                                         struct intrus_error *err) {
  memset(e, 0, sizeof *e);
  enum intrus_status st =
      intrus_plugin_load(search, INTRUS_KIND_EVALUATOR, name, &e->plugin, err);
  if (st) return st;
  e->vt = intrus_plugin_descriptor(e->plugin)->vtable;
  if (!(st = e->vt->create(cfg, &e->self, err)) &&
      !(st = prepare_refs(e->vt, e->self, refs, n, err)))
    e->k = e->vt->stats_size(e->self);
  return st;
}

static void evaluator_close(struct evaluator *e) {
  if (e->self) e->vt->destroy(e->self);
  if (e->plugin) intrus_plugin_close(e->plugin);
}

/* Per-segment statistics of hyps (n rows of k) and their corpus scores. */
static enum intrus_status system_stats(const struct intrus_evaluator_vtable *vt, void *self,
                                       int k, char *const *hyps, char *const *refs, size_t n,
                                       double **stats, struct score_result *out,
                                       struct intrus_error *err) {
  double *s = calloc(n * (size_t)k + (size_t)k, sizeof *s), *sum = s + n * (size_t)k;
  if (!s) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  enum intrus_status st = INTRUS_OK;
  for (size_t i = 0; i < n && !st; i++) {
    const char *ref = refs[i];
    st = vt->segment_stats(self, hyps[i], &ref, 1, s + i * (size_t)k, err);
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
  struct evaluator e;
  double *stats = NULL;
  enum intrus_status st = evaluator_open(search, name, cfg, refs, n, &e, err);
  if (!st) st = system_stats(e.vt, e.self, e.k, hyps, refs, n, &stats, out, err);
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
  enum intrus_status st = evaluator_open(search, name, cfg, refs, n, &e, err);
  if (!st && !(st = system_stats(e.vt, e.self, e.k, hyps_a, refs, n, &sa, a, err)) &&
      !(st = system_stats(e.vt, e.self, e.k, hyps_b, refs, n, &sb, b, err)))
    st = intrus_paired_bootstrap(e.vt, e.self, (int)n, sa, sb, samples, seed, bs, err);
  free(sa);
  free(sb);
  evaluator_close(&e);
  return st;
}

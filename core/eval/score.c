#include <stdio.h>
#include <stdlib.h>

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

enum intrus_status score_corpus(const struct intrus_plugin_search *search, const char *name,
                                const intrus_cfg *cfg, char *const *hyps, char *const *refs,
                                size_t n, struct score_result *out,
                                struct intrus_error *err) {
  struct intrus_plugin *p;
  enum intrus_status st = intrus_plugin_load(search, INTRUS_KIND_EVALUATOR, name, &p, err);
  if (st) return st;
  const struct intrus_evaluator_vtable *vt = intrus_plugin_descriptor(p)->vtable;
  void *self = NULL;
  double *sum = NULL, *seg = NULL;
  if ((st = vt->create(cfg, &self, err))) goto done;
  int k = vt->stats_size(self);
  sum = calloc((size_t)k, sizeof *sum);
  seg = calloc((size_t)k, sizeof *seg);
  if (!sum || !seg) {
    st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    goto done;
  }
  if ((st = prepare_refs(vt, self, refs, n, err))) goto done;
  for (size_t i = 0; i < n; i++) {
    const char *ref = refs[i];
    if ((st = vt->segment_stats(self, hyps[i], &ref, 1, seg, err))) goto done;
    for (int j = 0; j < k; j++) sum[j] += seg[j];
  }
  struct intrus_eval_scores sc = {0};
  if ((st = vt->score(self, sum, &sc, err))) goto done;
  copy_scores(&sc, out);
done:
  free(sum);
  free(seg);
  if (self) vt->destroy(self);
  intrus_plugin_close(p);
  return st;
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

enum intrus_status score_compare(const struct intrus_plugin_search *search, const char *name,
                                 const intrus_cfg *cfg, char *const *hyps_a,
                                 char *const *hyps_b, char *const *refs, size_t n,
                                 int samples, uint64_t seed, struct score_result *a,
                                 struct score_result *b, struct intrus_bootstrap_result *bs,
                                 struct intrus_error *err) {
  struct intrus_plugin *p;
  enum intrus_status st = intrus_plugin_load(search, INTRUS_KIND_EVALUATOR, name, &p, err);
  if (st) return st;
  const struct intrus_evaluator_vtable *vt = intrus_plugin_descriptor(p)->vtable;
  void *self = NULL;
  double *sa = NULL, *sb = NULL;
  if ((st = vt->create(cfg, &self, err)) || (st = prepare_refs(vt, self, refs, n, err))) goto done;
  int k = vt->stats_size(self);
  if ((st = system_stats(vt, self, k, hyps_a, refs, n, &sa, a, err)) ||
      (st = system_stats(vt, self, k, hyps_b, refs, n, &sb, b, err)))
    goto done;
  st = intrus_paired_bootstrap(vt, self, (int)n, sa, sb, samples, seed, bs, err);
done:
  free(sa);
  free(sb);
  if (self) vt->destroy(self);
  intrus_plugin_close(p);
  return st;
}

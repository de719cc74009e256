#include <stdio.h>
#include <stdlib.h>

#include "score.h"

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
  if (vt->prepare) {
    const char *const **refsets = malloc((n ? n : 1) * sizeof *refsets);
    for (size_t i = 0; i < n; i++) refsets[i] = (const char *const *)&refs[i];
    st = vt->prepare(self, (int)n, refsets, 1, err);
    free(refsets);
    if (st) goto done;
  }
  for (size_t i = 0; i < n; i++) {
    const char *ref = refs[i];
    if ((st = vt->segment_stats(self, hyps[i], &ref, 1, seg, err))) goto done;
    for (int j = 0; j < k; j++) sum[j] += seg[j];
  }
  struct intrus_eval_scores sc = {0};
  if ((st = vt->score(self, sum, &sc, err))) goto done;
  out->count = sc.count;
  for (int i = 0; i < sc.count && i < INTRUS_EVAL_MAX_SCORES; i++) {
    snprintf(out->names[i], sizeof out->names[i], "%s", sc.names[i]);
    out->values[i] = sc.values[i];
  }
  snprintf(out->signature, sizeof out->signature, "%s", sc.signature);
done:
  free(sum);
  free(seg);
  if (self) vt->destroy(self);
  intrus_plugin_close(p);
  return st;
}

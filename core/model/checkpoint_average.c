/* Checkpoint averaging: the element-wise mean of the parameters of several checkpoints
 * of one model (the last few of a run, as train.keep_checkpoints keeps them), a standard
 * lever of neural translation (Vaswani et al. 2017 average the last 5 or 20): the mean
 * of points along the end of a training trajectory usually decodes better than any one
 * of them. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/checkpoint.h"

/* One "param/" tensor of the first checkpoint, summed over all of them in double. */
struct avg_tensor {
  const char *name; /* in the first checkpoint's records */
  int ndim, shape[4];
  size_t n;
  double *sum;
};

static bool is_param(const char *name) { return strncmp(name, "param/", 6) == 0; }

static size_t numel(int ndim, const int *shape) {
  size_t n = 1;
  for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
  return n;
}

/* Adds checkpoint c's parameters into t[0..nt) (the first assigns them: a sum that began
 * at +0 would turn a -0 into +0, and one checkpoint's average is to be that checkpoint
 * bit for bit); c must have exactly those parameters, of the same shapes, and the same
 * configuration fingerprint as the first (fp). */
static enum intrus_status accumulate(const struct intrus_ckpt *c, const char *path,
                                     const char *first, uint64_t fp, bool assign,
                                     struct avg_tensor *t, size_t nt, struct intrus_error *err) {
  if (intrus_ckpt_fingerprint(c) != fp)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: written for another model configuration (fingerprint "
                            "0x%016llx, %s has 0x%016llx): only checkpoints of one model "
                            "average",
                            path, (unsigned long long)intrus_ckpt_fingerprint(c), first,
                            (unsigned long long)fp);
  size_t seen = 0;
  for (size_t i = 0; i < intrus_ckpt_count(c); i++)
    if (is_param(intrus_ckpt_name(c, i))) seen++;
  if (seen != nt)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: %zu parameters where %s has %zu: only checkpoints of one "
                            "model average",
                            path, seen, first, nt);
  for (size_t k = 0; k < nt; k++) {
    int ndim, shape[4];
    const float *v = intrus_ckpt_tensor(c, t[k].name, &ndim, shape);
    if (!v)
      return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: no record '%s' (%s has it)", path,
                              t[k].name, first);
    bool same = ndim == t[k].ndim;
    for (int d = 0; d < ndim && same; d++) same = shape[d] == t[k].shape[d];
    if (!same)
      return intrus_error_set(err, INTRUS_ERR_FORMAT,
                              "%s: record '%s' has another shape than in %s", path, t[k].name,
                              first);
    if (assign)
      for (size_t j = 0; j < t[k].n; j++) t[k].sum[j] = (double)v[j];
    else
      for (size_t j = 0; j < t[k].n; j++) t[k].sum[j] += (double)v[j];
  }
  return INTRUS_OK;
}

enum intrus_status intrus_ckpt_average(const char *const *paths, int n, const char *out_path,
                                       struct intrus_error *err) {
  if (n < 1 || !paths || !out_path)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "checkpoint average: no checkpoints");
  struct intrus_ckpt *first = NULL, *last = NULL;
  enum intrus_status st = intrus_ckpt_read(paths[0], false, 0, &first, err);
  if (st) return st;
  size_t nt = 0;
  for (size_t i = 0; i < intrus_ckpt_count(first); i++)
    if (is_param(intrus_ckpt_name(first, i))) nt++;
  struct avg_tensor *t = calloc(nt ? nt : 1, sizeof *t);
  if (!t) {
    intrus_ckpt_free(first);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  size_t k = 0;
  for (size_t i = 0; i < intrus_ckpt_count(first) && !st; i++) {
    const char *name = intrus_ckpt_name(first, i);
    if (!is_param(name)) continue;
    t[k].name = name;
    intrus_ckpt_tensor(first, name, &t[k].ndim, t[k].shape);
    t[k].n = numel(t[k].ndim, t[k].shape);
    if (!(t[k].sum = malloc((t[k].n ? t[k].n : 1) * sizeof *t[k].sum)))
      st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    k++;
  }
  const uint64_t fp = intrus_ckpt_fingerprint(first);
  if (!st) st = accumulate(first, paths[0], paths[0], fp, true, t, nt, err);
  /* The others one at a time; the last is kept for its integers and other records. */
  for (int i = 1; i < n && !st; i++) {
    struct intrus_ckpt *c;
    if ((st = intrus_ckpt_read(paths[i], false, 0, &c, err))) break;
    st = accumulate(c, paths[i], paths[0], fp, false, t, nt, err);
    if (i == n - 1 && !st) last = c;
    else intrus_ckpt_free(c);
  }
  const struct intrus_ckpt *src = last ? last : first;
  struct intrus_ckpt_writer *w = NULL;
  float *buf = NULL;
  if (!st) st = intrus_ckpt_begin(out_path, fp, &w, err);
  /* Records in the last checkpoint's order: its parameters replaced by the means, its
   * integers and any other tensors as they are, Adam's moments left out (the mean of
   * moments is no optimizer state to resume from). */
  for (size_t i = 0; i < intrus_ckpt_count(src) && !st; i++) {
    const char *name = intrus_ckpt_name(src, i);
    uint64_t v;
    int ndim, shape[4];
    if (intrus_ckpt_is_moment(name)) continue;
    if (intrus_ckpt_u64(src, name, &v)) {
      if (strcmp(name, "averaged") != 0) st = intrus_ckpt_put_u64(w, name, v, err);
      continue;
    }
    const float *data = intrus_ckpt_tensor(src, name, &ndim, shape);
    if (!is_param(name)) {
      st = intrus_ckpt_put_tensor(w, name, ndim, shape, data, err);
      continue;
    }
    size_t j = 0;
    while (strcmp(t[j].name, name) != 0) j++; /* present: accumulate checked every name */
    free(buf);
    if (!(buf = malloc((t[j].n ? t[j].n : 1) * sizeof *buf))) {
      st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
      break;
    }
    for (size_t e = 0; e < t[j].n; e++) buf[e] = (float)(t[j].sum[e] / n);
    st = intrus_ckpt_put_tensor(w, name, ndim, shape, buf, err);
  }
  if (!st) st = intrus_ckpt_put_u64(w, "averaged", (uint64_t)n, err);
  if (w) {
    if (st) intrus_ckpt_abort(w);
    else st = intrus_ckpt_commit(w, err);
  }
  free(buf);
  for (size_t j = 0; j < nt; j++) free(t[j].sum);
  free(t);
  if (last) intrus_ckpt_free(last);
  intrus_ckpt_free(first);
  return st;
}

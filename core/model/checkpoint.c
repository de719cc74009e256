/* Parameter sets in checkpoints: each parameter, and with the optimizer state also its
 * two Adam moments, is one tensor record named "param/<name>", "adam_m/<name>" or
 * "adam_v/<name>". The record container itself is checkpoint_write.c and
 * checkpoint_read.c; this file only decides what goes into it for a model. */
#include <stdio.h>
#include <math.h>
#include <string.h>

#include "intrus/checkpoint.h"
#include "intrus/params.h"
#include "intrus/tensor.h"
#include "checkpoint_internal.h"

/* ---- parameter sets ------------------------------------------------------------ */

static const char *const kind_prefix[3] = {"param/", "adam_m/", "adam_v/"};

/* "<prefix><name>" into key; false when that is longer than a record name may be. */
static bool param_key(char key[CKPT_NAME_MAX + 1], const char *prefix, const char *name) {
  size_t a = strlen(prefix), b = strlen(name);
  if (a + b > CKPT_NAME_MAX) return false;
  memcpy(key, prefix, a);
  memcpy(key + a, name, b + 1);
  return true;
}

static void format_shape(char *out, size_t cap, int ndim, const int *shape) {
  size_t len = (size_t)snprintf(out, cap, "[");
  for (int d = 0; d < ndim && len < cap; d++)
    len += (size_t)snprintf(out + len, cap - len, "%s%d", d ? ", " : "", shape[d]);
  if (len < cap) snprintf(out + len, cap - len, "]");
}

enum intrus_status intrus_ckpt_put_params(struct intrus_ckpt_writer *w,
                                          struct intrus_params *p, bool with_moments,
                                          struct intrus_error *err) {
  float *blocks[3] = {intrus_params_values(p), intrus_params_adam_m(p), intrus_params_adam_v(p)};
  INTRUS_CHECK(blocks[0], "intrus_ckpt_put_params: parameters not finalized");
  char key[CKPT_NAME_MAX + 1];
  for (size_t i = 0; i < intrus_params_count(p); i++) {
    const intrus_tensor *t = intrus_params_at(p, i);
    size_t off = (size_t)(t->data - blocks[0]);
    for (int k = 0; k < (with_moments ? 3 : 1); k++) {
      if (!param_key(key, kind_prefix[k], t->name))
        return intrus_error_set(err, INTRUS_ERR_INVALID,
                                "%s: parameter name '%.64s...' is too long for a checkpoint",
                                w->path, t->name);
      enum intrus_status st = intrus_ckpt_put_tensor(w, key, t->ndim, t->shape, blocks[k] + off,
                                                     err);
      if (st != INTRUS_OK) return st;
    }
  }
  return INTRUS_OK;
}

enum intrus_status intrus_ckpt_get_params(const struct intrus_ckpt *c, struct intrus_params *p,
                                          bool with_moments, struct intrus_error *err) {
  float *blocks[3] = {intrus_params_values(p), intrus_params_adam_m(p), intrus_params_adam_v(p)};
  INTRUS_CHECK(blocks[0], "intrus_ckpt_get_params: parameters not finalized");
  const int kinds = with_moments ? 3 : 1;
  const size_t n = intrus_params_count(p);
  char key[CKPT_NAME_MAX + 1], have[128], want[128];
  struct intrus_error first = {INTRUS_OK, ""};
  size_t problems = 0;

  /* Everything is checked before anything is copied, so a checkpoint that does not fit
   * leaves the model as it was. */
  for (size_t i = 0; i < n; i++) {
    const intrus_tensor *t = intrus_params_at(p, i);
    for (int k = 0; k < kinds; k++) {
      const struct ckpt_record *r =
          param_key(key, kind_prefix[k], t->name) ? ckpt_find_record(c, key) : NULL;
      bool same = r && r->type == CKPT_TYPE_TENSOR && r->ndim == t->ndim &&
                  memcmp(r->shape, t->shape, (size_t)t->ndim * sizeof(int)) == 0;
      if (same) continue;
      if (problems++) continue;
      if (!r)
        intrus_error_set(&first, INTRUS_ERR_FORMAT,
                         "%s: parameter '%s' is missing (no record '%s%s')", c->path, t->name,
                         kind_prefix[k], t->name);
      else if (r->type != CKPT_TYPE_TENSOR)
        intrus_error_set(&first, INTRUS_ERR_FORMAT,
                         "%s: record '%s' for parameter '%s' is an integer, not a tensor",
                         c->path, key, t->name);
      else {
        format_shape(have, sizeof have, r->ndim, r->shape);
        format_shape(want, sizeof want, t->ndim, t->shape);
        intrus_error_set(&first, INTRUS_ERR_FORMAT,
                         "%s: parameter '%s' has shape %s in the checkpoint ('%s') but %s in "
                         "the model",
                         c->path, t->name, have, key, want);
      }
    }
  }
  if (problems) {
    size_t len = strlen(first.msg);
    if (problems > 1 && len < sizeof first.msg)
      snprintf(first.msg + len, sizeof first.msg - len,
               " (and %zu more parameter records missing or mismatched)", problems - 1);
    if (err) *err = first;
    return first.status;
  }
  for (size_t i = 0; i < n; i++) {
    const intrus_tensor *t = intrus_params_at(p, i);
    size_t off = (size_t)(t->data - blocks[0]);
    for (int k = 0; k < kinds; k++) {
      param_key(key, kind_prefix[k], t->name);
      const struct ckpt_record *r = ckpt_find_record(c, key);
      memcpy(blocks[k] + off, r->data, r->n * sizeof(float));
    }
  }
  return INTRUS_OK;
}

enum intrus_status intrus_ckpt_check_finite(const struct intrus_ckpt *c,
                                            const struct intrus_params *p, bool with_moments,
                                            struct intrus_error *err) {
  const int kinds = with_moments ? 3 : 1;
  char key[CKPT_NAME_MAX + 1];
  for (size_t i = 0; i < intrus_params_count(p); i++) {
    const intrus_tensor *t = intrus_params_at(p, i);
    for (int k = 0; k < kinds; k++) {
      const struct ckpt_record *r =
          param_key(key, kind_prefix[k], t->name) ? ckpt_find_record(c, key) : NULL;
      if (!r || r->type != CKPT_TYPE_TENSOR) continue; /* intrus_ckpt_get_params says so */
      size_t bad = 0;
      for (size_t j = 0; j < r->n; j++) bad += !isfinite(r->data[j]);
      if (bad)
        return intrus_error_set(err, INTRUS_ERR_FORMAT,
                                "%s: record '%s' holds %zu non-finite value(s) (NaN or Inf) "
                                "of %zu: the run diverged or the file is damaged",
                                c->path, key, bad, r->n);
    }
  }
  return INTRUS_OK;
}

/* ---- stripping the optimizer state ------------------------------------------------ */

size_t intrus_ckpt_count(const struct intrus_ckpt *c) { return c->count; }

const char *intrus_ckpt_name(const struct intrus_ckpt *c, size_t i) {
  return i < c->count ? c->names[i] : NULL;
}

bool intrus_ckpt_is_moment(const char *name) {
  return !strncmp(name, kind_prefix[1], strlen(kind_prefix[1])) ||
         !strncmp(name, kind_prefix[2], strlen(kind_prefix[2]));
}

enum intrus_status intrus_ckpt_strip_moments(const char *in_path, const char *out_path,
                                             size_t *dropped, struct intrus_error *err) {
  INTRUS_CHECK(in_path && out_path, "intrus_ckpt_strip_moments: NULL path");
  struct intrus_ckpt *c;
  enum intrus_status st = intrus_ckpt_read(in_path, false, 0, &c, err);
  if (st) return st;
  struct intrus_ckpt_writer *w;
  if ((st = intrus_ckpt_begin(out_path, c->fingerprint, &w, err))) {
    intrus_ckpt_free(c);
    return st;
  }
  size_t n = 0;
  for (size_t i = 0; i < c->count && !st; i++) {
    const struct ckpt_record *r = &c->recs[i];
    if (intrus_ckpt_is_moment(c->names[i])) {
      n++;
      continue;
    }
    st = r->type == CKPT_TYPE_TENSOR
             ? intrus_ckpt_put_tensor(w, c->names[i], r->ndim, r->shape, r->data, err)
             : intrus_ckpt_put_u64(w, c->names[i], r->value, err);
  }
  intrus_ckpt_free(c);
  if (st) {
    intrus_ckpt_abort(w);
    return st;
  }
  if ((st = intrus_ckpt_commit(w, err))) return st;
  if (dropped) *dropped = n;
  return INTRUS_OK;
}

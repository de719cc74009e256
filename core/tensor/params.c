#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/params.h"
#include "intrus/rng.h"

struct param_entry {
  intrus_tensor t;
  char *name;
  enum intrus_init init;
  float scale;
  size_t offset;  /* floats from the start of each block */
};

struct intrus_params {
  struct param_entry **entries;
  size_t count, cap, numel;
  float *values, *grads, *m, *v;
  bool finalized;
};

struct intrus_params *intrus_params_create(void) {
  struct intrus_params *p = calloc(1, sizeof *p);
  if (!p) intrus_panic("out of memory");
  return p;
}

void intrus_params_destroy(struct intrus_params *p) {
  if (!p) return;
  for (size_t i = 0; i < p->count; i++) {
    free(p->entries[i]->name);
    free(p->entries[i]);
  }
  free(p->entries);
  free(p->values);
  free(p->grads);
  free(p->m);
  free(p->v);
  free(p);
}

intrus_tensor *intrus_params_add(struct intrus_params *p, const char *name, int ndim,
                                 const int *shape, enum intrus_init init, float scale) {
  INTRUS_CHECK(!p->finalized, "parameter '%s' added after finalize", name);
  INTRUS_CHECK(ndim >= 1 && ndim <= INTRUS_MAX_DIMS, "parameter '%s' has %d dims", name, ndim);
  INTRUS_CHECK(!intrus_params_find(p, name), "parameter '%s' registered twice", name);
  if (p->count == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 64;
    p->entries = realloc(p->entries, p->cap * sizeof *p->entries);
    if (!p->entries) intrus_panic("out of memory");
  }
  struct param_entry *e = calloc(1, sizeof *e);
  if (!e || !(e->name = strdup(name))) intrus_panic("out of memory");
  e->t.ndim = ndim;
  for (int i = 0; i < ndim; i++) e->t.shape[i] = shape[i];
  e->t.n = intrus_shape_numel(ndim, shape);
  e->t.requires_grad = true;
  e->t.name = e->name;
  e->init = init;
  e->scale = scale;
  /* 16-float alignment keeps every parameter on its own cache line. */
  e->offset = p->numel;
  p->numel += (e->t.n + 15) & ~(size_t)15;
  p->entries[p->count++] = e;
  return &e->t;
}

static float *alloc_block(size_t n) {
  void *b = NULL;
  if (posix_memalign(&b, 64, (n ? n : 1) * sizeof(float)) != 0) return NULL;
  memset(b, 0, (n ? n : 1) * sizeof(float));
  return b;
}

static void init_param(struct param_entry *e, uint64_t seed) {
  intrus_tensor *t = &e->t;
  struct intrus_rng rng;
  intrus_rng_seed(&rng, seed ^ intrus_fnv1a(INTRUS_FNV_INIT, e->name, strlen(e->name)));
  float a = e->scale;
  switch (e->init) {
  case INTRUS_INIT_ZEROS: memset(t->data, 0, t->n * sizeof(float)); return;
  case INTRUS_INIT_ONES:
    for (size_t i = 0; i < t->n; i++) t->data[i] = 1.0f;
    return;
  case INTRUS_INIT_GLOROT_UNIFORM: {
    double fan_in, fan_out;
    if (t->ndim == 4) {
      double rf = (double)t->shape[2] * t->shape[3];
      fan_in = t->shape[1] * rf;
      fan_out = t->shape[0] * rf;
    } else {
      fan_in = t->shape[0];
      fan_out = t->shape[t->ndim - 1];
    }
    a = (float)(e->scale * sqrt(6.0 / (fan_in + fan_out)));
  }
    /* fall through */
  case INTRUS_INIT_UNIFORM:
    for (size_t i = 0; i < t->n; i++) t->data[i] = (2.0f * intrus_rng_uniform(&rng) - 1.0f) * a;
    return;
  case INTRUS_INIT_NORMAL:
    for (size_t i = 0; i < t->n; i++) t->data[i] = intrus_rng_normal(&rng) * e->scale;
    return;
  }
}

enum intrus_status intrus_params_finalize(struct intrus_params *p, uint64_t seed,
                                          struct intrus_error *err) {
  INTRUS_CHECK(!p->finalized, "parameters finalized twice");
  p->values = alloc_block(p->numel);
  p->grads = alloc_block(p->numel);
  p->m = alloc_block(p->numel);
  p->v = alloc_block(p->numel);
  if (!p->values || !p->grads || !p->m || !p->v)
    return intrus_error_set(err, INTRUS_ERR_NOMEM,
                            "cannot allocate %zu parameters (%.1f MB per block)", p->numel,
                            p->numel * 4.0 / 1e6);
  for (size_t i = 0; i < p->count; i++) {
    struct param_entry *e = p->entries[i];
    e->t.data = p->values + e->offset;
    e->t.grad = p->grads + e->offset;
    init_param(e, seed);
  }
  p->finalized = true;
  return INTRUS_OK;
}

size_t intrus_params_count(const struct intrus_params *p) { return p->count; }
size_t intrus_params_numel(const struct intrus_params *p) { return p->numel; }

intrus_tensor *intrus_params_at(const struct intrus_params *p, size_t i) {
  INTRUS_CHECK(i < p->count, "parameter index %zu of %zu", i, p->count);
  return &p->entries[i]->t;
}

intrus_tensor *intrus_params_find(const struct intrus_params *p, const char *name) {
  for (size_t i = 0; i < p->count; i++)
    if (strcmp(p->entries[i]->name, name) == 0) return &p->entries[i]->t;
  return NULL;
}

float *intrus_params_values(struct intrus_params *p) { return p->values; }
float *intrus_params_grads(struct intrus_params *p) { return p->grads; }
float *intrus_params_adam_m(struct intrus_params *p) { return p->m; }
float *intrus_params_adam_v(struct intrus_params *p) { return p->v; }

void intrus_params_zero_grad(struct intrus_params *p) {
  memset(p->grads, 0, p->numel * sizeof(float));
}

void intrus_params_zero_moments(struct intrus_params *p) {
  memset(p->m, 0, p->numel * sizeof(float));
  memset(p->v, 0, p->numel * sizeof(float));
}

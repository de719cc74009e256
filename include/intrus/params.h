/* All parameters of a model in one block of floats, with named views into it; their
 * gradients and the two Adam moments are blocks of the same layout. Registration
 * happens before finalize (which allocates the blocks and initialises the values);
 * the tensors returned by intrus_params_add stay valid for the life of the set. */
#ifndef INTRUS_PARAMS_H
#define INTRUS_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "intrus/status.h"
#include "intrus/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

enum intrus_init {
  INTRUS_INIT_ZEROS = 0,
  INTRUS_INIT_ONES,
  INTRUS_INIT_GLOROT_UNIFORM, /* U(-a, a), a = scale * sqrt(6 / (fan_in + fan_out)) */
  INTRUS_INIT_NORMAL,         /* N(0, scale^2) */
  INTRUS_INIT_UNIFORM         /* U(-scale, scale) */
};

struct intrus_params;

struct intrus_params *intrus_params_create(void);
void intrus_params_destroy(struct intrus_params *p);

/* Registers a parameter. The name must be unique (a duplicate is a bug and panics).
 * fan_in/fan_out for Glorot are shape[0] and shape[ndim-1] for 2-D, and
 * (shape[1]*kh*kw, shape[0]*kh*kw) for 4-D conv weights [O, C, kh, kw]. */
intrus_tensor *intrus_params_add(struct intrus_params *p, const char *name, int ndim,
                                 const int *shape, enum intrus_init init, float scale);

/* Allocates the value, grad and moment blocks (64-byte aligned) and initialises every
 * parameter. Each parameter's random stream is seeded by hash(seed, name), so adding a
 * parameter does not change the others' initial values. */
enum intrus_status intrus_params_finalize(struct intrus_params *p, uint64_t seed,
                                          struct intrus_error *err);

size_t intrus_params_count(const struct intrus_params *p);  /* tensors */
size_t intrus_params_numel(const struct intrus_params *p);  /* floats */
intrus_tensor *intrus_params_at(const struct intrus_params *p, size_t i);
intrus_tensor *intrus_params_find(const struct intrus_params *p, const char *name);

float *intrus_params_values(struct intrus_params *p);
float *intrus_params_grads(struct intrus_params *p);
float *intrus_params_adam_m(struct intrus_params *p);
float *intrus_params_adam_v(struct intrus_params *p);

void intrus_params_zero_grad(struct intrus_params *p);
/* Resets both Adam moments (a training phase that restarts its optimizer). */
void intrus_params_zero_moments(struct intrus_params *p);

#ifdef __cplusplus
}
#endif
#endif

/* Finite-difference gradient checks for the ops of the tensor engine. */
#ifndef INTRUS_GRADCHECK_H
#define INTRUS_GRADCHECK_H

#include <stdbool.h>

#include "intrus/tensor.h"

#define GC_MAX_INPUTS 4

/* Builds the op under test from leaf inputs (already requiring grad where asked). */
typedef intrus_tensor *(*gc_build_fn)(intrus_ctx *ctx, intrus_tensor **in, void *user);

struct gc_input {
  int ndim;
  int shape[4];
  bool grad;            /* check the gradient with respect to this input */
  const float *values;  /* NULL = uniform in [lo, hi) from the check's seed */
  float lo, hi;
};

struct gc_spec {
  const char *name;
  enum intrus_op op;    /* the op this check covers (recorded for the coverage count) */
  gc_build_fn build;
  void *user;
  int ninputs;
  struct gc_input in[GC_MAX_INPUTS];
  float eps;            /* 0 = 1e-2 */
  float tol;            /* 0 = 2e-2; on |num - ana| / max(1, |num|, |ana|) */
  bool training;        /* run with training mode on (dropout) */
};

/* Runs the check: the objective is sum(out * w) for a fixed random w; analytic grads
 * from intrus_backward_seed, numeric by central differences in double. Prints one line
 * and returns true on success; marks spec->op as covered. */
bool gradcheck_run(const struct gc_spec *spec);

/* Ops covered so far (by any successful or failed check) and the total to cover. */
int gradcheck_covered(bool covered[INTRUS_OP_COUNT]);

#endif

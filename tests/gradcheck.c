#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "intrus/rng.h"

static bool g_covered[INTRUS_OP_COUNT];

static double objective(intrus_ctx *ctx, const struct gc_spec *s, float **vals,
                        const float *w, size_t *out_n, intrus_tensor **out_t,
                        intrus_tensor **leaves) {
  intrus_ctx_reset(ctx);
  intrus_ctx_set_seed(ctx, 1234, 7);
  intrus_ctx_set_training(ctx, s->training);
  for (int i = 0; i < s->ninputs; i++) {
    leaves[i] = intrus_tensor_from(ctx, s->in[i].ndim, s->in[i].shape, vals[i]);
    leaves[i]->requires_grad = s->in[i].grad;
  }
  intrus_tensor *out = s->build(ctx, leaves, s->user);
  if (out_n) *out_n = out->n;
  if (out_t) *out_t = out;
  if (!w) return 0.0;
  double acc = 0.0;
  for (size_t j = 0; j < out->n; j++)
    if (isfinite(out->data[j])) acc += (double)out->data[j] * w[j];
  return acc;
}

bool gradcheck_run(const struct gc_spec *s) {
  g_covered[s->op] = true;
  float eps = s->eps > 0 ? s->eps : 1e-2f, tol = s->tol > 0 ? s->tol : 2e-2f;
  struct intrus_rng rng;
  intrus_rng_seed(&rng, intrus_fnv1a(INTRUS_FNV_INIT, s->name, strlen(s->name)));
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  float *vals[GC_MAX_INPUTS];
  intrus_tensor *leaves[GC_MAX_INPUTS];
  for (int i = 0; i < s->ninputs; i++) {
    size_t n = intrus_shape_numel(s->in[i].ndim, s->in[i].shape);
    vals[i] = malloc(n * sizeof(float));
    for (size_t j = 0; j < n; j++)
      vals[i][j] = s->in[i].values
                       ? s->in[i].values[j]
                       : s->in[i].lo + (s->in[i].hi - s->in[i].lo) * intrus_rng_uniform(&rng);
  }
  size_t nout;
  intrus_tensor *out;
  objective(ctx, s, vals, NULL, &nout, &out, leaves);
  float *w = malloc(nout * sizeof(float));
  for (size_t j = 0; j < nout; j++) w[j] = 2.0f * intrus_rng_uniform(&rng) - 1.0f;
  /* Non-finite outputs (masked log-softmax entries) carry no gradient. */
  for (size_t j = 0; j < nout; j++)
    if (!isfinite(out->data[j])) w[j] = 0.0f;

  objective(ctx, s, vals, w, NULL, &out, leaves);
  intrus_backward_seed(ctx, out, w);
  float *ana[GC_MAX_INPUTS];
  for (int i = 0; i < s->ninputs; i++) {
    ana[i] = NULL;
    if (!s->in[i].grad) continue;
    size_t n = leaves[i]->n;
    ana[i] = calloc(n, sizeof(float));
    if (leaves[i]->grad) memcpy(ana[i], leaves[i]->grad, n * sizeof(float));
  }
  double worst = 0.0;
  int worst_in = -1;
  size_t worst_j = 0, checked = 0;
  double worst_num = 0, worst_ana = 0;
  for (int i = 0; i < s->ninputs; i++) {
    if (!s->in[i].grad) continue;
    size_t n = intrus_shape_numel(s->in[i].ndim, s->in[i].shape);
    for (size_t j = 0; j < n; j++) {
      float x0 = vals[i][j];
      vals[i][j] = x0 + eps;
      double fp = objective(ctx, s, vals, w, NULL, NULL, leaves);
      vals[i][j] = x0 - eps;
      double fm = objective(ctx, s, vals, w, NULL, NULL, leaves);
      vals[i][j] = x0;
      double num = (fp - fm) / (2.0 * eps), a = ana[i][j];
      double err = fabs(num - a) / fmax(1.0, fmax(fabs(num), fabs(a)));
      checked++;
      if (err > worst) {
        worst = err;
        worst_in = i;
        worst_j = j;
        worst_num = num;
        worst_ana = a;
      }
    }
  }
  bool ok = worst <= tol && checked > 0;
  printf("gradcheck %-28s %s  %zu grads, max rel err %.2e", s->name, ok ? "ok  " : "FAIL",
         checked, worst);
  if (!ok && worst_in >= 0)
    printf("  (input %d elem %zu: numeric %.6g analytic %.6g)", worst_in, worst_j, worst_num,
           worst_ana);
  printf("\n");
  for (int i = 0; i < s->ninputs; i++) {
    free(vals[i]);
    free(ana[i]);
  }
  free(w);
  intrus_ctx_destroy(ctx);
  return ok;
}

int gradcheck_covered(bool covered[INTRUS_OP_COUNT]) {
  memcpy(covered, g_covered, sizeof g_covered);
  return INTRUS_OP_COUNT - 1; /* every op but the leaf */
}

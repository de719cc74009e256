#include <math.h>

#include "intrus/optim.h"

struct intrus_adam intrus_adam_defaults(void) {
  return (struct intrus_adam){.base_lr = 1.4e-3f, .warmup = 16000, .beta1 = 0.9f,
                              .beta2 = 0.998f, .eps = 1e-9f, .clip_norm = 0.0f};
}

float intrus_lr_at(const struct intrus_adam *opt, long step) {
  if (opt->warmup <= 0) return opt->base_lr;
  double s1 = (double)step + 1.0, w = opt->warmup;
  double f = fmin(sqrt(w / s1), s1 / w);
  return (float)(opt->base_lr * f);
}

double intrus_grad_norm(struct intrus_params *p) {
  const float *g = intrus_params_grads(p);
  size_t n = intrus_params_numel(p);
  double s = 0.0;
  /* Fixed-order sum: the norm, and so clipping, does not depend on thread count. */
  for (size_t i = 0; i < n; i++) s += (double)g[i] * g[i];
  return sqrt(s);
}

double intrus_adam_step(struct intrus_params *p, const struct intrus_adam *opt, long step) {
  size_t n = intrus_params_numel(p);
  float *w = intrus_params_values(p), *g = intrus_params_grads(p);
  float *m = intrus_params_adam_m(p), *v = intrus_params_adam_v(p);
  double norm = intrus_grad_norm(p);
  float gscale = 1.0f;
  if (opt->clip_norm > 0 && norm > opt->clip_norm) gscale = (float)(opt->clip_norm / norm);
  float lr = intrus_lr_at(opt, step);
  double t = (double)step + 1.0;
  float bc1 = (float)(1.0 - pow(opt->beta1, t)), bc2 = (float)(1.0 - pow(opt->beta2, t));
  float b1 = opt->beta1, b2 = opt->beta2, eps = opt->eps;
  float step_size = lr / bc1, inv_sqrt_bc2 = 1.0f / sqrtf(bc2);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n > 262144)
#endif
  for (size_t i = 0; i < n; i++) {
    float gi = g[i] * gscale;
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    w[i] -= step_size * m[i] / (sqrtf(v[i]) * inv_sqrt_bc2 + eps);
  }
  return norm;
}

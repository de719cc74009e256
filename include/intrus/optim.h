/* Adam with the INTRUS/Transformer learning-rate schedule and optional clipping. */
#ifndef INTRUS_OPTIM_H
#define INTRUS_OPTIM_H

#include "intrus/params.h"

#ifdef __cplusplus
extern "C" {
#endif

struct intrus_adam {
  float base_lr;      /* 1.4e-3 in the paper */
  int warmup;         /* W; 16000 in the paper; 0 = constant base_lr */
  float beta1, beta2; /* 0.9, 0.998 in the paper's code */
  float eps;          /* 1e-9 */
  float clip_norm;    /* global gradient norm clip; 0 = off */
};

/* Defaults: base_lr 1.4e-3, warmup 16000, beta1 0.9, beta2 0.998, eps 1e-9, no clip. */
struct intrus_adam intrus_adam_defaults(void);

/* lr = base_lr * min(sqrt(W / (s + 1)), (s + 1) / W), s = 0-based step; base_lr if W = 0. */
float intrus_lr_at(const struct intrus_adam *opt, long step);

/* Global L2 norm of the gradient block. */
double intrus_grad_norm(struct intrus_params *p);

/* One Adam update (with bias correction at step + 1) using the gradient block; clips
 * first when clip_norm > 0. Returns the gradient norm before clipping. */
double intrus_adam_step(struct intrus_params *p, const struct intrus_adam *opt, long step);

#ifdef __cplusplus
}
#endif
#endif

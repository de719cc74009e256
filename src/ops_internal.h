/* Internal to the engine: one backward function per op, called by intrus_backward()'s
 * switch. Each reads out->grad and accumulates (+=) into the grads of out->src[i] that
 * require grad, fetching them with intrus_tensor_grad(). */
#ifndef INTRUS_OPS_INTERNAL_H
#define INTRUS_OPS_INTERNAL_H

#include "intrus/tensor.h"

void intrus_matmul_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_add_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_mul_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_scale_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_relu_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_gelu_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_elu_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_dropout_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_embedding_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_layer_norm_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_softmax_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_log_softmax_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_cross_entropy_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_logsumexp_masked_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_sum_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_mean_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_reshape_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_permute_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_concat_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_conv2d_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_maxpool2d_backward(intrus_ctx *ctx, intrus_tensor *out);

/* Elementwise loops above this many elements run under OpenMP. Below it the fork/join
 * costs more than it saves. */
#define INTRUS_OMP_MIN 32768

#endif

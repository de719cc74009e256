/* Batched matrix product with optional transposes. Every product goes through
 * intrus_gemm / intrus_gemm_batched so that BLAS stays behind one door (blas.h).
 *
 * Notation: op(A) is [M, K] and op(B) is [K, N] for every batch entry; A is stored
 * [M, K] (or [K, M] when trans_a), B is stored [K, N] (or [N, K] when trans_b). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "intrus/blas.h"
#include "intrus/tensor.h"
#include "ops_internal.h"

/* Integer arguments kept in out->ip for the backward pass. */
enum { IP_TRANS_A, IP_TRANS_B, IP_BATCH, IP_M, IP_N, IP_K, IP_SHARED_B };

intrus_tensor *intrus_matmul(intrus_ctx *ctx, intrus_tensor *a, intrus_tensor *b,
                             bool trans_a, bool trans_b) {
  char sa[64], sb[64];
  INTRUS_CHECK(a->ndim >= 2 && b->ndim >= 2, "matmul: a %s and b %s need at least 2 dims",
               intrus_shape_str(a, sa, sizeof sa), intrus_shape_str(b, sb, sizeof sb));
  /* b is shared by the whole batch when 2-D; otherwise its leading dims must be a's. */
  bool shared = b->ndim == 2;
  INTRUS_CHECK(shared || b->ndim == a->ndim,
               "matmul: b %s must be 2-D or have a's leading dims (a %s)",
               intrus_shape_str(b, sb, sizeof sb), intrus_shape_str(a, sa, sizeof sa));
  int batch = 1;
  for (int i = 0; i < a->ndim - 2; i++) {
    INTRUS_CHECK(shared || a->shape[i] == b->shape[i],
                 "matmul: leading dims of a %s and b %s differ", intrus_shape_str(a, sa, sizeof sa),
                 intrus_shape_str(b, sb, sizeof sb));
    batch *= a->shape[i];
  }
  int ar = a->shape[a->ndim - 2], ac = a->shape[a->ndim - 1];
  int br = b->shape[b->ndim - 2], bc = b->shape[b->ndim - 1];
  int M = trans_a ? ac : ar, K = trans_a ? ar : ac;
  int Kb = trans_b ? bc : br, N = trans_b ? br : bc;
  INTRUS_CHECK(K == Kb, "matmul: inner dims differ: a %s%s, b %s%s (K %d vs %d)",
               intrus_shape_str(a, sa, sizeof sa), trans_a ? "^T" : "", intrus_shape_str(b, sb, sizeof sb),
               trans_b ? "^T" : "", K, Kb);
  INTRUS_CHECK((long long)batch * M <= INT_MAX, "matmul: a %s has more than INT_MAX rows",
               intrus_shape_str(a, sa, sizeof sa));

  int shape[INTRUS_MAX_DIMS];
  for (int i = 0; i < a->ndim - 2; i++) shape[i] = a->shape[i];
  shape[a->ndim - 2] = M;
  shape[a->ndim - 1] = N;
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_MATMUL, a->ndim, shape, a, b, NULL);
  out->ip[IP_TRANS_A] = trans_a;
  out->ip[IP_TRANS_B] = trans_b;
  out->ip[IP_BATCH] = batch;
  out->ip[IP_M] = M;
  out->ip[IP_N] = N;
  out->ip[IP_K] = K;
  out->ip[IP_SHARED_B] = shared;

  int lda = trans_a ? M : K, ldb = trans_b ? K : N;
  if (K == 0) {
    /* An empty sum; BLAS would reject the zero leading dimension. */
    memset(out->data, 0, out->n * sizeof(float));
  } else if (shared && !trans_a) {
    /* A's batch entries are stacked rows of one [batch*M, K] matrix: one big GEMM keeps
     * BLAS busy where batch small products would each be too thin to parallelise. */
    intrus_gemm(false, trans_b, batch * M, N, K, 1.0f, a->data, lda, b->data, ldb, 0.0f,
                out->data, N);
  } else {
    intrus_gemm_batched(batch, trans_a, trans_b, M, N, K, 1.0f, a->data, lda, (long)M * K,
                        b->data, ldb, shared ? 0 : (long)K * N, 0.0f, out->data, N,
                        (long)M * N);
  }
  return out;
}

/* With G = dC [M, N] per batch entry: d op(A) = G op(B)^T and d op(B) = op(A)^T G.
 * The stored gradients are those transposed back when the operand was transposed. */
void intrus_matmul_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0], *b = out->src[1];
  bool ta = out->ip[IP_TRANS_A], tb = out->ip[IP_TRANS_B], shared = out->ip[IP_SHARED_B];
  int batch = out->ip[IP_BATCH], M = out->ip[IP_M], N = out->ip[IP_N], K = out->ip[IP_K];
  int lda = ta ? M : K, ldb = tb ? K : N;
  long sa = (long)M * K, sb = shared ? 0 : (long)K * N, sg = (long)M * N;
  const float *G = out->grad;

  if (a->requires_grad) {
    float *dA = intrus_tensor_grad(ctx, a);
    if (!ta && shared) {
      /* dA [batch*M, K] = G [batch*M, N] op(B)^T, folded like the forward. */
      intrus_gemm(false, !tb, batch * M, K, N, 1.0f, G, N, b->data, ldb, 1.0f, dA, K);
    } else if (!ta) {
      /* dA [M, K] = G op(B)^T */
      intrus_gemm_batched(batch, false, !tb, M, K, N, 1.0f, G, N, sg, b->data, ldb, sb, 1.0f,
                          dA, K, sa);
    } else {
      /* A stored [K, M]: dA = (G op(B)^T)^T = op(B) G^T [K, M] */
      intrus_gemm_batched(batch, tb, true, K, M, N, 1.0f, b->data, ldb, sb, G, N, sg, 1.0f,
                          dA, M, sa);
    }
  }

  if (b->requires_grad) {
    float *dB = intrus_tensor_grad(ctx, b);
    if (shared && !ta) {
      /* Summing op(A_i)^T G_i over the batch is one product over the stacked rows:
       * dB [K, N] = A_all^T G_all with A_all [batch*M, K], G_all [batch*M, N]. */
      int rows = batch * M;
      if (!tb)
        intrus_gemm(true, false, K, N, rows, 1.0f, a->data, K, G, N, 1.0f, dB, N);
      else /* B stored [N, K]: dB = G_all^T A_all */
        intrus_gemm(true, false, N, K, rows, 1.0f, G, N, a->data, K, 1.0f, dB, K);
    } else if (shared) {
      /* A stored [batch, K, M] cannot be stacked into one operand, so accumulate the
       * batch entries one after another (beta = 1) into the one shared dB. */
      for (int i = 0; i < batch; i++) {
        const float *Ai = a->data + i * sa, *Gi = G + i * sg;
        if (!tb) /* dB [K, N] = op(A)^T G, op(A)^T = A as stored */
          intrus_gemm(false, false, K, N, M, 1.0f, Ai, lda, Gi, N, 1.0f, dB, N);
        else /* dB [N, K] = G^T op(A) */
          intrus_gemm(true, true, N, K, M, 1.0f, Gi, N, Ai, lda, 1.0f, dB, K);
      }
    } else if (!tb) {
      /* dB [K, N] = op(A)^T G */
      intrus_gemm_batched(batch, !ta, false, K, N, M, 1.0f, a->data, lda, sa, G, N, sg, 1.0f,
                          dB, N, sb);
    } else {
      /* B stored [N, K]: dB = G^T op(A) [N, K] */
      intrus_gemm_batched(batch, true, ta, N, K, M, 1.0f, G, N, sg, a->data, lda, sa, 1.0f,
                          dB, K, sb);
    }
  }
}

/* intrus_gemm's own kernel for small products (core/tensor/gemm_small.c) against a double
 * reference: every transpose pair, alpha and beta (beta 0 must not read C: it holds
 * NaN there), shapes across the 4-row and 16/32-column tiles and their tails, strides
 * wider than the matrices, nothing written outside C's M x N; the same with the kernel
 * off (OpenBLAS) and with products just past the size limit; and the two paths agree
 * to rounding on attention, the op that issues these products. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/blas.h"
#include "intrus/rng.h"
#include "intrus/tensor.h"
#include "testutil.h"

#define GUARD 12345.0f

/* One product; returns its max error relative to the sum of |terms| per element. */
static double check_one(struct intrus_rng *r, bool ta, bool tb, int M, int N, int K,
                        float alpha, float beta, bool *outside) {
  const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 5;
  float *A = tu_random_floats(r, (size_t)(ta ? K : M) * lda);
  float *B = tu_random_floats(r, (size_t)(tb ? N : K) * ldb);
  float *C0 = tu_random_floats(r, (size_t)M * ldc);
  float *C = malloc((size_t)M * ldc * sizeof *C);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < ldc; j++)
      C[(size_t)i * ldc + j] = j >= N ? GUARD : beta == 0.0f ? NAN : C0[(size_t)i * ldc + j];
  intrus_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  double worst = 0.0;
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < N; j++) {
      double s = 0.0, mag = 1e-30;
      for (int k = 0; k < K; k++) {
        double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
        double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
        s += a * b;
        mag += fabs(a * b);
      }
      double c = beta == 0.0f ? 0.0 : (double)beta * C0[(size_t)i * ldc + j];
      double want = alpha * s + c, e = fabs(C[(size_t)i * ldc + j] - want) /
                                       (fabs(alpha) * mag + fabs(c) + 1e-30);
      if (!(e <= worst)) worst = e; /* NaN (C read where beta is 0) counts as worst */
    }
    for (int j = N; j < ldc; j++) *outside |= C[(size_t)i * ldc + j] != GUARD;
  }
  free(A);
  free(B);
  free(C0);
  free(C);
  return worst;
}

static void check_shapes(bool small) {
  intrus_blas_set_small(small);
  struct intrus_rng r;
  intrus_rng_seed(&r, 11);
  static const int Ms[] = {1, 3, 4, 5, 9, 22};
  static const int Ns[] = {1, 7, 16, 17, 32, 33, 64, 70};
  static const int Ks[] = {0, 1, 5, 22, 64};
  static const float alphas[] = {1.0f, 0.125f}, betas[] = {0.0f, 1.0f, -0.5f};
  int cases = 0;
  for (int t = 0; t < 4; t++)
    for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
      for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
        for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++) {
          const float alpha = alphas[cases % 2], beta = betas[cases % 3];
          bool ta = t & 1, tb = t & 2, outside = false;
          int M = Ms[mi], N = Ns[ni], K = Ks[ki];
          double e = check_one(&r, ta, tb, M, N, K, alpha, beta, &outside);
          EXPECT(e < 1e-6, "%s: ta %d tb %d M %d N %d K %d alpha %g beta %g: rel. err %.3g",
                 small ? "small" : "openblas", ta, tb, M, N, K, (double)alpha, (double)beta, e);
          EXPECT(!outside, "ta %d tb %d M %d N %d K %d: wrote beyond column N", ta, tb, M, N,
                 K);
          cases++;
        }
  /* Just past the kernel's limits (2^17 multiply-adds; B^T of 8192 floats): OpenBLAS;
   * a matrix times a vector large enough to be split across threads (sgemv). */
  static const int big[][3] = {{33, 64, 64}, {2, 129, 64}, {40, 40, 82}, {4000, 1, 80}};
  for (size_t b = 0; b < sizeof big / sizeof *big; b++)
    for (int t = 0; t < 4; t++) {
      bool outside = false;
      double e = check_one(&r, t & 1, t & 2, big[b][0], big[b][1], big[b][2], 0.5f, 1.0f,
                           &outside);
      EXPECT(e < 1e-6 && !outside, "%d x %d x %d (t %d): rel. err %.3g%s", big[b][0],
             big[b][1], big[b][2], t, e, outside ? ", wrote beyond N" : "");
      cases++;
    }
  printf("%s: %d products\n", small ? "small kernel" : "OpenBLAS only", cases);
  intrus_blas_set_small(true);
}

/* Attention over per-state segments, the small products' main user: both paths give
 * the same output and gradients up to float rounding. */
static void run_attention(bool small, const float *xq, const float *xkv, float *res,
                          size_t nres) {
  intrus_blas_set_small(small);
  enum { N = 60, D = 64, H = 4, SEGS = 5 };
  intrus_ctx *ctx = intrus_ctx_create(1 << 22);
  intrus_ctx_set_grad(ctx, true);
  const int shape[2] = {N, D};
  intrus_tensor *q = intrus_tensor_from(ctx, 2, shape, xq);
  intrus_tensor *kv = intrus_tensor_from(ctx, 2, shape, xkv);
  q->requires_grad = kv->requires_grad = true;
  int qb[SEGS], ql[SEGS];
  for (int s = 0, row = 0; s < SEGS; s++) ql[s] = 6 + 3 * s, qb[s] = row, row += ql[s];
  struct intrus_segments seg = {SEGS, qb, ql, qb, ql};
  intrus_tensor *y = intrus_attention(ctx, q, kv, kv, H, &seg, true, 0.0f);
  intrus_backward(ctx, intrus_sum(ctx, intrus_mul(ctx, y, y)));
  memcpy(res, y->data, (size_t)N * D * sizeof *res);
  memcpy(res + N * D, q->grad, (size_t)N * D * sizeof *res);
  memcpy(res + 2 * N * D, kv->grad, (size_t)N * D * sizeof *res);
  (void)nres;
  intrus_ctx_destroy(ctx);
  intrus_blas_set_small(true);
}

static void check_attention(void) {
  enum { N = 60, D = 64 };
  struct intrus_rng r;
  intrus_rng_seed(&r, 12);
  float *xq = tu_random_floats(&r, N * D), *xkv = tu_random_floats(&r, N * D);
  float *a = malloc(3 * N * D * sizeof *a), *b = malloc(3 * N * D * sizeof *b);
  run_attention(true, xq, xkv, a, 3 * N * D);
  run_attention(false, xq, xkv, b, 3 * N * D);
  double worst = 0.0;
  for (int i = 0; i < 3 * N * D; i++) {
    double e = fabs(a[i] - b[i]) / (1e-3 + fabs(b[i]));
    if (!(e <= worst)) worst = e;
  }
  EXPECT(worst < 1e-4, "attention: small kernel and OpenBLAS differ by %.3g (relative)", worst);
  free(xq);
  free(xkv);
  free(a);
  free(b);
}

int main(void) {
  check_shapes(true);
  check_shapes(false);
  check_attention();
  return test_finish("test_gemm_small");
}

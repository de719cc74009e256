/* intrus_gemm_packed against a double-precision reference over shapes that cover the
 * kernel's edges (row tiles of 6, panels of 64 columns, tails of both, strides wider
 * than the matrices, B stored either way), with the kernel and with the intrus_gemm
 * fallback; its results independent of the thread count; the FLOP counter; and the
 * two users: intrus_linear_forward with weight packs set on the ctx, and
 * intrus_linear_log_softmax. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "intrus/blas.h"
#include "intrus/nn.h"
#include "intrus/params.h"
#include "intrus/rng.h"
#include "testutil.h"

/* Max |C - (bias + A op(B))| over C's M x N, relative to the sum of |terms| of each
 * element; bias may be NULL. */
static double max_rel_err(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                          bool trans, const float *bias, const float *C, int ldc) {
  double worst = 0.0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = bias ? bias[j] : 0.0, mag = 1e-30 + fabs(s);
      for (int k = 0; k < K; k++) {
        double b = trans ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
        s += (double)A[(size_t)i * lda + k] * b;
        mag += fabs((double)A[(size_t)i * lda + k] * b);
      }
      double e = fabs(C[(size_t)i * ldc + j] - s) / mag;
      if (e > worst) worst = e;
    }
  return worst;
}

static void check_shapes(bool kernel) {
  intrus_blas_set_packed(kernel);
  struct intrus_rng r;
  intrus_rng_seed(&r, 7);
  static const int Ms[] = {1, 5, 6, 7, 13, 40};
  static const int Ns[] = {1, 15, 16, 63, 64, 65, 200};
  static const int Ks[] = {1, 3, 64, 257};
  int cases = 0;
  for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
    for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
      for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
        for (int trans = 0; trans < 2; trans++) {
          int M = Ms[mi], N = Ns[ni], K = Ks[ki];
          int lda = K + 3, ldc = N + 5, ldb = (trans ? K : N) + 2;
          float *A = tu_random_floats(&r, (size_t)M * lda);
          float *B = tu_random_floats(&r, (size_t)(trans ? N : K) * ldb);
          float *C = malloc((size_t)M * ldc * sizeof *C);
          for (size_t i = 0; i < (size_t)M * ldc; i++) C[i] = 12345.0f; /* gaps stay */
          float *bias = cases % 2 ? tu_random_floats(&r, (size_t)N) : NULL;
          struct intrus_packed *p = intrus_pack(K, N, B, ldb, trans);
          intrus_packed_set_bias(p, bias);
          EXPECT(intrus_packed_k(p) == K && intrus_packed_n(p) == N, "packed shape");
          double f0 = intrus_blas_flops();
          intrus_gemm_packed(M, A, lda, p, C, ldc);
          EXPECT_NEAR(intrus_blas_flops() - f0, 2.0 * M * N * K, 0.5);
          double e = max_rel_err(M, N, K, A, lda, B, ldb, trans, bias, C, ldc);
          EXPECT(e < 1e-6, "M %d N %d K %d trans %d kernel %d: rel. err %.3g", M, N, K, trans,
                 kernel, e);
          bool gaps = true;
          for (int i = 0; i < M; i++)
            for (int j = N; j < ldc; j++) gaps = gaps && C[(size_t)i * ldc + j] == 12345.0f;
          EXPECT(gaps, "M %d N %d K %d: wrote beyond column N", M, N, K);
          intrus_packed_free(p);
          free(bias);
          free(A);
          free(B);
          free(C);
          cases++;
        }
  printf("%s path: %d shapes\n", kernel ? "packed" : "intrus_gemm", cases);
  intrus_blas_set_packed(true);
}

/* The kernel sums each element in one order whatever the split across threads. */
static void check_threads(void) {
#ifdef _OPENMP
  struct intrus_rng r;
  intrus_rng_seed(&r, 11);
  const int M = 50, N = 1000, K = 256;
  float *A = tu_random_floats(&r, (size_t)M * K), *B = tu_random_floats(&r, (size_t)K * N);
  float *C1 = malloc((size_t)M * N * sizeof *C1), *C2 = malloc((size_t)M * N * sizeof *C2);
  struct intrus_packed *p = intrus_pack(K, N, B, N, false);
  /* The intrus_gemm fallback (no AVX2 or AVX-512, or INTRUS_ISA=generic) splits
   * products by the thread count, like OpenBLAS: its last bits may differ. */
  if (!intrus_packed_uses_kernel(p)) {
    printf("generic ISA level: thread-count independence not checked\n");
    intrus_packed_free(p);
    free(A);
    free(B);
    free(C1);
    free(C2);
    return;
  }
  int nt = omp_get_max_threads();
  omp_set_num_threads(1);
  intrus_blas_set_threads(1);
  intrus_gemm_packed(M, A, K, p, C1, N);
  omp_set_num_threads(nt > 1 ? nt : 2);
  intrus_blas_set_threads(nt > 1 ? nt : 2);
  intrus_gemm_packed(M, A, K, p, C2, N);
  omp_set_num_threads(nt);
  intrus_blas_set_threads(nt);
  EXPECT(memcmp(C1, C2, (size_t)M * N * sizeof *C1) == 0, "1 and %d threads differ", nt);
  intrus_packed_free(p);
  free(A);
  free(B);
  free(C1);
  free(C2);
#endif
}

/* A linear layer with its weight packed on the ctx gives the product it gives without,
 * but only while gradients are off. */
static void check_linear(void) {
  struct intrus_params *params = intrus_params_create();
  struct intrus_linear l;
  intrus_linear_init(&l, params, "lin", 96, 130, true);
  struct intrus_error err = {0};
  EXPECT(intrus_params_finalize(params, 3, &err) == INTRUS_OK, "%s", err.msg);
  for (size_t i = 0; i < l.b->n; i++) l.b->data[i] = 0.01f * (float)i;
  intrus_ctx *ctx = intrus_ctx_create(0);
  struct intrus_rng r;
  intrus_rng_seed(&r, 3);
  float *xs = tu_random_floats(&r, 2 * 7 * 96);
  int shape[3] = {2, 7, 96};
  struct intrus_weight_packs *packs = intrus_weight_packs_create();
  intrus_weight_packs_add(packs, &l);

  intrus_ctx_set_grad(ctx, false);
  intrus_tensor *plain = intrus_linear_forward(ctx, &l, intrus_tensor_from(ctx, 3, shape, xs));
  intrus_ctx_set_packs(ctx, packs);
  intrus_tensor *packed = intrus_linear_forward(ctx, &l, intrus_tensor_from(ctx, 3, shape, xs));
  EXPECT(packed->ndim == 3 && packed->shape[0] == 2 && packed->shape[1] == 7 &&
             packed->shape[2] == 130,
         "packed result shape");
  double worst = 0.0;
  for (size_t i = 0; i < plain->n; i++) {
    double e = fabs(plain->data[i] - packed->data[i]);
    worst = e > worst ? e : worst;
  }
  EXPECT(worst < 1e-5, "packed linear differs by %.3g", worst);

  /* With gradients on, the packs are ignored: the graph needs the op recorded. */
  intrus_ctx_set_grad(ctx, true);
  intrus_tensor *x = intrus_tensor_from(ctx, 3, shape, xs);
  x->requires_grad = true;
  intrus_tensor *y = intrus_linear_forward(ctx, &l, x);
  EXPECT(y->requires_grad, "with gradients on, the linear layer is recorded");
  intrus_ctx_set_packs(ctx, NULL);

  intrus_weight_packs_free(packs);
  free(xs);
  intrus_ctx_destroy(ctx);
  intrus_params_destroy(params);
}

/* Each row a normalised log-distribution equal to the reference's. */
static void check_log_softmax(void) {
  struct intrus_rng r;
  intrus_rng_seed(&r, 5);
  const int in = 48, V = 333;
  static const int Rs[] = {1, 7, 100};
  float *w = tu_random_floats(&r, (size_t)V * in), *bias = tu_random_floats(&r, V);
  for (int trans = 0; trans < 2; trans++)
    for (size_t ri = 0; ri < sizeof Rs / sizeof *Rs; ri++) {
      int R = Rs[ri];
      float *x = tu_random_floats(&r, (size_t)R * (in + 1));
      float *out = malloc((size_t)R * V * sizeof *out);
      struct intrus_packed *p = intrus_pack(in, V, w, trans ? in : V, trans);
      intrus_packed_set_bias(p, bias);
      intrus_linear_log_softmax(R, x, in + 1, p, out);
      double worst = 0.0, worst_sum = 0.0;
      for (int i = 0; i < R; i++) {
        double mx = -INFINITY, z[333], s = 0.0, total = 0.0;
        for (int j = 0; j < V; j++) {
          double acc = bias[j];
          for (int k = 0; k < in; k++)
            acc += (double)x[(size_t)i * (in + 1) + k] *
                   (trans ? w[(size_t)j * in + k] : w[(size_t)k * V + j]);
          z[j] = acc;
          mx = acc > mx ? acc : mx;
        }
        for (int j = 0; j < V; j++) s += exp(z[j] - mx);
        for (int j = 0; j < V; j++) {
          double e = fabs(out[(size_t)i * V + j] - (z[j] - mx - log(s)));
          worst = e > worst ? e : worst;
          total += exp(out[(size_t)i * V + j]);
        }
        worst_sum = fabs(total - 1.0) > worst_sum ? fabs(total - 1.0) : worst_sum;
      }
      EXPECT(worst < 2e-5, "R %d trans %d: log-prob error %.3g", R, trans, worst);
      EXPECT(worst_sum < 1e-4, "R %d trans %d: rows sum to 1 +- %.3g", R, trans, worst_sum);
      intrus_packed_free(p);
      free(x);
      free(out);
    }
  free(w);
  free(bias);
}

int main(void) {
  check_shapes(true);
  check_shapes(false);
  check_threads();
  check_linear();
  check_log_softmax();
  return test_finish("test_gemm_packed");
}

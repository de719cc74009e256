/* The only file that calls BLAS. */
#include <cblas.h>

#include "intrus/blas.h"

/* Only the calling thread issues GEMMs (OpenBLAS threads inside), so a plain counter. */
static double flops_issued;

double intrus_blas_flops(void) { return flops_issued; }

void intrus_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta,
                 float *C, int ldc) {
  if (M == 0 || N == 0) return;
  flops_issued += 2.0 * M * N * K;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C,
              ldc);
}

void intrus_gemm_batched(int count, bool trans_a, bool trans_b, int M, int N, int K,
                         float alpha, const float *A, int lda, long stride_a,
                         const float *B, int ldb, long stride_b, float beta, float *C,
                         int ldc, long stride_c) {
  for (int i = 0; i < count; i++)
    intrus_gemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b,
                ldb, beta, C + i * stride_c, ldc);
}

const char *intrus_blas_corename(void) { return openblas_get_corename(); }
int intrus_blas_threads(void) { return openblas_get_num_threads(); }
void intrus_blas_set_threads(int n) { openblas_set_num_threads(n); }

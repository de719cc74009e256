/* The one door to BLAS: every matrix product in intrus goes through intrus_gemm, and
 * src/blas.c is the only file that calls cblas_sgemm. */
#ifndef INTRUS_BLAS_H
#define INTRUS_BLAS_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C[M,N] = alpha * op(A) op(B) + beta * C, row-major; op(X) = X or X^T.
 * lda/ldb/ldc are row strides of A, B, C as stored. */
void intrus_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta,
                 float *C, int ldc);

/* count independent products; stride_* are element offsets between consecutive
 * matrices (stride_b = 0 shares one B). */
void intrus_gemm_batched(int count, bool trans_a, bool trans_b, int M, int N, int K,
                         float alpha, const float *A, int lda, long stride_a,
                         const float *B, int ldb, long stride_b, float beta, float *C,
                         int ldc, long stride_c);

/* Floating-point operations (2 M N K per product) issued through intrus_gemm since the
 * program started; benchmarks difference it around the work they measure. */
double intrus_blas_flops(void);

/* OpenBLAS's kernel name ("Haswell", "Cooperlake", ...) and thread count. */
const char *intrus_blas_corename(void);
int intrus_blas_threads(void);
void intrus_blas_set_threads(int n);

#ifdef __cplusplus
}
#endif
#endif

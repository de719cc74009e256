/* The one door to BLAS: every matrix product in intrus goes through intrus_gemm (core/tensor/blas.c,
 * the only file that calls cblas_sgemm) or, for a right-hand matrix that stays fixed over
 * many products, intrus_gemm_packed (core/tensor/gemm_packed.c). */
#ifndef INTRUS_BLAS_H
#define INTRUS_BLAS_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C[M,N] = alpha * op(A) op(B) + beta * C, row-major; op(X) = X or X^T.
 * lda/ldb/ldc are row strides of A, B, C as stored. Products of at most 2^17
 * multiply-adds (attention's per-state pieces) run on intrus's own AVX-512 or AVX2 + FMA
 * kernel where the CPU has one (and INTRUS_ISA does not ask for generic), larger ones
 * on OpenBLAS. */
void intrus_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta,
                 float *C, int ldc);
/* Whether intrus_gemm takes small products itself (default) or leaves them to
 * OpenBLAS: for benchmarks and tests that compare the two. */
void intrus_blas_set_small(bool on);

/* count independent products; stride_* are element offsets between consecutive
 * matrices (stride_b = 0 shares one B). */
void intrus_gemm_batched(int count, bool trans_a, bool trans_b, int M, int N, int K,
                         float alpha, const float *A, int lda, long stride_a,
                         const float *B, int ldb, long stride_b, float beta, float *C,
                         int ldc, long stride_c);

/* A right-hand matrix packed once for many products with it (a model's weights while a
 * search runs): B [K, N] with row stride ldb, or [N, K] when trans_b. With AVX-512 or
 * AVX2 + FMA the packed copy is multiplied by intrus's own kernel (no per-call packing);
 * without them (or INTRUS_ISA=generic), or after intrus_blas_set_packed(false), products
 * go to intrus_gemm with B itself. B must stay unchanged and alive until
 * intrus_packed_free. */
struct intrus_packed;
struct intrus_packed *intrus_pack(int K, int N, const float *B, int ldb, bool trans_b);
void intrus_packed_free(struct intrus_packed *p);
/* Makes later products C = A op(B) + bias (bias [N], copied; NULL: none). */
void intrus_packed_set_bias(struct intrus_packed *p, const float *bias);
/* Whether products with p run intrus's kernel now (false: they go to intrus_gemm). */
bool intrus_packed_uses_kernel(const struct intrus_packed *p);
int intrus_packed_k(const struct intrus_packed *p);
int intrus_packed_n(const struct intrus_packed *p);
/* C[M,N] = A[M,K] op(B) (+ bias), row-major, lda/ldc row strides. */
void intrus_gemm_packed(int M, const float *A, int lda, const struct intrus_packed *B,
                        float *C, int ldc);
/* Whether later intrus_pack calls use the kernel (default) or leave products to
 * intrus_gemm: for benchmarks and tests that compare the two. */
void intrus_blas_set_packed(bool on);

/* Floating-point operations (2 M N K per product) issued through intrus_gemm since the
 * program started; benchmarks difference it around the work they measure. */
double intrus_blas_flops(void);

/* OpenBLAS's kernel name ("Haswell", "Cooperlake", ...) and thread count. */
const char *intrus_blas_corename(void);
/* When OpenBLAS fell back to an old generic core because it does not know this CPU
 * (e.g. Prescott's SSE3 kernels on a CPU with AVX-512), the OPENBLAS_CORETYPE that
 * would use the CPU's vector units ("SkylakeX", "Haswell"); NULL when OpenBLAS's own
 * choice is fine. OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded: the intrus
 * command restarts itself with it set (core/cli/main.c). */
const char *intrus_blas_better_coretype(void);
/* When intrus_blas_better_coretype() names a core and neither OPENBLAS_CORETYPE (the
 * user's choice, never overridden) nor INTRUS_BLAS_RESTARTED (set here: one restart,
 * never a loop) is set, sets both and executes /proc/self/exe with argv again; else (or
 * when that fails) returns. For main() before anything else: the intrus command and
 * the benchmarks. INTRUS_BLAS_RESTARTED holds the core OpenBLAS had chosen. */
void intrus_blas_restart_better(char **argv);
int intrus_blas_threads(void);
void intrus_blas_set_threads(int n);

#ifdef __cplusplus
}
#endif
#endif

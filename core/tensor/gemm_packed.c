/* Products with a right-hand matrix that stays fixed over many calls: a model's weights
 * while a search runs. The matrix is packed once into panels of NR columns, and an
 * AVX-512 micro-kernel multiplies straight from them.
 *
 * Why not OpenBLAS here: it packs B on every call, and search's products have few rows
 * (4 (t + 1) slots at batch 1, beam 4), so packing the 256 x 8,000 token matrix cost
 * about as much as the arithmetic (sgemm_itcopy was 23% of insertion decoding at batch
 * 1 in perf, the kernel 37%). OPENBLAS_CORETYPE may also hold OpenBLAS to AVX2 kernels
 * on a CPU with AVX-512; this file asks the CPU itself.
 *
 * Every element of C is one ascending sum over k in one FMA chain starting from its bias
 * (or 0), whatever the thread count or the split, so results do not depend on either
 * (they differ from OpenBLAS's in the last bits); the AVX-512 kernel (6 x 64 tiles,
 * 24 accumulators of 16 floats) and the AVX2 one (6 x 16 tiles, 12 accumulators of 8
 * floats, walking each panel in four column quarters) compute the same chains and give
 * the same bits. The panels do not depend on the vector width: intrus_pack makes them
 * at intrus_x86_level() 1 or 2, and each product picks its kernel by the level then.
 * At level 0 (no AVX2 and FMA, INTRUS_ISA=generic, or after
 * intrus_blas_set_packed(false) at packing time) the products go to intrus_gemm with
 * the caller's matrix. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "intrus/blas.h"
#include "ops_internal.h"
#include "base/xalloc.h"

#if INTRUS_X86_DISPATCH
#include <immintrin.h>

#include "avx2_part.h"
#endif

#define NR 64 /* columns per panel: four 16-float vectors */
#define MR 6  /* rows per tile: 6 x 4 accumulators, 4 panel vectors and a broadcast (AVX-512);
                 6 x 2 accumulators, 2 panel vectors and a broadcast (AVX2) */

struct intrus_packed {
  int K, N;
  const float *b; /* the caller's matrix, for the fallback */
  int ldb;
  bool trans;
  float *panel; /* [ceil(N / NR)][K][NR], zero beyond column N; NULL: fallback */
  float *bias;  /* [ceil(N / NR) * NR] or NULL: added to every row of C */
};

static bool packing_enabled = true;

void intrus_blas_set_packed(bool on) { packing_enabled = on; }

static float b_at(const struct intrus_packed *p, int k, int n) {
  return p->trans ? p->b[(size_t)n * p->ldb + k] : p->b[(size_t)k * p->ldb + n];
}

struct intrus_packed *intrus_pack(int K, int N, const float *B, int ldb, bool trans_b) {
  INTRUS_CHECK(K >= 0 && N >= 0, "intrus_pack: %d x %d matrix", K, N);
  struct intrus_packed *p = xcalloc(1, sizeof *p);
  *p = (struct intrus_packed){.K = K, .N = N, .b = B, .ldb = ldb, .trans = trans_b};
  if (!packing_enabled || intrus_x86_level() < 1 || K == 0 || N == 0) return p;
  const int np = (N + NR - 1) / NR;
  const size_t bytes = (size_t)np * K * NR * sizeof(float);
  if (posix_memalign((void **)&p->panel, 64, bytes)) intrus_panic("out of memory (%zu bytes)", bytes);
  OMP_FOR((size_t)K * N)
  for (int q = 0; q < np; q++) {
    float *dst = p->panel + (size_t)q * K * NR;
    const int n0 = q * NR, nc = N - n0 < NR ? N - n0 : NR;
    for (int k = 0; k < K; k++) {
      float *row = dst + (size_t)k * NR;
      for (int j = 0; j < nc; j++) row[j] = b_at(p, k, n0 + j);
      for (int j = nc; j < NR; j++) row[j] = 0.0f;
    }
  }
  return p;
}

void intrus_packed_set_bias(struct intrus_packed *p, const float *bias) {
  free(p->bias);
  p->bias = NULL;
  if (!bias) return;
  const size_t n = ((size_t)p->N + NR - 1) / NR * NR;
  if (posix_memalign((void **)&p->bias, 64, n * sizeof(float)))
    intrus_panic("out of memory (%zu bytes)", n * sizeof(float));
  memcpy(p->bias, bias, (size_t)p->N * sizeof(float));
  for (size_t j = (size_t)p->N; j < n; j++) p->bias[j] = 0.0f;
}

void intrus_packed_free(struct intrus_packed *p) {
  if (!p) return;
  free(p->bias);
  free(p->panel);
  free(p);
}

bool intrus_packed_uses_kernel(const struct intrus_packed *p) {
  return p->panel != NULL && intrus_x86_level() >= 1;
}
int intrus_packed_k(const struct intrus_packed *p) { return p->K; }
int intrus_packed_n(const struct intrus_packed *p) { return p->N; }

#if INTRUS_X86_DISPATCH

/* C[mr, nc] = bias + A[mr, K] panel[K, NR] (first nc columns; bias NR floats or NULL).
 * mr is a constant at every call site, so the row loops unroll and the 24 accumulators
 * stay in registers. */
static inline __attribute__((always_inline)) INTRUS_AVX512 void
tile(const int mr, int K, const float *a, int lda, const float *panel, const float *bias,
     float *c, int ldc, int nc) {
  __m512 acc[MR][4];
#pragma GCC unroll 6
  for (int r = 0; r < MR; r++)
    for (int j = 0; j < 4; j++)
      acc[r][j] = bias ? _mm512_load_ps(bias + 16 * j) : _mm512_setzero_ps();
  for (int k = 0; k < K; k++) {
    const float *pk = panel + (size_t)k * NR;
    const __m512 w0 = _mm512_load_ps(pk), w1 = _mm512_load_ps(pk + 16),
                 w2 = _mm512_load_ps(pk + 32), w3 = _mm512_load_ps(pk + 48);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
      if (r >= mr) break;
      const __m512 x = _mm512_set1_ps(a[(size_t)r * lda + k]);
      acc[r][0] = _mm512_fmadd_ps(x, w0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, w1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(x, w2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(x, w3, acc[r][3]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; r++) {
    if (r >= mr) break;
    float *cr = c + (size_t)r * ldc;
    for (int j = 0; j < 4; j++) {
      const int col = 16 * j;
      if (col + 16 <= nc) _mm512_storeu_ps(cr + col, acc[r][j]);
      else if (col < nc)
        _mm512_mask_storeu_ps(cr + col, (__mmask16)((1u << (nc - col)) - 1u), acc[r][j]);
    }
  }
}

/* Rows [0, M) times panels [q0, q1) on the calling thread: a panel (K * NR floats,
 * 64 KB at K = 256) stays in L2 while every row block passes over it. */
static INTRUS_AVX512 void panels_avx512(int M, const float *A, int lda,
                                        const struct intrus_packed *B, int q0, int q1, float *C,
                                        int ldc) {
  for (int q = q0; q < q1; q++) {
    const float *panel = B->panel + (size_t)q * B->K * NR;
    const float *bias = B->bias ? B->bias + (size_t)q * NR : NULL;
    const int n0 = q * NR, nc = B->N - n0 < NR ? B->N - n0 : NR;
    for (int r = 0; r < M; r += MR) {
      const float *a = A + (size_t)r * lda;
      float *c = C + (size_t)r * ldc + n0;
      switch (M - r < MR ? M - r : MR) {
      case 6: tile(6, B->K, a, lda, panel, bias, c, ldc, nc); break;
      case 5: tile(5, B->K, a, lda, panel, bias, c, ldc, nc); break;
      case 4: tile(4, B->K, a, lda, panel, bias, c, ldc, nc); break;
      case 3: tile(3, B->K, a, lda, panel, bias, c, ldc, nc); break;
      case 2: tile(2, B->K, a, lda, panel, bias, c, ldc, nc); break;
      default: tile(1, B->K, a, lda, panel, bias, c, ldc, nc); break;
      }
    }
  }
}

/* C[mr, nc] = bias + A[mr, K] panel[K, 0 .. 16) for one quarter of a panel (panel and
 * bias offset to it; nc <= 16 of its columns are stored). */
static inline __attribute__((always_inline)) INTRUS_AVX2 void
tile2(const int mr, int K, const float *a, int lda, const float *panel, const float *bias,
      float *c, int ldc, int nc) {
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int r = 0; r < MR; r++)
    for (int j = 0; j < 2; j++)
      acc[r][j] = bias ? _mm256_load_ps(bias + 8 * j) : _mm256_setzero_ps();
  for (int k = 0; k < K; k++) {
    const float *pk = panel + (size_t)k * NR;
    const __m256 w0 = _mm256_load_ps(pk), w1 = _mm256_load_ps(pk + 8);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
      if (r >= mr) break;
      const __m256 x = _mm256_set1_ps(a[(size_t)r * lda + k]);
      acc[r][0] = _mm256_fmadd_ps(x, w0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(x, w1, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; r++) {
    if (r >= mr) break;
    float *cr = c + (size_t)r * ldc;
    for (int j = 0; j < 2; j++) {
      const int col = 8 * j;
      if (col + 8 <= nc) _mm256_storeu_ps(cr + col, acc[r][j]);
      else if (col < nc) store_part(cr + col, acc[r][j], nc - col);
    }
  }
}

/* As panels_avx512. A block of 6 rows of A (6 KB at K = 256) stays in L1 while the
 * quarters of a panel pass under it. */
static INTRUS_AVX2 void panels_avx2(int M, const float *A, int lda, const struct intrus_packed *B,
                                    int q0, int q1, float *C, int ldc) {
  for (int q = q0; q < q1; q++) {
    const float *panel = B->panel + (size_t)q * B->K * NR;
    const float *bias = B->bias ? B->bias + (size_t)q * NR : NULL;
    const int n0 = q * NR, nc = B->N - n0 < NR ? B->N - n0 : NR;
    for (int r = 0; r < M; r += MR) {
      const float *a = A + (size_t)r * lda;
      for (int j = 0; j < nc; j += 16) {
        const float *pj = panel + j, *bj = bias ? bias + j : NULL;
        float *c = C + (size_t)r * ldc + n0 + j;
        const int w = nc - j < 16 ? nc - j : 16;
        switch (M - r < MR ? M - r : MR) {
        case 6: tile2(6, B->K, a, lda, pj, bj, c, ldc, w); break;
        case 5: tile2(5, B->K, a, lda, pj, bj, c, ldc, w); break;
        case 4: tile2(4, B->K, a, lda, pj, bj, c, ldc, w); break;
        case 3: tile2(3, B->K, a, lda, pj, bj, c, ldc, w); break;
        case 2: tile2(2, B->K, a, lda, pj, bj, c, ldc, w); break;
        default: tile2(1, B->K, a, lda, pj, bj, c, ldc, w); break;
        }
      }
    }
  }
}
#endif

void intrus_gemm_packed(int M, const float *A, int lda, const struct intrus_packed *B,
                        float *C, int ldc) {
  if (M <= 0 || B->N == 0) return;
#if INTRUS_X86_DISPATCH
  /* Packed at one level, the panels serve either kernel at another (tests switch). */
  const int level = B->panel ? intrus_x86_level() : 0;
  if (level >= 1) {
    const double macs = (double)M * B->N * B->K;
    intrus_blas_count_flops(2.0 * macs);
    const int np = (B->N + NR - 1) / NR;
    const int nt = intrus_blas_threads();
    const bool alone = intrus_gemm_run_alone(nt, macs);
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (!alone)
    {
      const int t = omp_get_thread_num(), n = omp_get_num_threads();
      if (level >= 2) panels_avx512(M, A, lda, B, np * t / n, np * (t + 1) / n, C, ldc);
      else panels_avx2(M, A, lda, B, np * t / n, np * (t + 1) / n, C, ldc);
    }
#else
    (void)alone;
    if (level >= 2) panels_avx512(M, A, lda, B, 0, np, C, ldc);
    else panels_avx2(M, A, lda, B, 0, np, C, ldc);
#endif
    return;
  }
#endif
  intrus_gemm(false, B->trans, M, B->N, B->K, 1.0f, A, lda, B->b, B->ldb, 0.0f, C, ldc);
  if (B->bias)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < B->N; j++) C[(size_t)i * ldc + j] += B->bias[j];
}

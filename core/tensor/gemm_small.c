/* Products too small for sgemm's fixed cost per call: attention's per-state pieces.
 *
 * Why: an insertion model attends within each partial output, so a training step of
 * 200 sentences issues some 300,000 products of about 12 x 12 x 64 (scores and
 * weighted sums, forward and backward, per state and head), and search some 60,000 per
 * batch. Each cblas_sgemm call locks a buffer, packs both operands and dispatches
 * (pthread_mutex_lock, sgemm_oncopy and sgemm_itcopy showed in perf) for as little as
 * 20,000 multiply-adds. Here a 4 x 32 register tile reads A and B in place (B
 * transposed into a stack buffer first, 16 x 16 blocks at a time, when the product wants
 * B^T).
 *
 * Each element of C is one ascending FMA chain over k, then alpha * sum + beta * C, on
 * the calling thread: results do not depend on the thread count. Without AVX-512 (or
 * after intrus_blas_set_small(false)) intrus_gemm calls OpenBLAS as before. */
#include <stdint.h>

#include "intrus/blas.h"
#include "ops_internal.h"

#if INTRUS_X86_DISPATCH
#include <immintrin.h>
#endif

/* Largest product (multiply-adds) taken here, and largest B^T (floats) to transpose on
 * the stack. Above them OpenBLAS's packing pays for itself. */
#define SMALL_MAX_MACS (1 << 17)
#define SMALL_MAX_BT 8192

static bool small_enabled = true;

void intrus_blas_set_small(bool on) { small_enabled = on; }

#if INTRUS_X86_DISPATCH

static inline INTRUS_AVX512 __mmask16 cols_mask(int n) {
  return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n > 0 ? n : 0)) - 1u);
}

/* C[i0 .. i0+mr, j0 .. j0+nc) with mr <= 4, nc <= 16 nv; B row-major [K, ldb]. mr, nv
 * and ta are constants at every call site and the row loops unroll, so the
 * accumulators stay in registers (without the unrolling GCC kept them on the stack,
 * and a store-to-load chain per k made the kernel slower than sgemm). */
static inline __attribute__((always_inline)) INTRUS_AVX512 void
small_tile(const int mr, const int nv, int K, float alpha, const float *A, int lda, bool ta,
           const float *B, int ldb, float beta, float *C, int ldc, int nc) {
  const __mmask16 m0 = cols_mask(nc), m1 = cols_mask(nc - 16);
  __m512 acc[4][2];
#pragma GCC unroll 4
  for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int k = 0; k < K; k++) {
    const float *bk = B + (size_t)k * ldb;
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, bk);
    const __m512 b1 = nv > 1 ? _mm512_maskz_loadu_ps(m1, bk + 16) : _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
      if (r >= mr) break;
      const __m512 x = _mm512_set1_ps(ta ? A[(size_t)k * lda + r] : A[(size_t)r * lda + k]);
      acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
      if (nv > 1) acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 4
  for (int r = 0; r < 4; r++) {
    if (r >= mr) break;
    for (int v = 0; v < nv; v++) {
      float *c = C + (size_t)r * ldc + 16 * v;
      const __mmask16 m = v ? m1 : m0;
      __m512 y = _mm512_mul_ps(va, acc[r][v]);
      if (beta != 0.0f) y = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, c), y);
      _mm512_mask_storeu_ps(c, m, y);
    }
  }
}

/* Rows of C in tiles of 4 (the last 1-3 apart), columns in tiles of 32 or 16. */
static inline __attribute__((always_inline)) INTRUS_AVX512 void
small_body(const bool ta, int M, int N, int K, float alpha, const float *A, int lda,
           const float *B, int ldb, float beta, float *C, int ldc) {
  for (int j0 = 0; j0 < N; j0 += 32) {
    const int nc = N - j0 < 32 ? N - j0 : 32;
    const float *b = B + j0;
    for (int i0 = 0; i0 < M; i0 += 4) {
      const float *a = ta ? A + i0 : A + (size_t)i0 * lda;
      float *c = C + (size_t)i0 * ldc + j0;
      const int mr = M - i0 < 4 ? M - i0 : 4;
#define SMALL_CASE(R)                                                                   \
  case R:                                                                               \
    if (nc > 16) small_tile(R, 2, K, alpha, a, lda, ta, b, ldb, beta, c, ldc, nc);      \
    else small_tile(R, 1, K, alpha, a, lda, ta, b, ldb, beta, c, ldc, nc);              \
    break;
      switch (mr) {
        SMALL_CASE(4)
        SMALL_CASE(3)
        SMALL_CASE(2)
        SMALL_CASE(1)
      }
#undef SMALL_CASE
    }
  }
}

/* bt[K, N] (row stride N) = B[N, K]^T (row stride ldb), in 16 x 16 blocks transposed in
 * registers: the scalar loop's strided stores cost three times the product itself for
 * attention's 20 x 64 keys (cross-attention transposes its sentence's memory keys for
 * every state and head). */
static INTRUS_AVX512 void transpose_avx512(const float *B, int ldb, int N, int K, float *bt) {
  for (int j0 = 0; j0 < N; j0 += 16) {
    const int nr = N - j0 < 16 ? N - j0 : 16;
    const __mmask16 rows = cols_mask(nr);
    for (int k0 = 0; k0 < K; k0 += 16) {
      const int kc = K - k0 < 16 ? K - k0 : 16;
      const __mmask16 cols = cols_mask(kc);
      __m512 r[16], t[16];
      /* r[i] = B[j0 + i][k0 .. k0+16) (zero past the edges) */
      for (int i = 0; i < 16; i++)
        r[i] = i < nr ? _mm512_maskz_loadu_ps(cols, B + (size_t)(j0 + i) * ldb + k0)
                      : _mm512_setzero_ps();
      /* Pairs of rows interleaved within 128-bit blocks, then pairs of pairs: u[4g + c]
       * holds, in block L, column 4L + c of rows 4g .. 4g+3. */
      for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
      }
      for (int g = 0; g < 4; g++) {
        const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 2]);
        const __m512d c = _mm512_castps_pd(t[4 * g + 1]), d = _mm512_castps_pd(t[4 * g + 3]);
        r[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
        r[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        r[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
        r[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
      }
      /* Column 4L + c gathers block L of u[c], u[4 + c], u[8 + c], u[12 + c]. */
      for (int c = 0; c < 4; c++) {
        const __m512 x0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44);
        const __m512 x1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xee);
        const __m512 y0 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44);
        const __m512 y1 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xee);
        t[c] = _mm512_shuffle_f32x4(x0, y0, 0x88);
        t[4 + c] = _mm512_shuffle_f32x4(x0, y0, 0xdd);
        t[8 + c] = _mm512_shuffle_f32x4(x1, y1, 0x88);
        t[12 + c] = _mm512_shuffle_f32x4(x1, y1, 0xdd);
      }
      for (int k = 0; k < kc; k++)
        _mm512_mask_storeu_ps(bt + (size_t)(k0 + k) * N + j0, rows, t[k]);
    }
  }
}

static INTRUS_AVX512 void small_avx512(bool ta, int M, int N, int K, float alpha,
                                       const float *A, int lda, const float *B, int ldb,
                                       float beta, float *C, int ldc) {
  if (ta) small_body(true, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  else small_body(false, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
#endif

bool intrus_gemm_small(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                       const float *A, int lda, const float *B, int ldb, float beta, float *C,
                       int ldc) {
#if INTRUS_X86_DISPATCH
  if (!small_enabled || (double)M * N * K > SMALL_MAX_MACS || intrus_x86_level() < 2)
    return false;
  if (!trans_b) {
    small_avx512(trans_a, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return true;
  }
  if ((long)K * N > SMALL_MAX_BT) return false;
  /* op(B) = B^T, [K, N]: rows of B become columns of the buffer. */
  float bt[SMALL_MAX_BT];
  transpose_avx512(B, ldb, N, K, bt);
  small_avx512(trans_a, M, N, K, alpha, A, lda, bt, N, beta, C, ldc);
  return true;
#else
  (void)trans_a, (void)trans_b, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda;
  (void)B, (void)ldb, (void)beta, (void)C, (void)ldc;
  return false;
#endif
}

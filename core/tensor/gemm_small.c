/* Products too small for sgemm's fixed cost per call: attention's per-state pieces.
 *
 * Why: an insertion model attends within each partial output, so a training step of
 * 200 sentences issues some 300,000 products of about 12 x 12 x 64 (scores and
 * weighted sums, forward and backward, per state and head), and search some 60,000 per
 * batch. Each cblas_sgemm call locks a buffer, packs both operands and dispatches
 * (pthread_mutex_lock, sgemm_oncopy and sgemm_itcopy showed in perf) for as little as
 * 20,000 multiply-adds. Here a register tile reads A and B in place (B transposed into
 * a stack buffer first when the product wants B^T), by intrus_x86_level():
 *  - AVX-512: 4 x 32 tiles (8 accumulators of 16 floats), edge columns by masked loads
 *    and stores; B^T in 16 x 16 blocks transposed in registers;
 *  - AVX2: 6 x 16 tiles (12 accumulators of 8 floats, two B vectors and a broadcast:
 *    15 of the 16 registers). No masked loads or stores (AMD leaves faults on their
 *    masked-off lanes to the implementation): B^T goes to a buffer whose rows are
 *    padded with zeros to a multiple of 8 columns (8 x 8 blocks transposed in
 *    registers, edge blocks by scalar copies), and a plain B whose N is no multiple of
 *    8 has its last partial vector of columns copied to a zero-padded [K, 8] strip;
 *    partial vectors of C are read and written in 128-, 64- and 32-bit pieces.
 *
 * Each element of C is one ascending FMA chain over k from 0, then alpha * sum, then
 * + beta * C by one more FMA (when beta != 0), on the calling thread: results do not
 * depend on the thread count, and the AVX2 and AVX-512 kernels give the same bits.
 * With intrus_x86_level() 0 (or after intrus_blas_set_small(false)) intrus_gemm calls
 * OpenBLAS as before; so it does for a B^T of more than SMALL_MAX_BT floats (at level 1
 * counting the padding), and at level 1 for a plain B of more than SMALL_MAX_BT / 8
 * rows whose N is no multiple of 8 (the strip would not fit). */
#include <stdint.h>

#include "intrus/blas.h"
#include "ops_internal.h"

#if INTRUS_X86_DISPATCH
#include <immintrin.h>

#include "avx2_part.h"
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

/* ---- AVX2 + FMA ------------------------------------------------------------------ */

#define MR2 6 /* rows per AVX2 tile */

/* C[0 .. mr, 0 .. nc) with mr <= 6, 8 (nv - 1) < nc <= 8 nv, nv <= 2. Columns 0 .. 8 of
 * row k of B are at B + k ldb (read when nv = 2), those of the last vector at L + k ldl
 * (B's own or a zero-padded strip's: 8 floats readable either way). mr, nv and ta are
 * constants at every call site, so the loops unroll and the accumulators stay in
 * registers. */
static inline __attribute__((always_inline)) INTRUS_AVX2 void
small_tile2(const int mr, const int nv, int K, float alpha, const float *A, int lda, bool ta,
            const float *B, int ldb, const float *L, int ldl, float beta, float *C, int ldc,
            int nc) {
  __m256 acc[MR2][2];
#pragma GCC unroll 6
  for (int r = 0; r < MR2; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int k = 0; k < K; k++) {
    const __m256 bl = _mm256_loadu_ps(L + (size_t)k * ldl);
    const __m256 b0 = nv > 1 ? _mm256_loadu_ps(B + (size_t)k * ldb) : bl;
#pragma GCC unroll 6
    for (int r = 0; r < MR2; r++) {
      if (r >= mr) break;
      const __m256 x = _mm256_set1_ps(ta ? A[(size_t)k * lda + r] : A[(size_t)r * lda + k]);
      acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
      if (nv > 1) acc[r][1] = _mm256_fmadd_ps(x, bl, acc[r][1]);
    }
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
  for (int r = 0; r < MR2; r++) {
    if (r >= mr) break;
    for (int v = 0; v < nv; v++) {
      float *c = C + (size_t)r * ldc + 8 * v;
      const int w = nc - 8 * v; /* columns of this vector: 8 or more is a whole one */
      __m256 y = _mm256_mul_ps(va, acc[r][v]);
      if (w >= 8) {
        if (beta != 0.0f) y = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), y);
        _mm256_storeu_ps(c, y);
      } else {
        if (beta != 0.0f) y = _mm256_fmadd_ps(vb, load_part(c, w), y);
        store_part(c, y, w);
      }
    }
  }
}

/* Rows of C in tiles of 6 (the last 1-5 apart), columns in tiles of 16 or 8. B [K, N]
 * with row stride ldb; strip: the last partial vector's columns (those from
 * N - N % 8), [K, 8] zero-padded, or NULL when B's rows can be read in whole vectors
 * up to a multiple of 8 columns (N % 8 == 0, or a zero-padded B^T buffer). */
static inline __attribute__((always_inline)) INTRUS_AVX2 void
small_body2(const bool ta, int M, int N, int K, float alpha, const float *A, int lda,
            const float *B, int ldb, const float *strip, float beta, float *C, int ldc) {
  for (int j0 = 0; j0 < N; j0 += 16) {
    const int nc = N - j0 < 16 ? N - j0 : 16, nv = nc > 8 ? 2 : 1;
    const float *b = B + j0;
    /* The last vector: from the strip when it is the partial one. */
    const bool part = strip && nc < 8 * nv;
    const float *l = part ? strip : b + 8 * (nv - 1);
    const int ldl = part ? 8 : ldb;
    for (int i0 = 0; i0 < M; i0 += MR2) {
      const float *a = ta ? A + i0 : A + (size_t)i0 * lda;
      float *c = C + (size_t)i0 * ldc + j0;
      const int mr = M - i0 < MR2 ? M - i0 : MR2;
#define SMALL_CASE2(R)                                                                    \
  case R:                                                                                 \
    if (nv > 1) small_tile2(R, 2, K, alpha, a, lda, ta, b, ldb, l, ldl, beta, c, ldc, nc); \
    else small_tile2(R, 1, K, alpha, a, lda, ta, b, ldb, l, ldl, beta, c, ldc, nc);        \
    break;
      switch (mr) {
        SMALL_CASE2(6)
        SMALL_CASE2(5)
        SMALL_CASE2(4)
        SMALL_CASE2(3)
        SMALL_CASE2(2)
        SMALL_CASE2(1)
      }
#undef SMALL_CASE2
    }
  }
}

static INTRUS_AVX2 void small_avx2(bool ta, int M, int N, int K, float alpha, const float *A,
                                   int lda, const float *B, int ldb, const float *strip,
                                   float beta, float *C, int ldc) {
  if (ta) small_body2(true, M, N, K, alpha, A, lda, B, ldb, strip, beta, C, ldc);
  else small_body2(false, M, N, K, alpha, A, lda, B, ldb, strip, beta, C, ldc);
}

/* bt[K, ldt] = B[N, K]^T (row stride ldb), ldt = N rounded up to a multiple of 8, the
 * columns from N on zero: whole 8 x 8 blocks transposed in registers, the others (the
 * last rows and columns) copied one float at a time. */
static INTRUS_AVX2 void transpose_avx2(const float *B, int ldb, int N, int K, float *bt,
                                       int ldt) {
  for (int j0 = 0; j0 < ldt; j0 += 8) {
    int k0 = 0;
    if (j0 + 8 <= N)
      for (; k0 + 8 <= K; k0 += 8) {
        __m256 r[8], t[8], u[8];
        for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(B + (size_t)(j0 + i) * ldb + k0);
        /* t[2g], t[2g+1]: rows 2g and 2g+1 interleaved within each 128-bit half */
        for (int g = 0; g < 4; g++) {
          t[2 * g] = _mm256_unpacklo_ps(r[2 * g], r[2 * g + 1]);
          t[2 * g + 1] = _mm256_unpackhi_ps(r[2 * g], r[2 * g + 1]);
        }
        /* u[4h + c]: in half L, column 4L + c of rows 4h .. 4h+3 */
        for (int h = 0; h < 2; h++) {
          u[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
          u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xee);
          u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
          u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xee);
        }
        /* column c (c < 4): the low halves of u[c], u[4 + c]; column 4 + c: the high */
        for (int c = 0; c < 4; c++) {
          _mm256_storeu_ps(bt + (size_t)(k0 + c) * ldt + j0,
                           _mm256_permute2f128_ps(u[c], u[4 + c], 0x20));
          _mm256_storeu_ps(bt + (size_t)(k0 + 4 + c) * ldt + j0,
                           _mm256_permute2f128_ps(u[c], u[4 + c], 0x31));
        }
      }
    for (; k0 < K; k0++)
      for (int j = j0; j < j0 + 8; j++)
        bt[(size_t)k0 * ldt + j] = j < N ? B[(size_t)j * ldb + k0] : 0.0f;
  }
}

/* strip[K, 8] = columns n0 .. N of B [K, N] (row stride ldb, N - n0 < 8), zero after. */
static void copy_strip(const float *B, int ldb, int n0, int N, int K, float *strip) {
  for (int k = 0; k < K; k++)
    for (int j = 0; j < 8; j++)
      strip[(size_t)k * 8 + j] = n0 + j < N ? B[(size_t)k * ldb + n0 + j] : 0.0f;
}
#endif

bool intrus_gemm_small(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                       const float *A, int lda, const float *B, int ldb, float beta, float *C,
                       int ldc) {
#if INTRUS_X86_DISPATCH
  if (!small_enabled || (double)M * N * K > SMALL_MAX_MACS) return false;
  const int level = intrus_x86_level();
  if (level >= 2) {
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
  }
  if (level < 1) return false;
  if (!trans_b) {
    if (N % 8 == 0) {
      small_avx2(trans_a, M, N, K, alpha, A, lda, B, ldb, NULL, beta, C, ldc);
      return true;
    }
    if ((long)K * 8 > SMALL_MAX_BT) return false;
    float strip[SMALL_MAX_BT];
    copy_strip(B, ldb, N - N % 8, N, K, strip);
    small_avx2(trans_a, M, N, K, alpha, A, lda, B, ldb, strip, beta, C, ldc);
    return true;
  }
  const int ldt = (N + 7) / 8 * 8;
  if ((long)K * ldt > SMALL_MAX_BT) return false;
  float bt[SMALL_MAX_BT];
  transpose_avx2(B, ldb, N, K, bt, ldt);
  small_avx2(trans_a, M, N, K, alpha, A, lda, bt, ldt, NULL, beta, C, ldc);
  return true;
#else
  (void)trans_a, (void)trans_b, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda;
  (void)B, (void)ldb, (void)beta, (void)C, (void)ldc;
  return false;
#endif
}

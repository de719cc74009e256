/* Partial AVX2 vectors at the edge of a matrix, read and written piecewise so that
 * nothing past the n floats asked for is touched (the small- and packed-product
 * kernels, core/tensor/gemm_small.c and gemm_packed.c). Include after <immintrin.h>,
 * under INTRUS_X86_DISPATCH. */
#ifndef INTRUS_AVX2_PART_H
#define INTRUS_AVX2_PART_H

#include "ops_internal.h"

/* The first n (0 .. 4) floats at p, zero past them, read without touching p[n ..]. */
static inline __attribute__((always_inline)) INTRUS_AVX2 __m128 load4_part(const float *p,
                                                                            int n) {
  const __m128 z = _mm_setzero_ps();
  switch (n) {
  case 4: return _mm_loadu_ps(p);
  case 3: return _mm_movelh_ps(_mm_loadl_pi(z, (const __m64 *)p), _mm_load_ss(p + 2));
  case 2: return _mm_loadl_pi(z, (const __m64 *)p);
  case 1: return _mm_load_ss(p);
  default: return z;
  }
}

/* The first n (0 .. 8) floats at p, zero past them, read without touching p[n ..]. */
static inline __attribute__((always_inline)) INTRUS_AVX2 __m256 load_part(const float *p,
                                                                           int n) {
  return n >= 4 ? _mm256_set_m128(load4_part(p + 4, n - 4), _mm_loadu_ps(p))
                : _mm256_castps128_ps256(load4_part(p, n));
}

/* Stores the first n (0 .. 8) lanes of y to p, nothing past them (AMD leaves faults on
 * the masked-off lanes of AVX's masked stores to the implementation, so no maskstore). */
static inline __attribute__((always_inline)) INTRUS_AVX2 void store_part(float *p, __m256 y,
                                                                          int n) {
  __m128 x = _mm256_castps256_ps128(y);
  if (n >= 4) {
    _mm_storeu_ps(p, x);
    x = _mm256_extractf128_ps(y, 1);
    p += 4, n -= 4;
  }
  if (n >= 2) {
    _mm_storel_pi((__m64 *)p, x);
    x = _mm_movehl_ps(x, x);
    p += 2, n -= 2;
  }
  if (n >= 1) _mm_store_ss(p, x);
}

#endif

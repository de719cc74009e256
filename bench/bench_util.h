/* What the benchmarks share: a monotonic clock and the cblas_sgemm peak they report
 * their fractions against (measured in the same run, under the same environment). */
#ifndef INTRUS_BENCH_UTIL_H
#define INTRUS_BENCH_UTIL_H

#include <cblas.h>
#include <stdlib.h>
#include <time.h>

#include "intrus/blas.h"
#include "intrus/plugin.h"
#include "intrus/rng.h"

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* intrus runs OpenBLAS single-threaded and splits products itself (core/tensor/blas.c); the
 * reference products below are OpenBLAS's own, threaded over as many threads as intrus
 * uses, and on (true) / off (false) brackets them. */
static inline void raw_sgemm_threads(int on) {
  openblas_set_num_threads(on ? intrus_blas_threads() : 1);
}

/* GFLOP/s of the best of four 2048^3 products by OpenBLAS, threaded its own way. */
static inline double sgemm_peak(void) {
  const int n = 2048;
  float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n);
  float *c = malloc(sizeof(float) * n * n);
  for (int i = 0; i < n * n; i++) a[i] = b[i] = (float)(i % 7) * 0.1f;
  double best = 1e30;
  raw_sgemm_threads(1);
  for (int r = 0; r < 4; r++) {
    double t0 = now_s();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    double t = now_s() - t0;
    if (t < best) best = t;
  }
  raw_sgemm_threads(0);
  free(a);
  free(b);
  free(c);
  return 2.0 * n * n * n / best / 1e9;
}

/* The benchmarks' fixed training batch: B sentence pairs of L random tokens each from
 * [4, V) (ids below 4 are the special tokens), the same for every run (seed 3). */
struct bench_batch {
  int32_t *src, *tgt;
  int *lens;
  struct intrus_src_batch sb;
  struct intrus_tgt_batch tb;
};
static inline void bench_batch_make(struct bench_batch *b, int B, int L, int V) {
  b->src = malloc(sizeof(int32_t) * B * L);
  b->tgt = malloc(sizeof(int32_t) * B * L);
  b->lens = malloc(sizeof(int) * B);
  struct intrus_rng rng;
  intrus_rng_seed(&rng, 3);
  for (int i = 0; i < B * L; i++) {
    b->src[i] = 4 + (int32_t)intrus_rng_below(&rng, (uint64_t)(V - 4));
    b->tgt[i] = 4 + (int32_t)intrus_rng_below(&rng, (uint64_t)(V - 4));
  }
  for (int i = 0; i < B; i++) b->lens[i] = L;
  b->sb = (struct intrus_src_batch){.batch = B, .len = L, .tokens = b->src, .lens = b->lens};
  b->tb = (struct intrus_tgt_batch){.batch = B, .len = L, .tokens = b->tgt, .lens = b->lens};
}
static inline void bench_batch_free(struct bench_batch *b) {
  free(b->src);
  free(b->tgt);
  free(b->lens);
}

#endif

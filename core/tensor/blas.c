/* The only file that calls BLAS.
 *
 * Threads: OpenBLAS runs single-threaded and intrus splits each product across the
 * OpenMP threads itself. With two thread pools (OpenBLAS's and OpenMP's) on the same
 * cores, whichever pool just finished spins or yields while the other works; on a
 * virtual machine every sched_yield is a trap, and bench/bench_train lost a third of its
 * throughput to it. One pool, shared by the products and the element-wise ops, has
 * nothing to fight. Each thread computes a block of rows (or columns) of C with its own
 * single-threaded cblas_sgemm. As with OpenBLAS's own threading, where the blocks end
 * decides which micro-kernel computes an element, so the last bits of a product depend
 * on the thread count (the same thread count gives the same bits). */
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <cblas.h>
#include <pthread.h>
#include <stdint.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "intrus/blas.h"
#include "ops_internal.h"

/* Products may be issued from inside parallel regions (attention's per-head pieces),
 * so the counter is updated atomically. */
static double flops_issued;
static int gemm_threads;
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;

/* Products with fewer multiply-adds than this run on the calling thread alone: waking a
 * second thread costs more than it saves (OpenBLAS draws the line at 2^18 as well). */
#define SPLIT_MIN_MACS (1 << 18)
/* Blocks of C rows/columns are multiples of this, the micro-kernels' widest tile. */
#define SPLIT_ALIGN 16

double intrus_blas_flops(void) {
  double f;
#ifdef _OPENMP
#pragma omp atomic read
#endif
  f = flops_issued;
  return f;
}

static void threads_init(void) {
#ifdef _OPENMP
  gemm_threads = omp_get_max_threads();
#else
  gemm_threads = 1;
#endif
  openblas_set_num_threads(1);
}

static int threads_now(void) {
  pthread_once(&threads_once, threads_init);
  return gemm_threads;
}

void intrus_blas_count_flops(double f) {
#ifdef _OPENMP
#pragma omp atomic
#endif
  flops_issued += f;
}

static void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                  const float *A, int lda, const float *B, int ldb, float beta, float *C,
                  int ldc) {
  if (N == 1) {
    /* A matrix times a vector (an insertion model's position logits and their weight
     * gradient): sgemm would pack all of A for one column. beta 0 must not read C. */
    if (beta == 0.0f)
      for (int i = 0; i < M; i++) C[(size_t)i * ldc] = 0.0f;
    if (K == 0) { /* sgemv returns at once when A has no columns, without scaling y */
      for (int i = 0; i < M; i++) C[(size_t)i * ldc] *= beta;
      return;
    }
    cblas_sgemv(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_a ? K : M,
                trans_a ? M : K, alpha, A, lda, B, trans_b ? 1 : ldb, beta, C, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C,
              ldc);
}

/* Block t of nt of [0, n), boundaries rounded to SPLIT_ALIGN. */
static void split_range(int n, int t, int nt, int *lo, int *hi) {
  int64_t a = (int64_t)n * t / nt, b = (int64_t)n * (t + 1) / nt;
  if (t > 0) a = (a + SPLIT_ALIGN / 2) / SPLIT_ALIGN * SPLIT_ALIGN;
  if (t + 1 < nt) b = (b + SPLIT_ALIGN / 2) / SPLIT_ALIGN * SPLIT_ALIGN;
  if (a > n) a = n;
  if (b > n) b = n;
  *lo = (int)a;
  *hi = (int)(b > a ? b : a);
}

/* Thread t's share: a block of rows of C when M is the longer side, else of columns. */
static void gemm_part(int t, int nt, bool trans_a, bool trans_b, int M, int N, int K,
                      float alpha, const float *A, int lda, const float *B, int ldb,
                      float beta, float *C, int ldc) {
  int lo, hi;
  if (M >= N) {
    split_range(M, t, nt, &lo, &hi);
    if (hi > lo)
      sgemm(trans_a, trans_b, hi - lo, N, K, alpha,
            trans_a ? A + lo : A + (size_t)lo * lda, lda, B, ldb, beta,
            C + (size_t)lo * ldc, ldc);
  } else {
    split_range(N, t, nt, &lo, &hi);
    if (hi > lo)
      sgemm(trans_a, trans_b, M, hi - lo, K, alpha, A, lda,
            trans_b ? B + (size_t)lo * ldb : B + lo, ldb, beta, C + lo, ldc);
  }
}

bool intrus_gemm_run_alone(int nt, double macs) {
#ifdef _OPENMP
  return nt < 2 || macs < SPLIT_MIN_MACS || omp_in_parallel();
#else
  (void)nt;
  (void)macs;
  return true;
#endif
}

void intrus_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta,
                 float *C, int ldc) {
  if (M == 0 || N == 0) return;
  const double macs = (double)M * N * K;
  const int nt = threads_now();
  intrus_blas_count_flops(2.0 * macs);
  if (intrus_gemm_small(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
    return;
  const bool alone = intrus_gemm_run_alone(nt, macs);
  (void)alone; /* read by the pragma only */
  /* Alone, the one thread's share is the whole product. */
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (!alone)
  gemm_part(omp_get_thread_num(), omp_get_num_threads(), trans_a, trans_b, M, N, K, alpha,
            A, lda, B, ldb, beta, C, ldc);
#else
  gemm_part(0, 1, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

void intrus_gemm_batched(int count, bool trans_a, bool trans_b, int M, int N, int K,
                         float alpha, const float *A, int lda, long stride_a,
                         const float *B, int ldb, long stride_b, float beta, float *C,
                         int ldc, long stride_c) {
  if (count <= 0 || M == 0 || N == 0) return;
  const double macs = (double)M * N * K;
  const int nt = threads_now();
  /* Whole products per thread when they divide evenly (or are many): no product is cut
   * into thin blocks, and there is one parallel region for the lot. */
  if (count >= 4 * nt || (count >= nt && count % nt == 0)) {
    intrus_blas_count_flops(2.0 * macs * count);
    const bool alone = intrus_gemm_run_alone(nt, macs * count);
    (void)alone; /* read by the pragma only */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt) if (!alone)
#endif
    for (int i = 0; i < count; i++)
      sgemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb,
            beta, C + i * stride_c, ldc);
    return;
  }
  for (int i = 0; i < count; i++)
    intrus_gemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b,
                ldb, beta, C + i * stride_c, ldc);
}

const char *intrus_blas_corename(void) { return openblas_get_corename(); }

const char *intrus_blas_better_coretype(void) {
#if INTRUS_X86_DISPATCH
  /* The cores OpenBLAS's dynamic build falls back to when it does not know the CPU's
   * model (0.3.21 on a model-207 Xeon: "Prescott", SSE3 kernels at a third of the
   * AVX-512 kernels' speed); a named modern core is OpenBLAS's own choice, kept. */
  static const char *const fallbacks[] = {"Prescott", "Core2", "Penryn", "Dunnington",
                                          "Nehalem", "Katmai", "Coppermine", "Northwood",
                                          "Banias", "Atom", NULL};
  const char *core = openblas_get_corename();
  bool fallback = false;
  for (int i = 0; core && fallbacks[i]; i++)
    if (!strcasecmp(core, fallbacks[i])) fallback = true;
  if (!fallback) return NULL;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return NULL;
}

void intrus_blas_restart_better(char **argv) {
  const char *better = intrus_blas_better_coretype();
  if (!better || getenv("OPENBLAS_CORETYPE") || getenv("INTRUS_BLAS_RESTARTED")) return;
  setenv("OPENBLAS_CORETYPE", better, 1);
  setenv("INTRUS_BLAS_RESTARTED", intrus_blas_corename(), 1);
  execv("/proc/self/exe", argv);
  /* No /proc: go on with OpenBLAS's choice. */
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("INTRUS_BLAS_RESTARTED");
}
int intrus_blas_threads(void) { return threads_now(); }
void intrus_blas_set_threads(int n) {
  threads_now();
  gemm_threads = n > 0 ? n : 1;
}

/* ---- which hand-written kernels run (ops_internal.h) ---------------------------- */

int intrus_x86_cpu_level(void) {
#if INTRUS_X86_DISPATCH
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) return 2;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
#endif
  return 0;
}

const char *intrus_x86_level_name(int level) {
  return level >= 2 ? "avx512" : level == 1 ? "avx2" : "generic";
}

/* -1 until first asked; racing first calls compute the same value. */
static int isa_level = -1;

int intrus_x86_level(void) {
  int level = __atomic_load_n(&isa_level, __ATOMIC_RELAXED);
  if (level >= 0) return level;
  level = intrus_x86_cpu_level();
  const char *want = getenv("INTRUS_ISA");
  if (want && *want) {
    int w = -1;
    for (int l = 0; l <= 2; l++)
      if (!strcmp(want, intrus_x86_level_name(l))) w = l;
    if (w < 0)
      fprintf(stderr, "intrus: warning: INTRUS_ISA=%s is not generic, avx2 or avx512; using %s\n",
              want, intrus_x86_level_name(level));
    else if (w > level)
      fprintf(stderr, "intrus: warning: INTRUS_ISA=%s: this CPU (or build) has only %s\n", want,
              intrus_x86_level_name(level));
    else
      level = w;
  }
  __atomic_store_n(&isa_level, level, __ATOMIC_RELAXED);
  return level;
}

void intrus_x86_level_set(int level) {
  int cpu = intrus_x86_cpu_level();
  __atomic_store_n(&isa_level, level < 0 ? -1 : level > cpu ? cpu : level, __ATOMIC_RELAXED);
}

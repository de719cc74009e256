/* Internal to the engine: one backward function per op, called by intrus_backward()'s
 * switch. Each reads out->grad and accumulates (+=) into the grads of out->src[i] that
 * require grad, fetching them with intrus_tensor_grad(). */
#ifndef INTRUS_OPS_INTERNAL_H
#define INTRUS_OPS_INTERNAL_H

#include <stdint.h>

#include "intrus/tensor.h"

void intrus_matmul_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_add_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_mul_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_scale_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_relu_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_gelu_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_elu_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_dropout_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_embedding_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_layer_norm_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_softmax_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_log_softmax_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_cross_entropy_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_logsumexp_masked_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_sum_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_mean_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_weighted_mean_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_reshape_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_permute_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_concat_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_conv2d_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_maxpool2d_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_attention_backward(intrus_ctx *ctx, intrus_tensor *out);
void intrus_insertion_loss_backward(intrus_ctx *ctx, intrus_tensor *out);

/* A tensor's shape as "[2,3,4]" into buf, for the ops' error messages. Returns buf. */
const char *intrus_shape_str(const intrus_tensor *t, char *buf, size_t size);

/* y = erf(x) over n elements, as gelu computes it on this CPU (vectorised, within 1e-7
 * relative of erf), exposed for test_ops_a's accuracy check. */
void intrus_erf_n(float *y, const float *x, long n);

/* Loops above this many elements run under OpenMP. Below it the fork/join costs more
 * than it saves. */
#define INTRUS_OMP_MIN 32768
/* The same for loops that only stream memory, a few instructions per element (add,
 * scale, relu, most backward accumulations): a fork/join with passive waits costs
 * about 6 us, in which one thread streams ~50K elements from cache, so splitting pays
 * only from about twice that on. */
#define INTRUS_OMP_MIN_STREAM 131072

/* ---- OpenMP and vectorisation helpers, shared by the core/tensor/ops_*.c files ----------- */

/* Without OpenMP the pragmas would be unknown ones and fail -Werror builds, so they go
 * through macros that vanish there. Each parallelises only above a threshold count of
 * the elements the loop touches (n; not its iterations):
 *  OMP_FOR(n)              parallel for, schedule(static), above INTRUS_OMP_MIN
 *  OMP_FOR2(n)             the same over two perfectly nested loops (collapse(2))
 *  OMP_FOR_SIMD(n)         parallel for simd, above INTRUS_OMP_MIN_STREAM: for flat
 *                          streaming loops. GCC's -O2 cost model vectorises only loops
 *                          whose trip count is a known multiple of the vector length;
 *                          "simd" asks for it regardless, and asserts that iterations
 *                          are independent (no aliasing checks needed)
 *  OMP_SIMD                simd only, for an inner loop of a parallel one
 *  OMP_FOR_DYNAMIC(n)      parallel for, above INTRUS_OMP_MIN, handing out iterations
 *                          one at a time: for pieces of work of uneven size
 *  OMP_PARALLEL(n)         a parallel region, above INTRUS_OMP_MIN, whose threads
 *                          split [0, n) with intrus_omp_range
 *  OMP_PARALLEL_STREAM(n)  the same above INTRUS_OMP_MIN_STREAM
 * The "if" only ever gates the parallel part: an unmodified "if" on a combined
 * construct with simd would also turn vectorisation off below the threshold.
 * Branches inside simd loops must be written as selects (see intrus_sel) to vectorise:
 * GCC will not speculate floating-point arithmetic out of a branch. */
#ifdef _OPENMP
#include <omp.h>
#define INTRUS_PRAGMA(x) _Pragma(#x)
#define OMP_FOR(n) INTRUS_PRAGMA(omp parallel for schedule(static) if ((n) > INTRUS_OMP_MIN))
#define OMP_FOR2(n) \
  INTRUS_PRAGMA(omp parallel for collapse(2) schedule(static) if ((n) > INTRUS_OMP_MIN))
#define OMP_FOR_SIMD(n)                                    \
  INTRUS_PRAGMA(omp parallel for simd schedule(static)     \
                    if (parallel : (n) > INTRUS_OMP_MIN_STREAM))
#define OMP_SIMD INTRUS_PRAGMA(omp simd)
#define OMP_FOR_DYNAMIC(n) \
  INTRUS_PRAGMA(omp parallel for schedule(dynamic, 1) if ((n) > INTRUS_OMP_MIN))
#define OMP_PARALLEL(n) INTRUS_PRAGMA(omp parallel if ((n) > INTRUS_OMP_MIN))
#define OMP_PARALLEL_STREAM(n) INTRUS_PRAGMA(omp parallel if ((n) > INTRUS_OMP_MIN_STREAM))
#else
#define OMP_FOR(n)
#define OMP_FOR2(n)
#define OMP_FOR_SIMD(n)
#define OMP_SIMD
#define OMP_FOR_DYNAMIC(n)
#define OMP_PARALLEL(n)
#define OMP_PARALLEL_STREAM(n)
#endif

/* The share [*lo, *hi) of [0, n) of the calling thread of an OMP_PARALLEL region (all
 * of it outside one): contiguous parts in thread order, cut at multiples of 16
 * elements so that no two threads write into the same 64-byte line. */
static inline void intrus_omp_range(long n, long *lo, long *hi) {
#ifdef _OPENMP
  long nt = omp_get_num_threads(), t = omp_get_thread_num();
#else
  long nt = 1, t = 0;
#endif
  long per = ((n + nt - 1) / nt + 15) & ~15L, a = t * per;
  *lo = a < n ? a : n;
  *hi = a + per < n ? a + per : n;
}

/* Compute-bound loops are compiled for several ISAs, and one is picked at run time by
 * intrus_x86_level() (the CPU's widest unless INTRUS_ISA or intrus_x86_level_set asks
 * for a narrower one), on x86-64 Linux with GCC or clang. INTRUS_X86_DISPATCH (1 or 0)
 * says whether a file may define such variants; they come in two kinds:
 *  - a file's own kernels under INTRUS_AVX512 / INTRUS_AVX2 (the packed and small
 *    products with intrinsics, gelu with fused multiply-adds through fmaf): their
 *    results depend on the level, as sgemm's do on the CPU, never on the thread count;
 *  - plain C loops defined once through INTRUS_ISA_VARIANTS(_VOID) below (softmax
 *    rows, layer norm rows, dropout, attention's softmax pieces), compiled three times
 *    from one body. The file is C11 (-std=c11), in which GCC contracts no a * b + c
 *    into a fused multiply-add (and clang is told the same below), so the variants
 *    differ only where the vectoriser's width changes an order: simd reductions
 *    (SIMD_REDUCE, SIMD_MAX) sum 16, 8 or 4 lanes apart and combine them at the end,
 *    so a row's sums (intrus_row_sumexp's exponentials, attention's softmax rows and
 *    their gradient's dot products) may differ in their last bits between levels.
 *    Element-wise work (dropout's integer hash, the softmax outputs given a row's
 *    log-sum-exp) and layer norm's sums over 8 fixed double lanes give the same bits
 *    at every level.
 * Each call pays a call and a dispatch: call them on a whole row or range.
 * INTRUS_NO_ISA_DISPATCH builds the portable variants only (the fuzz build, under
 * clang's sanitizers). */
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && \
    defined(__has_attribute) && !defined(INTRUS_NO_ISA_DISPATCH)
#if __has_attribute(target)
#define INTRUS_X86_DISPATCH 1
#endif
#endif
#ifndef INTRUS_X86_DISPATCH
#define INTRUS_X86_DISPATCH 0
#endif
#if defined(__clang__)
/* Clang contracts a * b + c within an expression by default (-ffp-contract=on); GCC in
 * ISO C mode does not. Off, so that a variant compiled with FMA computes what the
 * portable one does. */
#pragma STDC FP_CONTRACT OFF
#endif
#if INTRUS_X86_DISPATCH
/* For a file's own variants: level 2 and level 1 of intrus_x86_level(). The AVX2 ones
 * must use no AVX-512 instruction: valgrind's CPU, for one, has AVX2 and FMA only. */
#define INTRUS_AVX512 __attribute__((target("avx512f,fma")))
#define INTRUS_AVX2 __attribute__((target("avx2,fma")))
#endif

/* INTRUS_ISA_VARIANTS(LINK, RET, NAME, PARAMS, ARGS) defines the function
 * `LINK RET NAME PARAMS` (LINK: static, or empty for an external one) that runs
 * NAME##_body ARGS, a ROW_INLINE function the file defines first, compiled as
 * NAME##_avx512, NAME##_avx2 and NAME##_generic, and picked on each call by
 * intrus_x86_level() (one relaxed atomic load). ARGS names PARAMS' parameters in
 * parentheses. INTRUS_ISA_VARIANTS_VOID(LINK, NAME, PARAMS, ARGS) is the same for a
 * function returning nothing. Without INTRUS_X86_DISPATCH, NAME runs the body
 * directly. */
#if INTRUS_X86_DISPATCH
#define INTRUS_ISA_VARIANTS_(LINK, RET, RETURN, NAME, PARAMS, ARGS)   \
  INTRUS_AVX512 static RET NAME##_avx512 PARAMS { RETURN NAME##_body ARGS; } \
  INTRUS_AVX2 static RET NAME##_avx2 PARAMS { RETURN NAME##_body ARGS; }     \
  static RET NAME##_generic PARAMS { RETURN NAME##_body ARGS; }              \
  LINK RET NAME PARAMS {                                                     \
    const int isa_level_ = intrus_x86_level();                               \
    if (isa_level_ >= 2) {                                                   \
      RETURN NAME##_avx512 ARGS;                                             \
    } else if (isa_level_ == 1) {                                            \
      RETURN NAME##_avx2 ARGS;                                               \
    } else {                                                                 \
      RETURN NAME##_generic ARGS;                                            \
    }                                                                        \
  }
#else
#define INTRUS_ISA_VARIANTS_(LINK, RET, RETURN, NAME, PARAMS, ARGS) \
  LINK RET NAME PARAMS { RETURN NAME##_body ARGS; }
#endif
#define INTRUS_ISA_VARIANTS(LINK, RET, NAME, PARAMS, ARGS) \
  INTRUS_ISA_VARIANTS_(LINK, RET, return, NAME, PARAMS, ARGS)
#define INTRUS_ISA_VARIANTS_VOID(LINK, NAME, PARAMS, ARGS) \
  INTRUS_ISA_VARIANTS_(LINK, void, , NAME, PARAMS, ARGS)

/* Column sums over many rows (bias and layer-norm gain gradients) run in fixed chunks
 * of INTRUS_REDUCE_ROWS rows, each chunk into its own row of double partials, then
 * intrus_chunks_add sums the chunks in ascending order: the result does not depend on
 * the thread count. dst[k] += sum_c part[c * ld + k] for k < width. */
#define INTRUS_REDUCE_ROWS 256
void intrus_chunks_add(float *dst, const double *part, long nchunks, long ld, long width);

/* Adds products computed outside intrus_gemm (core/tensor/gemm_packed.c) to intrus_blas_flops. */
void intrus_blas_count_flops(double flops);
/* Whether a product of `macs` multiply-adds runs on the calling thread alone (small,
 * one thread, or already inside a parallel region) rather than split across nt. */
bool intrus_gemm_run_alone(int nt, double macs);

/* Computes a product small enough that sgemm's cost per call would dominate it
 * (core/tensor/gemm_small.c), on the calling thread; false (nothing done) when it is not that
 * small, or intrus_x86_level() is 0 (no AVX2 and FMA, or INTRUS_ISA=generic). */
bool intrus_gemm_small(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                       const float *A, int lda, const float *B, int ldb, float beta, float *C,
                       int ldc);

/* The kernels picked at run time (the packed and small products, gelu, and every
 * INTRUS_ISA_VARIANTS loop): 2 AVX-512F and FMA, 1 AVX2 and FMA, 0 the portable C (also
 * without dispatch; the products then go to OpenBLAS). The CPU's widest, unless the
 * environment's INTRUS_ISA (generic, avx2, avx512) asks for a narrower one, so that any
 * machine can run and test the narrower kernels; an unknown or unsupported value is
 * named in one warning on stderr. */
int intrus_x86_level(void);
/* The level the CPU supports, whatever INTRUS_ISA says. */
int intrus_x86_cpu_level(void);
/* Overrides the level for the rest of the process (tests compare the kernels); -1
 * returns to the CPU's and INTRUS_ISA's. Never above intrus_x86_cpu_level(). */
void intrus_x86_level_set(int level);
/* "generic", "avx2" or "avx512". */
const char *intrus_x86_level_name(int level);

/* Streaming kernels with a heavy body (gelu, dropout) walk their range in blocks of
 * INTRUS_STREAM_BLOCK elements and, before each block, prefetch the lines
 * INTRUS_PREFETCH_AHEAD elements further on: with ~30 instructions per 64-byte line
 * the out-of-order window reaches too few lines ahead, and the hardware prefetcher
 * alone left them at a third of the bandwidth of a plain copy. */
#define INTRUS_STREAM_BLOCK 256
#define INTRUS_PREFETCH_AHEAD 2048

/* Prefetches the lines of [b, e) + INTRUS_PREFETCH_AHEAD, clipped to n, of the input
 * r (for reading) and the output w (for writing); intrus_prefetch_ahead2 of two
 * inputs. (Two functions rather than null tests inside: with those, GCC 12 was seen
 * to drop the whole loop.) */
static inline void intrus_prefetch_ahead(const float *r, float *w, long b, long e, long n) {
#if defined(__GNUC__)
  long hi = e + INTRUS_PREFETCH_AHEAD < n ? e + INTRUS_PREFETCH_AHEAD : n;
  for (long i = b + INTRUS_PREFETCH_AHEAD; i < hi; i += 16) {
    __builtin_prefetch(r + i, 0, 3);
    __builtin_prefetch(w + i, 1, 3);
  }
#else
  (void)r, (void)w, (void)b, (void)e, (void)n;
#endif
}

static inline void intrus_prefetch_ahead2(const float *r1, const float *r2, float *w, long b,
                                          long e, long n) {
#if defined(__GNUC__)
  long hi = e + INTRUS_PREFETCH_AHEAD < n ? e + INTRUS_PREFETCH_AHEAD : n;
  for (long i = b + INTRUS_PREFETCH_AHEAD; i < hi; i += 16) {
    __builtin_prefetch(r1 + i, 0, 3);
    __builtin_prefetch(r2 + i, 0, 3);
    __builtin_prefetch(w + i, 1, 3);
  }
#else
  (void)r1, (void)r2, (void)w, (void)b, (void)e, (void)n;
#endif
}

/* For a whole (unmasked) row of C >= 1 entries: its maximum in *max and, vectorised,
 * sum_j exp(x[j] - max) in float in the vector lanes' order (0 when max is -INFINITY).
 * Callers combine the two into a log-sum-exp at the precision they keep. */
float intrus_row_sumexp(const float *x, int C, float *max);

/* dx[j] += g * (exp(x[j] - lse) - uni) over a row of C, vectorised: g times the row's
 * softmax less a uniform part (label smoothing; 0 for none). */
void intrus_row_add_softmax(float *restrict dx, const float *restrict x, int C, float lse,
                            float g, float uni);

/* The gradient buffer of input t for the backward of `out`, an op whose output has t's
 * size. When t has no gradient yet it takes over out's buffer, which is complete (every
 * consumer of out ran before out's op) and read by no one after this backward: that
 * saves zeroing a fresh buffer and one pass over it. *taken = true: the buffer holds
 * dL/dout, to be turned into t's contribution in place; false: a buffer to add into. */
float *intrus_grad_take(intrus_ctx *ctx, intrus_tensor *t, intrus_tensor *out, bool *taken);

/* c ? a : b on floats as a bitwise select, so both operands are computed and the loop
 * has no branch left for the vectoriser to reject. */
static inline float intrus_sel(int c, float a, float b) {
  union {
    float f;
    uint32_t u;
  } x = {a}, y = {b}, r;
  uint32_t m = -(uint32_t)(c != 0);
  r.u = (x.u & m) | (y.u & ~m);
  return r.f;
}

/* The row loops below vectorise only if these are inlined into the ISA-specific variants
 * of their callers, which GCC does not do for every plain inline function. */
#if defined(__GNUC__)
#define ROW_INLINE static inline __attribute__((always_inline))
#else
#define ROW_INLINE static inline
#endif

#ifdef _OPENMP
#define SIMD_REDUCE(op, var) INTRUS_PRAGMA(omp simd reduction(op : var))
#else
#define SIMD_REDUCE(op, var)
#endif
/* Clang vectorises no float max reduction without -ffast-math, and warns when asked to
 * (an error under -Werror): it gets the plain loop. */
#if defined(_OPENMP) && !defined(__clang__)
#define SIMD_MAX(var) INTRUS_PRAGMA(omp simd reduction(max : var))
#else
#define SIMD_MAX(var)
#endif

/* e^y for y <= 0 (a score minus its row's maximum) in float arithmetic without branches
 * or calls, so that softmax loops vectorise: libm's expf, called per element, made the
 * attention softmax of long rows cost as much as the products around it. y = k ln2 + r with k
 * found by the 1.5 * 2^23 rounding trick and 2^k built in the exponent bits; exp(r) on
 * |r| <= ln2 / 2 by the degree-6 polynomial of ops_elementwise.c's gelu (error 2e-9),
 * a few ulp in all. Below -87 (where 2^k leaves the normal range and e^y < 1.7e-38) it
 * gives 0; NaN stays NaN. No fused multiply-adds (ISO C mode does not contract), so
 * every ISA clone gives the same values. */
ROW_INLINE float intrus_exp_nonpos(float y) {
  const float magic = 12582912.0f;
  const float yc = intrus_sel(y > -87.0f, y, -87.0f);
  const float kf = yc * 1.44269504088896341f + magic, k = kf - magic;
  const float r = (yc - k * 0.693359375f) + k * 2.12194440e-4f;
  const float r2 = r * r, r4 = r2 * r2;
  const float p = (1.394110848e-03f * r2 + (8.375125937e-03f * r + 4.166635126e-02f)) * r4 +
                  ((1.666641533e-01f * r + 0.5f) * r2 + (r + 1.0f));
  union {
    float f;
    uint32_t u;
  } kb = {kf}, scale;
  scale.u = (kb.u - 0x4b400000u + 127u) << 23; /* kb.u - bits(magic) = k */
  return intrus_sel(y > -87.0f, p * scale.f, intrus_sel(y != y, y, 0.0f));
}

#endif

/* Elementwise ops: add and mul with trailing-dims broadcast, scale, activations and
 * dropout. Every loop is either elementwise or reduces in a fixed order, so results do
 * not depend on the OpenMP thread count. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "intrus/rng.h"
#include "intrus/tensor.h"
#include "ops_internal.h"

/* Columns per task of a single chunk in the broadcast-gradient reduction (see
 * reduce_rows). */
#define REDUCE_COLS 64

/* ---- add / mul ------------------------------------------------------------------ */

/* b broadcasts when its shape equals a's trailing dims; a is then viewed as
 * [rows, inner] with inner = b->n (rows = 1 when the shapes are equal). */
static void check_broadcast(const char *op, const intrus_tensor *a, const intrus_tensor *b) {
  char sa[64], sb[64];
  bool ok = b->ndim <= a->ndim;
  for (int i = 0; ok && i < b->ndim; i++)
    ok = b->shape[i] == a->shape[a->ndim - b->ndim + i];
  INTRUS_CHECK(ok, "%s: b %s is neither a's shape %s nor its trailing dims", op,
               intrus_shape_str(b, sb, sizeof sb), intrus_shape_str(a, sa, sizeof sa));
}

enum bin_kind {
  BIN_ADD,    /* z = x + y */
  BIN_MUL,    /* z = x * y */
  BIN_MULACC, /* z += x * y (mul's gradient into a) */
};

/* One of the above over the flat range [lo, hi) of z and x, viewed as [rows, inner],
 * with y: [inner] broadcast over the rows: row segment by row segment, each a simd
 * loop with plain indices (no modulo per element). */
static void binary_range(enum bin_kind kind, float *restrict z, const float *restrict x,
                         const float *restrict y, long lo, long hi, long inner) {
  long j = lo % inner;
  for (long i = lo; i < hi; j = 0) {
    long len = inner - j < hi - i ? inner - j : hi - i;
    float *restrict zs = z + i;
    const float *restrict xs = x + i, *restrict ys = y + j;
    switch (kind) {
    case BIN_ADD:
      OMP_SIMD
      for (long k = 0; k < len; k++) zs[k] = xs[k] + ys[k];
      break;
    case BIN_MUL:
      OMP_SIMD
      for (long k = 0; k < len; k++) zs[k] = xs[k] * ys[k];
      break;
    case BIN_MULACC:
      OMP_SIMD
      for (long k = 0; k < len; k++) zs[k] += xs[k] * ys[k];
      break;
    }
    i += len;
  }
}

/* A scalar b (inner == 1) would make every segment one element long. */
static void binary_scalar_range(enum bin_kind kind, float *restrict z, const float *restrict x,
                                float y, long lo, long hi) {
  switch (kind) {
  case BIN_ADD:
    OMP_SIMD
    for (long i = lo; i < hi; i++) z[i] = x[i] + y;
    break;
  case BIN_MUL:
    OMP_SIMD
    for (long i = lo; i < hi; i++) z[i] = x[i] * y;
    break;
  case BIN_MULACC:
    OMP_SIMD
    for (long i = lo; i < hi; i++) z[i] += x[i] * y;
    break;
  }
}

/* Each thread takes one contiguous part of the n elements, whatever the row length. */
static void binary_apply(enum bin_kind kind, float *z, const float *x, const float *y, long n,
                         long inner) {
  if (n == 0) return;
  OMP_PARALLEL_STREAM(n) {
    long lo, hi;
    intrus_omp_range(n, &lo, &hi);
    if (inner == 1) binary_scalar_range(kind, z, x, y[0], lo, hi);
    else binary_range(kind, z, x, y, lo, hi, inner);
  }
}

static intrus_tensor *binary(intrus_ctx *ctx, enum intrus_op op, const char *name,
                             intrus_tensor *a, intrus_tensor *b) {
  check_broadcast(name, a, b);
  intrus_tensor *out = intrus_op_result(ctx, op, a->ndim, a->shape, a, b, NULL);
  binary_apply(op == INTRUS_OP_ADD ? BIN_ADD : BIN_MUL, out->data, a->data, b->data,
               (long)a->n, (long)b->n);
  return out;
}

intrus_tensor *intrus_add(intrus_ctx *ctx, intrus_tensor *a, intrus_tensor *b) {
  return binary(ctx, INTRUS_OP_ADD, "add", a, b);
}

intrus_tensor *intrus_mul(intrus_ctx *ctx, intrus_tensor *a, intrus_tensor *b) {
  return binary(ctx, INTRUS_OP_MUL, "mul", a, b);
}

void intrus_chunks_add(float *dst, const double *part, long nchunks, long ld, long width) {
  OMP_FOR(nchunks * width)
  for (long k = 0; k < width; k++) {
    double sum = 0.0;
    for (long c = 0; c < nchunks; c++) sum += part[c * ld + k];
    dst[k] += (float)sum;
  }
}

/* db[j] += sum_r g[r, j] * (f ? f[r, j] : 1) over g, f: [rows, inner]. Rows are summed
 * in double, in fixed chunks of INTRUS_REDUCE_ROWS in ascending order, then the chunks'
 * sums in ascending order: the result does not depend on the thread count. Each thread streams
 * whole rows of its chunks (a task per column block instead re-read every row once per
 * block, 3% of an INTRUS training step in perf). */
static void reduce_rows(intrus_ctx *ctx, float *db, const float *g, const float *f, long rows,
                        long inner) {
  long nchunks = (rows + INTRUS_REDUCE_ROWS - 1) / INTRUS_REDUCE_ROWS;
  if (nchunks == 0 || inner == 0) return;
  if (nchunks == 1) {
    /* One chunk (equal shapes: one row) is the result: tasks take blocks of REDUCE_COLS
     * columns, the simd loop running across columns, never across a sum's rows. */
    long nblocks = (inner + REDUCE_COLS - 1) / REDUCE_COLS;
    OMP_FOR(rows * inner)
    for (long blk = 0; blk < nblocks; blk++) {
      long j0 = blk * REDUCE_COLS, w = j0 + REDUCE_COLS < inner ? REDUCE_COLS : inner - j0;
      double acc[REDUCE_COLS] = {0};
      for (long r = 0; r < rows; r++) {
        const float *gr = g + r * inner + j0, *fr = f ? f + r * inner + j0 : NULL;
        if (fr) {
          OMP_SIMD
          for (long k = 0; k < w; k++) acc[k] += (double)gr[k] * fr[k];
        } else {
          OMP_SIMD
          for (long k = 0; k < w; k++) acc[k] += gr[k];
        }
      }
      for (long k = 0; k < w; k++) db[j0 + k] += (float)acc[k];
    }
    return;
  }
  /* From the arena, whose pages stay mapped: a fresh malloc of this size is an mmap
   * whose page faults cost more than the sums. */
  double *part = intrus_ctx_alloc(ctx, (size_t)(nchunks * inner) * sizeof *part);
  OMP_FOR(rows * inner)
  for (long c = 0; c < nchunks; c++) {
    double *acc = part + c * inner;
    memset(acc, 0, (size_t)inner * sizeof *acc);
    long r1 = (c + 1) * INTRUS_REDUCE_ROWS < rows ? (c + 1) * INTRUS_REDUCE_ROWS : rows;
    for (long r = c * INTRUS_REDUCE_ROWS; r < r1; r++) {
      const float *gr = g + r * inner;
      if (f) {
        const float *fr = f + r * inner;
        OMP_SIMD
        for (long k = 0; k < inner; k++) acc[k] += (double)gr[k] * fr[k];
      } else {
        OMP_SIMD
        for (long k = 0; k < inner; k++) acc[k] += gr[k];
      }
    }
  }
  intrus_chunks_add(db, part, nchunks, inner, inner);
}

void intrus_add_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0], *b = out->src[1];
  const float *g = out->grad;
  long n = (long)out->n, inner = (long)b->n, rows = inner ? n / inner : 0;
  if (a->requires_grad) {
    bool taken;
    float *da = intrus_grad_take(ctx, a, out, &taken);
    if (!taken) {
      OMP_FOR_SIMD(n)
      for (long i = 0; i < n; i++) da[i] += g[i];
    }
  }
  /* When a took g's buffer and b is a (x + x), this adds g to itself: 2g, as it should. */
  if (b->requires_grad) reduce_rows(ctx, intrus_tensor_grad(ctx, b), g, NULL, rows, inner);
}

void intrus_mul_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0], *b = out->src[1];
  const float *g = out->grad;
  long n = (long)out->n, inner = (long)b->n, rows = inner ? n / inner : 0;
  if (a->requires_grad)
    binary_apply(BIN_MULACC, intrus_tensor_grad(ctx, a), g, b->data, n, inner);
  if (b->requires_grad) reduce_rows(ctx, intrus_tensor_grad(ctx, b), g, a->data, rows, inner);
}

/* ---- scale ---------------------------------------------------------------------- */

intrus_tensor *intrus_scale(intrus_ctx *ctx, intrus_tensor *a, float s) {
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_SCALE, a->ndim, a->shape, a, NULL, NULL);
  out->fp[0] = s;
  const float *x = a->data;
  float *z = out->data;
  long n = (long)a->n;
  OMP_FOR_SIMD(n)
  for (long i = 0; i < n; i++) z[i] = x[i] * s;
  return out;
}

void intrus_scale_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0];
  if (!a->requires_grad) return;
  bool taken;
  float *da = intrus_grad_take(ctx, a, out, &taken);
  const float *g = out->grad;
  float s = out->fp[0];
  long n = (long)out->n;
  if (taken) {
    OMP_FOR_SIMD(n)
    for (long i = 0; i < n; i++) da[i] *= s;
  } else {
    OMP_FOR_SIMD(n)
    for (long i = 0; i < n; i++) da[i] += g[i] * s;
  }
}

/* ---- activations ---------------------------------------------------------------- */

intrus_tensor *intrus_relu(intrus_ctx *ctx, intrus_tensor *a) {
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_RELU, a->ndim, a->shape, a, NULL, NULL);
  const float *x = a->data;
  float *z = out->data;
  long n = (long)a->n;
  OMP_FOR_SIMD(n)
  for (long i = 0; i < n; i++) z[i] = intrus_sel(x[i] > 0.0f, x[i], 0.0f);
  return out;
}

void intrus_relu_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0];
  if (!a->requires_grad) return;
  bool taken;
  float *da = intrus_grad_take(ctx, a, out, &taken);
  const float *g = out->grad, *x = a->data;
  long n = (long)out->n;
  /* The subgradient at 0 is 0, as torch's. Where x <= 0, da keeps its exact bits. */
  if (taken) {
    OMP_FOR_SIMD(n)
    for (long i = 0; i < n; i++) da[i] = intrus_sel(x[i] > 0.0f, da[i], 0.0f);
  } else {
    OMP_FOR_SIMD(n)
    for (long i = 0; i < n; i++) da[i] = intrus_sel(x[i] > 0.0f, da[i] + g[i], da[i]);
  }
}

/* ---- gelu ----------------------------------------------------------------------- */

#define INV_SQRT2 0.70710678118654752440f
#define INV_SQRT_2PI 0.39894228040143267794f

/* (erf(u) - u) / u = PA(u^2) on |u| < 1, degree 6 in t = u^2 (Chebyshev fit, error
 * 1.2e-9): erf = a + a PA(a^2) keeps the leading term exact. */
static const float PA[7] = {1.283791661e-01f,  -3.761262596e-01f, 1.128359437e-01f,
                            -2.685421146e-02f, 5.189087242e-03f,  -8.016864303e-04f,
                            7.875874871e-05f};
/* erfc(a) on [1, 4], degree 14 in s = a - 2.5 (error 1.1e-8 absolute, which is what
 * erf = 1 - erfc needs). */
static const float PB[15] = {
    4.069520219e-04f,  -2.178180264e-03f, 5.445702467e-03f,  -8.351824246e-03f,
    8.622514084e-03f,  -6.108916365e-03f, 2.797778929e-03f,  -5.606543855e-04f,
    -2.589991200e-04f, 2.708359971e-04f,  -8.093342331e-05f, -1.783762491e-05f,
    1.566748506e-05f,  -4.879900644e-07f, -8.837966448e-07f};
/* exp(r) on |r| <= ln2 / 2, degree 6 (error 2e-9). */
static const float PE[7] = {1.0f, 1.0f, 0.5f, 1.666641533e-01f, 4.166635126e-02f,
                            8.375125937e-03f, 1.394110848e-03f};

/* erf and exp in float arithmetic without branches or calls, so that a simd loop
 * vectorises them, written once for two kinds of kernel: MADD(a, b, c) = a * b + c is
 * fmaf in the kernels compiled for FMA (one instruction there, and inlined by force:
 * a plain inline function would not be inlined into a target-specific one), two
 * roundings in the others.
 *
 * ERF: both pieces are computed and one selected; |u| >= 4 gives +-1 (erf rounds to 1
 * from 3.92 on). Within 1e-7 relative of erf everywhere (test_ops_a checks a dense
 * grid against double erf); NaN gives +-1, which the callers multiply by their NaN
 * input. The polynomials go by Estrin's scheme: short dependency chains keep the
 * vector units busy.
 * EXP: exp(y) for y <= 0, a few ulp: y = k ln2 + r with k an integer found by the
 * 1.5 * 2^23 rounding trick, 2^k built in the exponent bits. Below -87, where 2^k
 * would leave the normal range, it gives 0 (exp < 1.7e-38 there). */
#define DEFINE_ERF_EXP(ERF, EXP, INLINE, MADD)                                           \
  INLINE float ERF(float u) {                                                            \
    union {                                                                              \
      float f;                                                                           \
      uint32_t u;                                                                        \
    } ab = {u};                                                                          \
    ab.u &= 0x7fffffffu; /* min(|u|, 4) as integers: one instruction, NaN -> 4 */        \
    ab.u = ab.u < 0x40800000u ? ab.u : 0x40800000u;                                      \
    float a = ab.f;                                                                      \
    float t = a * a, t2 = t * t, t4 = t2 * t2;                                           \
    float pa = MADD(MADD(PA[6], t2, MADD(PA[5], t, PA[4])), t4,                          \
                    MADD(MADD(PA[3], t, PA[2]), t2, MADD(PA[1], t, PA[0])));             \
    float small = MADD(a, pa, a);                                                        \
    float s = a - 2.5f, s2 = s * s, s4 = s2 * s2, s8 = s4 * s4;                          \
    float lo = MADD(MADD(MADD(PB[7], s, PB[6]), s2, MADD(PB[5], s, PB[4])), s4,          \
                    MADD(MADD(PB[3], s, PB[2]), s2, MADD(PB[1], s, PB[0])));             \
    float hi = MADD(MADD(PB[14], s2, MADD(PB[13], s, PB[12])), s4,                       \
                    MADD(MADD(PB[11], s, PB[10]), s2, MADD(PB[9], s, PB[8])));           \
    return copysignf(intrus_sel(a < 1.0f, small, 1.0f - MADD(hi, s8, lo)), u);           \
  }                                                                                      \
  INLINE float EXP(float y) {                                                            \
    const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */    \
    float yc = intrus_sel(y > -87.0f, y, -87.0f);                                        \
    float kf = yc * 1.44269504088896341f + magic, k = kf - magic;                        \
    float r = MADD(k, 2.12194440e-4f, MADD(k, -0.693359375f, yc));                       \
    float r2 = r * r, r4 = r2 * r2;                                                      \
    float p = MADD(MADD(PE[6], r2, MADD(PE[5], r, PE[4])), r4,                           \
                   MADD(MADD(PE[3], r, PE[2]), r2, MADD(PE[1], r, PE[0])));              \
    union {                                                                              \
      float f;                                                                           \
      uint32_t u;                                                                        \
    } kb = {kf}, scale;                                                                  \
    scale.u = (kb.u - 0x4b400000u + 127u) << 23; /* kb.u - bits(magic) = k */            \
    return intrus_sel(y > -87.0f, p * scale.f, 0.0f);                                    \
  }

/* The kernels over [0, n) of one thread's range, walked in prefetching blocks:
 *  gelu: z = x Phi(x) with Phi the standard normal CDF, Phi(x) = (1 + erf(x / sqrt2)) / 2;
 *  gelu backward: da += g (Phi(x) + x phi(x)), the derivative of x Phi(x);
 *  erf: y = erf(x) (for the accuracy test). */
#define DEFINE_GELU_KERNELS(SFX, ATTR, ERF, EXP, MADD)                                   \
  ATTR static void gelu_range_##SFX(float *restrict z, const float *restrict x,          \
                                     long n) {                                           \
    for (long b = 0; b < n; b += INTRUS_STREAM_BLOCK) {                                  \
      long e = b + INTRUS_STREAM_BLOCK < n ? b + INTRUS_STREAM_BLOCK : n;                \
      intrus_prefetch_ahead(x, z, b, e, n);                                              \
      OMP_SIMD                                                                           \
      for (long i = b; i < e; i++) {                                                     \
        float h = 0.5f * x[i];                                                           \
        z[i] = MADD(h, ERF(x[i] * INV_SQRT2), h);                                        \
      }                                                                                  \
    }                                                                                    \
  }                                                                                      \
  ATTR static void gelu_backward_range_##SFX(float *restrict da, const float *restrict g, \
                                             const float *restrict x, long n) {          \
    for (long b = 0; b < n; b += INTRUS_STREAM_BLOCK) {                                  \
      long e = b + INTRUS_STREAM_BLOCK < n ? b + INTRUS_STREAM_BLOCK : n;                \
      intrus_prefetch_ahead2(g, x, da, b, e, n);                                         \
      OMP_SIMD                                                                           \
      for (long i = b; i < e; i++) {                                                     \
        float v = x[i];                                                                  \
        float cdf = MADD(0.5f, ERF(v * INV_SQRT2), 0.5f);                                \
        float pdf = INV_SQRT_2PI * EXP(-0.5f * v * v);                                   \
        da[i] = MADD(g[i], MADD(v, pdf, cdf), da[i]);                                    \
      }                                                                                  \
    }                                                                                    \
  }                                                                                      \
  ATTR static void erf_range_##SFX(float *restrict y, const float *restrict x, long n) { \
    OMP_SIMD                                                                             \
    for (long i = 0; i < n; i++) y[i] = ERF(x[i]);                                       \
  }

#define MADD_PLAIN(a, b, c) ((a) * (b) + (c))
DEFINE_ERF_EXP(erf_plain, exp_plain, static inline, MADD_PLAIN)
DEFINE_GELU_KERNELS(plain, , erf_plain, exp_plain, MADD_PLAIN)
#if INTRUS_X86_DISPATCH
DEFINE_ERF_EXP(erf_fused, exp_fused, static inline __attribute__((always_inline)), fmaf)
DEFINE_GELU_KERNELS(avx2, INTRUS_AVX2, erf_fused, exp_fused, fmaf)
DEFINE_GELU_KERNELS(avx512, INTRUS_AVX512, erf_fused, exp_fused, fmaf)
#endif

/* The calling thread's share of [0, n), by the widest kernel this CPU runs. */
enum gelu_kind { GELU_FORWARD, GELU_BACKWARD, GELU_ERF };

static void gelu_dispatch(enum gelu_kind kind, int level, float *z, const float *x,
                          const float *g, long n) {
  long lo, hi;
  intrus_omp_range(n, &lo, &hi);
  if (hi <= lo) return;
  z += lo, x += lo, g = g ? g + lo : NULL, n = hi - lo;
#if INTRUS_X86_DISPATCH
  if (level == 2) {
    if (kind == GELU_FORWARD) gelu_range_avx512(z, x, n);
    else if (kind == GELU_BACKWARD) gelu_backward_range_avx512(z, g, x, n);
    else erf_range_avx512(z, x, n);
    return;
  }
  if (level == 1) {
    if (kind == GELU_FORWARD) gelu_range_avx2(z, x, n);
    else if (kind == GELU_BACKWARD) gelu_backward_range_avx2(z, g, x, n);
    else erf_range_avx2(z, x, n);
    return;
  }
#else
  (void)level;
#endif
  if (kind == GELU_FORWARD) gelu_range_plain(z, x, n);
  else if (kind == GELU_BACKWARD) gelu_backward_range_plain(z, g, x, n);
  else erf_range_plain(z, x, n);
}

static void gelu_apply(enum gelu_kind kind, float *z, const float *x, const float *g, long n) {
  const int level = intrus_x86_level();
  OMP_PARALLEL(n) { gelu_dispatch(kind, level, z, x, g, n); }
}

void intrus_erf_n(float *y, const float *x, long n) { gelu_apply(GELU_ERF, y, x, NULL, n); }

intrus_tensor *intrus_gelu(intrus_ctx *ctx, intrus_tensor *a) {
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_GELU, a->ndim, a->shape, a, NULL, NULL);
  gelu_apply(GELU_FORWARD, out->data, a->data, NULL, (long)a->n);
  return out;
}

void intrus_gelu_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0];
  if (!a->requires_grad) return;
  gelu_apply(GELU_BACKWARD, intrus_tensor_grad(ctx, a), a->data, out->grad, (long)out->n);
}

/* ---- elu ------------------------------------------------------------------------ */

/* z = x for x > 0, else expm1(x): by the vectorised exp of the GELU kernels above, and
 * on (-1/2, 0], where exp(x) - 1 would cancel, by expm1's Taylor series to x^9 / 9!
 * (the next term is under 2^-30 of x there); within a few float ulps of expm1f. */
#define DEFINE_ELU_KERNEL(SFX, ATTR, EXP, MADD)                                            \
  ATTR static void elu_range_##SFX(float *restrict z, const float *restrict x, long n) {   \
    OMP_SIMD                                                                             \
    for (long i = 0; i < n; i++) {                                                       \
      float v = x[i], c = intrus_sel(v > 0.0f, 0.0f, v);                                 \
      float p = MADD(c, 1.0f / 362880.0f, 1.0f / 40320.0f);                              \
      p = MADD(c, p, 1.0f / 5040.0f);                                                    \
      p = MADD(c, p, 1.0f / 720.0f);                                                     \
      p = MADD(c, p, 1.0f / 120.0f);                                                     \
      p = MADD(c, p, 1.0f / 24.0f);                                                      \
      p = MADD(c, p, 1.0f / 6.0f);                                                       \
      p = MADD(c, p, 0.5f);                                                              \
      float series = MADD(c * c, p, c);                                                  \
      float neg = intrus_sel(c > -0.5f, series, EXP(c) - 1.0f);                           \
      z[i] = intrus_sel(v > 0.0f, v, neg);                                               \
    }                                                                                    \
  }
DEFINE_ELU_KERNEL(plain, , exp_plain, MADD_PLAIN)
#if INTRUS_X86_DISPATCH
DEFINE_ELU_KERNEL(avx2, INTRUS_AVX2, exp_fused, fmaf)
DEFINE_ELU_KERNEL(avx512, INTRUS_AVX512, exp_fused, fmaf)
#endif

intrus_tensor *intrus_elu(intrus_ctx *ctx, intrus_tensor *a) {
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_ELU, a->ndim, a->shape, a, NULL, NULL);
  const float *x = a->data;
  float *z = out->data;
  const long n = (long)a->n;
  const int level = intrus_x86_level();
  OMP_PARALLEL(n) {
    long lo, hi;
    intrus_omp_range(n, &lo, &hi);
    if (hi > lo) {
#if INTRUS_X86_DISPATCH
      if (level == 2) elu_range_avx512(z + lo, x + lo, hi - lo);
      else if (level == 1) elu_range_avx2(z + lo, x + lo, hi - lo);
      else
#endif
        elu_range_plain(z + lo, x + lo, hi - lo);
    }
  }
  (void)level;
  return out;
}

/* For x <= 0 the derivative exp(x) equals out + 1, which saves recomputing exp. */
void intrus_elu_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0];
  if (!a->requires_grad) return;
  float *da = intrus_tensor_grad(ctx, a);
  const float *g = out->grad, *x = a->data, *y = out->data;
  long n = (long)out->n;
  OMP_FOR_SIMD(n)
  for (long i = 0; i < n; i++) da[i] += intrus_sel(x[i] > 0.0f, g[i], g[i] * (y[i] + 1.0f));
}

/* ---- dropout -------------------------------------------------------------------- */

/* Element i is kept when the top 24 bits of its counter-based hash reach thr =
 * ceil(p 2^24), i.e. with probability 1 - p to within 2^-24, so the mask is a pure
 * function of (key, i): the same for any thread count, and recomputable in backward
 * from the 8-byte key instead of an n-byte mask. The hash is intrus_hash32 (32-bit
 * multiplies, which vectorise) of the low 32 bits of i, keyed by intrus_hash64(key,
 * i >> 32). */
static inline bool dropout_keep(uint64_t bkey, uint32_t c, int32_t thr) {
  return (int32_t)(intrus_hash32(bkey, c) >> 8) >= thr;
}

/* z = keep ? x * scale : 0 over n < 2^31 elements whose counters start at c0. */
/* z may be x (in place: the backward on a taken gradient buffer). */
ROW_INLINE void dropout_range_body(float *z, const float *x, int n, uint64_t bkey, uint32_t c0,
                                   int32_t thr, float scale) {
  for (int b = 0; b < n; b += INTRUS_STREAM_BLOCK) {
    int e = b + INTRUS_STREAM_BLOCK < n ? b + INTRUS_STREAM_BLOCK : n;
    intrus_prefetch_ahead(x, z, b, e, n);
    OMP_SIMD
    for (int i = b; i < e; i++)
      z[i] = intrus_sel(dropout_keep(bkey, c0 + (uint32_t)i, thr), x[i] * scale, 0.0f);
  }
}
INTRUS_ISA_VARIANTS_VOID(static, dropout_range,
                         (float *z, const float *x, int n, uint64_t bkey, uint32_t c0,
                          int32_t thr, float scale),
                         (z, x, n, bkey, c0, thr, scale))

/* da += keep ? g * scale : 0, leaving dropped entries' bits untouched. */
ROW_INLINE void dropout_backward_range_body(float *restrict da, const float *restrict g, int n,
                                            uint64_t bkey, uint32_t c0, int32_t thr,
                                            float scale) {
  for (int b = 0; b < n; b += INTRUS_STREAM_BLOCK) {
    int e = b + INTRUS_STREAM_BLOCK < n ? b + INTRUS_STREAM_BLOCK : n;
    intrus_prefetch_ahead(g, da, b, e, n);
    OMP_SIMD
    for (int i = b; i < e; i++)
      da[i] = intrus_sel(dropout_keep(bkey, c0 + (uint32_t)i, thr), da[i] + g[i] * scale,
                         da[i]);
  }
}
INTRUS_ISA_VARIANTS_VOID(static, dropout_backward_range,
                         (float *restrict da, const float *restrict g, int n, uint64_t bkey,
                          uint32_t c0, int32_t thr, float scale),
                         (da, g, n, bkey, c0, thr, scale))

/* Runs the forward (g == NULL: z = dropout(x)) or backward (z += dropout'(g)) kernel
 * over [0, n), in blocks that do not cross a multiple of 2^31 so that the counter of
 * element i is the low 32 bits of i and the block key depends on i >> 32 only. */
static void dropout_apply(float *z, const float *x, const float *g, long n, uint64_t key,
                          float p, float scale) {
  const int32_t thr = (int32_t)ceilf(p * 16777216.0f);
  OMP_PARALLEL(n) {
    long lo, hi;
    intrus_omp_range(n, &lo, &hi);
    while (lo < hi) {
      long end = ((lo >> 31) + 1) << 31;
      if (end > hi) end = hi;
      uint64_t bkey = intrus_hash64(key, (uint64_t)lo >> 32);
      int len = (int)(end - lo);
      if (g) dropout_backward_range(z + lo, g + lo, len, bkey, (uint32_t)lo, thr, scale);
      else dropout_range(z + lo, x + lo, len, bkey, (uint32_t)lo, thr, scale);
      lo = end;
    }
  }
}

intrus_tensor *intrus_dropout(intrus_ctx *ctx, intrus_tensor *a, float p) {
  INTRUS_CHECK(p >= 0.0f && p < 1.0f, "dropout: p = %g outside [0, 1)", (double)p);
  if (!intrus_ctx_training(ctx) || p == 0.0f) return a;
  intrus_tensor *out =
      intrus_op_result(ctx, INTRUS_OP_DROPOUT, a->ndim, a->shape, a, NULL, NULL);
  uint64_t *key = intrus_ctx_alloc(ctx, sizeof *key);
  *key = intrus_ctx_next_stream(ctx);
  out->aux = key;
  float scale = 1.0f / (1.0f - p);
  out->fp[0] = p;
  out->fp[1] = scale;
  dropout_apply(out->data, a->data, NULL, (long)a->n, *key, p, scale);
  return out;
}

void intrus_dropout_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0];
  if (!a->requires_grad) return;
  bool taken;
  float *da = intrus_grad_take(ctx, a, out, &taken);
  /* Taken: da holds g, and the forward kernel turns it into dropout'(g) in place. */
  dropout_apply(da, taken ? da : NULL, taken ? NULL : out->grad, (long)out->n,
                *(const uint64_t *)out->aux, out->fp[0], out->fp[1]);
}

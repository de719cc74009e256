/* Shape ops (reshape, permute, concat) and full reductions (sum, mean, weighted mean). */
#include <stdio.h>
#include <string.h>

#include "intrus/tensor.h"
#include "ops_internal.h"

/* ---- reshape -------------------------------------------------------------------- */

intrus_tensor *intrus_reshape(intrus_ctx *ctx, intrus_tensor *x, int ndim, const int *shape) {
  char sx[64];
  INTRUS_CHECK(ndim >= 1 && ndim <= INTRUS_MAX_DIMS, "reshape: %s to %d dims",
               intrus_shape_str(x, sx, sizeof sx), ndim);
  for (int i = 0; i < ndim; i++)
    INTRUS_CHECK(shape[i] >= 0, "reshape: %s to a negative dim %d", intrus_shape_str(x, sx, sizeof sx),
                 shape[i]);
  size_t n = intrus_shape_numel(ndim, shape);
  INTRUS_CHECK(n == x->n, "reshape: %s (%zu elements) to %d dims of %zu elements",
               intrus_shape_str(x, sx, sizeof sx), x->n, ndim, n);
  /* Built by hand rather than with intrus_op_result, which would allocate a data block
   * that the view never uses. */
  intrus_tensor *out = intrus_ctx_calloc(ctx, sizeof *out);
  out->data = x->data;
  out->ndim = ndim;
  memcpy(out->shape, shape, (size_t)ndim * sizeof *shape);
  out->n = n;
  out->op = INTRUS_OP_RESHAPE;
  out->src[0] = x;
  out->requires_grad = intrus_ctx_grad_enabled(ctx) && x->requires_grad;
  if (out->requires_grad) intrus_ctx_record(ctx, out);
  return out;
}

/* The view has its own grad buffer (the engine allocates one per tensor), so the
 * gradient is added, not shared. */
void intrus_reshape_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *x = out->src[0];
  if (!x->requires_grad) return;
  float *dx = intrus_tensor_grad(ctx, x);
  const float *g = out->grad;
  long n = (long)out->n;
  OMP_FOR_SIMD(n)
  for (long i = 0; i < n; i++) dx[i] += g[i];
}

/* ---- permute -------------------------------------------------------------------- */

/* The result's index space, padded to 4 dims with leading 1s: shape d[4] and, for each
 * result axis, the stride of the matching source axis (0 for padding). */
struct perm_plan {
  long d[4];
  long stride[4];
};

static void perm_plan_make(struct perm_plan *p, const intrus_tensor *x, const int32_t *perm) {
  long xstride[INTRUS_MAX_DIMS];
  long s = 1;
  for (int i = x->ndim - 1; i >= 0; i--) {
    xstride[i] = s;
    s *= x->shape[i];
  }
  int pad = 4 - x->ndim;
  for (int i = 0; i < 4; i++) {
    if (i < pad) {
      p->d[i] = 1;
      p->stride[i] = 0;
    } else {
      int src = perm[i - pad];
      p->d[i] = x->shape[src];
      p->stride[i] = xstride[src];
    }
  }
}

/* Walks the result in row-major order; to_result copies src -> result, otherwise
 * accumulates result -> src. Each source element is visited once, so the scatter
 * direction is race-free under the parallel loop. */
static void perm_walk(const struct perm_plan *p, float *src, float *res, bool to_result) {
  long d0 = p->d[0], d1 = p->d[1], d2 = p->d[2], d3 = p->d[3];
  long s0 = p->stride[0], s1 = p->stride[1], s2 = p->stride[2], s3 = p->stride[3];
  OMP_FOR2(d0 * d1 * d2 * d3)
  for (long i0 = 0; i0 < d0; i0++)
    for (long i1 = 0; i1 < d1; i1++) {
      for (long i2 = 0; i2 < d2; i2++) {
        float *r = res + ((i0 * d1 + i1) * d2 + i2) * d3;
        float *s = src + i0 * s0 + i1 * s1 + i2 * s2;
        if (to_result)
          for (long i3 = 0; i3 < d3; i3++) r[i3] = s[i3 * s3];
        else
          for (long i3 = 0; i3 < d3; i3++) s[i3 * s3] += r[i3];
      }
    }
}

intrus_tensor *intrus_permute(intrus_ctx *ctx, intrus_tensor *x, const int *perm) {
  char sx[64];
  bool seen[INTRUS_MAX_DIMS] = {false};
  for (int i = 0; i < x->ndim; i++) {
    INTRUS_CHECK(perm[i] >= 0 && perm[i] < x->ndim && !seen[perm[i]],
                 "permute: %s: perm[%d] = %d is out of range or repeated",
                 intrus_shape_str(x, sx, sizeof sx), i, perm[i]);
    seen[perm[i]] = true;
  }
  int shape[INTRUS_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) shape[i] = x->shape[perm[i]];
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_PERMUTE, x->ndim, shape, x, NULL, NULL);
  for (int i = 0; i < x->ndim; i++) out->ip[i] = perm[i];
  struct perm_plan plan;
  perm_plan_make(&plan, x, out->ip);
  perm_walk(&plan, x->data, out->data, true);
  return out;
}

/* The gradient flows back along the same index map (the inverse permutation). */
void intrus_permute_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *x = out->src[0];
  if (!x->requires_grad) return;
  struct perm_plan plan;
  perm_plan_make(&plan, x, out->ip);
  perm_walk(&plan, intrus_tensor_grad(ctx, x), out->grad, false);
}

/* ---- concat --------------------------------------------------------------------- */

/* Viewed around the axis, a is [outer, ia] and b is [outer, ib] with ia, ib the
 * products of the axis dim and everything after it; the result is [outer, ia + ib]. */
intrus_tensor *intrus_concat(intrus_ctx *ctx, intrus_tensor *a, intrus_tensor *b, int axis) {
  char sa[64], sb[64];
  bool ok = a->ndim == b->ndim && axis >= 0 && axis < a->ndim;
  for (int i = 0; ok && i < a->ndim; i++) ok = i == axis || a->shape[i] == b->shape[i];
  INTRUS_CHECK(ok, "concat: a %s and b %s do not match except along axis %d",
               intrus_shape_str(a, sa, sizeof sa), intrus_shape_str(b, sb, sizeof sb), axis);
  int shape[INTRUS_MAX_DIMS];
  memcpy(shape, a->shape, sizeof shape);
  shape[axis] = a->shape[axis] + b->shape[axis];
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_CONCAT, a->ndim, shape, a, b, NULL);
  out->ip[0] = axis;
  size_t outer = intrus_shape_numel(axis, a->shape);
  size_t ia = outer ? a->n / outer : 0, ib = outer ? b->n / outer : 0;
  OMP_FOR(out->n)
  for (size_t o = 0; o < outer; o++) {
    memcpy(out->data + o * (ia + ib), a->data + o * ia, ia * sizeof(float));
    memcpy(out->data + o * (ia + ib) + ia, b->data + o * ib, ib * sizeof(float));
  }
  return out;
}

/* dst[o, j] += src[o * stride + off + j] over the flat range [lo, hi) of dst: [outer, w],
 * row segment by row segment, each a simd loop. */
static void add_rows_range(float *restrict dst, const float *restrict src, long w, long stride,
                           long off, long lo, long hi) {
  long o = lo / w, j = lo % w;
  for (long i = lo; i < hi; o++, j = 0) {
    long len = w - j < hi - i ? w - j : hi - i;
    float *restrict d = dst + i;
    const float *restrict s = src + o * stride + off + j;
    OMP_SIMD
    for (long k = 0; k < len; k++) d[k] += s[k];
    i += len;
  }
}

static void add_rows(float *dst, const float *src, long n, long w, long stride, long off) {
  if (n == 0) return;
  OMP_PARALLEL_STREAM(n) {
    long lo, hi;
    intrus_omp_range(n, &lo, &hi);
    add_rows_range(dst, src, w, stride, off, lo, hi);
  }
}

void intrus_concat_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0], *b = out->src[1];
  long outer = (long)intrus_shape_numel(out->ip[0], a->shape);
  long ia = outer ? (long)a->n / outer : 0, ib = outer ? (long)b->n / outer : 0;
  const float *g = out->grad;
  if (a->requires_grad) add_rows(intrus_tensor_grad(ctx, a), g, (long)a->n, ia, ia + ib, 0);
  if (b->requires_grad) add_rows(intrus_tensor_grad(ctx, b), g, (long)b->n, ib, ia + ib, ia);
}

/* ---- sum / mean ----------------------------------------------------------------- */

/* Serial and in double: a fixed order makes the loss bitwise repeatable, and double
 * keeps the rounding of long sums negligible. */
static double sum_all(const intrus_tensor *x) {
  double acc = 0.0;
  for (size_t i = 0; i < x->n; i++) acc += x->data[i];
  return acc;
}

intrus_tensor *intrus_sum(intrus_ctx *ctx, intrus_tensor *x) {
  const int one = 1;
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_SUM, 1, &one, x, NULL, NULL);
  out->data[0] = (float)sum_all(x);
  return out;
}

intrus_tensor *intrus_mean(intrus_ctx *ctx, intrus_tensor *x) {
  char sx[64];
  INTRUS_CHECK(x->n > 0, "mean: of an empty tensor %s", intrus_shape_str(x, sx, sizeof sx));
  const int one = 1;
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_MEAN, 1, &one, x, NULL, NULL);
  out->data[0] = (float)(sum_all(x) / (double)x->n);
  return out;
}

/* The weights live in the arena (aux), fp holds nothing: denom needs double. */
struct wmean_saved {
  double denom;
  double w[];
};

intrus_tensor *intrus_weighted_mean(intrus_ctx *ctx, intrus_tensor *x, const double *w,
                                    double denom) {
  char sx[64];
  INTRUS_CHECK(x->n > 0, "weighted_mean: of an empty tensor %s",
               intrus_shape_str(x, sx, sizeof sx));
  INTRUS_CHECK(denom > 0.0, "weighted_mean: denominator %g (must be positive)", denom);
  const int one = 1;
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_WEIGHTED_MEAN, 1, &one, x, NULL, NULL);
  struct wmean_saved *sv = intrus_ctx_alloc(ctx, sizeof *sv + x->n * sizeof(double));
  sv->denom = denom;
  memcpy(sv->w, w, x->n * sizeof(double));
  out->aux = sv;
  /* The same serial double sum as sum_all, term by term: w[i] = 1 changes nothing. */
  double acc = 0.0;
  for (size_t i = 0; i < x->n; i++) acc += w[i] * x->data[i];
  out->data[0] = (float)(acc / denom);
  return out;
}

static void add_constant(intrus_ctx *ctx, intrus_tensor *x, float c) {
  if (!x->requires_grad) return;
  float *dx = intrus_tensor_grad(ctx, x);
  long n = (long)x->n;
  OMP_FOR_SIMD(n)
  for (long i = 0; i < n; i++) dx[i] += c;
}

void intrus_sum_backward(intrus_ctx *ctx, intrus_tensor *out) {
  add_constant(ctx, out->src[0], out->grad[0]);
}

void intrus_mean_backward(intrus_ctx *ctx, intrus_tensor *out) {
  add_constant(ctx, out->src[0], (float)(out->grad[0] / (double)out->src[0]->n));
}

void intrus_weighted_mean_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *x = out->src[0];
  if (!x->requires_grad) return;
  const struct wmean_saved *sv = out->aux;
  float *dx = intrus_tensor_grad(ctx, x);
  const double g = out->grad[0];
  /* g * w / denom, grouped as intrus_mean's g / n when w = 1 (the same float). */
  for (size_t i = 0; i < x->n; i++) dx[i] += (float)(g * sv->w[i] / sv->denom);
}

/* 2-D convolution by im2col + GEMM, and max pooling. Layout NCHW throughout.
 *
 * Per batch entry b, with K = C*kh*kw and P = Ho*Wo:
 *   col  [K, P]  = im2col(x[b])
 *   y[b] [O, P]  = w [O, K] @ col
 * and backward:
 *   dw   [O, K] += dy[b] @ col^T
 *   dcol [K, P]  = w^T @ dy[b];   dx[b] += col2im(dcol)
 * The im2col buffer is rebuilt in backward instead of being kept from forward: a few
 * batch entries' worth of scratch instead of B of them for the whole step.
 *
 * Threads. With two or more batch entries, the forward and the input gradient hand
 * out whole batch entries to threads (im2col, one single-threaded GEMM, col2im each),
 * instead of cutting every product across threads: a CNN encoder's products are many
 * and mid-sized, and a fork, a join and a split of each, with im2col single-file
 * between them, had the threads spinning at barriers for 40% of the time in perf
 * (bench_core cnn: 50% of the sgemm peak). Every batch entry is then one whole GEMM,
 * so its result does not depend on the thread count. The weight gradient sums over
 * the batch; it is one GEMM per chunk of entries whose columns are laid side by side,
 * dw += dY [O, n P] col^T [n P, K] (a long inner dimension instead of P = 320 at the
 * last stages), the chunk's size fixed by memory, not by threads, so its sums are in
 * the same order on any thread count. */
#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "intrus/blas.h"
#include "intrus/tensor.h"
#include "ops_internal.h"

struct conv_geom {
  int B, C, H, W, O, kh, kw, Ho, Wo, stride, pad;
  int K, P; /* rows and columns of one im2col buffer */
};

static struct conv_geom conv_geom_of(const intrus_tensor *x, const intrus_tensor *w,
                                     int stride, int pad) {
  struct conv_geom g;
  g.B = x->shape[0];
  g.C = x->shape[1];
  g.H = x->shape[2];
  g.W = x->shape[3];
  g.O = w->shape[0];
  g.kh = w->shape[2];
  g.kw = w->shape[3];
  g.stride = stride;
  g.pad = pad;
  g.Ho = (g.H + 2 * pad - g.kh) / stride + 1;
  g.Wo = (g.W + 2 * pad - g.kw) / stride + 1;
  g.K = g.C * g.kh * g.kw;
  g.P = g.Ho * g.Wo;
  return g;
}

/* A 1x1 kernel with stride 1 and no padding makes im2col the identity: x[b] [C, H*W]
 * already is the column matrix, so it is used in place. */
static bool conv_is_pointwise(const struct conv_geom *g) {
  return g->kh == 1 && g->kw == 1 && g->stride == 1 && g->pad == 0;
}

/* xb: [C, H, W] -> col: [K, P] with row stride ld (>= P), zeros where the window hangs
 * over the padding. */
static void im2col(const struct conv_geom *g, const float *xb, float *col, size_t ld) {
  const size_t total = (size_t)g->K * g->P;
  (void)total; /* unused without OpenMP */
  OMP_FOR(total)
  for (int row = 0; row < g->K; row++) {
    const int c = row / (g->kh * g->kw), ki = row / g->kw % g->kh, kj = row % g->kw;
    const float *plane = xb + (size_t)c * g->H * g->W;
    float *dst = col + (size_t)row * ld;
    for (int oh = 0; oh < g->Ho; oh++) {
      const int ih = oh * g->stride - g->pad + ki;
      float *d = dst + (size_t)oh * g->Wo;
      if (ih < 0 || ih >= g->H) {
        memset(d, 0, (size_t)g->Wo * sizeof(float));
        continue;
      }
      const float *src = plane + (size_t)ih * g->W;
      if (g->stride == 1) {
        /* A shifted copy of the input row: zeros where it hangs over either edge, one
         * memcpy between (a per-element bounds test had made im2col 8% of a CNN
         * encoder's step in perf). */
        const int off = kj - g->pad; /* iw = ow + off */
        const int lo = off < 0 ? -off : 0;
        int hi = g->W - off;
        if (hi > g->Wo) hi = g->Wo;
        if (hi < lo) hi = lo;
        if (lo > 0) memset(d, 0, (size_t)lo * sizeof(float));
        if (hi > lo) memcpy(d + lo, src + lo + off, (size_t)(hi - lo) * sizeof(float));
        if (hi < g->Wo) memset(d + hi, 0, (size_t)(g->Wo - hi) * sizeof(float));
        continue;
      }
      for (int ow = 0; ow < g->Wo; ow++) {
        const int iw = ow * g->stride - g->pad + kj;
        d[ow] = (iw >= 0 && iw < g->W) ? src[iw] : 0.0f;
      }
    }
  }
}

/* col: [K, P] added into dxb: [C, H, W]; padding positions are dropped. Parallel over
 * channels: all rows of one channel write to that channel's plane only, so threads
 * never share an output element and the summation order is fixed. */
static void col2im_add(const struct conv_geom *g, const float *col, float *dxb) {
  const size_t total = (size_t)g->K * g->P;
  (void)total;
  OMP_FOR(total)
  for (int c = 0; c < g->C; c++) {
    float *plane = dxb + (size_t)c * g->H * g->W;
    for (int ki = 0; ki < g->kh; ki++)
      for (int kj = 0; kj < g->kw; kj++) {
        const int row = (c * g->kh + ki) * g->kw + kj;
        const float *s = col + (size_t)row * g->P;
        for (int oh = 0; oh < g->Ho; oh++) {
          const int ih = oh * g->stride - g->pad + ki;
          if (ih < 0 || ih >= g->H) continue;
          float *d = plane + (size_t)ih * g->W;
          const float *sr = s + (size_t)oh * g->Wo;
          for (int ow = 0; ow < g->Wo; ow++) {
            const int iw = ow * g->stride - g->pad + kj;
            if (iw >= 0 && iw < g->W) d[iw] += sr[ow];
          }
        }
      }
  }
}

/* Threads to hand whole batch entries to: 1 (each product threaded inside intrus_gemm)
 * for a single entry or inside a parallel region. */
static int conv_threads(int B) {
#ifdef _OPENMP
  if (B < 2 || omp_in_parallel()) return 1;
  const int nt = omp_get_max_threads();
  return nt < B ? nt : B;
#else
  (void)B;
  return 1;
#endif
}

static int thread_id(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* y[b] = w @ im2col(x[b]) + bias; col: this thread's [K, P] scratch (NULL: pointwise). */
static void conv_forward_one(const struct conv_geom *g, const intrus_tensor *x,
                             const intrus_tensor *w, const intrus_tensor *bias, float *col,
                             intrus_tensor *out, int b) {
  const float *xb = x->data + (size_t)b * g->C * g->H * g->W;
  float *yb = out->data + (size_t)b * g->O * g->P;
  if (col) im2col(g, xb, col, (size_t)g->P);
  const float *cb = col ? col : xb;
  intrus_gemm(false, false, g->O, g->P, g->K, 1.0f, w->data, g->K, cb, g->P, 0.0f, yb, g->P);
  if (bias)
    for (int o = 0; o < g->O; o++) {
      float *yr = yb + (size_t)o * g->P;
      const float bo = bias->data[o];
      for (int p = 0; p < g->P; p++) yr[p] += bo;
    }
}

/* dx[b] += col2im(w^T @ dy[b]); dcol: this thread's [K, P] scratch (NULL: pointwise, the
 * product lands in dx[b] directly). */
static void conv_dx_one(const struct conv_geom *g, const float *w, const float *dy, float *dx,
                        float *dcol, int b) {
  const float *dyb = dy + (size_t)b * g->O * g->P;
  float *dxb = dx + (size_t)b * g->C * g->H * g->W;
  if (!dcol) {
    intrus_gemm(true, false, g->K, g->P, g->O, 1.0f, w, g->K, dyb, g->P, 1.0f, dxb, g->P);
    return;
  }
  intrus_gemm(true, false, g->K, g->P, g->O, 1.0f, w, g->K, dyb, g->P, 0.0f, dcol, g->P);
  col2im_add(g, dcol, dxb);
}

/* Batch entries per weight-gradient GEMM: as many as fit 8 Mi floats (32 MB) of im2col,
 * at least one. A function of the shapes only, never of the thread count. */
static int conv_dw_chunk(const struct conv_geom *g) {
  const size_t per = (size_t)g->K * g->P, cap = (size_t)8 << 20;
  size_t n = per ? cap / per : (size_t)g->B;
  if (n < 1) n = 1;
  if (n > (size_t)g->B) n = (size_t)g->B;
  return (int)n;
}

/* x: [B, C, H, W]; w: [O, C, kh, kw]; bias: [O] or NULL. Result [B, O, Ho, Wo].
 * ip[0] = stride, ip[1] = pad. */
intrus_tensor *intrus_conv2d(intrus_ctx *ctx, intrus_tensor *x, intrus_tensor *w,
                             intrus_tensor *bias, int stride, int pad) {
  INTRUS_CHECK(x->ndim == 4 && w->ndim == 4,
               "conv2d: x has %d dims and w %d dims, need x [B, C, H, W] and w [O, C, kh, kw]",
               x->ndim, w->ndim);
  INTRUS_CHECK(x->shape[1] == w->shape[1],
               "conv2d: x [%d, %d, %d, %d] has %d channels but w [%d, %d, %d, %d] expects %d",
               x->shape[0], x->shape[1], x->shape[2], x->shape[3], x->shape[1], w->shape[0],
               w->shape[1], w->shape[2], w->shape[3], w->shape[1]);
  INTRUS_CHECK(stride >= 1 && pad >= 0, "conv2d: stride %d, pad %d", stride, pad);
  INTRUS_CHECK(w->shape[1] >= 1 && w->shape[2] >= 1 && w->shape[3] >= 1,
               "conv2d: empty kernel w [%d, %d, %d, %d]", w->shape[0], w->shape[1],
               w->shape[2], w->shape[3]);
  INTRUS_CHECK(x->shape[2] + 2 * pad >= w->shape[2] && x->shape[3] + 2 * pad >= w->shape[3],
               "conv2d: kernel %dx%d larger than padded input %dx%d (pad %d)", w->shape[2],
               w->shape[3], x->shape[2] + 2 * pad, x->shape[3] + 2 * pad, pad);
  INTRUS_CHECK(!bias || (bias->ndim == 1 && bias->shape[0] == w->shape[0]),
               "conv2d: bias of %d dims, first %d, for %d output channels (need [%d])",
               bias ? bias->ndim : 0, bias ? bias->shape[0] : 0, w->shape[0], w->shape[0]);
  const struct conv_geom g = conv_geom_of(x, w, stride, pad);
  const int oshape[4] = {g.B, g.O, g.Ho, g.Wo};
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_CONV2D, 4, oshape, x, w, bias);
  out->ip[0] = stride;
  out->ip[1] = pad;
  if (out->n == 0) return out;

  const bool pointwise = conv_is_pointwise(&g);
  const int nt = conv_threads(g.B);
  float *cols =
      pointwise ? NULL : intrus_ctx_alloc(ctx, (size_t)nt * g.K * g.P * sizeof(float));
  if (nt > 1) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
    for (int b = 0; b < g.B; b++)
      conv_forward_one(&g, x, w, bias, cols ? cols + (size_t)thread_id() * g.K * g.P : NULL,
                       out, b);
  } else {
    for (int b = 0; b < g.B; b++) conv_forward_one(&g, x, w, bias, cols, out, b);
  }
  return out;
}

void intrus_conv2d_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *x = out->src[0], *w = out->src[1], *bias = out->src[2];
  const struct conv_geom g = conv_geom_of(x, w, out->ip[0], out->ip[1]);
  if (out->n == 0) return;
  const bool pointwise = conv_is_pointwise(&g);
  float *dx = x->requires_grad ? intrus_tensor_grad(ctx, x) : NULL;
  float *dw = w->requires_grad ? intrus_tensor_grad(ctx, w) : NULL;
  float *db = bias && bias->requires_grad ? intrus_tensor_grad(ctx, bias) : NULL;
  const float *dy = out->grad;
  const int nt = conv_threads(g.B);

  if (dx) {
    float *dcols =
        pointwise ? NULL : intrus_ctx_alloc(ctx, (size_t)nt * g.K * g.P * sizeof(float));
    if (nt > 1) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
      for (int b = 0; b < g.B; b++)
        conv_dx_one(&g, w->data, dy, dx,
                    dcols ? dcols + (size_t)thread_id() * g.K * g.P : NULL, b);
    } else {
      for (int b = 0; b < g.B; b++) conv_dx_one(&g, w->data, dy, dx, dcols, b);
    }
  }

  if (dw) {
    /* n entries side by side: col [K, n P] and dY [O, n P], one product per chunk. */
    const int chunk = conv_dw_chunk(&g);
    const size_t L = (size_t)chunk * g.P;
    float *col = intrus_ctx_alloc(ctx, (size_t)g.K * L * sizeof(float));
    float *dyc = chunk > 1 ? intrus_ctx_alloc(ctx, (size_t)g.O * L * sizeof(float)) : NULL;
    for (int b0 = 0; b0 < g.B; b0 += chunk) {
      const int n = g.B - b0 < chunk ? g.B - b0 : chunk;
      const size_t ld = (size_t)n * g.P;
      const float *dyb = dy + (size_t)b0 * g.O * g.P;
      if (n == 1) {
        const float *xb = x->data + (size_t)b0 * g.C * g.H * g.W;
        if (!pointwise) im2col(&g, xb, col, (size_t)g.P);
        intrus_gemm(false, true, g.O, g.K, g.P, 1.0f, dyb, g.P, pointwise ? xb : col, g.P,
                    1.0f, dw, g.K);
        continue;
      }
      const size_t total = (size_t)n * g.K * g.P;
      (void)total;
      OMP_FOR(total)
      for (int i = 0; i < n; i++) {
        const float *xb = x->data + (size_t)(b0 + i) * g.C * g.H * g.W;
        float *ci = col + (size_t)i * g.P;
        if (!pointwise) {
          im2col(&g, xb, ci, ld);
        } else {
          for (int k = 0; k < g.K; k++)
            memcpy(ci + (size_t)k * ld, xb + (size_t)k * g.P, (size_t)g.P * sizeof(float));
        }
        for (int o = 0; o < g.O; o++)
          memcpy(dyc + (size_t)o * ld + (size_t)i * g.P, dyb + ((size_t)i * g.O + o) * g.P,
                 (size_t)g.P * sizeof(float));
      }
      intrus_gemm(false, true, g.O, g.K, (int)ld, 1.0f, dyc, (int)ld, col, (int)ld, 1.0f, dw,
                  g.K);
    }
  }

  if (db)
    for (int b = 0; b < g.B; b++) {
      const float *dyb = dy + (size_t)b * g.O * g.P;
      for (int o = 0; o < g.O; o++) {
        const float *r = dyb + (size_t)o * g.P;
        double s = 0.0;
        for (int p = 0; p < g.P; p++) s += r[p];
        db[o] += (float)s;
      }
    }
}

/* ---- max pooling ------------------------------------------------------------ */

/* x: [B, C, H, W] -> [B, C, (H - k) / s + 1, (W - k) / s + 1]. aux: for every output,
 * the int32 offset within its input plane of the (first) maximum. ip[0] = k,
 * ip[1] = stride. */
intrus_tensor *intrus_maxpool2d(intrus_ctx *ctx, intrus_tensor *x, int k, int stride) {
  INTRUS_CHECK(x->ndim == 4, "maxpool2d: x has %d dims, need [B, C, H, W]", x->ndim);
  INTRUS_CHECK(k >= 1 && stride >= 1, "maxpool2d: window %d, stride %d", k, stride);
  const int B = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  INTRUS_CHECK(H >= k && W >= k, "maxpool2d: window %d larger than input [%d, %d, %d, %d]", k,
               B, C, H, W);
  const int Ho = (H - k) / stride + 1, Wo = (W - k) / stride + 1;
  const int oshape[4] = {B, C, Ho, Wo};
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_MAXPOOL2D, 4, oshape, x, NULL, NULL);
  out->ip[0] = k;
  out->ip[1] = stride;
  int32_t *arg = intrus_ctx_alloc(ctx, out->n * sizeof(int32_t));
  out->aux = arg;
  const size_t planes = (size_t)B * C, in_plane = (size_t)H * W, out_plane = (size_t)Ho * Wo;
  OMP_FOR(x->n)
  for (size_t pl = 0; pl < planes; pl++) {
    const float *xp = x->data + pl * in_plane;
    float *yp = out->data + pl * out_plane;
    int32_t *ap = arg + pl * out_plane;
    for (int oh = 0; oh < Ho; oh++)
      for (int ow = 0; ow < Wo; ow++) {
        const int h0 = oh * stride, w0 = ow * stride;
        int best = h0 * W + w0;
        float m = xp[best];
        for (int i = 0; i < k; i++)
          for (int j = 0; j < k; j++) {
            const int idx = (h0 + i) * W + w0 + j;
            /* Strict > keeps the first maximum; a NaN wins so it propagates, as in
             * torch. */
            if (!isnan(m) && (xp[idx] > m || isnan(xp[idx]))) {
              m = xp[idx];
              best = idx;
            }
          }
        yp[oh * Wo + ow] = m;
        ap[oh * Wo + ow] = best;
      }
  }
  return out;
}

void intrus_maxpool2d_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *x = out->src[0];
  if (!x->requires_grad) return;
  const size_t planes = (size_t)x->shape[0] * x->shape[1];
  const size_t in_plane = (size_t)x->shape[2] * x->shape[3];
  const size_t out_plane = (size_t)out->shape[2] * out->shape[3];
  const int32_t *arg = out->aux;
  const float *dy = out->grad;
  float *dx = intrus_tensor_grad(ctx, x);
  /* Overlapping windows (stride < k) can route several outputs to one input, but only
   * within a plane: planes in parallel never collide. */
  OMP_FOR(x->n)
  for (size_t pl = 0; pl < planes; pl++) {
    float *dxp = dx + pl * in_plane;
    const float *dyp = dy + pl * out_plane;
    const int32_t *ap = arg + pl * out_plane;
    for (size_t i = 0; i < out_plane; i++) dxp[ap[i]] += dyp[i];
  }
}

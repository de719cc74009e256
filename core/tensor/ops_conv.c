/* 2-D convolution by im2col + GEMM, and max pooling. Layout NCHW throughout.
 *
 * Per batch entry b, with K = C*kh*kw and P = Ho*Wo:
 *   col  [K, P]  = im2col(x[b])
 *   y[b] [O, P]  = w [O, K] @ col
 * and backward:
 *   dw   [O, K] += dy[b] @ col^T
 *   dcol [K, P]  = w^T @ dy[b];   dx[b] += col2im(dcol)
 * The im2col buffer is rebuilt in backward instead of being kept from forward: one
 * batch entry's worth of scratch instead of B of them for the whole step. */
#include <math.h>
#include <string.h>

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

/* xb: [C, H, W] -> col: [K, P], zeros where the window hangs over the padding. */
static void im2col(const struct conv_geom *g, const float *xb, float *col) {
  const size_t total = (size_t)g->K * g->P;
  (void)total; /* unused without OpenMP */
  OMP_FOR(total)
  for (int row = 0; row < g->K; row++) {
    const int c = row / (g->kh * g->kw), ki = row / g->kw % g->kh, kj = row % g->kw;
    const float *plane = xb + (size_t)c * g->H * g->W;
    float *dst = col + (size_t)row * g->P;
    for (int oh = 0; oh < g->Ho; oh++) {
      const int ih = oh * g->stride - g->pad + ki;
      float *d = dst + (size_t)oh * g->Wo;
      if (ih < 0 || ih >= g->H) {
        memset(d, 0, (size_t)g->Wo * sizeof(float));
        continue;
      }
      const float *src = plane + (size_t)ih * g->W;
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
  float *col = pointwise ? NULL : intrus_ctx_alloc(ctx, (size_t)g.K * g.P * sizeof(float));
  for (int b = 0; b < g.B; b++) {
    const float *xb = x->data + (size_t)b * g.C * g.H * g.W;
    float *yb = out->data + (size_t)b * g.O * g.P;
    if (!pointwise) im2col(&g, xb, col);
    const float *cb = pointwise ? xb : col;
    intrus_gemm(false, false, g.O, g.P, g.K, 1.0f, w->data, g.K, cb, g.P, 0.0f, yb, g.P);
    if (bias)
      for (int o = 0; o < g.O; o++) {
        float *yr = yb + (size_t)o * g.P;
        const float bo = bias->data[o];
        for (int p = 0; p < g.P; p++) yr[p] += bo;
      }
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
  float *col = NULL, *dcol = NULL;
  if (!pointwise) {
    if (dw) col = intrus_ctx_alloc(ctx, (size_t)g.K * g.P * sizeof(float));
    if (dx) dcol = intrus_ctx_alloc(ctx, (size_t)g.K * g.P * sizeof(float));
  }
  for (int b = 0; b < g.B; b++) {
    const float *xb = x->data + (size_t)b * g.C * g.H * g.W;
    const float *dyb = out->grad + (size_t)b * g.O * g.P;
    if (dw) {
      if (!pointwise) im2col(&g, xb, col);
      const float *cb = pointwise ? xb : col;
      intrus_gemm(false, true, g.O, g.K, g.P, 1.0f, dyb, g.P, cb, g.P, 1.0f, dw, g.K);
    }
    if (dx) {
      float *dxb = dx + (size_t)b * g.C * g.H * g.W;
      if (pointwise) {
        intrus_gemm(true, false, g.K, g.P, g.O, 1.0f, w->data, g.K, dyb, g.P, 1.0f, dxb, g.P);
      } else {
        intrus_gemm(true, false, g.K, g.P, g.O, 1.0f, w->data, g.K, dyb, g.P, 0.0f, dcol, g.P);
        col2im_add(&g, dcol, dxb);
      }
    }
    if (db)
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

/* Embedding lookup and layer normalisation. */
#include <math.h>
#include <string.h>

#include "intrus/tensor.h"
#include "ops_internal.h"

/* ---- embedding -------------------------------------------------------------- */

/* table: [V, d]; ids: shape[0..ndim). Result [shape..., d]. aux keeps a copy of the
 * ids (the caller's buffer may be reused before backward runs). */
intrus_tensor *intrus_embedding(intrus_ctx *ctx, intrus_tensor *table, const int32_t *ids,
                                int ndim, const int *shape) {
  INTRUS_CHECK(table->ndim == 2, "embedding: table has %d dims, need [V, d]", table->ndim);
  INTRUS_CHECK(ndim >= 1 && ndim + 1 <= INTRUS_MAX_DIMS,
               "embedding: ids of %d dims (result would need %d > %d dims)", ndim, ndim + 1,
               INTRUS_MAX_DIMS);
  const int V = table->shape[0], d = table->shape[1];
  int oshape[INTRUS_MAX_DIMS];
  for (int i = 0; i < ndim; i++) oshape[i] = shape[i];
  oshape[ndim] = d;
  const size_t nids = intrus_shape_numel(ndim, shape);
  /* Validate every id before touching memory: a bad id is a loader bug, and reporting
   * it beats reading past the table. */
  for (size_t i = 0; i < nids; i++)
    INTRUS_CHECK(ids[i] >= 0 && ids[i] < V, "embedding: id %d at position %zu outside [0, %d)",
                 (int)ids[i], i, V);

  intrus_tensor *out =
      intrus_op_result(ctx, INTRUS_OP_EMBEDDING, ndim + 1, oshape, table, NULL, NULL);
  const float *tab = table->data;
  float *y = out->data;
  OMP_FOR(out->n)
  for (size_t i = 0; i < nids; i++)
    memcpy(y + i * (size_t)d, tab + (size_t)ids[i] * d, (size_t)d * sizeof(float));

  if (out->requires_grad) {
    int32_t *copy = intrus_ctx_alloc(ctx, nids * sizeof(int32_t));
    memcpy(copy, ids, nids * sizeof(int32_t));
    out->aux = copy;
  }
  return out;
}

void intrus_embedding_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *table = out->src[0];
  if (!table->requires_grad) return;
  const int d = table->shape[1];
  const size_t nids = out->n / (size_t)(d ? d : 1);
  const int32_t *ids = out->aux;
  const float *dy = out->grad;
  float *dt = intrus_tensor_grad(ctx, table);
  /* Serial: repeated ids add into the same row, and a fixed order keeps the sums
   * bitwise reproducible. The loop is O(n), far below the GEMMs around it. */
  for (size_t i = 0; i < nids; i++) {
    float *row = dt + (size_t)ids[i] * d;
    const float *g = dy + i * (size_t)d;
    OMP_SIMD
    for (int j = 0; j < d; j++) row[j] += g[j];
  }
}

/* ---- layer norm ------------------------------------------------------------- */

/* Row sums in double over LANES interleaved partial sums (element j into lane j %
 * LANES, a tail past the last whole group summed apart), combined in a fixed order.
 * One running sum is one dependent add per element: layer norm was latency-bound on
 * it (5% of insertion decoding in perf). Compiled per instruction set
 * (INTRUS_ISA_VARIANTS), so the lanes are one or two vector registers; the order of
 * the sums is the same at every level. */
#define LANES 8

static inline double lanes_total(const double *a, double tail) {
  return (((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))) + tail;
}

/* One row: y = (x - mean) * rstd * g + b. */
ROW_INLINE void ln_row_body(const float *restrict x, float *restrict y,
                            const float *restrict g, const float *restrict b, int d, float eps,
                            float *mean, float *rstd) {
  const int dl = d - d % LANES;
  double acc[LANES] = {0}, tail = 0.0;
  for (int j = 0; j < dl; j += LANES)
    for (int k = 0; k < LANES; k++) acc[k] += x[j + k];
  for (int j = dl; j < d; j++) tail += x[j];
  /* Two passes: the one-pass E[x^2] - E[x]^2 form cancels badly when the mean is large
   * against the spread. */
  const double mu = lanes_total(acc, tail) / d;
  double sq[LANES] = {0}, sq_tail = 0.0;
  for (int j = 0; j < dl; j += LANES)
    for (int k = 0; k < LANES; k++) {
      double c = x[j + k] - mu;
      sq[k] += c * c;
    }
  for (int j = dl; j < d; j++) sq_tail += (x[j] - mu) * (x[j] - mu);
  const float m = (float)mu, rs = (float)(1.0 / sqrt(lanes_total(sq, sq_tail) / d + (double)eps));
  *mean = m;
  *rstd = rs;
  OMP_SIMD
  for (int j = 0; j < d; j++) y[j] = (x[j] - m) * rs * g[j] + b[j];
}
INTRUS_ISA_VARIANTS_VOID(static, ln_row,
                         (const float *restrict x, float *restrict y, const float *restrict g,
                          const float *restrict b, int d, float eps, float *mean, float *rstd),
                         (x, y, g, b, d, eps, mean, rstd))

/* One row of dx += rstd * (gy - mean_j(gy) - xh * mean_j(gy * xh)), with
 * xh = (x - mean) * rstd and gy = dy * gain. */
ROW_INLINE void ln_row_backward_body(const float *restrict x, const float *restrict dy,
                                     const float *restrict g, int d, float m, float rs,
                                     float *restrict dx) {
  const int dl = d - d % LANES;
  double sg[LANES] = {0}, sgx[LANES] = {0}, sg_tail = 0.0, sgx_tail = 0.0;
  for (int j = 0; j < dl; j += LANES)
    for (int k = 0; k < LANES; k++) {
      float gy = dy[j + k] * g[j + k], xh = (x[j + k] - m) * rs;
      sg[k] += gy;
      sgx[k] += (double)gy * xh;
    }
  for (int j = dl; j < d; j++) {
    float gy = dy[j] * g[j], xh = (x[j] - m) * rs;
    sg_tail += gy;
    sgx_tail += (double)gy * xh;
  }
  const float mg = (float)(lanes_total(sg, sg_tail) / d);
  const float mgx = (float)(lanes_total(sgx, sgx_tail) / d);
  OMP_SIMD
  for (int j = 0; j < d; j++) {
    float gy = dy[j] * g[j], xh = (x[j] - m) * rs;
    dx[j] += rs * (gy - mg - xh * mgx);
  }
}
INTRUS_ISA_VARIANTS_VOID(static, ln_row_backward,
                         (const float *restrict x, const float *restrict dy,
                          const float *restrict g, int d, float m, float rs,
                          float *restrict dx),
                         (x, dy, g, d, m, rs, dx))

/* x: [..., d] viewed as [R, d]; gain, bias: [d]. y = (x - mean) * rstd * gain + bias
 * with the biased variance, as torch.nn.LayerNorm. aux: mean [R], aux2: rstd [R]. */
intrus_tensor *intrus_layer_norm(intrus_ctx *ctx, intrus_tensor *x, intrus_tensor *gain,
                                 intrus_tensor *bias, float eps) {
  INTRUS_CHECK(gain && bias, "layer_norm: gain and bias are required");
  const int d = x->shape[x->ndim - 1];
  INTRUS_CHECK(gain->ndim == 1 && gain->shape[0] == d && bias->ndim == 1 &&
                   bias->shape[0] == d,
               "layer_norm: x last dim %d, gain [%d]%s, bias [%d]%s", d, gain->shape[0],
               gain->ndim == 1 ? "" : " (not 1-D)", bias->shape[0],
               bias->ndim == 1 ? "" : " (not 1-D)");
  INTRUS_CHECK(d > 0, "layer_norm: empty last dim");
  intrus_tensor *out =
      intrus_op_result(ctx, INTRUS_OP_LAYER_NORM, x->ndim, x->shape, x, gain, bias);
  out->fp[0] = eps;
  const size_t R = x->n / (size_t)d;
  float *mean = intrus_ctx_alloc(ctx, R * sizeof(float));
  float *rstd = intrus_ctx_alloc(ctx, R * sizeof(float));
  const float *xs = x->data, *g = gain->data, *b = bias->data;
  float *y = out->data;
  OMP_FOR(x->n)
  for (size_t r = 0; r < R; r++)
    ln_row(xs + r * (size_t)d, y + r * (size_t)d, g, b, d, eps, &mean[r], &rstd[r]);
  out->aux = mean;
  out->aux2 = rstd;
  return out;
}

void intrus_layer_norm_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *x = out->src[0], *gain = out->src[1], *bias = out->src[2];
  const int d = x->shape[x->ndim - 1];
  const size_t R = x->n / (size_t)d;
  const float *mean = out->aux, *rstd = out->aux2;
  const float *xs = x->data, *g = gain->data, *dy = out->grad;

  if (x->requires_grad) {
    float *dx = intrus_tensor_grad(ctx, x);
    OMP_FOR(x->n)
    for (size_t r = 0; r < R; r++)
      ln_row_backward(xs + r * (size_t)d, dy + r * (size_t)d, g, d, mean[r], rstd[r],
                      dx + r * (size_t)d);
  }
  if (gain->requires_grad || bias->requires_grad) {
    /* Chunked column sums (intrus_chunks_add): a chunk's partials are [gain | bias]. */
    float *dg = gain->requires_grad ? intrus_tensor_grad(ctx, gain) : NULL;
    float *db = bias->requires_grad ? intrus_tensor_grad(ctx, bias) : NULL;
    const size_t nchunks = (R + INTRUS_REDUCE_ROWS - 1) / INTRUS_REDUCE_ROWS;
    double *part = intrus_ctx_alloc(ctx, nchunks * 2 * (size_t)d * sizeof *part);
    OMP_FOR(x->n)
    for (size_t c = 0; c < nchunks; c++) {
      double *pg = part + c * 2 * (size_t)d, *pb = pg + d;
      for (int j = 0; j < 2 * d; j++) pg[j] = 0.0;
      const size_t r1 = (c + 1) * INTRUS_REDUCE_ROWS < R ? (c + 1) * INTRUS_REDUCE_ROWS : R;
      for (size_t r = c * INTRUS_REDUCE_ROWS; r < r1; r++) {
        const float *xr = xs + r * (size_t)d, *dyr = dy + r * (size_t)d;
        const float m = mean[r], rs = rstd[r];
        OMP_SIMD
        for (int j = 0; j < d; j++) {
          pg[j] += dyr[j] * ((xr[j] - m) * rs);
          pb[j] += dyr[j];
        }
      }
    }
    if (dg) intrus_chunks_add(dg, part, (long)nchunks, 2L * d, d);
    if (db) intrus_chunks_add(db, part + d, (long)nchunks, 2L * d, d);
  }
}

/* Softmax, log-softmax, fused cross-entropy and masked log-sum-exp, all over the last
 * dim. Every row is computed by one thread start to finish and the scalar loss is
 * summed serially, so results are bitwise identical for any OpenMP thread count. */
#include <math.h>
#include <string.h>

#include "intrus/blas.h"
#include "intrus/nn.h"
#include "intrus/tensor.h"
#include "ops_internal.h"

/* Copies a caller's R*C mask into the arena: backward may run after the caller's
 * buffer is gone. NULL stays NULL. */
static uint8_t *copy_mask(intrus_ctx *ctx, const uint8_t *mask, size_t n) {
  if (!mask) return NULL;
  uint8_t *m = intrus_ctx_alloc(ctx, n);
  memcpy(m, mask, n);
  return m;
}

/* log sum_{j: keep} exp(x[j]) of one row of C entries (mask may be NULL = keep all),
 * shifted by the row max so no exp overflows; -INFINITY when nothing is kept. */
static float row_logsumexp(const float *x, const uint8_t *mask, int C) {
  float mx = -INFINITY;
  bool any = false;
  for (int j = 0; j < C; j++)
    if (!mask || mask[j]) {
      any = true;
      if (x[j] > mx) mx = x[j];
    }
  /* mx == -INFINITY with kept entries means every kept logit is -inf: the sum is 0
   * and the shift would give -inf - -inf = NaN. */
  if (!any || mx == -INFINITY) return -INFINITY;
  double s = 0.0;
  for (int j = 0; j < C; j++)
    if (!mask || mask[j]) s += expf(x[j] - mx);
  return mx + (float)log(s);
}

/* Unmasked rows (the cross-entropy's and search's, vocabulary-wide) take these
 * vectorised kernels (libm's expf per element was ~4% of a training step of
 * bench_train (a)). */

ROW_INLINE float intrus_row_sumexp_body(const float *x, int C, float *max) {
  float mx = x[0];
  SIMD_MAX(mx)
  for (int j = 1; j < C; j++) mx = x[j] > mx ? x[j] : mx;
  *max = mx;
  if (mx == -INFINITY) return 0.0f;
  float s = 0.0f;
  SIMD_REDUCE(+, s)
  for (int j = 0; j < C; j++) s += intrus_exp_nonpos(x[j] - mx);
  return s;
}
INTRUS_ISA_VARIANTS(, float, intrus_row_sumexp, (const float *x, int C, float *max),
                    (x, C, max))

/* log sum_j exp(x[j]) of a whole row in float; -INFINITY if every entry is. */
static float row_logsumexp_dense(const float *x, int C) {
  float mx;
  const float s = intrus_row_sumexp(x, C, &mx);
  return mx == -INFINITY ? -INFINITY : mx + logf(s);
}

ROW_INLINE void intrus_row_add_softmax_body(float *restrict dx, const float *restrict x, int C,
                                            float lse, float g, float uni) {
  OMP_SIMD
  for (int j = 0; j < C; j++) dx[j] += g * (intrus_exp_nonpos(x[j] - lse) - uni);
}
INTRUS_ISA_VARIANTS_VOID(, intrus_row_add_softmax,
                         (float *restrict dx, const float *restrict x, int C, float lse,
                          float g, float uni),
                         (dx, x, C, lse, g, uni))

/* y[j] = x[j] - lse (log) or exp(x[j] - lse) over an unmasked row: search's
 * vocabulary-wide log-softmax of every hypothesis goes through here. */
ROW_INLINE void row_softmax_out_body(float *restrict y, const float *restrict x, int C,
                                     float lse, bool log_out) {
  if (log_out) {
    OMP_SIMD
    for (int j = 0; j < C; j++) y[j] = x[j] - lse;
  } else {
    OMP_SIMD
    for (int j = 0; j < C; j++) y[j] = intrus_exp_nonpos(x[j] - lse);
  }
}
INTRUS_ISA_VARIANTS_VOID(static, row_softmax_out,
                         (float *restrict y, const float *restrict x, int C, float lse,
                          bool log_out),
                         (y, x, C, lse, log_out))

static int last_dim(const intrus_tensor *x, const char *op) {
  INTRUS_CHECK(x->ndim >= 1, "%s: tensor of %d dims", op, x->ndim);
  int C = x->shape[x->ndim - 1];
  INTRUS_CHECK(C > 0, "%s: empty last dim (shape has %d dims, last 0)", op, x->ndim);
  return C;
}

/* ---- softmax / log-softmax -------------------------------------------------- */

/* x: [..., C] viewed as [R, C]; mask: NULL or R*C bytes. aux: the mask copy. */
static intrus_tensor *softmax_common(intrus_ctx *ctx, intrus_tensor *x, const uint8_t *mask,
                                     bool log_out) {
  const int C = last_dim(x, log_out ? "log_softmax" : "softmax");
  const size_t R = x->n / (size_t)C;
  const enum intrus_op op = log_out ? INTRUS_OP_LOG_SOFTMAX : INTRUS_OP_SOFTMAX;
  intrus_tensor *out = intrus_op_result(ctx, op, x->ndim, x->shape, x, NULL, NULL);
  out->aux = copy_mask(ctx, mask, x->n);
  const uint8_t *m = out->aux;
  const float *xs = x->data;
  float *y = out->data;
  const float masked = log_out ? -INFINITY : 0.0f;
  OMP_FOR(x->n)
  for (size_t r = 0; r < R; r++) {
    const float *xr = xs + r * (size_t)C;
    const uint8_t *mr = m ? m + r * (size_t)C : NULL;
    float *yr = y + r * (size_t)C;
    const float lse = mr ? row_logsumexp(xr, mr, C) : row_logsumexp_dense(xr, C);
    if (lse == -INFINITY) {
      /* Nothing kept (or every kept logit -inf): probabilities 0, no NaN. */
      for (int j = 0; j < C; j++) yr[j] = masked;
      continue;
    }
    if (!mr) {
      row_softmax_out(yr, xr, C, lse, log_out);
      continue;
    }
    for (int j = 0; j < C; j++) {
      if (!mr[j]) yr[j] = masked;
      else yr[j] = log_out ? xr[j] - lse : expf(xr[j] - lse);
    }
  }
  return out;
}

intrus_tensor *intrus_softmax(intrus_ctx *ctx, intrus_tensor *x, const uint8_t *mask) {
  return softmax_common(ctx, x, mask, false);
}

intrus_tensor *intrus_log_softmax(intrus_ctx *ctx, intrus_tensor *x, const uint8_t *mask) {
  return softmax_common(ctx, x, mask, true);
}

void intrus_softmax_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *x = out->src[0];
  if (!x->requires_grad) return;
  const int C = x->shape[x->ndim - 1];
  const size_t R = x->n / (size_t)C;
  const uint8_t *m = out->aux;
  const float *y = out->data, *dy = out->grad;
  float *dx = intrus_tensor_grad(ctx, x);
  /* dx_j = y_j (dy_j - sum_k dy_k y_k) over kept entries; masked ones get nothing
   * (tested explicitly so a non-finite dy there cannot leak in through 0 * inf). */
  OMP_FOR(x->n)
  for (size_t r = 0; r < R; r++) {
    const size_t o = r * (size_t)C;
    const uint8_t *mr = m ? m + o : NULL;
    double dot = 0.0;
    for (int j = 0; j < C; j++)
      if (!mr || mr[j]) dot += (double)dy[o + j] * y[o + j];
    const float d = (float)dot;
    if (!mr) {
      OMP_SIMD
      for (int j = 0; j < C; j++) dx[o + j] += y[o + j] * (dy[o + j] - d);
    } else {
      for (int j = 0; j < C; j++)
        if (mr[j]) dx[o + j] += y[o + j] * (dy[o + j] - d);
    }
  }
}

void intrus_log_softmax_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *x = out->src[0];
  if (!x->requires_grad) return;
  const int C = x->shape[x->ndim - 1];
  const size_t R = x->n / (size_t)C;
  const uint8_t *m = out->aux;
  const float *y = out->data, *dy = out->grad;
  float *dx = intrus_tensor_grad(ctx, x);
  /* dx_j = dy_j - p_j sum_k dy_k over kept entries, p_j = exp(y_j). A row whose
   * outputs are all -inf (fully masked) has no kept finite entry and gets nothing. */
  OMP_FOR(x->n)
  for (size_t r = 0; r < R; r++) {
    const size_t o = r * (size_t)C;
    const uint8_t *mr = m ? m + o : NULL;
    double s = 0.0;
    bool any = false;
    for (int j = 0; j < C; j++)
      if ((!mr || mr[j]) && y[o + j] != -INFINITY) {
        s += dy[o + j];
        any = true;
      }
    if (!any) continue;
    const float sf = (float)s;
    for (int j = 0; j < C; j++)
      if ((!mr || mr[j]) && y[o + j] != -INFINITY) dx[o + j] += dy[o + j] - expf(y[o + j]) * sf;
  }
}

/* ---- cross-entropy ---------------------------------------------------------- */

/* logits: [..., V] viewed as [R, V]; targets: R ids. Result: scalar [1].
 * aux: targets copy [R]; aux2: per-row log-sum-exp [R] (float), from which backward
 * recomputes p = exp(x - lse) rather than keeping an [R, V] probability buffer.
 * ip[0] = ignore_index, ip[1] = number of rows counted; fp[0] = smoothing. */
intrus_tensor *intrus_cross_entropy(intrus_ctx *ctx, intrus_tensor *logits,
                                    const int32_t *targets, float smoothing,
                                    int32_t ignore_index) {
  const int V = last_dim(logits, "cross_entropy");
  const size_t R = logits->n / (size_t)V;
  INTRUS_CHECK(smoothing >= 0.0f && smoothing <= 1.0f,
               "cross_entropy: smoothing %g outside [0, 1]", (double)smoothing);
  for (size_t r = 0; r < R; r++)
    INTRUS_CHECK(targets[r] == ignore_index || (targets[r] >= 0 && targets[r] < V),
                 "cross_entropy: target %d of row %zu outside [0, %d) (ignore_index %d)",
                 (int)targets[r], r, V, (int)ignore_index);
  const int one = 1;
  intrus_tensor *out =
      intrus_op_result(ctx, INTRUS_OP_CROSS_ENTROPY, 1, &one, logits, NULL, NULL);
  int32_t *tg = intrus_ctx_alloc(ctx, R * sizeof(int32_t));
  memcpy(tg, targets, R * sizeof(int32_t));
  float *lse = intrus_ctx_alloc(ctx, R * sizeof(float));
  /* Per-row losses, summed afterwards in row order (not by an OpenMP reduction, whose
   * combination order depends on the thread count). */
  double *rowloss = intrus_ctx_alloc(ctx, R * sizeof(double));
  const float *xs = logits->data;
  const double s = smoothing;
  OMP_FOR(logits->n)
  for (size_t r = 0; r < R; r++) {
    const float *xr = xs + r * (size_t)V;
    const float l = row_logsumexp_dense(xr, V);
    lse[r] = l;
    if (tg[r] == ignore_index) {
      rowloss[r] = 0.0;
      continue;
    }
    /* -log p_t = lse - x_t;  mean_v(-log p_v) = lse - mean_v(x_v). */
    double nll = (double)l - xr[tg[r]], smooth = 0.0;
    if (s > 0.0) {
      double sx = 0.0;
      for (int j = 0; j < V; j++) sx += xr[j];
      smooth = (double)l - sx / V;
    }
    rowloss[r] = (1.0 - s) * nll + s * smooth;
  }
  double total = 0.0;
  int32_t count = 0;
  for (size_t r = 0; r < R; r++)
    if (tg[r] != ignore_index) {
      total += rowloss[r];
      count++;
    }
  out->data[0] = count ? (float)(total / count) : 0.0f;
  out->aux = tg;
  out->aux2 = lse;
  out->ip[0] = ignore_index;
  out->ip[1] = count;
  out->fp[0] = smoothing;
  return out;
}

void intrus_cross_entropy_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *x = out->src[0];
  const int32_t count = out->ip[1];
  if (!x->requires_grad || count == 0) return;
  const int V = x->shape[x->ndim - 1];
  const size_t R = x->n / (size_t)V;
  const int32_t *tg = out->aux, ignore_index = out->ip[0];
  const float *lse = out->aux2, *xs = x->data;
  const float s = out->fp[0];
  const float g = out->grad[0] / (float)count, uni = s / (float)V;
  float *dx = intrus_tensor_grad(ctx, x);
  /* d loss_r / dx_v = p_v - (1 - s) [v == t] - s / V; scaled by dL / (rows counted). */
  OMP_FOR(x->n)
  for (size_t r = 0; r < R; r++) {
    if (tg[r] == ignore_index) continue;
    const size_t o = r * (size_t)V;
    const float l = lse[r];
    intrus_row_add_softmax(dx + o, xs + o, V, l, g, uni);
    dx[o + tg[r]] -= g * (1.0f - s);
  }
}

/* ---- masked log-sum-exp ----------------------------------------------------- */

/* x: [..., C] viewed as [R, C]; mask: R*C bytes. Result [R]. aux: the mask copy. */
intrus_tensor *intrus_logsumexp_masked(intrus_ctx *ctx, intrus_tensor *x, const uint8_t *mask) {
  const int C = last_dim(x, "logsumexp_masked");
  INTRUS_CHECK(mask != NULL, "logsumexp_masked: mask is required");
  const int R = (int)(x->n / (size_t)C);
  intrus_tensor *out =
      intrus_op_result(ctx, INTRUS_OP_LOGSUMEXP_MASKED, 1, &R, x, NULL, NULL);
  out->aux = copy_mask(ctx, mask, x->n);
  const uint8_t *m = out->aux;
  const float *xs = x->data;
  float *y = out->data;
  OMP_FOR(x->n)
  for (int r = 0; r < R; r++)
    y[r] = row_logsumexp(xs + (size_t)r * C, m + (size_t)r * C, C);
  return out;
}

void intrus_logsumexp_masked_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *x = out->src[0];
  if (!x->requires_grad) return;
  const int C = x->shape[x->ndim - 1];
  const int R = out->shape[0];
  const uint8_t *m = out->aux;
  const float *xs = x->data, *y = out->data, *dy = out->grad;
  float *dx = intrus_tensor_grad(ctx, x);
  /* d lse / dx_j = exp(x_j - lse) = softmax over the kept entries; an empty row
   * (lse = -inf) has no gradient. */
  OMP_FOR(x->n)
  for (int r = 0; r < R; r++) {
    if (y[r] == -INFINITY) continue;
    const size_t o = (size_t)r * C;
    for (int j = 0; j < C; j++)
      if (m[o + j]) dx[o + j] += dy[r] * expf(xs[o + j] - y[r]);
  }
}

/* ---- inference: vocabulary-wide log-probabilities straight from hidden rows ---- */

/* Rows per block of intrus_linear_log_softmax: a block's logits (32 rows x 8,000 floats
 * = 1 MB) are normalised while still in a core's L2 cache; the one product over all
 * rows would write them to memory, and the two normalising passes read them back. */
#define LSM_BLOCK 32

/* n rows of V logits in place: subtract each row's log-sum-exp (a row of -inf stays
 * -inf). */
ROW_INLINE void rows_log_normalise_body(float *x, int n, int V) {
  for (int r = 0; r < n; r++) {
    float *row = x + (size_t)r * V;
    const float lse = row_logsumexp_dense(row, V);
    const float shift = lse == -INFINITY ? 0.0f : lse;
    OMP_SIMD
    for (int j = 0; j < V; j++) row[j] -= shift;
  }
}
INTRUS_ISA_VARIANTS_VOID(static, rows_log_normalise, (float *x, int n, int V), (x, n, V))

void intrus_linear_log_softmax(int R, const float *x, int ldx, const struct intrus_packed *w,
                               float *out) {
  const int V = intrus_packed_n(w);
  if (R <= 0 || V <= 0) return;
  const int blocks = (R + LSM_BLOCK - 1) / LSM_BLOCK;
  int nt = 1;
#ifdef _OPENMP
  nt = omp_get_max_threads();
#endif
  /* Too few blocks to share: one product split across the threads instead. */
  if (blocks < 2 * nt) {
    intrus_gemm_packed(R, x, ldx, w, out, V);
    OMP_FOR((size_t)R * V)
    for (int r = 0; r < R; r++) rows_log_normalise(out + (size_t)r * V, 1, V);
    return;
  }
  OMP_FOR_DYNAMIC((size_t)R * V)
  for (int b = 0; b < blocks; b++) {
    const int r0 = b * LSM_BLOCK, n = R - r0 < LSM_BLOCK ? R - r0 : LSM_BLOCK;
    float *o = out + (size_t)r0 * V;
    intrus_gemm_packed(n, x + (size_t)r0 * ldx, ldx, w, o, V);
    rows_log_normalise(o, n, V);
  }
}

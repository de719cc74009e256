/* The INTRUS losses of a batch of states (DESIGN.md section 4), fused: position
 * log-softmax per state, token log-softmax per row, and the log-sum-exp (main) or mean
 * (uniform) over each state's correct pairs.
 *
 * The V-wide work is per token row and runs in parallel over rows; everything per state
 * or per pair is O(len + pairs) and runs serially in a fixed order. Each row is computed
 * start to finish by one thread, so results do not depend on the thread count. Rows are
 * addressed through pair_row, so pairs of one state, or even of different states, may
 * share a row: backward gathers each row's total weight before its one V-wide pass. */
#include <math.h>
#include <string.h>

#include "intrus/insertion.h"
#include "intrus/tensor.h"
#include "ops_internal.h"

/* What backward needs, in the arena. Offsets are rebased so pair_off[0] = 0. */
struct ins_loss_saved {
  int count, npairs, rows, vocab;
  float smoothing;
  int *row0, *len, *pair_off, *pair_slot, *pair_row;
  int32_t *pair_tok;
  double *pos_lse;   /* [count] log-sum-exp of each state's position logits */
  double *tok_lse;   /* [rows] log-sum-exp of each token row */
  double *resp;      /* [npairs] r of each pair: posterior (main) or 1/|pairs| */
};

/* log sum exp of x[0..n), shifted by the max so nothing overflows; the sum in double.
 * -INFINITY when every entry is -inf (the shift would give NaN). */
static double logsumexp_row(const float *x, int n) {
  float mx = -INFINITY;
  for (int j = 0; j < n; j++)
    if (x[j] > mx) mx = x[j];
  if (mx == -INFINITY) return -INFINITY;
  double s = 0.0;
  for (int j = 0; j < n; j++) s += exp((double)x[j] - mx);
  return (double)mx + log(s);
}

/* The token rows are vocabulary-wide: their log-sum-exp (intrus_row_sumexp) and
 * softmax gradient (intrus_row_add_softmax) are the vectorised row kernels of
 * ops_softmax.c (libm's exp per element made them a large part of an INTRUS step). */

static void *arena_copy(intrus_ctx *ctx, const void *src, size_t bytes) {
  void *d = intrus_ctx_alloc(ctx, bytes ? bytes : 1);
  if (bytes) memcpy(d, src, bytes);
  return d;
}

static void check_targets(const intrus_tensor *pos, const intrus_tensor *tok,
                          const struct intrus_ins_targets *tg, int rows, int vocab) {
  INTRUS_CHECK(tg->count >= 0, "insertion_loss: %d states", tg->count);
  INTRUS_CHECK(tg->pair_off[0] >= 0, "insertion_loss: pair_off[0] = %d", tg->pair_off[0]);
  for (int s = 0; s < tg->count; s++) {
    const long r0 = tg->row0[s], len = tg->len[s];
    INTRUS_CHECK(len >= 2, "insertion_loss: state %d has %ld positions (at least 2: slot 0 "
                           "and finish)", s, len);
    INTRUS_CHECK(r0 >= 0 && r0 + len <= (long)pos->n,
                 "insertion_loss: state %d's positions %ld..%ld outside pos [%zu]", s, r0,
                 r0 + len - 1, pos->n);
    INTRUS_CHECK(tg->pair_off[s + 1] >= tg->pair_off[s],
                 "insertion_loss: pair_off decreases at state %d (%d -> %d)", s,
                 tg->pair_off[s], tg->pair_off[s + 1]);
    for (int p = tg->pair_off[s]; p < tg->pair_off[s + 1]; p++) {
      INTRUS_CHECK(tg->pair_slot[p] >= 0 && tg->pair_slot[p] <= len - 2,
                   "insertion_loss: pair %d of state %d at slot %d outside [0, %ld]", p, s,
                   tg->pair_slot[p], len - 2);
      INTRUS_CHECK(tok != NULL, "insertion_loss: state %d has pairs but tok is NULL", s);
      INTRUS_CHECK(tg->pair_row[p] >= 0 && tg->pair_row[p] < rows,
                   "insertion_loss: pair %d reads token row %d outside [0, %d)", p,
                   tg->pair_row[p], rows);
      INTRUS_CHECK(tg->pair_tok[p] >= 0 && tg->pair_tok[p] < vocab,
                   "insertion_loss: pair %d has token %d outside [0, %d)", p,
                   (int)tg->pair_tok[p], vocab);
    }
  }
}

intrus_tensor *intrus_insertion_loss(intrus_ctx *ctx, intrus_tensor *pos, intrus_tensor *tok,
                                     const struct intrus_ins_targets *tg,
                                     enum intrus_ins_loss_kind kind, float smoothing) {
  INTRUS_CHECK(pos != NULL && tg != NULL, "insertion_loss: pos and targets are required");
  INTRUS_CHECK(kind == INTRUS_INS_LOSS_MAIN || kind == INTRUS_INS_LOSS_UNIFORM,
               "insertion_loss: unknown loss kind %d", (int)kind);
  INTRUS_CHECK(smoothing >= 0.0f && smoothing < 1.0f,
               "insertion_loss: label smoothing %g outside [0, 1)", (double)smoothing);
  int rows = 0, vocab = 0;
  if (tok) {
    INTRUS_CHECK(tok->ndim >= 1 && tok->shape[tok->ndim - 1] > 0,
                 "insertion_loss: tok needs a non-empty last dim (the vocabulary)");
    vocab = tok->shape[tok->ndim - 1];
    rows = (int)(tok->n / (size_t)vocab);
  }
  check_targets(pos, tok, tg, rows, vocab);

  const int count = tg->count;
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_INSERTION_LOSS, 1, &count, pos, tok, NULL);
  struct ins_loss_saved *sv = intrus_ctx_alloc(ctx, sizeof *sv);
  const int base = tg->pair_off[0], npairs = tg->pair_off[count] - base;
  sv->count = count;
  sv->npairs = npairs;
  sv->rows = rows;
  sv->vocab = vocab;
  sv->smoothing = smoothing;
  sv->row0 = arena_copy(ctx, tg->row0, (size_t)count * sizeof(int));
  sv->len = arena_copy(ctx, tg->len, (size_t)count * sizeof(int));
  sv->pair_off = intrus_ctx_alloc(ctx, (size_t)(count + 1) * sizeof(int));
  for (int s = 0; s <= count; s++) sv->pair_off[s] = tg->pair_off[s] - base;
  /* Without pairs the pair arrays may be NULL: not even offset then. */
  const size_t pb = (size_t)npairs * sizeof(int);
  sv->pair_slot = arena_copy(ctx, npairs ? tg->pair_slot + base : NULL, pb);
  sv->pair_row = arena_copy(ctx, npairs ? tg->pair_row + base : NULL, pb);
  sv->pair_tok = arena_copy(ctx, npairs ? tg->pair_tok + base : NULL,
                            (size_t)npairs * sizeof(int32_t));
  sv->pos_lse = intrus_ctx_alloc(ctx, ((size_t)count + 1) * sizeof(double));
  sv->tok_lse = intrus_ctx_alloc(ctx, ((size_t)rows + 1) * sizeof(double));
  sv->resp = intrus_ctx_alloc(ctx, ((size_t)npairs + 1) * sizeof(double));
  out->aux = sv;

  /* With label smoothing each row's mean logit too: mean_v log p(v | row) is that less
   * the row's log-sum-exp. Forward only; backward needs just the 1/V. */
  const double ls = smoothing;
  double *tok_mean = ls > 0.0 ? intrus_ctx_alloc(ctx, ((size_t)rows + 1) * sizeof(double)) : NULL;
  if (tok) {
    const float *x = tok->data;
    double *lse = sv->tok_lse;
    OMP_FOR(tok->n)
    for (int r = 0; r < rows; r++) {
      float mx;
      const float *xr = x + (size_t)r * vocab;
      const float sum = intrus_row_sumexp(xr, vocab, &mx);
      lse[r] = mx == -INFINITY ? -INFINITY : (double)mx + log((double)sum);
      if (tok_mean) {
        double m = 0.0;
        for (int v = 0; v < vocab; v++) m += xr[v];
        tok_mean[r] = m / vocab;
      }
    }
  }

  const float *xp = pos->data, *xt = tok ? tok->data : NULL;
  for (int s = 0; s < count; s++) {
    const int r0 = sv->row0[s], len = sv->len[s];
    const double plse = logsumexp_row(xp + r0, len);
    sv->pos_lse[s] = plse;
    const int p0 = sv->pair_off[s], p1 = sv->pair_off[s + 1];
    if (p0 == p1) {
      out->data[s] = (float)(plse - xp[r0 + len - 1]);
      continue;
    }
    /* log p(i, c) of each pair, parked in resp until it becomes the pair's weight. With
     * smoothing s the token term is (1-s) log p(c | i) + s mean_v log p(v | i). */
    double *lp = sv->resp + p0;
    double mx = -INFINITY, sum = 0.0;
    for (int p = p0; p < p1; p++) {
      const int row = sv->pair_row[p];
      const double xc = xt[(size_t)row * vocab + sv->pair_tok[p]];
      lp[p - p0] = ((double)xp[r0 + sv->pair_slot[p]] - plse) +
                   ((tok_mean ? (1.0 - ls) * xc + ls * tok_mean[row] : xc) - sv->tok_lse[row]);
      if (lp[p - p0] > mx) mx = lp[p - p0];
      sum += lp[p - p0];
    }
    const int np = p1 - p0;
    if (kind == INTRUS_INS_LOSS_UNIFORM) {
      out->data[s] = (float)(-sum / np);
      for (int q = 0; q < np; q++) lp[q] = 1.0 / np;
      continue;
    }
    if (mx == -INFINITY) {
      /* Every correct pair has probability 0: the loss is infinite and no finite
       * gradient exists; the pairs get no weight rather than NaN. */
      out->data[s] = INFINITY;
      for (int q = 0; q < np; q++) lp[q] = 0.0;
      continue;
    }
    double z = 0.0;
    for (int q = 0; q < np; q++) z += exp(lp[q] - mx);
    const double lse = mx + log(z);
    out->data[s] = (float)-lse;
    for (int q = 0; q < np; q++) lp[q] = exp(lp[q] - lse);
  }
  return out;
}

/* dL_s/dpos_j = p_pos(j) - sum of r over s's pairs at slot j (finish: r = 1 when s is
 * complete); dL_s/dtok[row, v] = (sum of r over pairs reading row) (p(v | row) - s/V) -
 * (1-s) sum of r over pairs (row, v), s the label smoothing. Each term is scaled by the
 * incoming gradient of its state. */
void intrus_insertion_loss_backward(intrus_ctx *ctx, intrus_tensor *out) {
  const struct ins_loss_saved *sv = out->aux;
  intrus_tensor *pos = out->src[0], *tok = out->src[1];
  const float *g = out->grad;

  if (pos->requires_grad) {
    float *dpos = intrus_tensor_grad(ctx, pos);
    const float *xp = pos->data;
    for (int s = 0; s < sv->count; s++) {
      const int r0 = sv->row0[s], len = sv->len[s];
      const double gs = g[s], plse = sv->pos_lse[s];
      if (plse == -INFINITY) continue;
      for (int j = 0; j < len; j++) dpos[r0 + j] += (float)(gs * exp((double)xp[r0 + j] - plse));
      const int p0 = sv->pair_off[s], p1 = sv->pair_off[s + 1];
      if (p0 == p1) dpos[r0 + len - 1] -= (float)gs;
      for (int p = p0; p < p1; p++) dpos[r0 + sv->pair_slot[p]] -= (float)(gs * sv->resp[p]);
    }
  }

  if (!tok || !tok->requires_grad || sv->npairs == 0) return;
  /* tok's only consumer is this loss, so its gradient buffer is usually new: then each
   * row is zeroed just before its pass, while in cache, rather than the whole
   * vocabulary-wide buffer in one more pass through memory. */
  const bool fresh = !tok->grad;
  if (fresh) tok->grad = intrus_ctx_alloc(ctx, tok->n * sizeof(float));
  float *dtok = tok->grad;
  const int V = sv->vocab;
  double *wrow = intrus_ctx_calloc(ctx, (size_t)sv->rows * sizeof(double));
  for (int s = 0; s < sv->count; s++)
    for (int p = sv->pair_off[s]; p < sv->pair_off[s + 1]; p++)
      wrow[sv->pair_row[p]] += (double)g[s] * sv->resp[p];
  const float *xt = tok->data;
  const double *lse = sv->tok_lse;
  OMP_FOR(tok->n)
  for (int r = 0; r < sv->rows; r++) {
    /* Rows read by no pair (or whose weights cancel exactly) get nothing: skipping
     * them is exact and saves the V exps. */
    if (fresh) memset(dtok + (size_t)r * V, 0, (size_t)V * sizeof(float));
    if (wrow[r] == 0.0 || lse[r] == -INFINITY) continue;
    intrus_row_add_softmax(dtok + (size_t)r * V, xt + (size_t)r * V, V, (float)lse[r],
                           (float)wrow[r], sv->smoothing / (float)V);
  }
  const double keep = 1.0 - (double)sv->smoothing;
  for (int s = 0; s < sv->count; s++)
    for (int p = sv->pair_off[s]; p < sv->pair_off[s + 1]; p++)
      dtok[(size_t)sv->pair_row[p] * V + sv->pair_tok[p]] -=
          (float)(keep * (double)g[s] * sv->resp[p]);
}

/* Beam search over the decoder step API (the decoder keeps caches; the choice of
 * hypotheses lives here). Sentences of a batch are searched together: one decoder step
 * per position for all rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/search.h"
#include "search_cut.h"

struct intrus_beam_opts intrus_beam_defaults(void) {
  return (struct intrus_beam_opts){.beam = 4, .alpha = 1.0f, .max_len_a = 2.0f, .max_len_b = 3,
                                  .prune = true};
}

struct cand {
  double score;
  int row;
  int32_t token;
};

struct finished {
  double score, logp;
  int len;
  int32_t *tokens;
};

struct sentence {
  int max_len;
  bool done;
  int nfin;
  struct finished *fin; /* up to beam */
};

static int cand_desc(const void *a, const void *b) {
  const struct cand *x = a, *y = b;
  if (x->score != y->score) return x->score < y->score ? 1 : -1;
  if (x->row != y->row) return x->row - y->row;
  return x->token - y->token;
}

static double length_norm(double logp, int len_with_eos, float alpha) {
  return logp / pow((double)len_with_eos, alpha);
}

/* Keeps the best n candidates of one sentence in cands (unsorted input, sorted output). */
/* beta: the finish penalty, subtracted from EOS's log p (the cut stays valid: it only
 * lowers a candidate). */
static int top_candidates(const float *logp, const double *row_score, int row0, int per, int V,
                          bool only_eos, bool no_eos, double beta, int n, struct cand *cands) {
  int count = 0;
  for (int r = 0; r < per; r++) {
    double base = row_score[row0 + r];
    if (!isfinite(base)) continue;
    const float *lp = logp + (size_t)(row0 + r) * V;
    float cut = count == n ? intrus_search_cut(cands[n - 1].score, base) : -INFINITY;
    for (int v = 0; v < V; v++) {
      if (lp[v] < cut) continue;
      if (v == INTRUS_PAD || v == INTRUS_BOS || v == INTRUS_UNK) continue;
      if (only_eos && v != INTRUS_EOS) continue;
      if (no_eos && v == INTRUS_EOS) continue;
      double s = base + lp[v];
      if (v == INTRUS_EOS) s -= beta;
      if (!isfinite(s)) continue;
      struct cand c = {s, row0 + r, v};
      if (count < n) {
        cands[count++] = c;
        if (count == n) qsort(cands, (size_t)count, sizeof *cands, cand_desc);
      } else if (cand_desc(&c, &cands[n - 1]) < 0) {
        /* Insert in order, dropping the worst. */
        int i = n - 1;
        while (i > 0 && cand_desc(&c, &cands[i - 1]) < 0) {
          cands[i] = cands[i - 1];
          i--;
        }
        cands[i] = c;
      } else {
        continue;
      }
      if (count == n) cut = intrus_search_cut(cands[n - 1].score, base);
    }
  }
  if (count < n) qsort(cands, (size_t)count, sizeof *cands, cand_desc);
  return count;
}

enum intrus_status intrus_beam_search(struct intrus_model *m, intrus_ctx *ctx,
                                      const struct intrus_src_batch *src,
                                      const struct intrus_beam_opts *opts,
                                      struct intrus_beam_result *out, struct intrus_error *err) {
  void *dec_self;
  const struct intrus_decoder_vtable *dec = intrus_model_decoder(m, &dec_self);
  if (!dec->start || !dec->step || !dec->finish)
    return intrus_error_set(err, INTRUS_ERR_UNSUPPORTED,
                            "this decoder has no incremental mode, so beam search cannot run it");
  int B = src->batch, K = opts->beam, V = intrus_model_tgt_vocab(m), rows = B * K;
  if (K < 1) return intrus_error_set(err, INTRUS_ERR_INVALID, "beam must be at least 1");
  const double beta = opts->finish_penalty;
  if (!(beta >= 0.0) || !isfinite(beta))
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "beam search: search.finish_penalty = %g must be finite and >= 0",
                            beta);
  memset(out, 0, (size_t)B * sizeof *out);
  bool grad = intrus_ctx_grad_enabled(ctx);
  intrus_ctx_set_grad(ctx, false);

  struct sentence *sent = calloc((size_t)B, sizeof *sent);
  int maxT = 1;
  for (int b = 0; b < B; b++) {
    int srclen = src->lens ? src->lens[b] : src->len;
    sent[b].max_len = (int)(opts->max_len_a * srclen) + opts->max_len_b;
    if (sent[b].max_len < 0) sent[b].max_len = 0;
    if (sent[b].max_len + 1 > maxT) maxT = sent[b].max_len + 1;
    sent[b].fin = calloc((size_t)K, sizeof *sent[b].fin);
  }
  double *score = malloc((size_t)rows * sizeof *score), *next_score = malloc((size_t)rows * sizeof *next_score);
  int32_t *hist = calloc((size_t)rows * maxT, sizeof *hist), *next_hist = calloc((size_t)rows * maxT, sizeof *hist);
  int32_t *tokens = malloc((size_t)rows * sizeof *tokens), *parents = malloc((size_t)rows * sizeof *parents);
  float *logp = malloc((size_t)rows * V * sizeof *logp);
  struct cand *cands = malloc((size_t)B * 2 * K * sizeof *cands);
  int *ncand = malloc((size_t)B * sizeof *ncand);
  void *state = NULL;
  enum intrus_status st = INTRUS_OK;
  for (int r = 0; r < rows; r++) {
    /* Only the first row of each sentence is alive at the start (all rows would be the
     * same hypothesis). */
    score[r] = r % K == 0 ? 0.0 : -INFINITY;
    tokens[r] = INTRUS_BOS;
    parents[r] = r;
  }

  /* No reset before encoding: the caller's batch may live in ctx's arena. It is read
   * only up to start(), which copies what the steps need; each step then resets. */
  struct intrus_memory mem;
  if ((st = intrus_model_encode(m, ctx, src, &mem, err)) ||
      (st = dec->start(dec_self, ctx, &mem, K, maxT, &state, err)))
    goto done;

  for (int t = 0; t < maxT; t++) {
    bool all_done = true;
    for (int b = 0; b < B; b++) all_done &= sent[b].done;
    if (all_done) break;
    intrus_ctx_reset(ctx);
    if ((st = dec->step(dec_self, state, ctx, t ? parents : NULL, tokens, logp, err))) goto done;
    /* Sentences' candidates are independent: a V-wide scan of each row, in parallel. */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) if (B > 1 && (long)rows * V >= 65536)
#endif
    for (int b = 0; b < B; b++) {
      const struct sentence *S = &sent[b];
      if (S->done) continue;
      bool only_eos = t >= S->max_len;
      bool no_eos = t < opts->min_len && !only_eos;
      ncand[b] = top_candidates(logp, score, b * K, K, V, only_eos, no_eos, beta, 2 * K,
                                cands + (size_t)b * 2 * K);
    }
    for (int b = 0; b < B; b++) {
      struct sentence *S = &sent[b];
      int row0 = b * K;
      if (S->done) {
        for (int r = row0; r < row0 + K; r++) {
          parents[r] = r;
          tokens[r] = INTRUS_EOS;
          next_score[r] = -INFINITY;
          memcpy(next_hist + (size_t)r * maxT, hist + (size_t)r * maxT, (size_t)maxT * sizeof *hist);
        }
        continue;
      }
      bool only_eos = t >= S->max_len;
      int live = 0;
      for (int i = 0; i < ncand[b] && live < K; i++) {
        struct cand *c = &cands[(size_t)b * 2 * K + i];
        if (c->token == INTRUS_EOS) {
          if (S->nfin < K) {
            struct finished *f = &S->fin[S->nfin++];
            f->logp = c->score + beta; /* the model's own log p */
            f->len = t;
            f->score = length_norm(c->score, t + 1, opts->alpha);
            f->tokens = malloc((size_t)(t ? t : 1) * sizeof *f->tokens);
            memcpy(f->tokens, hist + (size_t)c->row * maxT, (size_t)t * sizeof *f->tokens);
          }
          continue;
        }
        int r = row0 + live++;
        parents[r] = c->row;
        tokens[r] = c->token;
        next_score[r] = c->score;
        int32_t *h = next_hist + (size_t)r * maxT;
        memcpy(h, hist + (size_t)c->row * maxT, (size_t)t * sizeof *h);
        h[t] = c->token;
      }
      for (int r = row0 + live; r < row0 + K; r++) {
        parents[r] = row0;
        tokens[r] = INTRUS_EOS;
        next_score[r] = -INFINITY;
      }
      if (S->nfin >= K || live == 0 || only_eos) S->done = true;
    }
    double *ts = score;
    score = next_score;
    next_score = ts;
    int32_t *th = hist;
    hist = next_hist;
    next_hist = th;
  }
  for (int b = 0; b < B; b++) {
    struct sentence *S = &sent[b];
    int best = -1;
    for (int i = 0; i < S->nfin; i++)
      if (best < 0 || S->fin[i].score > S->fin[best].score) best = i;
    if (best < 0) continue; /* cannot happen: the length limit forces EOS */
    out[b].tokens = S->fin[best].tokens;
    S->fin[best].tokens = NULL;
    out[b].len = S->fin[best].len;
    out[b].logp = S->fin[best].logp;
    out[b].score = S->fin[best].score;
  }
done:
  if (state) dec->finish(dec_self, state);
  for (int b = 0; b < B; b++) {
    for (int i = 0; i < sent[b].nfin; i++) free(sent[b].fin[i].tokens);
    free(sent[b].fin);
  }
  free(sent);
  free(score);
  free(next_score);
  free(hist);
  free(next_hist);
  free(tokens);
  free(parents);
  free(logp);
  free(cands);
  free(ncand);
  intrus_ctx_set_grad(ctx, grad);
  if (st)
    for (int b = 0; b < B; b++) {
      free(out[b].tokens);
      out[b].tokens = NULL;
    }
  return st;
}

/* The insertion model's loss state by state along uniformly random orders: where in a
 * trajectory a model loses its probability (the diagnostic `intrus analyze states`).
 * Validation averages the same losses over every state; this keeps them apart. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/rng.h"
#include "model/insertion_model.h"

/* Decoder rows (k + 2 per state) scored in one positions() call: bounds the scorer's
 * arena whatever the batch (every state of a 60-token target is 1,950 rows). */
#define ROWS_PER_CALL 4096

struct sl_buf {
  int *sent, *soff, *pslot, *pq, *qstate, *qslot, *perm;
  int32_t *stok, *ptok;
  unsigned char *chosen;
  float *pos_logp, *plogp, *tok_buf;
};

static void sl_free(struct sl_buf *b) {
  free(b->sent);
  free(b->soff);
  free(b->pslot);
  free(b->pq);
  free(b->qstate);
  free(b->qslot);
  free(b->perm);
  free(b->stok);
  free(b->ptok);
  free(b->chosen);
  free(b->pos_logp);
  free(b->plogp);
  free(b->tok_buf);
}

void ins_uniform_order(uint64_t seed, uint64_t key, int n, int *perm) {
  struct intrus_rng r;
  intrus_rng_seed(&r, intrus_hash64(seed, key));
  for (int i = 0; i < n; i++) perm[i] = i;
  for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
    int j = (int)intrus_rng_below(&r, (uint64_t)i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

/* State k of sentence y[0..n) under the order perm: the tokens at perm[0..k), kept in
 * their target order. Writes k tokens to part. */
static void state_tokens(const int32_t *y, int n, const int *perm, int k, unsigned char *chosen,
                         int32_t *part) {
  memset(chosen, 0, (size_t)n);
  for (int j = 0; j < k; j++) chosen[perm[j]] = 1;
  for (int i = 0, w = 0; i < n; i++)
    if (chosen[i]) part[w++] = y[i];
}

enum intrus_status ins_state_losses(struct intrus_model *m, intrus_ctx *scratch,
                                    const struct intrus_src_batch *src,
                                    const struct intrus_tgt_batch *tgt, uint64_t seed,
                                    const uint64_t *keys, struct ins_state_loss *out,
                                    struct intrus_error *err) {
  const int B = tgt->batch;
  int maxn = 0;
  for (int b = 0; b < B; b++) {
    if (tgt->lens[b] < 0 || tgt->lens[b] > tgt->len)
      return intrus_error_set(err, INTRUS_ERR_INVALID, "state losses: sentence %d has length %d",
                              b, tgt->lens[b]);
    if (tgt->lens[b] > maxn) maxn = tgt->lens[b];
  }
  /* One sentence's states alone may pass ROWS_PER_CALL; a call then holds that one. */
  long one = (long)(maxn + 1) * (maxn + 4) / 2;
  const long rows_cap = one > ROWS_PER_CALL ? one : ROWS_PER_CALL;
  /* Per call: at most rows_cap / 2 states (each has >= 2 rows), rows_cap positions,
   * tokens below rows_cap; pairs at most (k+1)(n-k) per state, below rows_cap * maxn. */
  const size_t cap_states = (size_t)rows_cap / 2 + (size_t)maxn + 2;
  const size_t cap_pairs = (size_t)rows_cap * (size_t)(maxn + 1) + 1;
  struct sl_buf g = {0};
  g.sent = malloc(cap_states * sizeof *g.sent);
  g.soff = malloc((cap_states + 1) * sizeof *g.soff);
  g.stok = malloc((size_t)rows_cap * sizeof *g.stok);
  g.pos_logp = malloc((size_t)rows_cap * 2 * sizeof *g.pos_logp);
  g.pslot = malloc(cap_pairs * sizeof *g.pslot);
  g.ptok = malloc(cap_pairs * sizeof *g.ptok);
  g.pq = malloc(cap_pairs * sizeof *g.pq);
  g.plogp = malloc(cap_pairs * sizeof *g.plogp);
  g.qstate = malloc(cap_pairs * sizeof *g.qstate);
  g.qslot = malloc(cap_pairs * sizeof *g.qslot);
  g.perm = malloc(((size_t)B * (size_t)maxn + 1) * sizeof *g.perm);
  g.chosen = malloc((size_t)maxn + 1);
  if (!(g.sent && g.soff && g.stok && g.pos_logp && g.pslot && g.ptok && g.pq && g.plogp &&
        g.qstate && g.qslot && g.perm && g.chosen)) {
    sl_free(&g);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "state losses: out of memory");
  }
  for (int b = 0; b < B; b++)
    ins_uniform_order(seed, keys[b], tgt->lens[b], g.perm + (size_t)b * (size_t)maxn);

  struct ins_model_scorer sc;
  enum intrus_status st = ins_scorer_open(&sc, m, scratch, src, err);
  if (st) {
    sl_free(&g);
    return st;
  }
  const bool canonical = intrus_model_canonical(m);
  const size_t V = (size_t)sc.sc.vocab;
  size_t out_at = 0;
  for (int b0 = 0; b0 < B && !st;) {
    /* The sentences of this call: whole sentences while their rows fit. */
    int b1 = b0;
    long rows = 0;
    while (b1 < B) {
      int n = tgt->lens[b1];
      long r = (long)(n + 1) * (n + 4) / 2;
      if (b1 > b0 && rows + r > rows_cap) break;
      rows += r;
      b1++;
    }
    int S = 0, Q = 0, P = 0;
    g.soff[0] = 0;
    for (int b = b0; b < b1; b++) {
      const int32_t *y = tgt->tokens + (size_t)b * (size_t)tgt->len;
      int n = tgt->lens[b];
      for (int k = 0; k <= n; k++, S++) {
        int32_t *part = g.stok + g.soff[S];
        state_tokens(y, n, g.perm + (size_t)b * (size_t)maxn, k, g.chosen, part);
        g.sent[S] = b;
        g.soff[S + 1] = g.soff[S] + k;
        if (k == n) continue;
        int np = intrus_ins_correct(y, n, part, k, g.pslot + P, g.ptok + P,
                                    (k + 1) * (n - k));
        INTRUS_CHECK(np > 0 && np <= (k + 1) * (n - k),
                     "state losses: the oracle gave %d pairs at a state of %d of %d tokens",
                     np, k, n);
        if (canonical) np = intrus_ins_canonical(part, k, g.pslot + P, g.ptok + P, np);
        Q = intrus_ins_pair_queries(S, g.pslot + P, np, g.qstate, g.qslot, Q, g.pq + P);
        P += np;
      }
    }
    struct intrus_ins_states states = {S, g.sent, g.soff, g.stok};
    st = sc.sc.positions(sc.sc.user, &states, g.pos_logp, err);
    size_t round = intrus_ins_token_round_rows(sc.sc.vocab, (size_t)Q);
    if (!st && !g.tok_buf && !(g.tok_buf = malloc(
                                   intrus_ins_token_round_rows(sc.sc.vocab, cap_pairs) * V *
                                   sizeof *g.tok_buf)))
      st = intrus_error_set(err, INTRUS_ERR_NOMEM, "state losses: out of memory");
    if (!st && Q > 0)
      st = intrus_ins_pair_token_logp(&sc.sc, Q, g.qstate, g.qslot, round, P, g.pq, g.ptok,
                                      g.tok_buf, g.plogp, err);
    /* Each state's loss: -log of the summed probability of its correct insertions (its
     * pairs are consecutive, in state order). */
    for (int s = 0, j = 0; s < S && !st; s++) {
      int k = g.soff[s + 1] - g.soff[s], n = tgt->lens[g.sent[s]];
      const float *pl = g.pos_logp + g.soff[s] + 2 * s;
      struct ins_state_loss *o = &out[out_at++];
      o->sent = g.sent[s];
      o->k = k;
      o->n = n;
      o->logp_finish = pl[k + 1];
      if (k == n) {
        o->loss = -pl[k + 1];
        continue;
      }
      int j0 = j;
      double mx = -INFINITY;
      for (; j < P && g.qstate[g.pq[j]] == s; j++) {
        double v = (double)pl[g.pslot[j]] + g.plogp[j];
        if (v > mx) mx = v;
      }
      if (j == j0 || !isfinite(mx)) {
        o->loss = INFINITY; /* no probability on any correct insertion */
        continue;
      }
      double sum = 0.0;
      for (int i = j0; i < j; i++) sum += exp((double)pl[g.pslot[i]] + g.plogp[i] - mx);
      o->loss = (float)-(mx + log(sum));
    }
    b0 = b1;
  }
  ins_scorer_close(&sc);
  sl_free(&g);
  return st;
}

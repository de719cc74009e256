/* The greedy trajectory driver shared by the order policies (DESIGN.md section 4,
 * "Trajectories"): one insertion per step for every unfinished sentence, the model run
 * once per step for the whole batch. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/insertion.h"
#include "intrus/rng.h"

/* Every buffer the driver needs, sized for the busiest step so that the loop itself
 * never allocates. */
struct greedy_buf {
  int32_t *part;      /* sentence b's partial output at part[off[b]], room for n_b */
  struct intrus_rng *rng;
  int *sent, *soff;   /* the step's states */
  int32_t *stok;
  int *pslot;         /* the correct pairs of the step's active sentences */
  int32_t *ptok;
  int *pbeg;          /* [active + 1]: active sentence a's pairs from pbeg[a] */
  int *act;           /* the step's active sentences */
  float *plogp;       /* log p(i, c) of every pair (relative: plus a constant) */
  int *qstate, *qslot;   /* tokens() queries: the slots of the scored states' pairs */
  int *cq;            /* the scored pairs (forced ones left out): each one's query, */
  int32_t *ctok;      /* token */
  float *clogp;       /* and log p(c | slot) */
  float *pos_logp, *tok_logp;
};

static void greedy_free(struct greedy_buf *g) {
  free(g->part);
  free(g->rng);
  free(g->sent);
  free(g->soff);
  free(g->stok);
  free(g->pslot);
  free(g->ptok);
  free(g->pbeg);
  free(g->act);
  free(g->plogp);
  free(g->cq);
  free(g->ctok);
  free(g->clogp);
  free(g->qstate);
  free(g->qslot);
  free(g->pos_logp);
  free(g->tok_logp);
}

int intrus_ins_pair_queries(int state, const int *pslot, int np, int *qstate, int *qslot,
                            int Q, int *pq) {
  for (int j = 0; j < np; j++) {
    if (j == 0 || pslot[j] != pslot[j - 1]) {
      qstate[Q] = state;
      qslot[Q] = pslot[j];
      Q++;
    }
    pq[j] = Q - 1;
  }
  return Q;
}

enum intrus_status intrus_ins_pair_token_logp(const struct intrus_ins_scorer *sc, int Q,
                                              const int *qstate, const int *qslot,
                                              size_t round, int P, const int *pq,
                                              const int32_t *ptok, float *buf, float *plogp,
                                              struct intrus_error *err) {
  const size_t V = (size_t)sc->vocab;
  const int R = round > 0 ? (int)round : 1;
  enum intrus_status st = INTRUS_OK;
  for (int q0 = 0, j = 0; q0 < Q && st == INTRUS_OK; q0 += R) {
    int nq = Q - q0 < R ? Q - q0 : R;
    st = sc->tokens(sc->user, nq, qstate + q0, qslot + q0, buf, err);
    for (; st == INTRUS_OK && j < P && pq[j] < q0 + nq; j++)
      plogp[j] = buf[(size_t)(pq[j] - q0) * V + (size_t)ptok[j]];
  }
  return st;
}

/* The insertions sentence b runs: all n, or as many as the caller reads. A sentence
 * that stops early leaves the scored batch; each sentence draws from its own stream and
 * the model scores each state on its own, so the prefixes are those a run without the
 * stop writes (tests/test_order_choice.c, test_need). */
static int steps_of(const struct intrus_order_batch *batch, int b) {
  int n = batch->off[b + 1] - batch->off[b];
  return batch->need && batch->need[b] < n ? batch->need[b] : n;
}

/* The driver of intrus_order_greedy (relative false) and intrus_order_greedy_relative. */
static enum intrus_status greedy_run(const struct intrus_order_batch *batch,
                                     const struct intrus_ins_scorer *scorer,
                                     intrus_order_choose_fn choose, void *user, bool relative,
                                     struct intrus_ins_step *steps, struct intrus_error *err) {
  const int B = batch->count;
  const int *off = batch->off;
  if (B < 0) return intrus_error_set(err, INTRUS_ERR_INVALID, "order: %d sentences", B);
  if (B == 0) return INTRUS_OK;

  /* The busiest step bounds every per-step buffer: at step t each of the A_t
   * unfinished sentences has t tokens, at most (t+1)(n_b-t) correct pairs and at most
   * t+1 slots to query. */
  int maxn = 0;
  for (int b = 0; b < B; b++) {
    int n = off[b + 1] - off[b];
    if (n < 0)
      return intrus_error_set(err, INTRUS_ERR_INVALID, "order: sentence %d has length %d", b,
                              n);
    if (batch->need && batch->need[b] < 0)
      return intrus_error_set(err, INTRUS_ERR_INVALID, "order: sentence %d needs %d steps",
                              b, batch->need[b]);
    if (steps_of(batch, b) > maxn) maxn = steps_of(batch, b);
    if (scorer)
      for (int i = off[b]; i < off[b + 1]; i++)
        if (batch->tok[i] < 0 || batch->tok[i] >= scorer->vocab)
          return intrus_error_set(err, INTRUS_ERR_INVALID,
                                  "order: sentence %d has token %d outside the model's "
                                  "vocabulary of %d",
                                  b, (int)batch->tok[i], scorer->vocab);
  }
  size_t max_tok = 0, max_pairs = 0, max_slots = 0, max_pos = 0;
  for (int t = 0; t < maxn; t++) {
    size_t active = 0, pairs = 0;
    for (int b = 0; b < B; b++) {
      int n = off[b + 1] - off[b];
      if (steps_of(batch, b) <= t) continue;
      active++;
      pairs += (size_t)(t + 1) * (size_t)(n - t);
    }
    if (active * (size_t)t > max_tok) max_tok = active * (size_t)t;
    if (pairs > max_pairs) max_pairs = pairs;
    if (active * (size_t)(t + 1) > max_slots) max_slots = active * (size_t)(t + 1);
    if (active * (size_t)(t + 2) > max_pos) max_pos = active * (size_t)(t + 2);
  }
  size_t total = (size_t)off[B] - (size_t)off[0];
  const size_t V = scorer ? (size_t)scorer->vocab : 0;
  /* tokens() is asked in rounds, so the buffer stays small whatever the batch. */
  const size_t qround = scorer ? intrus_ins_token_round_rows(scorer->vocab, max_slots) : 0;
  const bool by_slot = relative && scorer && scorer->slot_logits;

  struct greedy_buf g = {0};
  g.part = malloc((total + 1) * sizeof *g.part);
  g.rng = malloc((size_t)B * sizeof *g.rng);
  g.pslot = malloc((max_pairs + 1) * sizeof *g.pslot);
  g.ptok = malloc((max_pairs + 1) * sizeof *g.ptok);
  g.pbeg = malloc(((size_t)B + 1) * sizeof *g.pbeg);
  g.act = malloc((size_t)B * sizeof *g.act);
  bool ok = g.part && g.rng && g.pslot && g.ptok && g.pbeg && g.act;
  if (ok && scorer) {
    g.sent = malloc((size_t)B * sizeof *g.sent);
    g.soff = malloc(((size_t)B + 1) * sizeof *g.soff);
    g.stok = malloc((max_tok + 1) * sizeof *g.stok);
    g.plogp = malloc((max_pairs + 1) * sizeof *g.plogp);
    g.cq = malloc((max_pairs + 1) * sizeof *g.cq);
    g.ctok = malloc((max_pairs + 1) * sizeof *g.ctok);
    g.clogp = malloc((max_pairs + 1) * sizeof *g.clogp);
    g.qstate = malloc((max_slots + 1) * sizeof *g.qstate);
    g.qslot = malloc((max_slots + 1) * sizeof *g.qslot);
    /* positions(): every position of every state; slot_logits(): one per query. */
    g.pos_logp = malloc(((by_slot ? max_slots : max_pos) + 1) * sizeof *g.pos_logp);
    g.tok_logp = malloc((qround * V + 1) * sizeof *g.tok_logp);
    ok = g.sent && g.soff && g.stok && g.plogp && g.cq && g.ctok && g.clogp && g.qstate &&
         g.qslot && g.pos_logp && g.tok_logp;
  }
  if (!ok) {
    greedy_free(&g);
    return intrus_error_set(err, INTRUS_ERR_NOMEM,
                            "order: out of memory for %d sentences (%zu tokens)", B, total);
  }
  /* A stream per sentence, keyed by its index only, so that a trajectory does not depend
   * on the other sentences of the batch or on how many steps they take. */
  for (int b = 0; b < B; b++) intrus_rng_seed(&g.rng[b], intrus_hash64(batch->seed, (uint64_t)batch->first + (uint64_t)b));

  enum intrus_status st = INTRUS_OK;
  for (int t = 0; t < maxn && st == INTRUS_OK; t++) {
    /* The correct pairs of every sentence with tokens left to insert. */
    int A = 0, P = 0;
    for (int b = 0; b < B; b++) {
      int n = off[b + 1] - off[b];
      if (steps_of(batch, b) <= t) continue;
      int cap = (t + 1) * (n - t);
      int np = intrus_ins_correct(batch->tok + off[b], n, g.part + (off[b] - off[0]), t,
                                  g.pslot + P, g.ptok + P, cap);
      /* The partial output only ever grows by correct insertions, so it stays a proper
       * subsequence of the target: anything else is a bug in the oracle or in choose(). */
      INTRUS_CHECK(np > 0 && np <= cap,
                   "order: sentence %d step %d: the oracle gave %d correct pairs (cap %d)",
                   b, t, np, cap);
      g.act[A] = b;
      g.pbeg[A++] = P;
      P += np;
    }
    g.pbeg[A] = P;

    if (scorer) {
      /* The states to score (relative: not those whose choice is forced) and their
       * queries; pairs are slot-major, so a slot's pairs are consecutive and share one. */
      int S = 0, Q = 0, C = 0;
      g.soff[0] = 0;
      for (int a = 0; a < A; a++) {
        int b = g.act[a], p0 = g.pbeg[a], p1 = g.pbeg[a + 1];
        if (relative && p1 - p0 == 1) continue;
        g.sent[S] = b;
        memcpy(g.stok + g.soff[S], g.part + (off[b] - off[0]), (size_t)t * sizeof *g.stok);
        g.soff[S + 1] = g.soff[S] + t;
        Q = intrus_ins_pair_queries(S, g.pslot + p0, p1 - p0, g.qstate, g.qslot, Q, g.cq + C);
        memcpy(g.ctok + C, g.ptok + p0, (size_t)(p1 - p0) * sizeof *g.ctok);
        C += p1 - p0;
        S++;
      }
      if (S > 0) {
        struct intrus_ins_states states = {S, g.sent, g.soff, g.stok};
        st = by_slot ? scorer->slot_logits(scorer->user, &states, Q, g.qstate, g.qslot,
                                           g.pos_logp, err)
                     : scorer->positions(scorer->user, &states, g.pos_logp, err);
        if (st == INTRUS_OK)
          st = intrus_ins_pair_token_logp(scorer, Q, g.qstate, g.qslot, qround, C, g.cq,
                                          g.ctok, g.tok_logp, g.clogp, err);
        if (st != INTRUS_OK) break;
      }
      for (int a = 0, s = 0, c = 0; a < A; a++) {
        int p0 = g.pbeg[a], p1 = g.pbeg[a + 1];
        if (relative && p1 - p0 == 1) {
          g.plogp[p0] = 0.0f;
          continue;
        }
        for (int j = p0; j < p1; j++, c++)
          g.plogp[j] = (by_slot ? g.pos_logp[g.cq[c]]
                                : g.pos_logp[g.soff[s] + 2 * s + g.pslot[j]]) + g.clogp[c];
        s++;
      }
    }

    for (int a = 0; a < A; a++) {
      int b = g.act[a], p0 = g.pbeg[a], np = g.pbeg[a + 1] - p0;
      int c = choose(user, b, np, g.pslot + p0, g.ptok + p0, scorer ? g.plogp + p0 : NULL,
                     &g.rng[b]);
      INTRUS_CHECK(c >= 0 && c < np, "order: choose() returned %d of %d pairs", c, np);
      struct intrus_ins_step step = {g.pslot[p0 + c], g.ptok[p0 + c]};
      intrus_ins_apply(g.part + (off[b] - off[0]), t, step);
      steps[off[b] + t] = step;
    }
  }
  greedy_free(&g);
  return st;
}

enum intrus_status intrus_order_greedy(const struct intrus_order_batch *batch,
                                       const struct intrus_ins_scorer *scorer,
                                       intrus_order_choose_fn choose, void *user,
                                       struct intrus_ins_step *steps,
                                       struct intrus_error *err) {
  return greedy_run(batch, scorer, choose, user, false, steps, err);
}

enum intrus_status intrus_order_greedy_relative(const struct intrus_order_batch *batch,
                                                const struct intrus_ins_scorer *scorer,
                                                intrus_order_choose_fn choose, void *user,
                                                struct intrus_ins_step *steps,
                                                struct intrus_error *err) {
  return greedy_run(batch, scorer, choose, user, true, steps, err);
}

/* order "argmax": the most probable correct trajectory under the model, found by beam
 * search (DESIGN.md section 4; the paper's "Argmax" ablation).
 *
 * A hypothesis is a correct partial output (a subsequence of Y) with the summed
 * log p(i, c) of the insertions that built it. Each step expands every hypothesis of
 * every sentence by its correct pairs (one positions() and one tokens() call for the
 * whole batch) and keeps the best `beam` per sentence. Two hypotheses with the same
 * partial output have the same future, so only the better one is kept: a single
 * trajectory is wanted, so they are merged by max, not log-add-exp (which would score
 * the string, not any one way of writing it). After n steps every hypothesis is Y, and
 * the best one's trajectory is returned. With a beam at least the number of distinct
 * subsequences of Y of each length the search is exact.
 *
 * Experiment file: order: { plugin = "argmax"; beam = 4; };  beam >= 1 (default 4). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/plugin.h"

struct argmax {
  int beam;
};

static enum intrus_status argmax_create(const intrus_cfg *cfg, void **self,
                                        struct intrus_error *err) {
  long long beam = 4;
  enum intrus_status st;
  if (cfg) {
    if ((st = intrus_cfg_int_range(cfg, "beam", 4, 1, 1 << 16, &beam, err))) return st;
    if ((st = intrus_cfg_check_unknown(cfg, err))) return st;
  }
  struct argmax *p = malloc(sizeof *p);
  if (!p) return intrus_error_set(err, INTRUS_ERR_NOMEM, "order argmax: out of memory");
  p->beam = (int)beam;
  *self = p;
  return INTRUS_OK;
}

static void argmax_destroy(void *self) { free(self); }

static bool argmax_needs_model(void *self) {
  (void)self;
  return true;
}

/* An expansion: pair j of state s, with the total score of the trajectory it ends. */
struct cand {
  double score;
  int j, s;
};

static int cand_cmp(const void *pa, const void *pb) {
  const struct cand *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  /* Ties by position keep the result independent of qsort's algorithm. */
  return (a->j > b->j) - (a->j < b->j);
}

/* Everything one call needs, sized for the busiest step so that the search loop never
 * allocates. Hypothesis h of sentence b keeps its output and its trajectory at
 * [beam * (off[b] - off[0]) + h * n_b], room for n_b entries. */
struct bufs {
  int32_t *part[2];
  struct intrus_ins_step *traj[2];
  double *score[2];   /* [B * beam] */
  int *nhyp;          /* [B] live hypotheses */
  int *sent, *shyp, *soff;
  int32_t *stok;
  int *pslot, *pbeg, *pq;
  int32_t *ptok;
  int *qstate, *qslot;
  float *pos_logp, *tok_logp; /* tok_logp: one tokens() round */
  float *plogp;                /* [pairs] log p(c | slot) of each pair */
  struct cand *cand;
};

static void bufs_free(struct bufs *u) {
  for (int i = 0; i < 2; i++) {
    free(u->part[i]);
    free(u->traj[i]);
    free(u->score[i]);
  }
  free(u->nhyp);
  free(u->sent);
  free(u->shyp);
  free(u->soff);
  free(u->stok);
  free(u->pslot);
  free(u->pbeg);
  free(u->pq);
  free(u->ptok);
  free(u->qstate);
  free(u->qslot);
  free(u->pos_logp);
  free(u->tok_logp);
  free(u->plogp);
  free(u->cand);
}

static enum intrus_status argmax_trajectories(void *self, const struct intrus_order_batch *batch,
                                              const struct intrus_ins_scorer *scorer,
                                              struct intrus_ins_step *steps,
                                              struct intrus_error *err) {
  const struct argmax *p = self;
  if (!scorer)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "order argmax: needs the model's scores, but no scorer was given");
  const int B = batch->count, K = p->beam;
  const int *off = batch->off;
  const int32_t *Y = batch->tok;
  if (B <= 0) return INTRUS_OK;
  int maxn = 0;
  for (int b = 0; b < B; b++) {
    int n = off[b + 1] - off[b];
    if (n < 0)
      return intrus_error_set(err, INTRUS_ERR_INVALID, "order argmax: sentence %d has length %d",
                              b, n);
    if (n > maxn) maxn = n;
    for (int i = off[b]; i < off[b + 1]; i++)
      if (Y[i] < 0 || Y[i] >= scorer->vocab)
        return intrus_error_set(err, INTRUS_ERR_INVALID,
                                "order argmax: sentence %d has token %d outside the model's "
                                "vocabulary of %d",
                                b, (int)Y[i], scorer->vocab);
  }

  /* Step t has at most beam hypotheses of t tokens per unfinished sentence, each with
   * at most (t+1)(n_b-t) correct pairs over t+1 slots. */
  size_t max_states = 0, max_tok = 0, max_pairs = 0, max_slots = 0, max_pos = 0;
  for (int t = 0; t < maxn; t++) {
    size_t states = 0, pairs = 0;
    for (int b = 0; b < B; b++) {
      int n = off[b + 1] - off[b];
      if (n <= t) continue;
      states += (size_t)K;
      pairs += (size_t)K * (size_t)(t + 1) * (size_t)(n - t);
    }
    if (states > max_states) max_states = states;
    if (states * (size_t)t > max_tok) max_tok = states * (size_t)t;
    if (pairs > max_pairs) max_pairs = pairs;
    if (states * (size_t)(t + 1) > max_slots) max_slots = states * (size_t)(t + 1);
    if (states * (size_t)(t + 2) > max_pos) max_pos = states * (size_t)(t + 2);
  }
  const size_t total = (size_t)(off[B] - off[0]), V = (size_t)scorer->vocab;
  const size_t hyp_room = (size_t)K * total + 1;

  struct bufs u = {0};
  bool ok = true;
  for (int i = 0; i < 2; i++) {
    u.part[i] = malloc(hyp_room * sizeof *u.part[i]);
    u.traj[i] = malloc(hyp_room * sizeof *u.traj[i]);
    u.score[i] = malloc((size_t)B * (size_t)K * sizeof *u.score[i]);
    ok = ok && u.part[i] && u.traj[i] && u.score[i];
  }
  u.nhyp = malloc((size_t)B * sizeof *u.nhyp);
  u.sent = malloc((max_states + 1) * sizeof *u.sent);
  u.shyp = malloc((max_states + 1) * sizeof *u.shyp);
  u.soff = malloc((max_states + 1) * sizeof *u.soff);
  u.stok = malloc((max_tok + 1) * sizeof *u.stok);
  u.pslot = malloc((max_pairs + 1) * sizeof *u.pslot);
  u.ptok = malloc((max_pairs + 1) * sizeof *u.ptok);
  u.pq = malloc((max_pairs + 1) * sizeof *u.pq);
  u.pbeg = malloc((max_states + 1) * sizeof *u.pbeg);
  u.qstate = malloc((max_slots + 1) * sizeof *u.qstate);
  u.qslot = malloc((max_slots + 1) * sizeof *u.qslot);
  u.pos_logp = malloc((max_pos + 1) * sizeof *u.pos_logp);
  /* tokens() is asked in rounds, so this buffer stays small whatever the batch. */
  const size_t qround = intrus_ins_token_round_rows(scorer->vocab, max_slots);
  u.tok_logp = malloc((qround * V + 1) * sizeof *u.tok_logp);
  u.plogp = malloc((max_pairs + 1) * sizeof *u.plogp);
  u.cand = malloc((max_pairs + 1) * sizeof *u.cand);
  ok = ok && u.nhyp && u.sent && u.shyp && u.soff && u.stok && u.pslot && u.ptok && u.pq &&
       u.pbeg && u.qstate && u.qslot && u.pos_logp && u.tok_logp && u.plogp && u.cand;
  if (!ok) {
    bufs_free(&u);
    return intrus_error_set(err, INTRUS_ERR_NOMEM,
                            "order argmax: out of memory for %d sentences (%zu tokens, beam %d)",
                            B, total, K);
  }

  /* Every search starts from the empty output. */
  for (int b = 0; b < B; b++) {
    u.nhyp[b] = 1;
    u.score[0][(size_t)b * K] = 0;
  }
  int cur = 0;
  enum intrus_status st = INTRUS_OK;
  for (int t = 0; t < maxn; t++) {
    const int nxt = 1 - cur;
    int S = 0;
    u.soff[0] = 0;
    for (int b = 0; b < B; b++) {
      int n = off[b + 1] - off[b];
      if (n <= t) continue;
      for (int h = 0; h < u.nhyp[b]; h++) {
        const int32_t *hp = u.part[cur] + (size_t)K * (size_t)(off[b] - off[0]) + (size_t)h * n;
        u.sent[S] = b;
        u.shyp[S] = h;
        memcpy(u.stok + u.soff[S], hp, (size_t)t * sizeof *hp);
        u.soff[S + 1] = u.soff[S] + t;
        S++;
      }
    }

    int P = 0, Q = 0;
    for (int s = 0; s < S; s++) {
      int b = u.sent[s], n = off[b + 1] - off[b], cap = (t + 1) * (n - t);
      int np = intrus_ins_correct(Y + off[b], n, u.stok + u.soff[s], t, u.pslot + P,
                                  u.ptok + P, cap);
      /* Hypotheses only grow by correct insertions: anything else is a bug. */
      INTRUS_CHECK(np > 0 && np <= cap,
                   "order argmax: sentence %d step %d: the oracle gave %d correct pairs (cap %d)",
                   b, t, np, cap);
      u.pbeg[s] = P;
      /* Pairs are slot-major: a slot's pairs are consecutive and share one query. */
      Q = intrus_ins_pair_queries(s, u.pslot + P, np, u.qstate, u.qslot, Q, u.pq + P);
      P += np;
    }
    u.pbeg[S] = P;

    struct intrus_ins_states states = {S, u.sent, u.soff, u.stok};
    if ((st = scorer->positions(scorer->user, &states, u.pos_logp, err)) ||
        (st = intrus_ins_pair_token_logp(scorer, Q, u.qstate, u.qslot, qround, P, u.pq, u.ptok,
                                         u.tok_logp, u.plogp, err)))
      break;

    /* The states of a sentence are consecutive, so are their pairs: select per
     * sentence over that range. */
    for (int s0 = 0; s0 < S;) {
      const int b = u.sent[s0], n = off[b + 1] - off[b];
      int s1 = s0;
      while (s1 < S && u.sent[s1] == b) s1++;
      int nc = 0;
      for (int s = s0; s < s1; s++) {
        const float *pl = u.pos_logp + u.soff[s] + 2 * s;
        double base = u.score[cur][(size_t)b * K + u.shyp[s]];
        for (int j = u.pbeg[s]; j < u.pbeg[s + 1]; j++) {
          float lp = pl[u.pslot[j]] + u.plogp[j];
          double sc = base + lp;
          /* NaN would break the ordering qsort relies on. */
          u.cand[nc++] = (struct cand){sc == sc ? sc : -INFINITY, j, s};
        }
      }
      qsort(u.cand, (size_t)nc, sizeof *u.cand, cand_cmp);

      const size_t base_b = (size_t)K * (size_t)(off[b] - off[0]);
      int kept = 0;
      for (int c = 0; c < nc && kept < K; c++) {
        const int s = u.cand[c].s, j = u.cand[c].j, h = u.shyp[s];
        struct intrus_ins_step step = {u.pslot[j], u.ptok[j]};
        int32_t *np_ = u.part[nxt] + base_b + (size_t)kept * n;
        memcpy(np_, u.part[cur] + base_b + (size_t)h * n, (size_t)t * sizeof *np_);
        intrus_ins_apply(np_, t, step);
        /* Candidates come best first, so an output seen before was kept with the
         * better trajectory. */
        bool dup = false;
        for (int e = 0; e < kept && !dup; e++)
          dup = !memcmp(u.part[nxt] + base_b + (size_t)e * n, np_, (size_t)(t + 1) * sizeof *np_);
        if (dup) continue;
        struct intrus_ins_step *tr = u.traj[nxt] + base_b + (size_t)kept * n;
        memcpy(tr, u.traj[cur] + base_b + (size_t)h * n, (size_t)t * sizeof *tr);
        tr[t] = step;
        u.score[nxt][(size_t)b * K + kept] = u.cand[c].score;
        kept++;
      }
      u.nhyp[b] = kept;
      if (t + 1 == n)
        memcpy(steps + off[b], u.traj[nxt] + base_b, (size_t)n * sizeof *steps);
      s0 = s1;
    }
    cur = nxt;
  }
  bufs_free(&u);
  return st;
}

static const struct intrus_order_vtable vtable = {
    .create = argmax_create,
    .destroy = argmax_destroy,
    .needs_model = argmax_needs_model,
    .trajectories = argmax_trajectories,
};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(order_argmax) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "argmax",
    .version = "1.0.0",
    .kind = INTRUS_KIND_ORDER,
    .summary = "the most probable correct trajectory under the model (beam search)",
    .vtable = &vtable,
};

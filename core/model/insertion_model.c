#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/nn.h"
#include "intrus/rng.h"
#include "insertion_model.h"
#include "base/clock.h"

/* Nanoseconds in trajectories(); atomic, as two models may train in two threads. */
static _Atomic long long order_ns;

double ins_train_order_seconds(void) { return 1e-9 * (double)order_ns; }

/* ---- the model as a scorer of states ------------------------------------------ */

/* Grows *buf to at least n ints. */
static bool ints_reserve(int **buf, int *cap, int n) {
  if (n <= *cap) return true;
  int c = n * 2;
  int *r = realloc(*buf, (size_t)c * sizeof *r);
  if (!r) return false;
  *buf = r;
  *cap = c;
  return true;
}

/* A new batch of states: a fresh arena and each state's first decoder row. */
static enum intrus_status scorer_begin(struct ins_model_scorer *s,
                                       const struct intrus_ins_states *st,
                                       struct intrus_error *err) {
  intrus_ctx_reset(s->ctx);
  intrus_ctx_set_grad(s->ctx, false);
  intrus_ctx_set_training(s->ctx, false);
  s->nstates = 0;
  s->by_slot = false;
  if (st->count < 0)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "scorer: %d states", st->count);
  if (!ints_reserve(&s->row0, &s->row0_cap, st->count + 1))
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "scorer: out of memory for %d states",
                            st->count);
  int row = 0;
  for (int i = 0; i < st->count; i++) {
    s->row0[i] = row;
    row += st->off[i + 1] - st->off[i] + 2;
  }
  s->row0[st->count] = row;
  return INTRUS_OK;
}

static enum intrus_status scorer_positions(void *user, const struct intrus_ins_states *st,
                                           float *pos_logp, struct intrus_error *err) {
  struct ins_model_scorer *s = user;
  enum intrus_status e = scorer_begin(s, st, err);
  if (!e) e = s->dec->ins_step(s->dec_self, s->cache, s->ctx, st, &s->hidden, err);
  if (e) return e;
  s->nstates = st->count;
  intrus_tensor *logit = intrus_matmul(s->ctx, s->hidden, s->w_pos, false, false); /* [N, 1] */
  for (int i = 0; i < st->count; i++) {
    int row = s->row0[i], len = s->row0[i + 1] - row;
    const float *x = logit->data + row;
    float *y = pos_logp + row;
    float mx = -INFINITY;
    for (int j = 0; j < len; j++) mx = fmaxf(mx, x[j]);
    double sum = 0.0;
    for (int j = 0; j < len; j++) sum += exp((double)x[j] - mx);
    float lse = mx + (float)log(sum);
    for (int j = 0; j < len; j++) y[j] = x[j] - lse;
  }
  return INTRUS_OK;
}

static enum intrus_status scorer_slot_logits(void *user, const struct intrus_ins_states *st,
                                             int Q, const int *qstate, const int *qslot,
                                             float *logit, struct intrus_error *err) {
  struct ins_model_scorer *s = user;
  enum intrus_status e = scorer_begin(s, st, err);
  if (e) return e;
  const int N = s->row0[st->count];
  if (Q < 0) return intrus_error_set(err, INTRUS_ERR_INVALID, "scorer: %d slot queries", Q);
  if (!ints_reserve(&s->kept, &s->kept_cap, N + 1))
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "scorer: out of memory for %d rows", N);
  int *rows = intrus_ctx_alloc(s->ctx, (size_t)(Q ? Q : 1) * sizeof *rows);
  for (int r = 0; r < N; r++) s->kept[r] = -1;
  for (int j = 0; j < Q; j++) {
    int k = qstate[j] >= 0 && qstate[j] < st->count
                ? s->row0[qstate[j] + 1] - s->row0[qstate[j]] - 2
                : -1;
    if (k < 0 || qslot[j] < 0 || qslot[j] > k)
      return intrus_error_set(err, INTRUS_ERR_INVALID, "scorer: no state %d / slot %d",
                              qstate[j], qslot[j]);
    rows[j] = s->row0[qstate[j]] + qslot[j];
    if (j && rows[j] <= rows[j - 1])
      return intrus_error_set(err, INTRUS_ERR_INVALID,
                              "scorer: slot queries must ascend by state and slot (query %d: "
                              "state %d slot %d)", j, qstate[j], qslot[j]);
    s->kept[rows[j]] = j;
  }
  if (s->step_rows) {
    e = s->dec->ins_step_rows(s->dec_self, s->cache, s->ctx, st, Q, rows, &s->hidden, err);
  } else {
    /* A decoder without the restricted step: every row, then the asked ones. */
    intrus_tensor *all;
    e = s->dec->ins_step(s->dec_self, s->cache, s->ctx, st, &all, err);
    if (!e && Q) s->hidden = intrus_embedding(s->ctx, all, rows, 1, &Q);
  }
  if (e) return e;
  s->nstates = st->count;
  s->by_slot = true;
  if (Q) {
    intrus_tensor *lg = intrus_matmul(s->ctx, s->hidden, s->w_pos, false, false); /* [Q, 1] */
    memcpy(logit, lg->data, (size_t)Q * sizeof *logit);
  }
  return INTRUS_OK;
}

static enum intrus_status scorer_tokens(void *user, int n, const int *state, const int *slot,
                                        float *tok_logp, struct intrus_error *err) {
  struct ins_model_scorer *s = user;
  if (n == 0) return INTRUS_OK;
  const int d = s->hidden->shape[1];
  /* The slots' rows gathered into one block; the arena is reset by positions() only,
   * so rounds of one step add just these n * d floats to it. */
  float *x = intrus_ctx_alloc(s->ctx, (size_t)n * d * sizeof *x);
  for (int i = 0; i < n; i++) {
    if (state[i] < 0 || state[i] >= s->nstates || slot[i] < 0 ||
        slot[i] > s->row0[state[i] + 1] - s->row0[state[i]] - 2)
      return intrus_error_set(err, INTRUS_ERR_INVALID, "scorer: no state %d / slot %d",
                              state[i], slot[i]);
    int row = s->row0[state[i]] + slot[i];
    if (s->by_slot && (row = s->kept[row]) < 0)
      return intrus_error_set(err, INTRUS_ERR_INVALID,
                              "scorer: state %d / slot %d was not among the slots of the last "
                              "slot_logits() call", state[i], slot[i]);
    memcpy(x + (size_t)i * d, s->hidden->data + (size_t)row * d, (size_t)d * sizeof *x);
  }
  intrus_linear_log_softmax(n, x, d, s->tok_packed, tok_logp);
  return INTRUS_OK;
}

/* Whether the decoder stores its token output layer as [V, d] (tied embeddings). */
static bool token_transposed(const struct intrus_model *m, const struct intrus_decoder_vtable *dec,
                             void *self) {
  return intrus_model_decoder_abi_minor(m) >= 7 && dec->ins_output_transposed &&
         dec->ins_output_transposed(self);
}

enum intrus_status ins_scorer_open(struct ins_model_scorer *s, struct intrus_model *m,
                                   intrus_ctx *ctx, const struct intrus_src_batch *src,
                                   struct intrus_error *err) {
  memset(s, 0, sizeof *s);
  s->model = m;
  s->ctx = ctx;
  s->dec = intrus_model_decoder(m, &s->dec_self);
  s->dec->ins_output(s->dec_self, &s->w_token, &s->w_pos);
  s->tok_packed = token_transposed(m, s->dec, s->dec_self)
                      ? intrus_pack(s->w_token->shape[1], s->w_token->shape[0],
                                    s->w_token->data, s->w_token->shape[1], true)
                      : intrus_pack(s->w_token->shape[0], s->w_token->shape[1],
                                    s->w_token->data, s->w_token->shape[1], false);
  s->sc = (struct intrus_ins_scorer){.vocab = intrus_model_tgt_vocab(m),
                                     .positions = scorer_positions,
                                     .tokens = scorer_tokens,
                                     .user = s,
                                     .slot_logits = scorer_slot_logits};
  s->step_rows = intrus_model_decoder_abi_minor(m) >= 5 && s->dec->ins_step_rows;
  intrus_ctx_reset(ctx);
  bool grad = intrus_ctx_grad_enabled(ctx), training = intrus_ctx_training(ctx);
  intrus_ctx_set_grad(ctx, false);
  intrus_ctx_set_training(ctx, false);
  struct intrus_memory mem;
  enum intrus_status st = intrus_model_encode(m, ctx, src, &mem, err);
  if (!st) st = s->dec->ins_start(s->dec_self, ctx, &mem, &s->cache, err);
  intrus_ctx_set_grad(ctx, grad);
  intrus_ctx_set_training(ctx, training);
  return st;
}

void ins_scorer_close(struct ins_model_scorer *s) {
  if (s->cache) s->dec->finish(s->dec_self, s->cache);
  s->cache = NULL;
  intrus_packed_free(s->tok_packed);
  s->tok_packed = NULL;
  free(s->row0);
  s->row0 = NULL;
  free(s->kept);
  s->kept = NULL;
}

/* ---- the training loss ---------------------------------------------------------- */

enum intrus_status ins_train_loss(struct intrus_model *m, intrus_ctx *ctx, intrus_ctx *scratch,
                                  const struct intrus_src_batch *src,
                                  const struct intrus_tgt_batch *tgt,
                                  const struct ins_train_spec *spec, uint64_t seed,
                                  struct intrus_loss_out *out, struct intrus_error *err) {
  return ins_train_loss_at(m, ctx, scratch, src, tgt, 0, spec, seed, out, err);
}

/* An index into the m states k[0..m), drawn with weight (k[i] + 1)^bias. */
static int weighted_index(struct intrus_rng *r, const int *k, int m, float bias) {
  double total = 0.0;
  for (int i = 0; i < m; i++) total += pow(k[i] + 1.0, (double)bias);
  double u = intrus_rng_uniform(r) * total;
  for (int i = 0; i < m - 1; i++) {
    u -= pow(k[i] + 1.0, (double)bias);
    if (u < 0.0) return i;
  }
  return m - 1;
}

/* States trained on for a target of n tokens: all n + 1, or per_sentence of them (of
 * the n incomplete ones, plus the complete one, with finish_state). */
static int states_of(const struct ins_train_spec *spec, int n) {
  if (spec->all_states && spec->state_hi > 0) { /* the window's states that n has */
    const int hi = spec->state_hi < n + 1 ? spec->state_hi : n + 1;
    return hi > spec->state_lo ? hi - spec->state_lo : 0;
  }
  if (spec->all_states || spec->per_sentence < 1) return n + 1;
  if (spec->finish_state) return (spec->per_sentence < n ? spec->per_sentence : n) + 1;
  return spec->per_sentence < n + 1 ? spec->per_sentence : n + 1;
}

long ins_train_states(const struct ins_train_spec *spec, const int *lens, int count) {
  long states = 0;
  for (int b = 0; b < count; b++) states += states_of(spec, lens[b]);
  return states;
}

/* A sentence's share of the loss's denominator: its states trained on, or with
 * length_weight its trajectory's n + 1 (a validation window's states are all of them). */
static long units_of(const struct ins_train_spec *spec, int n) {
  const bool window = spec->all_states && spec->state_hi > 0;
  return spec->length_weight && !window ? n + 1 : states_of(spec, n);
}

long ins_train_units(const struct ins_train_spec *spec, const int *lens, int count) {
  long units = 0;
  for (int b = 0; b < count; b++) units += units_of(spec, lens[b]);
  return units;
}

/* weight = "length": the weight of state k among the npick states trained on of a
 * target of n tokens: 1 / (its probability of being drawn) under uniform draws, so that
 * the sentence's weighted losses are an unbiased estimate of the sum over all its n + 1
 * states, and add up to n + 1 themselves. Every state (all_states, or per_sentence at
 * least the candidates): 1. */
static double length_weight(const struct ins_train_spec *spec, int n, int npick, int k) {
  if (spec->all_states) return 1.0;
  if (spec->finish_state) /* npick - 1 drawn among the n incomplete; the complete one kept */
    return k == n ? 1.0 : (double)n / (double)(npick - 1);
  return (double)(n + 1) / (double)npick;
}

/* loss = "chosen": of a state's c correct pairs keeps the order's own insertion
 * (moved left past copies of its token when canonical, as intrus_ins_canonical would
 * keep it) as the only pair; 1, or -1 when it is none of them. */
static int keep_chosen(const int32_t *part, struct intrus_ins_step chosen, bool canonical,
                       int *slot, int32_t *token, int c) {
  int at = chosen.slot;
  if (canonical)
    while (at >= 1 && part[at - 1] == chosen.token) at--;
  for (int p = 0; p < c; p++)
    if (slot[p] == at && token[p] == chosen.token) {
      slot[0] = at;
      token[0] = chosen.token;
      return 1;
    }
  return -1;
}

enum intrus_status ins_train_loss_at(struct intrus_model *m, intrus_ctx *ctx,
                                     intrus_ctx *scratch, const struct intrus_src_batch *src,
                                     const struct intrus_tgt_batch *tgt, int first,
                                     const struct ins_train_spec *spec, uint64_t seed,
                                     struct intrus_loss_out *out, struct intrus_error *err) {
  int B = tgt->batch;
  const bool canonical = intrus_model_canonical(m);
  enum intrus_status st = INTRUS_OK;
  /* Targets as the policies see them. */
  int *off = intrus_ctx_alloc(ctx, (size_t)(B + 1) * sizeof *off);
  off[0] = 0;
  for (int b = 0; b < B; b++) off[b + 1] = off[b] + tgt->lens[b];
  int32_t *y = intrus_ctx_alloc(ctx, (size_t)(off[B] ? off[B] : 1) * sizeof *y);
  for (int b = 0; b < B; b++)
    memcpy(y + off[b], tgt->tokens + (size_t)b * tgt->len, (size_t)tgt->lens[b] * sizeof *y);
  struct intrus_order_batch ob = {.count = B, .off = off, .tok = y, .seed = seed, .first = first};

  /* The states trained on: every prefix of each trajectory (t = 0..n, the last one
   * complete), or per_sentence distinct ones drawn per sentence (ascending). */
  int nstates = 0;
  long state_tokens = 0, max_pairs = 0;
  int *npick = intrus_ctx_alloc(ctx, (size_t)B * sizeof *npick);
  int *pick0 = intrus_ctx_alloc(ctx, (size_t)(B + 1) * sizeof *pick0);
  long total_picks = 0;
  const bool window = spec->all_states && spec->state_hi > 0;
  for (int b = 0; b < B; b++) {
    npick[b] = states_of(spec, tgt->lens[b]);
    total_picks += npick[b];
  }
  int *picks = intrus_ctx_alloc(ctx, (size_t)(total_picks ? total_picks : 1) * sizeof *picks);
  int *perm = intrus_ctx_alloc(ctx, (size_t)(off[B] + 1) * sizeof *perm);
  for (int b = 0, at = 0; b < B; b++) {
    int n = tgt->lens[b], *pk = picks + at;
    pick0[b] = at;
    if (window) {
      for (int j = 0; j < npick[b]; j++) pk[j] = spec->state_lo + j;
    } else if (spec->given && !spec->all_states) {
      const size_t stride = (size_t)spec->per_sentence + (spec->finish_state ? 1 : 0);
      for (int j = 0; j < npick[b]; j++) {
        pk[j] = spec->given[(size_t)b * stride + (size_t)j];
        INTRUS_CHECK(pk[j] >= 0 && pk[j] <= n && (j == 0 || pk[j] > pk[j - 1]) &&
                         (!spec->finish_state || (j == npick[b] - 1) == (pk[j] == n)),
                     "given states: sentence %d's state %d is %d (of 0..%d, ascending)", b,
                     j, pk[j], n);
      }
    } else if (npick[b] == n + 1) {
      for (int k = 0; k <= n; k++) pk[k] = k;
    } else {
      /* The first draw is the one the single-state form always made. With finish_state
       * the draws are among the incomplete states 0..n-1 and the complete one follows. */
      const int pool = spec->finish_state ? n : n + 1;
      const int draws = spec->finish_state ? npick[b] - 1 : npick[b];
      struct intrus_rng r;
      intrus_rng_seed(&r, intrus_hash64(seed ^ 0x5eedf00dULL, (uint64_t)first + (uint64_t)b));
      for (int k = 0; k < pool; k++) perm[k] = k;
      for (int j = 0; j < draws; j++) {
        int u = j + (spec->late_bias > 0.0f
                         ? weighted_index(&r, perm + j, pool - j, spec->late_bias)
                         : (int)intrus_rng_below(&r, (uint64_t)(pool - j)));
        int tmp = perm[j];
        perm[j] = perm[u];
        perm[u] = tmp;
        pk[j] = perm[j];
      }
      for (int j = 1; j < draws; j++) /* ascending: insertion sort of a few */
        for (int i = j; i > 0 && pk[i] < pk[i - 1]; i--) {
          int tmp = pk[i];
          pk[i] = pk[i - 1];
          pk[i - 1] = tmp;
        }
      if (spec->finish_state) pk[draws] = n;
    }
    for (int j = 0; j < npick[b]; j++) {
      int k = pk[j];
      nstates++;
      state_tokens += k;
      max_pairs += (long)(k + 1) * (n - k);
    }
    at += npick[b];
  }
  pick0[B] = (int)total_picks;

  /* Trajectories only as far as the latest incomplete state trained on: with a few
   * states per sentence, the model-sampled order skips the rest of each rollout, and the
   * complete state is the target whatever the order. */
  int *need = intrus_ctx_alloc(ctx, (size_t)(B ? B : 1) * sizeof *need);
  for (int b = 0; b < B; b++) {
    need[b] = 0;
    for (int j = pick0[b]; j < pick0[b + 1]; j++) {
      /* A state of k tokens needs insertions 0..k-1; the chosen loss also its own, k. */
      const int upto = picks[j] + (spec->chosen ? 1 : 0);
      if (picks[j] < tgt->lens[b] && upto > need[b]) need[b] = upto;
    }
  }
  ob.need = need;
  struct intrus_ins_step *steps =
      intrus_ctx_alloc(ctx, (size_t)(off[B] ? off[B] : 1) * sizeof *steps);
  const long long t0 = mono_ns();
  if (spec->order->needs_model(spec->order_self)) {
    struct ins_model_scorer sc;
    st = ins_scorer_open(&sc, m, scratch, src, err);
    if (!st) st = spec->order->trajectories(spec->order_self, &ob, &sc.sc, steps, err);
    ins_scorer_close(&sc);
  } else {
    st = spec->order->trajectories(spec->order_self, &ob, NULL, steps, err);
  }
  order_ns += mono_ns() - t0;
  if (st) return st;
  int *sent = intrus_ctx_alloc(ctx, (size_t)nstates * sizeof *sent);
  int *soff = intrus_ctx_alloc(ctx, (size_t)(nstates + 1) * sizeof *soff);
  int32_t *stok = intrus_ctx_alloc(ctx, (size_t)(state_tokens ? state_tokens : 1) * sizeof *stok);
  int *row0 = intrus_ctx_alloc(ctx, (size_t)nstates * sizeof *row0);
  int *slen = intrus_ctx_alloc(ctx, (size_t)nstates * sizeof *slen);
  int *pair_off = intrus_ctx_alloc(ctx, (size_t)(nstates + 1) * sizeof *pair_off);
  size_t pcap = (size_t)(max_pairs ? max_pairs : 1);
  int *pair_slot = intrus_ctx_alloc(ctx, pcap * sizeof *pair_slot);
  int *pair_row = intrus_ctx_alloc(ctx, pcap * sizeof *pair_row);
  int32_t *pair_tok = intrus_ctx_alloc(ctx, pcap * sizeof *pair_tok);
  /* Hidden rows whose token distribution the loss needs: slots with a correct token. */
  int32_t *tok_rows = intrus_ctx_alloc(ctx, pcap * sizeof *tok_rows);
  int maxn = 0;
  for (int b = 0; b < B; b++) maxn = tgt->lens[b] > maxn ? tgt->lens[b] : maxn;
  int32_t *replay = intrus_ctx_alloc(ctx, (size_t)(maxn + 1) * (maxn ? maxn : 1) * sizeof *replay);
  int s = 0, row = 0, ntok = 0, np = 0;
  soff[0] = 0;
  pair_off[0] = 0;
  for (int b = 0; b < B; b++) {
    int n = tgt->lens[b];
    intrus_ins_replay_upto(steps + off[b], n, need[b], replay);
    for (int j = pick0[b]; j < pick0[b + 1]; j++, s++) {
      int k = picks[j];
      const int32_t *part = k == n ? y + off[b] : replay + (size_t)k * n;
      sent[s] = b;
      memcpy(stok + soff[s], part, (size_t)k * sizeof *stok);
      soff[s + 1] = soff[s] + k;
      row0[s] = row;
      slen[s] = k + 2;
      int c = intrus_ins_correct(y + off[b], n, part, k, pair_slot + np, pair_tok + np,
                                 (int)(pcap - np));
      if (c < 0 || (size_t)(np + c) > pcap)
        return intrus_error_set(err, INTRUS_ERR_INVALID,
                                "order policy produced a trajectory that is not a correct "
                                "one (sentence %d, step %d)", b, k);
      if (spec->chosen && k < n) {
        c = keep_chosen(part, steps[off[b] + k], canonical, pair_slot + np, pair_tok + np, c);
        if (c < 0)
          return intrus_error_set(err, INTRUS_ERR_INVALID,
                                  "order policy's insertion is not a correct one (sentence "
                                  "%d, step %d)", b, k);
      } else if (canonical) {
        c = intrus_ins_canonical(part, k, pair_slot + np, pair_tok + np, c);
      }
      for (int p = np; p < np + c; p++) {
        if (p == np || pair_slot[p] != pair_slot[p - 1]) tok_rows[ntok++] = row + pair_slot[p];
        pair_row[p] = ntok - 1;
      }
      np += c;
      pair_off[s + 1] = np;
      row += k + 2;
    }
  }

  struct intrus_memory mem;
  if ((st = intrus_model_encode(m, ctx, src, &mem, err))) return st;
  void *dself;
  const struct intrus_decoder_vtable *dec = intrus_model_decoder(m, &dself);
  struct intrus_ins_states states = {.count = nstates, .sent = sent, .off = soff, .tok = stok};
  intrus_tensor *hidden, *w_token, *w_pos;
  if ((st = dec->ins_hidden(dself, ctx, &mem, &states, &hidden, err))) return st;
  dec->ins_output(dself, &w_token, &w_pos);
  intrus_tensor *pos = intrus_matmul(ctx, hidden, w_pos, false, false);
  pos = intrus_reshape(ctx, pos, 1, &row);
  int R = ntok ? ntok : 1;
  if (!ntok) tok_rows[0] = 0; /* every state complete: a dummy row the loss never reads */
  intrus_tensor *tok = intrus_matmul(ctx, intrus_embedding(ctx, hidden, tok_rows, 1, &R),
                                     w_token, false, token_transposed(m, dec, dself));
  struct intrus_ins_targets tg = {.count = nstates, .row0 = row0, .len = slen,
                                  .pair_off = pair_off, .pair_slot = pair_slot,
                                  .pair_row = pair_row, .pair_tok = pair_tok};
  intrus_tensor *losses = intrus_insertion_loss(ctx, pos, tok, &tg, spec->loss, spec->label_smoothing);
  double sum = 0.0;
  if (spec->length_weight) {
    double *w = intrus_ctx_alloc(ctx, (size_t)(nstates ? nstates : 1) * sizeof *w);
    for (int b = 0; b < B; b++)
      for (int j = pick0[b]; j < pick0[b + 1]; j++)
        w[j] = length_weight(spec, tgt->lens[b], npick[b], picks[j]);
    const long units = ins_train_units(spec, tgt->lens, B);
    out->loss = intrus_weighted_mean(ctx, losses, w, (double)units);
    for (int i = 0; i < nstates; i++) sum += w[i] * losses->data[i];
  } else {
    out->loss = intrus_mean(ctx, losses);
    for (int i = 0; i < nstates; i++) sum += losses->data[i];
  }
  out->nll_sum = sum;
  out->tokens = off[B] + B;
  return INTRUS_OK;
}

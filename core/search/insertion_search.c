/* Insertion beam search (DESIGN.md section 4, "Search").
 *
 * All sentences advance in lockstep: at step t every live hypothesis has t tokens, so
 * one positions() call covers the whole batch, and the token softmax is asked for in
 * rounds, batched across sentences, only at the slots that can still matter.
 *
 * Children that are the same string reached more than one way ("special" ways and
 * strings) are found up front and summed per string; insertion_search_merge.c says how.
 * Everything else streams through a top-`beam` list.
 *
 * Pruning. log p(i, c) <= log p(pos = i) (a token log-probability is <= 0), so a slot
 * whose bound logp(h) + log p(pos = i) is below theta, the beam-th best value of
 * distinct children found so far (a lower bound of the final beam-th best, as merged
 * values only grow while ways are added), cannot produce a child that enters the beam
 * on its own. Where pruning meets merging: a special string's merged value sums ways
 * that may sit in several slots, some pruned; leaving them out would underrate it, and
 * several pruned ways of one string can add up to more than theta even when each is
 * below. So each special string also carries an upper bound hi = log-sum-exp of its
 * scored ways and, for every unscored way, its slot's bound; while hi >= theta its
 * unscored slots are scored as well. When the rounds end, every unscored slot has
 * bound < theta and every string with an unscored way has hi < theta: such strings
 * cannot enter the beam whatever their unscored ways hold, and every string that does
 * enter has all its ways scored, so its merged log p is exact (over the beam's
 * parents) and the beam is the one an unpruned search keeps. Slot order does not
 * change the result either: candidates are ranked by a total order (score, then
 * parent, slot, token), and a slot is skipped only when its bound is strictly below
 * theta. The one assumption is a normalised token distribution; float rounding of a
 * scorer's softmax (log p(c | i) a few 1e-7 above 0) could in principle flip a near
 * tie.
 *
 * The finish bound. theta only compares children with children. The best finished
 * hypothesis also decides: a child whose log p is so low that the search would stop
 * after keeping it cannot change the result. insertion_search_finish.c derives the
 * floor below which that holds (per slot at beam 1, for the whole step at a larger
 * beam) and why it is exact; slots below it are skipped as those below theta are. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/insertion.h"
#include "intrus/plugin.h"
#include "insertion_search_internal.h"
#include "search_cut.h"
#include "base/xalloc.h"
#include "base/clock.h"

struct intrus_ins_search_opts intrus_ins_search_defaults(void) {
  return (struct intrus_ins_search_opts){.beam = 4, .alpha = 1.0f, .prune = true};
}

void intrus_ins_hyp_free(struct intrus_ins_hyp *h) {
  if (!h) return;
  free(h->tokens);
  free(h->steps);
  memset(h, 0, sizeof *h);
}

/* A child: parent hypothesis h of its sentence with token inserted at slot. */
struct cand {
  double score;
  int h, slot;
  int32_t token;
};

/* The total order of candidates: higher score first, then the smaller (parent, slot,
 * token), so the result does not depend on the order slots were scored in. */
static int cand_cmp(const struct cand *a, const struct cand *b) {
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  if (a->h != b->h) return a->h < b->h ? -1 : 1;
  if (a->slot != b->slot) return a->slot < b->slot ? -1 : 1;
  return (a->token > b->token) - (a->token < b->token);
}

static int cand_qsort(const void *a, const void *b) { return cand_cmp(a, b); }

/* Offers c to a sorted list of at most K. */
static void top_offer(struct cand *top, int *n, int K, const struct cand *c) {
  if (*n == K && cand_cmp(c, &top[K - 1]) >= 0) return;
  int i = *n < K ? (*n)++ : K - 1;
  while (i > 0 && cand_cmp(c, &top[i - 1]) < 0) {
    top[i] = top[i - 1];
    i--;
  }
  top[i] = *c;
}

struct oslot {
  double bound;
  int sid;
};

static int slot_by_bound(const void *a, const void *b) {
  const struct oslot *x = a, *y = b;
  if (x->bound != y->bound) return x->bound > y->bound ? -1 : 1;
  return (x->sid > y->sid) - (x->sid < y->sid);
}

static void kth_offer(double *a, int *n, int K, double v) {
  if (*n == K && !(v > a[K - 1])) return;
  int i = *n < K ? (*n)++ : K - 1;
  while (i > 0 && v > a[i - 1]) {
    a[i] = a[i - 1];
    i--;
  }
  a[i] = v;
}

/* theta: the beam-th best merged value among the distinct children known so far,
 * -inf while fewer are known. Needs ins_search_string_bounds() up to date. */
static double theta_of(struct sentence *S, int K) {
  int n = 0;
  for (int i = 0; i < S->ntop; i++) kth_offer(S->kth, &n, K, S->top[i].score);
  for (int s = 0; s < S->nstr; s++)
    if (S->str[s].lo > -INFINITY) kth_offer(S->kth, &n, K, S->str[s].lo);
  return n == K ? S->kth[K - 1] : -INFINITY;
}

/* Everything one search call works with; sized once for the whole call. */
struct search {
  const struct intrus_ins_scorer *sc;
  int K, V, nsent;
  int min_len;                /* no finish before this many tokens */
  bool finish_in_beam;        /* a finish counts only against the step's kept children */
  bool canonical;             /* no copy of a slot's left token (intrus_ins_canonical) */
  bool prune;
  int slots;                  /* search.slots: > 0, only each hypothesis's best slots */
  double alpha, beta;         /* beta: search.finish_penalty */
  struct sentence *S;
  double *denom;              /* [max_ms + 1] (len + 1)^alpha */
  int *st_sent, *st_off;      /* the positions() batch */
  int32_t *st_tok;
  float *pos;
  int R, nreq;                /* the tokens() batch: at most R rows */
  int *req_b, *req_sid, *req_state, *req_slot;
  int *run;                   /* [R + 1] where each sentence's requests start */
  float *tok_logp;
  int32_t *scratch;           /* [max_ms + 1] */
  struct oslot *rank;         /* [max_ms + 1] with slots: one hypothesis's slots by log p */
};

static void queue_slot(struct search *X, int b, int t, int sid) {
  struct sentence *S = &X->S[b];
  S->done[sid] = 1;
  S->scored++;
  int n = X->nreq++;
  X->req_b[n] = b;
  X->req_sid[n] = sid;
  X->req_state[n] = S->state[sid / (t + 1)];
  X->req_slot[n] = sid % (t + 1);
}

/* Adds the slots sentence b needs next to the tokens() batch. Returns true when the
 * batch filled up before b had asked for all it needs this round. */
static bool collect(struct search *X, int b, int t) {
  struct sentence *S = &X->S[b];
  if (!X->prune) {
    for (; S->cursor < S->nslot; S->cursor++) {
      if (!(S->bound[S->cursor] > -INFINITY)) continue;
      if (X->nreq == X->R) return true;
      queue_slot(X, b, t, S->cursor);
    }
    return false;
  }
  ins_search_string_bounds(S);
  double theta = theta_of(S, X->K);
  if (S->floor > theta) theta = S->floor; /* the finish bound */
  /* Best bounds first, doubling the round each time, so theta rises before most
   * slots are looked at. */
  int quota = S->scored > X->K ? S->scored : X->K;
  while (S->cursor < S->nslot) {
    int sid = S->order[S->cursor].sid;
    if (S->done[sid]) {
      S->cursor++;
      continue;
    }
    double u = S->bound[sid];
    if (!(u > -INFINITY) || u < theta) {
      S->cursor = S->nslot; /* sorted: the rest are no better */
      break;
    }
    if (quota == 0) return false;
    if (X->nreq == X->R) return true;
    queue_slot(X, b, t, sid);
    S->cursor++;
    quota--;
  }
  /* Only once no slot is needed for its own children: the strings whose unscored ways
   * could still lift them to theta. Waiting costs nothing, as theta only rises. */
  for (size_t w = 0; w < S->nway; w++) {
    const struct way *W = &S->ways[w];
    const struct str_info *I = &S->str[W->str];
    if (!I->open || !(I->hi >= theta) || S->done[W->sid] || !(S->bound[W->sid] > -INFINITY))
      continue;
    if (X->nreq == X->R) return true;
    queue_slot(X, b, t, W->sid);
  }
  return false;
}

/* The slots of S's expansion that theta alone would have scored but the finish bound
 * skipped: unscored, with a bound at least theta once the rounds are over. */
static long finish_skipped(struct search *X, struct sentence *S) {
  if (!(S->floor > -INFINITY)) return 0;
  ins_search_string_bounds(S);
  double theta = theta_of(S, X->K);
  long n = 0;
  for (int sid = 0; sid < S->nslot; sid++)
    n += !S->done[sid] && S->bound[sid] > -INFINITY && S->bound[sid] >= theta;
  return n;
}

/* The cut of a row whose children could enter the full top list: -inf until it is
 * full. */
static float row_cut(const struct sentence *S, int K, double base) {
  return S->ntop < K ? -INFINITY : intrus_search_cut(S->top[K - 1].score, base);
}

/* Reads one row of the token softmax: special ways keep their value, every other
 * token is a child of its own and competes for the top list. */
static void read_row(struct search *X, struct sentence *S, int t, int sid, float *row) {
  for (int k = S->way_off[sid]; k < S->way_off[sid + 1]; k++) {
    struct way *W = &S->ways[S->way_idx[k]];
    W->val = row[W->token];
  }
  for (int k = S->way_off[sid]; k < S->way_off[sid + 1]; k++)
    row[S->ways[S->way_idx[k]].token] = -INFINITY;
  double base = S->bound[sid];
  int h = sid / (t + 1), slot = sid % (t + 1), K = X->K;
  if (X->canonical && slot >= 1) row[S->tok[S->cur][(size_t)h * S->ms + slot - 1]] = -INFINITY;
  float cut = row_cut(S, K, base);
  for (int c = INTRUS_NUM_SPECIAL; c < X->V; c++) {
    if (row[c] < cut) continue;
    double v = base + row[c];
    if (!(v > -INFINITY)) continue;
    if (S->ntop == K && v < S->top[K - 1].score) continue;
    struct cand cd = {v, h, slot, c};
    top_offer(S->top, &S->ntop, K, &cd);
    cut = row_cut(S, K, base);
  }
}

/* search.slots: leaves the bounds of hypothesis h's best X->slots slots (by log p(pos),
 * the leftmost first among equals) and sets the others' to -inf, so that no round asks
 * for them and no way through them counts. */
static void keep_best_slots(struct search *X, struct sentence *S, int h, int t) {
  if (X->slots <= 0 || X->slots >= t + 1) return;
  double *b = S->bound + (size_t)h * (t + 1);
  for (int i = 0; i <= t; i++) X->rank[i] = (struct oslot){b[i], i};
  qsort(X->rank, (size_t)t + 1, sizeof *X->rank, slot_by_bound);
  for (int k = X->slots; k <= t; k++) b[X->rank[k].sid] = -INFINITY;
}

/* Sets up sentence S's expansion at step t from this step's position log-probs. */
static void start_expansion(struct search *X, struct sentence *S, int t) {
  S->nslot = S->live * (t + 1);
  for (int h = 0; h < S->live; h++) {
    const float *pl = X->pos + (size_t)S->state[h] * (t + 2);
    for (int i = 0; i <= t; i++) {
      int sid = h * (t + 1) + i;
      double u = S->logp[S->cur][h] + pl[i];
      S->bound[sid] = u == u ? u : -INFINITY;
      S->done[sid] = 0;
    }
    keep_best_slots(X, S, h, t);
    if (X->prune)
      for (int i = 0; i <= t; i++) {
        int sid = h * (t + 1) + i;
        S->order[sid] = (struct oslot){S->bound[sid], sid};
      }
  }
  if (X->prune) qsort(S->order, (size_t)S->nslot, sizeof *S->order, slot_by_bound);
  ins_search_build_special(S, t, X->canonical, X->scratch);
  ins_search_index_ways(S);
  S->ntop = 0;
  S->cursor = 0;
  S->scored = 0;
  S->slots_finished = false;
}

static void offer_step_finishes(const struct search *X, struct sentence *S, int t,
                                double kept);

/* The new beam of S from this step's candidates. */
static void select_beam(struct search *X, struct sentence *S, int t) {
  ins_search_string_bounds(S);
  size_t n = 0;
  xgrow((void **)&S->pick, &S->pick_cap, (size_t)S->ntop + (size_t)S->nstr, sizeof *S->pick,
        64);
  for (int i = 0; i < S->ntop; i++) S->pick[n++] = S->top[i];
  for (int s = 0; s < S->nstr; s++) {
    const struct str_info *I = &S->str[s];
    if (!(I->lo > -INFINITY) || I->best < 0) continue;
    const struct way *W = &S->ways[I->best];
    S->pick[n++] = (struct cand){I->lo, W->sid / (t + 1), W->sid % (t + 1), W->token};
  }
  /* A step whose every slot was pruned has no candidates, and pick may still be NULL:
   * qsort's pointer must not be (UBSan's nonnull check). */
  if (n > 1) qsort(S->pick, n, sizeof *S->pick, cand_qsort);
  int nb = n < (size_t)X->K ? (int)n : X->K, cur = S->cur, nxt = 1 - cur;
  if (X->finish_in_beam) offer_step_finishes(X, S, t, nb ? S->pick[nb - 1].score : -INFINITY);
  size_t ms = (size_t)S->ms;
  for (int i = 0; i < nb; i++) {
    const struct cand *c = &S->pick[i];
    ins_search_copy(S->tok[nxt] + i * ms, S->tok[cur] + c->h * ms, t, c->slot, c->token);
    memcpy(S->traj[nxt] + i * ms, S->traj[cur] + c->h * ms, (size_t)t * sizeof **S->traj);
    S->traj[nxt][i * ms + (size_t)t] = (struct intrus_ins_step){c->slot, c->token};
    S->logp[nxt][i] = c->score;
  }
  S->cur = nxt;
  S->live = nb;
}

/* Whether some hypothesis still in S's beam (t tokens now) could finish with a score
 * above the best finished one. A string's probability is a sum over ways from the
 * beam, and the children and finished versions of a set of hypotheses together carry
 * at most the set's probability, so no later string or finished hypothesis exceeds
 * M = log-sum-exp of the beam (per hypothesis would be wrong: merging can give a child
 * more probability than any one parent had). A finish at length L then scores at most
 * (M - finish_penalty) / (L + 1)^alpha; the bound is taken per L, which is right for
 * either sign of M and of alpha, with NORM_SLACK per normalisation for float rounding. */
static bool can_improve(const struct search *X, const struct sentence *S, int t) {
  if (S->live == 0) return false;
  if (!S->have) return true;
  const double *lp = S->logp[S->cur];
  double mx = -INFINITY, sum = 0.0;
  for (int h = 0; h < S->live; h++) mx = lp[h] > mx ? lp[h] : mx;
  if (!(mx > -INFINITY)) return false;
  for (int h = 0; h < S->live; h++) sum += exp(lp[h] - mx);
  double M = mx + log(sum);
  for (int L = t > X->min_len ? t : X->min_len; L <= S->ms; L++)
    if ((M - X->beta + (L - t + 1) * NORM_SLACK) / X->denom[L] > S->fscore) return true;
  return false;
}

static void offer_finished(struct sentence *S, int h, int t, double logp, double score);

/* finish_in_beam (the reference code's eos_in_beam): the step's finished versions,
 * held back until the step's children are known, count only where their log p reaches
 * the worst child kept in the new beam. */
static void offer_step_finishes(const struct search *X, struct sentence *S, int t,
                                double kept) {
  for (int h = 0; h < S->live; h++)
    if (S->fin[h] >= kept)
      offer_finished(S, h, t, S->fin[h] + X->beta, S->fin[h] / X->denom[t]);
}

static void offer_finished(struct sentence *S, int h, int t, double logp, double score) {
  if (score != score || (S->have && !(score > S->fscore))) return;
  S->have = true;
  S->flen = t;
  S->flogp = logp;
  S->fscore = score;
  memcpy(S->ftok, S->tok[S->cur] + (size_t)h * S->ms, (size_t)t * sizeof *S->ftok);
  memcpy(S->ftraj, S->traj[S->cur] + (size_t)h * S->ms, (size_t)t * sizeof *S->ftraj);
}

static void search_free(struct search *X) {
  if (X->S)
    for (int b = 0; b < X->nsent; b++) {
      struct sentence *S = &X->S[b];
      for (int k = 0; k < 2; k++) {
        free(S->tok[k]);
        free(S->traj[k]);
        free(S->logp[k]);
      }
      free(S->state);
      free(S->bound);
      free(S->done);
      free(S->order);
      free(S->way_off);
      free(S->way_idx);
      free(S->ways);
      free(S->str);
      free(S->top);
      free(S->pick);
      free(S->kth);
      free(S->ftok);
      free(S->ftraj);
      free(S->fin);
    }
  free(X->S);
  free(X->denom);
  free(X->st_sent);
  free(X->st_off);
  free(X->st_tok);
  free(X->pos);
  free(X->req_b);
  free(X->req_sid);
  free(X->req_state);
  free(X->req_slot);
  free(X->run);
  free(X->tok_logp);
  free(X->scratch);
  free(X->rank);
}

static enum intrus_status search_alloc(struct search *X, const int *max_steps,
                                       struct intrus_error *err) {
  int K = X->K, max_ms = 0;
  size_t states = 0, state_tok = 0, pos = 0, slots = 0;
  X->S = xcalloc((size_t)X->nsent, sizeof *X->S);
  for (int b = 0; b < X->nsent; b++) {
    int ms = max_steps[b];
    if (ms < 0)
      return intrus_error_set(err, INTRUS_ERR_INVALID,
                              "insertion search: sentence %d has max_steps %d", b, ms);
    if ((long long)K * (ms + 1LL) + 1 > INT32_MAX)
      return intrus_error_set(err, INTRUS_ERR_INVALID,
                              "insertion search: beam %d x max_steps %d is too large", K, ms);
    max_ms = ms > max_ms ? ms : max_ms;
    struct sentence *S = &X->S[b];
    size_t ks = (size_t)K * (size_t)ms, nslot = (size_t)K * (size_t)(ms + 1);
    S->ms = ms;
    S->live = 1;
    S->active = true;
    for (int k = 0; k < 2; k++) {
      S->tok[k] = xmalloc(ks * sizeof *S->tok[k]);
      S->traj[k] = xmalloc(ks * sizeof *S->traj[k]);
      S->logp[k] = xmalloc((size_t)K * sizeof *S->logp[k]);
    }
    S->logp[0][0] = 0.0;
    S->state = xmalloc((size_t)K * sizeof *S->state);
    S->bound = xmalloc(nslot * sizeof *S->bound);
    S->done = xmalloc(nslot);
    if (X->prune) S->order = xmalloc(nslot * sizeof *S->order);
    S->way_off = xmalloc((nslot + 1) * sizeof *S->way_off);
    S->top = xmalloc((size_t)K * sizeof *S->top);
    S->kth = xmalloc((size_t)K * sizeof *S->kth);
    S->fin = xmalloc((size_t)K * sizeof *S->fin);
    S->ftok = xmalloc((size_t)ms * sizeof *S->ftok);
    S->ftraj = xmalloc((size_t)ms * sizeof *S->ftraj);
    states += (size_t)K;
    state_tok += ks;
    pos += (size_t)K * (size_t)(ms + 2);
    if (ms > 0) slots += nslot;
  }
  X->denom = xmalloc((size_t)(max_ms + 1) * sizeof *X->denom);
  for (int L = 0; L <= max_ms; L++) X->denom[L] = pow(L + 1.0, X->alpha);
  X->st_sent = xmalloc(states * sizeof *X->st_sent);
  X->st_off = xmalloc((states + 1) * sizeof *X->st_off);
  X->st_tok = xmalloc(state_tok * sizeof *X->st_tok);
  X->pos = xmalloc(pos * sizeof *X->pos);
  /* Token-softmax rounds bound the buffer; smaller rounds also let theta rise between
   * them. */
  size_t rows = intrus_ins_token_round_rows(X->V, slots);
  X->R = (int)rows;
  X->req_b = xmalloc(rows * sizeof *X->req_b);
  X->req_sid = xmalloc(rows * sizeof *X->req_sid);
  X->req_state = xmalloc(rows * sizeof *X->req_state);
  X->req_slot = xmalloc(rows * sizeof *X->req_slot);
  X->run = xmalloc((rows + 1) * sizeof *X->run);
  X->tok_logp = xmalloc(rows * (size_t)(X->V > 0 ? X->V : 1) * sizeof *X->tok_logp);
  X->scratch = xmalloc((size_t)(max_ms + 1) * sizeof *X->scratch);
  if (X->slots > 0) X->rank = xmalloc((size_t)(max_ms + 1) * sizeof *X->rank);
  return INTRUS_OK;
}

/* One step of the whole batch: positions, finished versions, token rounds, new
 * beams. Sets *more when some sentence is still searching. */
static enum intrus_status search_step(struct search *X, int t, bool *more,
                                      struct intrus_ins_search_stats *stats, double *pos_s,
                                      double *tok_s, struct intrus_error *err) {
  const struct intrus_ins_scorer *sc = X->sc;
  int count = 0;
  X->st_off[0] = 0;
  for (int b = 0; b < X->nsent; b++) {
    struct sentence *S = &X->S[b];
    if (!S->active) continue;
    for (int h = 0; h < S->live; h++) {
      X->st_sent[count] = b;
      S->state[h] = count;
      memcpy(X->st_tok + X->st_off[count], S->tok[S->cur] + (size_t)h * S->ms,
             (size_t)t * sizeof *X->st_tok);
      X->st_off[count + 1] = X->st_off[count] + t;
      count++;
    }
  }
  *more = false;
  if (count == 0) return INTRUS_OK;
  struct intrus_ins_states states = {count, X->st_sent, X->st_off, X->st_tok};
  double t0 = mono_s();
  enum intrus_status st = sc->positions(sc->user, &states, X->pos, err);
  *pos_s += mono_s() - t0;
  if (st) return st;
  if (stats) stats->states += count;

  for (int b = 0; b < X->nsent; b++) {
    struct sentence *S = &X->S[b];
    if (!S->active) continue;
    /* min_len holds finishing back (up to max_steps, where finishing is all that is
     * left). */
    /* At max_steps a hypothesis can only finish; without real tokens, nothing else
     * can happen either. */
    S->expand = t < S->ms && X->V > INTRUS_NUM_SPECIAL;
    for (int h = 0; h < S->live; h++) {
      bool may = t >= X->min_len || t >= S->ms;
      /* The finish penalty counts wherever the finish is compared; the result keeps
       * the model's log p. */
      double lf = S->logp[S->cur][h] + X->pos[(size_t)S->state[h] * (t + 2) + t + 1];
      S->fin[h] = may ? lf - X->beta : -INFINITY;
      if (may && !(X->finish_in_beam && S->expand))
        offer_finished(S, h, t, lf, S->fin[h] / X->denom[t]);
    }
    if (!S->expand) continue;
    start_expansion(X, S, t);
    S->floor = X->prune ? ins_search_finish_floor(S, t, X->K, X->min_len, X->finish_in_beam,
                                                  X->beta, X->denom)
                        : -INFINITY;
    if (stats) stats->slots_total += S->nslot;
  }

  for (;;) {
    X->nreq = 0;
    for (int b = 0; b < X->nsent && X->nreq < X->R; b++) {
      struct sentence *S = &X->S[b];
      if (!S->active || !S->expand || S->slots_finished) continue;
      int before = X->nreq;
      if (!collect(X, b, t) && X->nreq == before) S->slots_finished = true;
    }
    if (X->nreq == 0) break;
    t0 = mono_s();
    st = sc->tokens(sc->user, X->nreq, X->req_state, X->req_slot, X->tok_logp, err);
    *tok_s += mono_s() - t0;
    if (st) return st;
    if (stats) stats->slots_scored += X->nreq;
    /* collect() adds each sentence's requests in one run, and sentences share nothing,
     * so the runs are read in parallel. */
    int nrun = 0;
    for (int r = 0; r < X->nreq; r++)
      if (r == 0 || X->req_b[r] != X->req_b[r - 1]) X->run[nrun++] = r;
    X->run[nrun] = X->nreq;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) if (nrun > 1 && (long)X->nreq * X->V >= 65536)
#endif
    for (int u = 0; u < nrun; u++)
      for (int r = X->run[u]; r < X->run[u + 1]; r++)
        read_row(X, &X->S[X->req_b[r]], t, X->req_sid[r], X->tok_logp + (size_t)r * X->V);
  }

  for (int b = 0; b < X->nsent; b++) {
    struct sentence *S = &X->S[b];
    if (!S->active) continue;
    if (!S->expand) {
      S->active = false;
      continue;
    }
    if (stats && X->prune) stats->slots_finish += finish_skipped(X, S);
    select_beam(X, S, t);
    S->active = can_improve(X, S, t + 1);
    *more |= S->active;
  }
  return INTRUS_OK;
}

enum intrus_status intrus_ins_beam_search(const struct intrus_ins_scorer *sc, int nsent,
                                          const int *max_steps,
                                          const struct intrus_ins_search_opts *opts,
                                          struct intrus_ins_hyp *out,
                                          struct intrus_ins_search_stats *stats,
                                          struct intrus_error *err) {
  struct intrus_ins_search_opts o = opts ? *opts : intrus_ins_search_defaults();
  if (!sc || !sc->positions || !sc->tokens)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "insertion search: no scorer");
  if (nsent < 0 || o.beam < 1 || !isfinite(o.alpha) || sc->vocab < 0)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "insertion search: bad arguments (sentences %d, beam %d, alpha "
                            "%g, vocabulary %d)",
                            nsent, o.beam, (double)o.alpha, sc->vocab);
  if (o.slots < 0 || (o.slots > 0 && o.slots < o.beam))
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "insertion search: search.slots = %d must be 0 (every slot) or at "
                            "least the beam (%d)",
                            o.slots, o.beam);
  if (!(o.finish_penalty >= 0.0) || !isfinite(o.finish_penalty))
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "insertion search: search.finish_penalty = %g must be finite and "
                            ">= 0",
                            o.finish_penalty);
  if (nsent == 0) return INTRUS_OK;
  memset(out, 0, (size_t)nsent * sizeof *out);
  double start = mono_s(), pos_s = 0.0, tok_s = 0.0;
  struct search X = {.sc = sc, .K = o.beam, .V = sc->vocab, .nsent = nsent,
                     .prune = o.prune, .alpha = o.alpha, .min_len = o.min_len,
                     .slots = o.slots, .beta = o.finish_penalty,
                     .finish_in_beam = o.finish_in_beam, .canonical = o.canonical};
  enum intrus_status st = search_alloc(&X, max_steps, err);
  bool more = true;
  for (int t = 0; !st && more; t++) st = search_step(&X, t, &more, stats, &pos_s, &tok_s, err);
  if (!st)
    for (int b = 0; b < nsent; b++) {
      const struct sentence *S = &X.S[b];
      struct intrus_ins_hyp *h = &out[b];
      h->len = S->have ? S->flen : 0;
      h->tokens = xmalloc((size_t)h->len * sizeof *h->tokens);
      h->steps = xmalloc((size_t)h->len * sizeof *h->steps);
      memcpy(h->tokens, S->ftok, (size_t)h->len * sizeof *h->tokens);
      memcpy(h->steps, S->ftraj, (size_t)h->len * sizeof *h->steps);
      h->logp = S->have ? S->flogp : -INFINITY;
      h->score = S->have ? S->fscore : -INFINITY;
    }
  search_free(&X);
  if (stats) {
    stats->positions_s += pos_s;
    stats->tokens_s += tok_s;
    stats->select_s += mono_s() - start - pos_s - tok_s;
  }
  return st;
}

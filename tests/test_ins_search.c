/* Insertion beam search against exhaustive search on a fake scorer whose
 * log-probabilities are a hash of (sentence, partial output, position). With a beam as
 * wide as the space the search must return the best string by
 * (log P(s) + log p(finish | s)) / (len + 1)^alpha, where P(s) sums over every
 * insertion order (dynamic programming over all strings), with its trajectory being
 * the best way into each string along the way; pruning must change nothing but the
 * number of token softmaxes; small beams must give what a plain beam search (every
 * child materialised and compared) gives; scorer errors must come back. With
 * finish_in_beam (a finish counts only when it reaches the worst child kept at its step)
 * the search must give what the rule gives by brute force on the exhaustive tables and
 * in a plain beam search, change the winner of a hand-made case, and still finish at
 * max_steps; the experiment's search group reads the setting. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/insertion.h"
#include "intrus/plugin.h"
#include "testutil.h"
#include "search/translate.h"

#define MAXV 32
#define MAXLEN 8

struct fake {
  int vocab;
  double peak;              /* logit scale: large = peaked distributions */
  double fin_bias[8];       /* added to the finish logit, per sentence */
  double fin_len[MAXLEN + 2]; /* and per length of the partial output (0 unless set) */
  uint64_t seed;
  int fail_at, calls;       /* the fail_at-th call (1-based) fails; 0 = never */
  int beam;                 /* what the search was given, to check it keeps to it */
  int bad;                  /* the search asked for something it should not */
  /* the last positions() batch */
  int count, cap, tok_cap;
  int *sent, *off;
  int32_t *tok;
};

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static double logit(const struct fake *f, int sent, const int32_t *y, int k, int kind, int a,
                    int c) {
  uint64_t h = mix(f->seed ^ (uint64_t)sent * 1000003u);
  for (int i = 0; i < k; i++) h = mix(h ^ (uint64_t)y[i]);
  h = mix(h ^ ((uint64_t)k << 8) ^ ((uint64_t)kind << 4));
  h = mix(h ^ (uint64_t)a * 7919u ^ (uint64_t)c * 104729u);
  return f->peak * ((double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void log_softmax(double *x, int n, float *out) {
  double mx = -INFINITY, sum = 0.0;
  for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
  for (int i = 0; i < n; i++) sum += exp(x[i] - mx);
  for (int i = 0; i < n; i++) out[i] = (float)(x[i] - mx - log(sum));
}

/* log p(pos) over the k + 2 positions of sentence `sent`'s state y. */
static void fake_pos(const struct fake *f, int sent, const int32_t *y, int k, float *out) {
  double x[MAXLEN + 2];
  for (int i = 0; i < k + 2; i++) x[i] = logit(f, sent, y, k, 1, i, 0);
  x[k + 1] += f->fin_bias[sent] + f->fin_len[k];
  log_softmax(x, k + 2, out);
}

/* log p(c | slot) over the whole vocabulary, specials included: the search must not
 * insert them even though they carry probability. */
static void fake_tok(const struct fake *f, int sent, const int32_t *y, int k, int slot,
                     float *out) {
  double x[MAXV];
  for (int c = 0; c < f->vocab; c++) x[c] = logit(f, sent, y, k, 2, slot, c);
  log_softmax(x, f->vocab, out);
}

static bool counts_call(struct fake *f) { return f->fail_at && ++f->calls == f->fail_at; }

static enum intrus_status cb_positions(void *user, const struct intrus_ins_states *st,
                                       float *pos_logp, struct intrus_error *err) {
  struct fake *f = user;
  if (counts_call(f))
    return intrus_error_set(err, INTRUS_ERR_IO, "fake scorer: positions failed on purpose");
  if (st->count > f->cap) {
    f->cap = st->count;
    f->sent = realloc(f->sent, (size_t)f->cap * sizeof *f->sent);
    f->off = realloc(f->off, (size_t)(f->cap + 1) * sizeof *f->off);
  }
  if (st->off[st->count] >= f->tok_cap) {
    f->tok_cap = st->off[st->count] + 1;
    f->tok = realloc(f->tok, (size_t)f->tok_cap * sizeof *f->tok);
  }
  f->count = st->count;
  memcpy(f->sent, st->sent, (size_t)st->count * sizeof *f->sent);
  memcpy(f->off, st->off, (size_t)(st->count + 1) * sizeof *f->off);
  memcpy(f->tok, st->tok, (size_t)st->off[st->count] * sizeof *f->tok);
  for (int s = 0; s < st->count; s++) {
    int k = st->off[s + 1] - st->off[s];
    const int32_t *y = st->tok + st->off[s];
    if (k < 0 || k > MAXLEN) {
      f->bad++;
      continue;
    }
    for (int i = 0; i < k; i++)
      if (y[i] < INTRUS_NUM_SPECIAL || y[i] >= f->vocab) f->bad++;
    /* At most `beam` hypotheses per sentence, and no string twice (merged). */
    int same = 0;
    for (int r = 0; r < st->count; r++) {
      if (st->sent[r] != st->sent[s]) continue;
      same++;
      if (r < s && st->off[r + 1] - st->off[r] == k &&
          memcmp(st->tok + st->off[r], y, (size_t)k * sizeof *y) == 0)
        f->bad++;
    }
    if (same > f->beam) f->bad++;
    fake_pos(f, st->sent[s], y, k, pos_logp + st->off[s] + 2 * s);
  }
  return INTRUS_OK;
}

static enum intrus_status cb_tokens(void *user, int n, const int *state, const int *slot,
                                    float *tok_logp, struct intrus_error *err) {
  struct fake *f = user;
  if (counts_call(f))
    return intrus_error_set(err, INTRUS_ERR_IO, "fake scorer: tokens failed on purpose");
  for (int r = 0; r < n; r++) {
    int s = state[r];
    if (s < 0 || s >= f->count || slot[r] < 0 || slot[r] > f->off[s + 1] - f->off[s]) {
      f->bad++;
      for (int c = 0; c < f->vocab; c++) tok_logp[(size_t)r * f->vocab + c] = -INFINITY;
      continue;
    }
    fake_tok(f, f->sent[s], f->tok + f->off[s], f->off[s + 1] - f->off[s], slot[r],
             tok_logp + (size_t)r * f->vocab);
  }
  return INTRUS_OK;
}

static struct intrus_ins_scorer scorer_of(struct fake *f) {
  return (struct intrus_ins_scorer){
      .vocab = f->vocab, .positions = cb_positions, .tokens = cb_tokens, .user = f};
}

static void fake_free(struct fake *f) {
  free(f->sent);
  free(f->off);
  free(f->tok);
}

/* ---- exhaustive reference ------------------------------------------------------ */

/* Strings over the real tokens of f, up to length n, indexed by length then base R. */
struct space {
  int R, n, total;
  int start[MAXLEN + 2];
};

static struct space space_of(int real, int n) {
  struct space sp = {.R = real, .n = n};
  int count = 1;
  for (int len = 0; len <= n; len++) {
    sp.start[len] = sp.total;
    sp.total += count;
    count *= real;
  }
  sp.start[n + 1] = sp.total;
  return sp;
}

static int str_index(const struct space *sp, const int32_t *y, int len) {
  int code = 0;
  for (int i = len - 1; i >= 0; i--) code = code * sp->R + (y[i] - INTRUS_NUM_SPECIAL);
  return sp->start[len] + code;
}

static void str_of(const struct space *sp, int idx, int32_t *y, int *len) {
  int l = 0;
  while (idx >= sp->start[l + 1]) l++;
  int code = idx - sp->start[l];
  for (int i = 0; i < l; i++) {
    y[i] = INTRUS_NUM_SPECIAL + code % sp->R;
    code /= sp->R;
  }
  *len = l;
}

static void insert_at(int32_t *y, int len, int slot, int32_t c) {
  memmove(y + slot + 1, y + slot, (size_t)(len - slot) * sizeof *y);
  y[slot] = c;
}

/* P(s) summed over all insertion orders, the best single way into each string, and
 * the best finished string for max_steps ms. */
struct exhaustive {
  double P[1100], F[1100], way[1100];
  int parent[1100], slot[1100];
  int32_t token[1100];
  int best;
  double best_score;
};

static void exhaustive(const struct fake *f, const struct space *sp, int sent, int ms,
                       double alpha, struct exhaustive *E) {
  for (int i = 0; i < sp->total; i++) {
    E->P[i] = E->F[i] = E->way[i] = -INFINITY;
    E->parent[i] = -1;
  }
  E->P[0] = 0.0;
  E->best = -1;
  E->best_score = -INFINITY;
  for (int idx = 0; idx < sp->start[ms + 1]; idx++) {
    int32_t y[MAXLEN + 1], z[MAXLEN + 1];
    int k;
    str_of(sp, idx, y, &k);
    float pos[MAXLEN + 2], tok[MAXV];
    fake_pos(f, sent, y, k, pos);
    E->F[idx] = E->P[idx] + pos[k + 1];
    double score = E->F[idx] / pow(k + 1.0, alpha);
    if (score > E->best_score) {
      E->best_score = score;
      E->best = idx;
    }
    if (k == ms) continue;
    for (int i = 0; i <= k; i++) {
      fake_tok(f, sent, y, k, i, tok);
      for (int c = INTRUS_NUM_SPECIAL; c < f->vocab; c++) {
        memcpy(z, y, (size_t)k * sizeof *y);
        insert_at(z, k, i, c);
        int ch = str_index(sp, z, k + 1);
        double v = E->P[idx] + pos[i] + tok[c];
        double m = v > E->P[ch] ? v : E->P[ch];
        if (m > -INFINITY) E->P[ch] = m + log(exp(E->P[ch] - m) + exp(v - m));
        if (v > E->way[ch]) {
          E->way[ch] = v;
          E->parent[ch] = idx;
          E->slot[ch] = i;
          E->token[ch] = c;
        }
      }
    }
  }
}

/* ---- checks on one returned hypothesis ---------------------------------------------- */

/* Replays the trajectory (independently of the library) and checks it writes the
 * returned tokens with valid insertions; returns the log-probability of that one
 * insertion order including finish. */
static double check_trajectory(const struct fake *f, int sent, const struct intrus_ins_hyp *h,
                               const char *what) {
  int32_t y[MAXLEN + 1];
  double lp = 0.0;
  float pos[MAXLEN + 2], tok[MAXV];
  for (int t = 0; t < h->len; t++) {
    struct intrus_ins_step s = h->steps[t];
    EXPECT(s.slot >= 0 && s.slot <= t && s.token >= INTRUS_NUM_SPECIAL && s.token < f->vocab,
           "%s: step %d inserts %d at slot %d", what, t, s.token, s.slot);
    if (s.slot < 0 || s.slot > t || s.token < 0 || s.token >= f->vocab) return NAN;
    fake_pos(f, sent, y, t, pos);
    fake_tok(f, sent, y, t, s.slot, tok);
    lp += (double)pos[s.slot] + tok[s.token];
    insert_at(y, t, s.slot, s.token);
  }
  EXPECT(h->len == 0 || memcmp(y, h->tokens, (size_t)h->len * sizeof *y) == 0,
         "%s: the trajectory does not replay to the returned tokens", what);
  fake_pos(f, sent, y, h->len, pos);
  return lp + pos[h->len + 1];
}

static bool same_hyp(const struct intrus_ins_hyp *a, const struct intrus_ins_hyp *b) {
  return a->len == b->len && a->logp == b->logp && a->score == b->score &&
         memcmp(a->tokens, b->tokens, (size_t)a->len * sizeof *a->tokens) == 0 &&
         memcmp(a->steps, b->steps, (size_t)a->len * sizeof *a->steps) == 0;
}

static double rel_err(double a, double b) {
  return fabs(a - b) / (fabs(b) > 1e-300 ? fabs(b) : 1.0);
}

/* ---- the tests -------------------------------------------------------------------- */

enum { NS = 5 };
static const int ms_of[NS] = {0, 1, 3, 5, 4};
static const double bias_of[NS] = {0.0, -1.0, -2.5, -1.5, 1.0};

static struct fake fake_new(int vocab, double peak, uint64_t seed) {
  struct fake f = {.vocab = vocab, .peak = peak, .seed = seed, .beam = 1 << 30};
  for (int b = 0; b < NS; b++) f.fin_bias[b] = bias_of[b];
  return f;
}

static int long_best, short_best;

static void test_exhaustive(double alpha, bool prune, uint64_t seed) {
  struct fake f = fake_new(INTRUS_NUM_SPECIAL + 3, 2.0, seed);
  struct space sp = space_of(3, 5);
  struct intrus_ins_scorer sc = scorer_of(&f);
  struct intrus_ins_search_opts o = {.beam = 256, .alpha = (float)alpha, .prune = prune};
  f.beam = o.beam;
  struct intrus_ins_hyp out[NS];
  struct intrus_ins_search_stats stats = {0};
  struct intrus_error err = {0};
  EXPECT(intrus_ins_beam_search(&sc, NS, ms_of, &o, out, &stats, &err) == INTRUS_OK, "%s",
         err.msg);
  EXPECT(f.bad == 0, "the search asked the scorer %d bad things", f.bad);
  static struct exhaustive E;
  for (int b = 0; b < NS; b++) {
    char what[96];
    snprintf(what, sizeof what, "alpha %g prune %d seed %llu sentence %d", alpha, prune,
             (unsigned long long)seed, b);
    exhaustive(&f, &sp, b, ms_of[b], (double)o.alpha, &E);
    int32_t want[MAXLEN + 1];
    int wlen;
    str_of(&sp, E.best, want, &wlen);
    EXPECT(out[b].len == wlen && memcmp(out[b].tokens, want, (size_t)wlen * sizeof *want) == 0,
           "%s: search and exhaustive disagree on the string (length %d vs %d)", what,
           out[b].len, wlen);
    EXPECT(rel_err(out[b].score, E.best_score) <= 1e-9, "%s: score %.12g, exhaustive %.12g",
           what, out[b].score, E.best_score);
    EXPECT(rel_err(out[b].logp, E.F[E.best]) <= 1e-9, "%s: logp %.12g, exhaustive %.12g",
           what, out[b].logp, E.F[E.best]);
    EXPECT(rel_err(out[b].score, out[b].logp / pow(out[b].len + 1.0, (double)o.alpha)) <= 1e-12,
           "%s: score is not logp / (len + 1)^alpha", what);
    check_trajectory(&f, b, &out[b], what);
    /* The merged hypothesis keeps the trajectory of its best way, step by step. */
    if (out[b].len == wlen) {
      int idx = E.best;
      for (int t = wlen - 1; t >= 0 && idx > 0; t--) {
        EXPECT(out[b].steps[t].slot == E.slot[idx] && out[b].steps[t].token == E.token[idx],
               "%s: step %d is (%d, %d), the best way into that string is (%d, %d)", what, t,
               out[b].steps[t].slot, out[b].steps[t].token, E.slot[idx], E.token[idx]);
        idx = E.parent[idx];
      }
    }
    if (wlen >= 3) long_best++;
    if (wlen <= 1 && ms_of[b] >= 3) short_best++;
    intrus_ins_hyp_free(&out[b]);
    EXPECT(out[b].tokens == NULL && out[b].steps == NULL && out[b].len == 0,
           "hyp_free leaves the hypothesis empty");
  }
  /* Without pruning, every slot of every expanded hypothesis gets its softmax. */
  if (!prune)
    EXPECT(stats.slots_scored == stats.slots_total, "%ld of %ld slots scored without pruning",
           stats.slots_scored, stats.slots_total);
  EXPECT(stats.slots_scored <= stats.slots_total && stats.states > 0, "stats are consistent");
  EXPECT(stats.positions_s >= 0 && stats.tokens_s >= 0 && stats.select_s >= 0,
         "times are not negative");
  fake_free(&f);
}

/* Small beams: valid hypotheses whose log-probability lies between that of their own
 * insertion order and the sum over all orders; pruning changes nothing. */
static void test_small_beams(uint64_t seed) {
  static struct exhaustive E;
  struct space sp = space_of(3, 5);
  for (int beam = 1; beam <= 6; beam++) {
    struct intrus_ins_hyp res[2][NS];
    struct intrus_ins_search_stats stats[2] = {{0}};
    for (int prune = 0; prune < 2; prune++) {
      struct fake f = fake_new(INTRUS_NUM_SPECIAL + 3, 2.5, seed);
      f.beam = beam;
      struct intrus_ins_scorer sc = scorer_of(&f);
      struct intrus_ins_search_opts o = intrus_ins_search_defaults();
      o.beam = beam;
      o.prune = prune;
      struct intrus_error err = {0};
      EXPECT(intrus_ins_beam_search(&sc, NS, ms_of, &o, res[prune], &stats[prune], &err) ==
                 INTRUS_OK,
             "%s", err.msg);
      EXPECT(f.bad == 0, "beam %d: the search asked the scorer %d bad things", beam, f.bad);
      for (int b = 0; b < NS; b++) {
        char what[64];
        snprintf(what, sizeof what, "beam %d prune %d sentence %d", beam, prune, b);
        const struct intrus_ins_hyp *h = &res[prune][b];
        EXPECT(h->len >= 0 && h->len <= ms_of[b], "%s: length %d", what, h->len);
        if (h->len < 0 || h->len > ms_of[b]) continue;
        double path = check_trajectory(&f, b, h, what);
        exhaustive(&f, &sp, b, ms_of[b], 1.0, &E);
        double all = E.F[str_index(&sp, h->tokens, h->len)];
        EXPECT(h->logp >= path - 1e-9 * fabs(path) && h->logp <= all + 1e-9 * fabs(all),
               "%s: logp %.12g outside [one order %.12g, all orders %.12g]", what, h->logp, path,
               all);
        EXPECT(h->score <= E.best_score + 1e-9 * fabs(E.best_score),
               "%s: score %.12g beats the exhaustive best %.12g", what, h->score, E.best_score);
        EXPECT(rel_err(h->score, h->logp / (h->len + 1.0)) <= 1e-12, "%s: score", what);
      }
      fake_free(&f);
    }
    for (int b = 0; b < NS; b++) {
      EXPECT(same_hyp(&res[0][b], &res[1][b]), "beam %d sentence %d: pruning changed the result",
             beam, b);
      intrus_ins_hyp_free(&res[0][b]);
      intrus_ins_hyp_free(&res[1][b]);
    }
    EXPECT(stats[1].slots_scored <= stats[0].slots_scored, "beam %d: pruning scored more slots",
           beam);
  }
}

/* Beam 1 by hand: keep the single best child string (its ways from the one parent
 * summed), offer every finished version, stop at max_steps. */
static void test_greedy(uint64_t seed) {
  struct fake f = fake_new(INTRUS_NUM_SPECIAL + 3, 2.0, seed);
  f.beam = 1;
  struct space sp = space_of(3, 5);
  struct intrus_ins_scorer sc = scorer_of(&f);
  for (int prune = 0; prune < 2; prune++) {
    struct intrus_ins_search_opts o = {.beam = 1, .alpha = 1.0f, .prune = prune};
    struct intrus_ins_hyp out[NS];
    struct intrus_error err = {0};
    EXPECT(intrus_ins_beam_search(&sc, NS, ms_of, &o, out, NULL, &err) == INTRUS_OK, "%s",
           err.msg);
    for (int b = 0; b < NS; b++) {
      int32_t y[MAXLEN + 1] = {0}, z[MAXLEN + 1], best_y[MAXLEN + 1] = {0};
      double lp = 0.0, best = -INFINITY, best_lp = 0.0;
      int best_len = 0;
      static double child[1100];
      for (int t = 0;; t++) {
        float pos[MAXLEN + 2], tok[MAXV];
        fake_pos(&f, b, y, t, pos);
        double fin = lp + pos[t + 1];
        if (fin / (t + 1.0) > best) {
          best = fin / (t + 1.0);
          best_lp = fin;
          best_len = t;
          memcpy(best_y, y, sizeof y);
        }
        if (t == ms_of[b]) break;
        for (int i = 0; i < sp.total; i++) child[i] = -INFINITY;
        int arg = -1;
        for (int i = 0; i <= t; i++) {
          fake_tok(&f, b, y, t, i, tok);
          for (int c = INTRUS_NUM_SPECIAL; c < f.vocab; c++) {
            memcpy(z, y, sizeof y);
            insert_at(z, t, i, c);
            int ch = str_index(&sp, z, t + 1);
            double v = lp + pos[i] + tok[c];
            double m = v > child[ch] ? v : child[ch];
            child[ch] = m + log(exp(child[ch] - m) + exp(v - m));
          }
        }
        for (int i = sp.start[t + 1]; i < sp.start[t + 2]; i++)
          if (arg < 0 || child[i] > child[arg]) arg = i;
        int k;
        str_of(&sp, arg, y, &k);
        lp = child[arg];
      }
      EXPECT(out[b].len == best_len &&
                 memcmp(out[b].tokens, best_y, (size_t)best_len * sizeof *best_y) == 0,
             "prune %d sentence %d: beam 1 is not greedy (length %d vs %d)", prune, b,
             out[b].len, best_len);
      EXPECT(rel_err(out[b].logp, best_lp) <= 1e-9, "prune %d sentence %d: logp %.12g vs %.12g",
             prune, b, out[b].logp, best_lp);
      intrus_ins_hyp_free(&out[b]);
    }
  }
  fake_free(&f);
}

/* A plain beam search to compare with: every child of every hypothesis materialised,
 * equal strings found by comparing them all, ways summed in log space. With
 * finish_in_beam, a finished version is offered only once the step's new beam is known,
 * and only when its log p is at least that of the beam's worst child (always at
 * max_steps, where there are no children). */
struct ref_hyp {
  int len;
  int32_t y[MAXLEN + 1];
  struct intrus_ins_step steps[MAXLEN + 1];
  double logp, way;  /* merged, and the best way's value */
  int h, slot;       /* the best way */
  int32_t c;
};

static int ref_cmp(const void *a, const void *b) {
  const struct ref_hyp *x = a, *y = b;
  if (x->logp != y->logp) return x->logp > y->logp ? -1 : 1;
  if (x->h != y->h) return x->h - y->h;
  if (x->slot != y->slot) return x->slot - y->slot;
  return x->c - y->c;
}

static void ref_offer(const struct ref_hyp *h, double fin, double score, struct ref_hyp *best,
                      double *best_score) {
  if (score > *best_score) {
    *best_score = score;
    *best = *h;
    best->logp = fin;
  }
}

static void ref_beam(const struct fake *f, int sent, int ms, int K, double alpha,
                     bool finish_in_beam, struct ref_hyp *best) {
  enum { CAP = 4096 };
  static struct ref_hyp beam[CAP], kids[CAP];
  static double fins[CAP];
  int n = 1;
  memset(&beam[0], 0, sizeof beam[0]);
  best->logp = NAN;
  double best_score = -INFINITY;
  for (int t = 0; n > 0; t++) {
    int nk = 0;
    for (int h = 0; h < n; h++) {
      float pos[MAXLEN + 2], tok[MAXV];
      fake_pos(f, sent, beam[h].y, t, pos);
      fins[h] = beam[h].logp + pos[t + 1];
      if (!finish_in_beam || t == ms)
        ref_offer(&beam[h], fins[h], fins[h] / pow(t + 1.0, alpha), best, &best_score);
      if (t == ms) continue;
      for (int i = 0; i <= t; i++) {
        fake_tok(f, sent, beam[h].y, t, i, tok);
        for (int c = INTRUS_NUM_SPECIAL; c < f->vocab; c++) {
          struct ref_hyp k = beam[h];
          insert_at(k.y, t, i, c);
          k.len = t + 1;
          k.steps[t] = (struct intrus_ins_step){i, c};
          double v = beam[h].logp + pos[i] + tok[c];
          int j = 0;
          while (j < nk && memcmp(kids[j].y, k.y, (size_t)(t + 1) * sizeof *k.y) != 0) j++;
          if (j == nk) {
            if (nk == CAP) abort();
            k.logp = k.way = v;
            k.h = h;
            k.slot = i;
            k.c = c;
            kids[nk++] = k;
            continue;
          }
          double m = v > kids[j].logp ? v : kids[j].logp;
          kids[j].logp = m + log(exp(kids[j].logp - m) + exp(v - m));
          if (v > kids[j].way) {
            double merged = kids[j].logp;
            kids[j] = k;
            kids[j].logp = merged;
            kids[j].way = v;
            kids[j].h = h;
            kids[j].slot = i;
            kids[j].c = c;
          }
        }
      }
    }
    qsort(kids, (size_t)nk, sizeof *kids, ref_cmp);
    int kept = nk < K ? nk : K;
    double worst = kept ? kids[kept - 1].logp : -INFINITY;
    if (finish_in_beam && t < ms)
      for (int h = 0; h < n; h++)
        if (fins[h] >= worst)
          ref_offer(&beam[h], fins[h], fins[h] / pow(t + 1.0, alpha), best, &best_score);
    n = kept;
    memcpy(beam, kids, (size_t)n * sizeof *beam);
  }
}

static void test_reference_beam(int vocab, double peak, uint64_t seed) {
  enum { B = 4 };
  int ms[B] = {6, 3, 5, 6};
  for (int beam = 1; beam <= 5; beam++)
    for (int prune = 0; prune < 2; prune++) {
      struct fake f = fake_new(vocab, peak, seed);
      f.beam = beam;
      for (int b = 0; b < B; b++) f.fin_bias[b] = -2.0 - b;
      struct intrus_ins_scorer sc = scorer_of(&f);
      struct intrus_ins_search_opts o = {.beam = beam, .alpha = 0.8f, .prune = prune};
      struct intrus_ins_hyp out[B];
      struct intrus_error err = {0};
      EXPECT(intrus_ins_beam_search(&sc, B, ms, &o, out, NULL, &err) == INTRUS_OK, "%s",
             err.msg);
      EXPECT(f.bad == 0, "the search asked the scorer %d bad things", f.bad);
      for (int b = 0; b < B; b++) {
        struct ref_hyp want;
        ref_beam(&f, b, ms[b], beam, (double)o.alpha, false, &want);
        EXPECT(out[b].len == want.len &&
                   memcmp(out[b].tokens, want.y, (size_t)want.len * sizeof *want.y) == 0 &&
                   memcmp(out[b].steps, want.steps, (size_t)want.len * sizeof *want.steps) == 0,
               "V %d peak %g beam %d prune %d sentence %d: not what a plain beam search finds "
               "(length %d vs %d)",
               vocab, peak, beam, prune, b, out[b].len, want.len);
        EXPECT(rel_err(out[b].logp, want.logp) <= 1e-9, "sentence %d: logp %.12g vs %.12g", b,
               out[b].logp, want.logp);
        intrus_ins_hyp_free(&out[b]);
      }
      fake_free(&f);
    }
}

/* ---- search.finish_in_beam ------------------------------------------------------------ */

/* Results the rule changed, in the exhaustive comparisons (fib_early: to an output
 * shorter than max_steps) and in the plain beam ones. */
static int fib_changed_exhaustive, fib_early, fib_changed_beam;

/* The rule by brute force on the exhaustive tables: with a beam as large as the space,
 * step t keeps every string of t tokens, so its kept children are all the strings of
 * t + 1 tokens and the worst of them has the smallest P. A finish F(s) of a string of
 * t < max_steps tokens counts only when it reaches that P; at max_steps it always does. */
static void test_finish_in_beam_exhaustive(double alpha, double peak, double bias, bool prune,
                                           uint64_t seed) {
  struct fake f = fake_new(INTRUS_NUM_SPECIAL + 3, peak, seed);
  for (int b = 0; b < NS; b++) f.fin_bias[b] = bias - 0.5 * b;
  struct space sp = space_of(3, 5);
  struct intrus_ins_scorer sc = scorer_of(&f);
  struct intrus_ins_search_opts o = {.beam = 256, .alpha = (float)alpha, .prune = prune,
                                     .finish_in_beam = true};
  f.beam = o.beam;
  struct intrus_ins_hyp out[NS];
  struct intrus_error err = {0};
  EXPECT(intrus_ins_beam_search(&sc, NS, ms_of, &o, out, NULL, &err) == INTRUS_OK, "%s",
         err.msg);
  EXPECT(f.bad == 0, "the search asked the scorer %d bad things", f.bad);
  static struct exhaustive E;
  alpha = (double)o.alpha; /* as the search has it */
  for (int b = 0; b < NS; b++) {
    char what[96];
    snprintf(what, sizeof what, "finish_in_beam alpha %g prune %d seed %llu sentence %d", alpha,
             prune, (unsigned long long)seed, b);
    int ms = ms_of[b];
    exhaustive(&f, &sp, b, ms, alpha, &E);
    double worst[MAXLEN + 2];
    for (int len = 1; len <= ms; len++) {
      worst[len] = INFINITY;
      for (int i = sp.start[len]; i < sp.start[len + 1]; i++)
        worst[len] = E.P[i] < worst[len] ? E.P[i] : worst[len];
    }
    int best = -1;
    double best_score = -INFINITY;
    for (int idx = 0; idx < sp.start[ms + 1]; idx++) {
      int32_t y[MAXLEN + 1];
      int len;
      str_of(&sp, idx, y, &len);
      if (len < ms && !(E.F[idx] >= worst[len + 1])) continue;
      double score = E.F[idx] / pow(len + 1.0, alpha);
      if (score > best_score) {
        best_score = score;
        best = idx;
      }
    }
    fib_changed_exhaustive += best != E.best;
    int32_t want[MAXLEN + 1];
    int wlen;
    str_of(&sp, best, want, &wlen);
    fib_early += best != E.best && wlen < ms;
    EXPECT(out[b].len == wlen && memcmp(out[b].tokens, want, (size_t)wlen * sizeof *want) == 0,
           "%s: search and brute force disagree on the string (length %d vs %d)", what,
           out[b].len, wlen);
    EXPECT(rel_err(out[b].score, best_score) <= 1e-9, "%s: score %.12g, brute force %.12g", what,
           out[b].score, best_score);
    EXPECT(rel_err(out[b].logp, E.F[best]) <= 1e-9, "%s: logp %.12g, brute force %.12g", what,
           out[b].logp, E.F[best]);
    check_trajectory(&f, b, &out[b], what);
    intrus_ins_hyp_free(&out[b]);
  }
  fake_free(&f);
}

/* Small beams: the same as the plain beam search above with the rule applied there. */
static void test_finish_in_beam_reference(int vocab, double peak, double alpha, uint64_t seed) {
  enum { B = 4 };
  int ms[B] = {6, 3, 5, 0};
  for (int beam = 1; beam <= 5; beam++)
    for (int prune = 0; prune < 2; prune++) {
      struct fake f = fake_new(vocab, peak, seed);
      f.beam = beam;
      for (int b = 0; b < B; b++) f.fin_bias[b] = 1.0 - 1.5 * b;
      struct intrus_ins_scorer sc = scorer_of(&f);
      struct intrus_ins_search_opts o = {.beam = beam, .alpha = (float)alpha, .prune = prune,
                                         .finish_in_beam = true};
      struct intrus_ins_hyp out[B];
      struct intrus_error err = {0};
      EXPECT(intrus_ins_beam_search(&sc, B, ms, &o, out, NULL, &err) == INTRUS_OK, "%s",
             err.msg);
      EXPECT(f.bad == 0, "the search asked the scorer %d bad things", f.bad);
      for (int b = 0; b < B; b++) {
        struct ref_hyp want, plain;
        ref_beam(&f, b, ms[b], beam, (double)o.alpha, true, &want);
        ref_beam(&f, b, ms[b], beam, (double)o.alpha, false, &plain);
        fib_changed_beam += plain.len != want.len || plain.logp != want.logp;
        EXPECT(out[b].len == want.len &&
                   memcmp(out[b].tokens, want.y, (size_t)want.len * sizeof *want.y) == 0 &&
                   memcmp(out[b].steps, want.steps, (size_t)want.len * sizeof *want.steps) == 0,
               "finish_in_beam V %d peak %g alpha %g beam %d prune %d sentence %d: not what a "
               "plain beam search with the rule finds (length %d vs %d)",
               vocab, peak, alpha, beam, prune, b, out[b].len, want.len);
        EXPECT(rel_err(out[b].logp, want.logp) <= 1e-9, "sentence %d: logp %.12g vs %.12g", b,
               out[b].logp, want.logp);
        intrus_ins_hyp_free(&out[b]);
      }
      fake_free(&f);
    }
}

/* By hand: uniform logits (peak 0) over V = specials + 2 and a finish logit log q[k] at
 * k tokens. Every string of k + 1 tokens then has the same P, and a finish at k < max
 * tokens reaches it exactly when q[k] >= (k + 1) / V, whatever the beam. The empty
 * output (q[0] = 0.15 < 1/6) has the best score of all strings but finishes below
 * every child of step 0: without the rule it wins; with it, it is not offered and a
 * one-token output (q[1] = 1 >= 2/6) wins. */
static void test_finish_in_beam_case(void) {
  enum { MS = 3, V = INTRUS_NUM_SPECIAL + 2 };
  static const double q[MS + 1] = {0.15, 1.0, 0.01, 1.0};
  const double alpha = 0.5;
  struct fake f = fake_new(V, 0.0, 1);
  f.fin_bias[0] = 0.0;
  for (int k = 0; k <= MS; k++) f.fin_len[k] = log(q[k]);
  /* The premises, from the exhaustive tables. */
  struct space sp = space_of(2, MS);
  static struct exhaustive E;
  exhaustive(&f, &sp, 0, MS, alpha, &E);
  double worst1 = INFINITY;
  for (int i = sp.start[1]; i < sp.start[2]; i++) worst1 = E.P[i] < worst1 ? E.P[i] : worst1;
  EXPECT(E.best == 0, "the empty output should have the best score (the best is string %d)",
         E.best);
  EXPECT(E.F[0] < worst1, "the empty output's finish %.6f should be below the children's %.6f",
         E.F[0], worst1);
  /* By hand: P(y) = p(slot 0 | empty) p(y | slot 0) for a one-token y. */
  double fin0 = log(q[0] / (1.0 + q[0])), p1 = -log((1.0 + q[0]) * V);
  double fin1 = p1 + log(q[1] / (2.0 + q[1]));
  EXPECT_NEAR(E.F[0], fin0, 1e-6);
  EXPECT_NEAR(worst1, p1, 1e-6);
  static const int beams[] = {1, 2, 3, 64};
  for (size_t bi = 0; bi < sizeof beams / sizeof *beams; bi++)
    for (int prune = 0; prune < 2; prune++)
      for (int rule = 0; rule < 2; rule++) {
        f.beam = beams[bi];
        struct intrus_ins_scorer sc = scorer_of(&f);
        struct intrus_ins_search_opts o = {.beam = beams[bi], .alpha = (float)alpha,
                                           .prune = prune, .finish_in_beam = rule};
        struct intrus_ins_hyp out;
        struct intrus_error err = {0};
        int ms = MS;
        EXPECT(intrus_ins_beam_search(&sc, 1, &ms, &o, &out, NULL, &err) == INTRUS_OK, "%s",
               err.msg);
        char what[64];
        snprintf(what, sizeof what, "hand-made case beam %d prune %d rule %d", beams[bi], prune,
                 rule);
        EXPECT(out.len == (rule ? 1 : 0), "%s: the output has %d tokens", what, out.len);
        EXPECT(fabs(out.logp - (rule ? fin1 : fin0)) <= 1e-6, "%s: logp %.9f, by hand %.9f",
               what, out.logp, rule ? fin1 : fin0);
        EXPECT(rel_err(out.score, out.logp / pow(out.len + 1.0, alpha)) <= 1e-12, "%s: score",
               what);
        check_trajectory(&f, 0, &out, what);
        intrus_ins_hyp_free(&out);
      }
  fake_free(&f);
}

/* At max_steps finishing is always allowed: with finishes so unlikely that none before
 * max_steps reaches the step's children, every sentence ends at max_steps (one of
 * max_steps 0 finishes empty), with what the plain beam search with the rule finds. */
static void test_finish_in_beam_limit(void) {
  enum { B = 4 };
  int ms[B] = {0, 1, 2, 4};
  static const int beams[] = {1, 3, 16};
  for (size_t bi = 0; bi < sizeof beams / sizeof *beams; bi++)
    for (int prune = 0; prune < 2; prune++) {
      struct fake f = fake_new(INTRUS_NUM_SPECIAL + 3, 2.0, 21);
      f.beam = beams[bi];
      for (int b = 0; b < B; b++) f.fin_bias[b] = -12.0;
      struct intrus_ins_scorer sc = scorer_of(&f);
      struct intrus_ins_search_opts o = {.beam = beams[bi], .alpha = 1.0f, .prune = prune,
                                         .finish_in_beam = true};
      struct intrus_ins_hyp out[B];
      struct intrus_error err = {0};
      EXPECT(intrus_ins_beam_search(&sc, B, ms, &o, out, NULL, &err) == INTRUS_OK, "%s",
             err.msg);
      for (int b = 0; b < B; b++) {
        struct ref_hyp want;
        ref_beam(&f, b, ms[b], beams[bi], 1.0, true, &want);
        EXPECT(out[b].len == ms[b] && want.len == ms[b] && isfinite(out[b].logp),
               "beam %d prune %d: a sentence of max_steps %d ends with %d tokens (logp %g); "
               "the reference with %d",
               beams[bi], prune, ms[b], out[b].len, out[b].logp, want.len);
        EXPECT(out[b].len == want.len &&
                   memcmp(out[b].tokens, want.y, (size_t)want.len * sizeof *want.y) == 0 &&
                   rel_err(out[b].logp, want.logp) <= 1e-9,
               "beam %d prune %d sentence %d: not what the plain beam search with the rule "
               "finds", beams[bi], prune, b);
        intrus_ins_hyp_free(&out[b]);
      }
      fake_free(&f);
    }
}

/* The experiment's search group: finish_in_beam is off unless given, read as a bool, and
 * a value of another type is refused with the setting named. */
static void test_finish_in_beam_config(void) {
  static const struct {
    const char *text;
    enum intrus_status st;
    bool on;
  } cases[] = {
      {"search: { beam = 3; };", INTRUS_OK, false},
      {"search: { beam = 3; finish_in_beam = true; };", INTRUS_OK, true},
      {"search: { finish_in_beam = false; };", INTRUS_OK, false},
      {"search: { beam = 3; finish_in_beam = \"yes\"; };", INTRUS_ERR_CONFIG, false},
      {"search: { beam = 3; finish_in_beam = 1; };", INTRUS_ERR_CONFIG, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct intrus_error err = {0};
    struct intrus_config *cfg = intrus_config_load_string(cases[i].text, "fib.cfg", &err);
    EXPECT(cfg != NULL, "%s: %s", cases[i].text, err.msg);
    if (!cfg) continue;
    struct translator t;
    memset(&t, 0, sizeof t);
    enum intrus_status st = translator_read_search(intrus_config_root(cfg), &t, &err);
    EXPECT(st == cases[i].st, "%s: status %d (%s)", cases[i].text, st, err.msg);
    if (st == INTRUS_OK)
      EXPECT(t.beam.finish_in_beam == cases[i].on && t.beam.beam == (i < 2 ? 3 : 4),
             "%s: finish_in_beam %d beam %d", cases[i].text, t.beam.finish_in_beam, t.beam.beam);
    else {
      EXPECT_CONTAINS(err.msg, "finish_in_beam");
      EXPECT_CONTAINS(err.msg, "fib.cfg:");
    }
    intrus_config_free(cfg);
  }
  EXPECT(!intrus_beam_defaults().finish_in_beam && !intrus_ins_search_defaults().finish_in_beam,
         "finish_in_beam is off by default");
}

/* A peaked scorer over a larger vocabulary: pruning must skip most token softmaxes and
 * return exactly what the unpruned search returns. */
static void test_pruning_saves(void) {
  enum { B = 4 };
  int ms[B] = {8, 5, 7, 6};
  struct intrus_ins_hyp res[2][B];
  struct intrus_ins_search_stats stats[2] = {{0}};
  for (int prune = 0; prune < 2; prune++) {
    struct fake f = fake_new(MAXV, 7.0, 99);
    f.beam = 4;
    for (int b = 0; b < B; b++) f.fin_bias[b] = -14.0;
    struct intrus_ins_scorer sc = scorer_of(&f);
    struct intrus_ins_search_opts o = {.beam = 4, .alpha = 1.0f, .prune = prune};
    struct intrus_error err = {0};
    EXPECT(intrus_ins_beam_search(&sc, B, ms, &o, res[prune], &stats[prune], &err) == INTRUS_OK,
           "%s", err.msg);
    EXPECT(f.bad == 0, "the search asked the scorer %d bad things", f.bad);
    for (int b = 0; b < B; b++) check_trajectory(&f, b, &res[prune][b], "peaked");
    fake_free(&f);
  }
  printf("peaked scorer: %ld of %ld slots scored with pruning, %ld without\n",
         stats[1].slots_scored, stats[1].slots_total, stats[0].slots_scored);
  EXPECT(stats[0].slots_scored == stats[0].slots_total, "no pruning scores every slot");
  EXPECT(stats[1].slots_total == stats[0].slots_total, "the same hypotheses were expanded");
  EXPECT(2 * stats[1].slots_scored < stats[1].slots_total,
         "pruning scored %ld of %ld slots on a peaked scorer", stats[1].slots_scored,
         stats[1].slots_total);
  for (int b = 0; b < B; b++) {
    EXPECT(res[0][b].len >= 2, "sentence %d: a peaked scorer with a low finish writes something",
           b);
    EXPECT(same_hyp(&res[0][b], &res[1][b]), "sentence %d: pruning changed the result", b);
    intrus_ins_hyp_free(&res[0][b]);
    intrus_ins_hyp_free(&res[1][b]);
  }
}

/* A sentence whose empty output is nearly certain is settled after one step. */
static void test_early_stop(void) {
  struct fake f = fake_new(INTRUS_NUM_SPECIAL + 3, 1.0, 5);
  f.fin_bias[0] = 6.0;
  int ms = 5;
  struct intrus_ins_scorer sc = scorer_of(&f);
  struct intrus_ins_search_opts o = {.beam = 64, .alpha = 1.0f, .prune = false};
  struct intrus_ins_hyp out;
  struct intrus_ins_search_stats stats = {0};
  struct intrus_error err = {0};
  EXPECT(intrus_ins_beam_search(&sc, 1, &ms, &o, &out, &stats, &err) == INTRUS_OK, "%s",
         err.msg);
  EXPECT(out.len == 0, "the empty output wins (length %d)", out.len);
  EXPECT(stats.states == 1, "%ld states scored: the search did not stop early", stats.states);
  intrus_ins_hyp_free(&out);
  fake_free(&f);
}

static void test_errors(void) {
  int ms[2] = {3, 4};
  /* Calls go positions, tokens..., positions, ...: fail each of the first few. */
  for (int at = 1; at <= 6; at++) {
    struct fake f = fake_new(INTRUS_NUM_SPECIAL + 3, 2.0, 17);
    f.fail_at = at;
    struct intrus_ins_scorer sc = scorer_of(&f);
    struct intrus_ins_search_opts o = intrus_ins_search_defaults();
    struct intrus_ins_hyp out[2];
    struct intrus_error err = {0};
    enum intrus_status st = intrus_ins_beam_search(&sc, 2, ms, &o, out, NULL, &err);
    EXPECT(st == INTRUS_ERR_IO, "failing call %d: status %d", at, st);
    EXPECT_CONTAINS(err.msg, "failed on purpose");
    EXPECT(out[0].tokens == NULL && out[1].tokens == NULL, "no results after an error");
    fake_free(&f);
  }
  struct fake f = fake_new(INTRUS_NUM_SPECIAL + 3, 2.0, 17);
  struct intrus_ins_scorer sc = scorer_of(&f);
  struct intrus_ins_search_opts o = intrus_ins_search_defaults();
  struct intrus_ins_hyp out[2];
  struct intrus_error err = {0};
  o.beam = 0;
  EXPECT(intrus_ins_beam_search(&sc, 2, ms, &o, out, NULL, &err) == INTRUS_ERR_INVALID,
         "beam 0 is refused");
  o.beam = 2;
  int neg[2] = {3, -1};
  EXPECT(intrus_ins_beam_search(&sc, 2, neg, &o, out, NULL, &err) == INTRUS_ERR_INVALID,
         "negative max_steps is refused");
  EXPECT_CONTAINS(err.msg, "sentence 1");
  EXPECT(intrus_ins_beam_search(&sc, 0, ms, &o, out, NULL, &err) == INTRUS_OK,
         "no sentences is fine");
  fake_free(&f);
}

static void test_defaults(void) {
  struct intrus_ins_search_opts o = intrus_ins_search_defaults();
  EXPECT(o.beam == 4 && o.alpha == 1.0f && o.prune, "defaults: beam 4, alpha 1, prune");
  intrus_ins_hyp_free(NULL);
}

int main(void) {
  test_defaults();
  static const double alphas[] = {1.0, 0.0, 0.5, 2.0, -0.5};
  for (size_t a = 0; a < sizeof alphas / sizeof *alphas; a++)
    for (int prune = 0; prune < 2; prune++)
      for (uint64_t seed = 1; seed <= 3; seed++) test_exhaustive(alphas[a], prune, seed);
  /* The reference must have found both long and short best outputs, or the
   * comparison above would say little. */
  EXPECT(long_best > 0 && short_best > 0, "best outputs: %d of length >= 3, %d of length <= 1",
         long_best, short_best);
  for (uint64_t seed = 1; seed <= 4; seed++) test_small_beams(seed);
  for (uint64_t seed = 1; seed <= 4; seed++) test_greedy(seed);
  test_reference_beam(INTRUS_NUM_SPECIAL + 2, 2.0, 7);
  test_reference_beam(INTRUS_NUM_SPECIAL + 3, 3.0, 8);
  test_reference_beam(MAXV, 3.0, 9);
  test_reference_beam(MAXV, 7.0, 10);
  for (int prune = 0; prune < 2; prune++)
    for (uint64_t seed = 1; seed <= 3; seed++) {
      test_finish_in_beam_exhaustive(1.0, 2.0, -4.0, prune, seed);
      test_finish_in_beam_exhaustive(0.3, 1.0, -2.0, prune, seed + 10);
    }
  test_finish_in_beam_reference(INTRUS_NUM_SPECIAL + 3, 2.0, 0.8, 11);
  test_finish_in_beam_reference(INTRUS_NUM_SPECIAL + 2, 1.0, 0.2, 12);
  test_finish_in_beam_reference(MAXV, 3.0, 1.0, 13);
  /* The rule must have changed some results, or the comparisons would say little. */
  EXPECT(fib_changed_exhaustive > 0 && fib_early > 0 && fib_changed_beam > 0,
         "finish_in_beam changed %d results against the exhaustive tables (%d of them to "
         "outputs shorter than max_steps), %d against the plain beam search",
         fib_changed_exhaustive, fib_early, fib_changed_beam);
  printf("finish_in_beam changed %d of 60 results against the exhaustive tables (%d to outputs "
         "shorter than max_steps), %d of 120 against the plain beam search\n",
         fib_changed_exhaustive, fib_early, fib_changed_beam);
  test_finish_in_beam_case();
  test_finish_in_beam_limit();
  test_finish_in_beam_config();
  test_pruning_saves();
  test_early_stop();
  test_errors();
  return test_finish("test_ins_search");
}

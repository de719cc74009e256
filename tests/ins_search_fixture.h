/* Fixtures of the insertion beam search tests (test_ins_search,
 * test_ins_search_finish): a fake scorer whose log-probabilities are a hash of
 * (sentence, partial output, position), which also checks what the search asks of it
 * (real tokens only, at most `beam` hypotheses per sentence, no string twice) and can
 * fail a chosen call; the exhaustive reference, where P(s) sums over every insertion
 * order (dynamic programming over all strings) along with the best way into each
 * string and the best finished string; checks on one returned hypothesis; the test
 * sentences' max_steps and finish biases; and a plain beam search (every child
 * materialised and compared) to hold small beams against.
 *
 * Header-only, like testutil.h, so that the EXPECTs in these helpers count in the test
 * that includes it. */
#ifndef INTRUS_TESTS_INS_SEARCH_FIXTURE_H
#define INTRUS_TESTS_INS_SEARCH_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/insertion.h"
#include "intrus/plugin.h"
#include "testutil.h"

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

static inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static inline double logit(const struct fake *f, int sent, const int32_t *y, int k, int kind, int a,
                           int c) {
  uint64_t h = mix(f->seed ^ (uint64_t)sent * 1000003u);
  for (int i = 0; i < k; i++) h = mix(h ^ (uint64_t)y[i]);
  h = mix(h ^ ((uint64_t)k << 8) ^ ((uint64_t)kind << 4));
  h = mix(h ^ (uint64_t)a * 7919u ^ (uint64_t)c * 104729u);
  return f->peak * ((double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static inline void log_softmax(double *x, int n, float *out) {
  double mx = -INFINITY, sum = 0.0;
  for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
  for (int i = 0; i < n; i++) sum += exp(x[i] - mx);
  for (int i = 0; i < n; i++) out[i] = (float)(x[i] - mx - log(sum));
}

/* log p(pos) over the k + 2 positions of sentence `sent`'s state y. */
static inline void fake_pos(const struct fake *f, int sent, const int32_t *y, int k, float *out) {
  double x[MAXLEN + 2];
  for (int i = 0; i < k + 2; i++) x[i] = logit(f, sent, y, k, 1, i, 0);
  x[k + 1] += f->fin_bias[sent] + f->fin_len[k];
  log_softmax(x, k + 2, out);
}

/* log p(c | slot) over the whole vocabulary, specials included: the search must not
 * insert them even though they carry probability. */
static inline void fake_tok(const struct fake *f, int sent, const int32_t *y, int k, int slot,
                            float *out) {
  double x[MAXV];
  for (int c = 0; c < f->vocab; c++) x[c] = logit(f, sent, y, k, 2, slot, c);
  log_softmax(x, f->vocab, out);
}

static inline bool counts_call(struct fake *f) { return f->fail_at && ++f->calls == f->fail_at; }

static inline enum intrus_status cb_positions(void *user, const struct intrus_ins_states *st,
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

static inline enum intrus_status cb_tokens(void *user, int n, const int *state, const int *slot,
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

static inline struct intrus_ins_scorer scorer_of(struct fake *f) {
  return (struct intrus_ins_scorer){
      .vocab = f->vocab, .positions = cb_positions, .tokens = cb_tokens, .user = f};
}

static inline void fake_free(struct fake *f) {
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

static inline struct space space_of(int real, int n) {
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

static inline int str_index(const struct space *sp, const int32_t *y, int len) {
  int code = 0;
  for (int i = len - 1; i >= 0; i--) code = code * sp->R + (y[i] - INTRUS_NUM_SPECIAL);
  return sp->start[len] + code;
}

static inline void str_of(const struct space *sp, int idx, int32_t *y, int *len) {
  int l = 0;
  while (idx >= sp->start[l + 1]) l++;
  int code = idx - sp->start[l];
  for (int i = 0; i < l; i++) {
    y[i] = INTRUS_NUM_SPECIAL + code % sp->R;
    code /= sp->R;
  }
  *len = l;
}

static inline void insert_at(int32_t *y, int len, int slot, int32_t c) {
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

static inline void exhaustive(const struct fake *f, const struct space *sp, int sent, int ms,
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
static inline double check_trajectory(const struct fake *f, int sent,
                                      const struct intrus_ins_hyp *h, const char *what) {
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

static inline bool same_hyp(const struct intrus_ins_hyp *a, const struct intrus_ins_hyp *b) {
  return a->len == b->len && a->logp == b->logp && a->score == b->score &&
         memcmp(a->tokens, b->tokens, (size_t)a->len * sizeof *a->tokens) == 0 &&
         memcmp(a->steps, b->steps, (size_t)a->len * sizeof *a->steps) == 0;
}

static inline double rel_err(double a, double b) {
  return fabs(a - b) / (fabs(b) > 1e-300 ? fabs(b) : 1.0);
}

/* ---- the test sentences ----------------------------------------------------------- */

enum { NS = 5 };
static const int ms_of[NS] = {0, 1, 3, 5, 4};
static const double bias_of[NS] = {0.0, -1.0, -2.5, -1.5, 1.0};

static inline struct fake fake_new(int vocab, double peak, uint64_t seed) {
  struct fake f = {.vocab = vocab, .peak = peak, .seed = seed, .beam = 1 << 30};
  for (int b = 0; b < NS; b++) f.fin_bias[b] = bias_of[b];
  return f;
}

/* ---- a plain beam search ---------------------------------------------------------- */

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

static inline int ref_cmp(const void *a, const void *b) {
  const struct ref_hyp *x = a, *y = b;
  if (x->logp != y->logp) return x->logp > y->logp ? -1 : 1;
  if (x->h != y->h) return x->h - y->h;
  if (x->slot != y->slot) return x->slot - y->slot;
  return x->c - y->c;
}

static inline void ref_offer(const struct ref_hyp *h, double fin, double score,
                             struct ref_hyp *best, double *best_score) {
  if (score > *best_score) {
    *best_score = score;
    *best = *h;
    best->logp = fin;
  }
}

static inline void ref_beam(const struct fake *f, int sent, int ms, int K, double alpha,
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

#endif

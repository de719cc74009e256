/* Insertion beam search against exhaustive search on the fake scorer of
 * ins_search_fixture.h. With a beam as wide as the space the search must return the
 * best string by (log P(s) + log p(finish | s)) / (len + 1)^alpha, where P(s) sums over
 * every insertion order (dynamic programming over all strings), with its trajectory
 * being the best way into each string along the way; pruning must change nothing but
 * the number of token softmaxes; small beams must give what a plain beam search (every
 * child materialised and compared) gives, and beam 1 what greedy search by hand gives;
 * a sentence whose empty output is nearly certain stops early; scorer errors and bad
 * options must come back. test_ins_search_finish checks search.finish_in_beam. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/insertion.h"
#include "intrus/plugin.h"
#include "ins_search_fixture.h"
#include "testutil.h"

/* ---- the tests -------------------------------------------------------------------- */

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
  test_pruning_saves();
  test_early_stop();
  test_errors();
  return test_finish("test_ins_search");
}

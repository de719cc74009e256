/* Insertion beam search with search.finish_in_beam (a finish counts only when it
 * reaches the worst child kept at its step), on the fake scorer of
 * ins_search_fixture.h: the search must give what the rule gives by brute force on the
 * exhaustive tables and in a plain beam search, change the winner of a hand-made case,
 * and still finish at max_steps; the experiment's search group reads the setting.
 * test_ins_search checks the search without the rule. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/insertion.h"
#include "intrus/plugin.h"
#include "ins_search_fixture.h"
#include "testutil.h"
#include "search/translate.h"

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

/* Small beams: the same as the plain beam search (ref_beam, in the fixture) with the rule
 * applied there. */
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

int main(void) {
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
  return test_finish("test_ins_search_finish");
}

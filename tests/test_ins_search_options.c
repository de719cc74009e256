/* Two settings of the insertion beam search, on the fake scorer of ins_search_fixture.h:
 *  - search.slots = K, the token softmax only at each hypothesis's K most probable slots:
 *    K as large as the slots of every step gives the exact search bit for bit; K = 1 at
 *    beam 1 inserts only at the most probable slot of each state; K = 2 at beam 2 only at
 *    one of the two best; pruning stays exact for the restricted search; K below the
 *    beam is refused, naming the setting.
 *  - search.finish_penalty = beta, subtracted from log p(finish): 0 changes nothing; with
 *    a beam as large as the space the search returns the best string by
 *    (log P(s) + log p(finish | s) - beta) / (len + 1)^alpha (brute force on the
 *    exhaustive tables) and reports the unpenalised log p; a large beta makes outputs
 *    longer; a negative one is refused.
 * Both are read from the experiment's search group (defaults off). */
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

enum { B = 4 };
static const int ms[B] = {8, 6, 7, 5};

static void search(struct fake *f, const struct intrus_ins_search_opts *o,
                   struct intrus_ins_hyp *out, const char *what) {
  f->beam = o->beam;
  struct intrus_ins_scorer sc = scorer_of(f);
  struct intrus_error err = {0};
  EXPECT(intrus_ins_beam_search(&sc, B, ms, o, out, NULL, &err) == INTRUS_OK, "%s: %s", what,
         err.msg);
  EXPECT(f->bad == 0, "%s: the search asked the scorer %d bad things", what, f->bad);
}

static struct fake scorer(uint64_t seed) {
  struct fake f = fake_new(INTRUS_NUM_SPECIAL + 4, 4.0, seed);
  for (int b = 0; b < B; b++) f.fin_bias[b] = -2.0 - 0.5 * b;
  return f;
}

/* The rank of `slot` among the slots 0..t of state y by log p(pos), the leftmost first
 * among equals (0 = the most probable). */
static int slot_rank(const struct fake *f, int sent, const int32_t *y, int t, int slot) {
  float pos[MAXLEN + 2];
  fake_pos(f, sent, y, t, pos);
  int r = 0;
  for (int i = 0; i <= t; i++) r += pos[i] > pos[slot] || (pos[i] == pos[slot] && i < slot);
  return r;
}

/* Every insertion of h at one of the K best slots of the state it was made in. */
static void check_slots(const struct fake *f, int sent, const struct intrus_ins_hyp *h, int K,
                        const char *what) {
  int32_t y[MAXLEN + 1] = {0};
  for (int t = 0; t < h->len; t++) {
    int r = slot_rank(f, sent, y, t, h->steps[t].slot);
    EXPECT(r < K, "%s sentence %d: step %d inserts at the slot of rank %d (search.slots = %d)",
           what, sent, t, r, K);
    insert_at(y, t, h->steps[t].slot, h->steps[t].token);
  }
}

static void test_slots(uint64_t seed) {
  static const double alphas[] = {1.0, 0.0, 2.0};
  int changed = 0;
  for (int beam = 1; beam <= 4; beam *= 2)
    for (int fib = 0; fib < 2; fib++)
      for (int canonical = 0; canonical < 2; canonical++)
        for (size_t a = 0; a < sizeof alphas / sizeof *alphas; a++)
          for (int prune = 0; prune < 2; prune++) {
            char what[128];
            snprintf(what, sizeof what, "beam %d fib %d canonical %d alpha %g prune %d seed %llu",
                     beam, fib, canonical, alphas[a], prune, (unsigned long long)seed);
            struct intrus_ins_search_opts o = {.beam = beam, .alpha = (float)alphas[a],
                                               .prune = prune, .finish_in_beam = fib,
                                               .canonical = canonical};
            struct intrus_ins_hyp exact[B], wide[B], few[B], few_other[B];
            struct fake f = scorer(seed);
            search(&f, &o, exact, what);
            o.slots = MAXLEN + 1; /* every slot of every step */
            search(&f, &o, wide, what);
            /* K = beam: the fewest allowed; pruned and unpruned must agree on it. */
            o.slots = beam;
            search(&f, &o, few, what);
            o.prune = !prune;
            search(&f, &o, few_other, what);
            for (int b = 0; b < B; b++) {
              EXPECT(same_hyp(&exact[b], &wide[b]),
                     "%s sentence %d: search.slots = %d is not the exact search", what, b,
                     MAXLEN + 1);
              EXPECT(same_hyp(&few[b], &few_other[b]),
                     "%s sentence %d: pruning changed the search.slots = %d result", what, b,
                     beam);
              check_slots(&f, b, &few[b], beam, what);
              check_trajectory(&f, b, &few[b], what);
              changed += !same_hyp(&exact[b], &few[b]);
              intrus_ins_hyp_free(&exact[b]);
              intrus_ins_hyp_free(&wide[b]);
              intrus_ins_hyp_free(&few[b]);
              intrus_ins_hyp_free(&few_other[b]);
            }
            fake_free(&f);
          }
  /* Restricting the slots must matter somewhere, or the checks above say little. */
  EXPECT(changed > 0, "seed %llu: search.slots = beam changed no result",
         (unsigned long long)seed);
}

/* K = 1 at beam 1 by hand: the best token at the most probable slot, until finishing
 * scores best (no merging arises: one way per string at one slot). */
static void test_one_slot_greedy(uint64_t seed) {
  struct fake f = scorer(seed);
  struct intrus_ins_search_opts o = {.beam = 1, .alpha = 1.0f, .prune = true, .slots = 1};
  struct intrus_ins_hyp out[B];
  search(&f, &o, out, "slots 1");
  for (int b = 0; b < B; b++) {
    int32_t y[MAXLEN + 1] = {0}, best_y[MAXLEN + 1] = {0};
    double lp = 0.0, best = -INFINITY;
    int best_len = 0;
    for (int t = 0;; t++) {
      float pos[MAXLEN + 2], tok[MAXV] = {0};
      fake_pos(&f, b, y, t, pos);
      double fin = lp + pos[t + 1];
      if (fin / (t + 1.0) > best) {
        best = fin / (t + 1.0);
        best_len = t;
        memcpy(best_y, y, (size_t)t * sizeof *y);
      }
      if (t == ms[b]) break;
      int slot = 0;
      for (int i = 1; i <= t; i++)
        if (pos[i] > pos[slot]) slot = i;
      fake_tok(&f, b, y, t, slot, tok);
      int32_t c = INTRUS_NUM_SPECIAL;
      for (int32_t k = c + 1; k < f.vocab; k++)
        if (tok[k] > tok[c]) c = k;
      /* A copy of a neighbour merges with the way from the other side of it, which is
       * not among the scored slots: the string's value is this way's alone. */
      lp += (double)pos[slot] + tok[c];
      insert_at(y, t, slot, c);
    }
    EXPECT(out[b].len == best_len &&
               memcmp(out[b].tokens, best_y, (size_t)best_len * sizeof *best_y) == 0,
           "sentence %d: search.slots = 1 is not greedy at the best slot (length %d vs %d)", b,
           out[b].len, best_len);
    EXPECT(rel_err(out[b].score, best) <= 1e-9, "sentence %d: score %.12g vs %.12g", b,
           out[b].score, best);
    check_slots(&f, b, &out[b], 1, "slots 1");
    intrus_ins_hyp_free(&out[b]);
  }
  fake_free(&f);
}

static void test_slots_refused(void) {
  struct fake f = scorer(3);
  struct intrus_ins_scorer sc = scorer_of(&f);
  struct intrus_ins_hyp out[B];
  struct intrus_error err = {0};
  struct intrus_ins_search_opts o = {.beam = 4, .alpha = 1.0f, .slots = 3};
  EXPECT(intrus_ins_beam_search(&sc, B, ms, &o, out, NULL, &err) == INTRUS_ERR_INVALID,
         "search.slots below the beam is refused");
  EXPECT_CONTAINS(err.msg, "search.slots = 3");
  o.slots = -1;
  EXPECT(intrus_ins_beam_search(&sc, B, ms, &o, out, NULL, &err) == INTRUS_ERR_INVALID,
         "negative search.slots is refused");
  o.slots = 0;
  o.finish_penalty = -0.5;
  EXPECT(intrus_ins_beam_search(&sc, B, ms, &o, out, NULL, &err) == INTRUS_ERR_INVALID,
         "a negative finish penalty is refused");
  EXPECT_CONTAINS(err.msg, "search.finish_penalty");
  fake_free(&f);
}

/* beta against brute force: a beam as large as the space (the exhaustive tables of
 * ins_search_fixture.h, scored with the penalty). */
static int beta_longer;

static void test_penalty_exhaustive(double alpha, double beta, bool prune, uint64_t seed) {
  struct fake f = fake_new(INTRUS_NUM_SPECIAL + 3, 2.0, seed);
  struct space sp = space_of(3, 5);
  struct intrus_ins_search_opts o = {.beam = 256, .alpha = (float)alpha, .prune = prune,
                                     .finish_penalty = beta};
  f.beam = o.beam;
  struct intrus_ins_scorer sc = scorer_of(&f);
  struct intrus_ins_hyp out[NS];
  struct intrus_error err = {0};
  EXPECT(intrus_ins_beam_search(&sc, NS, ms_of, &o, out, NULL, &err) == INTRUS_OK, "%s",
         err.msg);
  static struct exhaustive E;
  for (int b = 0; b < NS; b++) {
    char what[96];
    snprintf(what, sizeof what, "alpha %g beta %g prune %d seed %llu sentence %d", alpha, beta,
             prune, (unsigned long long)seed, b);
    exhaustive(&f, &sp, b, ms_of[b], (double)o.alpha, &E);
    int best = -1, plain_len = 0;
    double best_score = -INFINITY;
    for (int idx = 0; idx < sp.start[ms_of[b] + 1]; idx++) {
      int32_t y[MAXLEN + 1];
      int len;
      str_of(&sp, idx, y, &len);
      double score = (E.F[idx] - beta) / pow(len + 1.0, (double)o.alpha);
      if (score > best_score) best_score = score, best = idx;
    }
    int32_t want[MAXLEN + 1];
    int wlen;
    str_of(&sp, E.best, want, &plain_len); /* the best without the penalty */
    str_of(&sp, best, want, &wlen);
    beta_longer += wlen > plain_len;
    EXPECT(out[b].len == wlen && memcmp(out[b].tokens, want, (size_t)wlen * sizeof *want) == 0,
           "%s: search and brute force disagree on the string (length %d vs %d)", what,
           out[b].len, wlen);
    EXPECT(rel_err(out[b].score, best_score) <= 1e-9, "%s: score %.12g, brute force %.12g", what,
           out[b].score, best_score);
    EXPECT(rel_err(out[b].logp, E.F[best]) <= 1e-9, "%s: logp %.12g, unpenalised %.12g", what,
           out[b].logp, E.F[best]);
    intrus_ins_hyp_free(&out[b]);
  }
  fake_free(&f);
}

/* beta = 0 is the default search bit for bit; a large beta lengthens outputs, also with
 * finish_in_beam at small beams. */
static void test_penalty_beams(uint64_t seed) {
  for (int beam = 1; beam <= 4; beam *= 2)
    for (int fib = 0; fib < 2; fib++) {
      char what[64];
      snprintf(what, sizeof what, "beam %d fib %d seed %llu", beam, fib,
               (unsigned long long)seed);
      struct intrus_ins_search_opts o = intrus_ins_search_defaults();
      o.beam = beam;
      o.finish_in_beam = fib;
      struct intrus_ins_hyp def[B], zero[B], big[B];
      struct fake f = scorer(seed);
      search(&f, &o, def, what);
      o.finish_penalty = 0.0;
      search(&f, &o, zero, what);
      o.finish_penalty = 100.0;
      search(&f, &o, big, what);
      int sum0 = 0, sum1 = 0;
      for (int b = 0; b < B; b++) {
        EXPECT(same_hyp(&def[b], &zero[b]), "%s sentence %d: finish_penalty 0 changed it", what,
               b);
        EXPECT(big[b].len == ms[b], "%s sentence %d: finish_penalty 100 gives %d of %d tokens",
               what, b, big[b].len, ms[b]);
        double lp = check_trajectory(&f, b, &big[b], what);
        EXPECT(big[b].logp >= lp - 1e-9 * fabs(lp), "%s sentence %d: logp %.12g below its own "
               "way's %.12g (penalised?)", what, b, big[b].logp, lp);
        sum0 += def[b].len;
        sum1 += big[b].len;
        intrus_ins_hyp_free(&def[b]);
        intrus_ins_hyp_free(&zero[b]);
        intrus_ins_hyp_free(&big[b]);
      }
      EXPECT(sum1 > sum0, "%s: finish_penalty 100 did not lengthen the outputs (%d vs %d tokens)",
             what, sum1, sum0);
      fake_free(&f);
    }
}

/* The experiment's search group: both off unless given; slots below the beam a decode
 * uses (the experiment's, or -b's) and a negative penalty refused with the setting and
 * file named. */
static void test_config(void) {
  static const struct {
    const char *text;
    enum intrus_status st;
    int slots;
    double beta;
    const char *key;
    int b; /* a -b override (0: none), given to translator_set_beam */
  } cases[] = {
      {"search: { beam = 3; };", INTRUS_OK, 0, 0.0, NULL, 0},
      {"search: { beam = 3; slots = 3; finish_penalty = 1.5; };", INTRUS_OK, 3, 1.5, NULL, 0},
      {"search: { slots = 8; };", INTRUS_OK, 8, 0.0, NULL, 0},
      {"search: { beam = 4; slots = 2; };", INTRUS_ERR_CONFIG, 0, 0.0, "slots", 0},
      /* the check is against the beam the decode uses: -b 1 makes slots = 2 valid,
       * -b 4 makes slots = 3 too few, naming -b */
      {"search: { beam = 4; slots = 2; };", INTRUS_OK, 2, 0.0, NULL, 1},
      {"search: { beam = 3; slots = 3; };", INTRUS_ERR_CONFIG, 0, 0.0, "(4, from -b)", 4},
      {"search: { slots = -1; };", INTRUS_ERR_CONFIG, 0, 0.0, "slots", 0},
      {"search: { finish_penalty = -1.0; };", INTRUS_ERR_CONFIG, 0, 0.0, "finish_penalty", 0},
      {"search: { finish_penalty = \"big\"; };", INTRUS_ERR_CONFIG, 0, 0.0, "finish_penalty", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct intrus_error err = {0};
    struct intrus_config *cfg = intrus_config_load_string(cases[i].text, "opts.cfg", &err);
    EXPECT(cfg != NULL, "%s: %s", cases[i].text, err.msg);
    if (!cfg) continue;
    struct translator t;
    memset(&t, 0, sizeof t);
    enum intrus_status st = translator_read_search(intrus_config_root(cfg), &t, &err);
    if (st == INTRUS_OK) st = translator_set_beam(&t, cases[i].b, "-b", &err);
    EXPECT(st == cases[i].st, "%s: status %d (%s)", cases[i].text, st, err.msg);
    if (st == INTRUS_OK)
      EXPECT(t.beam.slots == cases[i].slots && t.beam.finish_penalty == cases[i].beta,
             "%s: slots %d finish_penalty %g", cases[i].text, t.beam.slots,
             t.beam.finish_penalty);
    else {
      EXPECT_CONTAINS(err.msg, cases[i].key);
      EXPECT_CONTAINS(err.msg, "opts.cfg:");
    }
    intrus_config_free(cfg);
  }
  EXPECT(intrus_beam_defaults().slots == 0 && intrus_ins_search_defaults().slots == 0 &&
             intrus_beam_defaults().finish_penalty == 0.0 &&
             intrus_ins_search_defaults().finish_penalty == 0.0,
         "search.slots and search.finish_penalty are off by default");
}

int main(void) {
  for (uint64_t seed = 1; seed <= 3; seed++) {
    test_slots(seed);
    test_one_slot_greedy(seed);
    test_penalty_beams(seed);
  }
  test_slots_refused();
  static const double alphas[] = {1.0, 0.5, 2.0};
  static const double betas[] = {0.0, 0.8, 3.0};
  for (size_t a = 0; a < sizeof alphas / sizeof *alphas; a++)
    for (size_t k = 0; k < sizeof betas / sizeof *betas; k++)
      for (int prune = 0; prune < 2; prune++)
        for (uint64_t seed = 1; seed <= 2; seed++)
          test_penalty_exhaustive(alphas[a], betas[k], prune, seed);
  printf("a finish penalty lengthened %d best outputs against the exhaustive tables\n",
         beta_longer);
  EXPECT(beta_longer > 0, "the finish penalty lengthened no best output");
  test_config();
  return test_finish("test_ins_search_options");
}

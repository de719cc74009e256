/* The insertion beam search's pruning against no pruning, on the fake scorer of
 * ins_search_fixture.h: the same hypotheses, log-probabilities, scores and trajectories
 * bit for bit, over beams 1, 2 and 4, with and without finish_in_beam, canonical
 * searches, min_len, length normalisations alpha from -0.5 to 2, finish penalties 0 and
 * 1.5, flat and peaked
 * scorers, and scorers whose finish becomes near-certain at some length (where the
 * finish bound of insertion_search_finish.c skips slots); and, where a plain beam search
 * exists (not canonical, no min_len, no penalty), the same as that brute force. The finish bound
 * must skip slots theta alone would score, at beam 1 and at beam 4. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/insertion.h"
#include "intrus/plugin.h"
#include "ins_search_fixture.h"
#include "testutil.h"

enum { B = 4 };
static const int ms[B] = {8, 6, 7, 5};

/* Per beam (1, 2, 4): slots in all, scored with and without pruning, skipped for the
 * finish bound alone. */
static long total[3], scored[3], unpruned[3], finish[3];
static int checked_ref;

struct setup {
  int vocab;
  double peak;
  bool finish_len; /* the finish near-certain at lengths 3 and 4 */
  int beam, min_len;
  bool fib, canonical;
  double alpha, beta; /* beta: search.finish_penalty */
  uint64_t seed;
};

static void run(const struct setup *u, bool prune, struct intrus_ins_hyp *out,
                struct intrus_ins_search_stats *stats, struct fake *f) {
  *f = fake_new(u->vocab, u->peak, u->seed);
  f->beam = u->beam;
  for (int b = 0; b < B; b++) f->fin_bias[b] = -1.0 - 0.7 * b;
  if (u->finish_len) f->fin_len[3] = f->fin_len[4] = 8.0;
  struct intrus_ins_scorer sc = scorer_of(f);
  struct intrus_ins_search_opts o = {.beam = u->beam, .alpha = (float)u->alpha,
                                     .prune = prune, .min_len = u->min_len,
                                     .canonical = u->canonical, .finish_in_beam = u->fib,
                                     .finish_penalty = u->beta};
  struct intrus_error err = {0};
  EXPECT(intrus_ins_beam_search(&sc, B, ms, &o, out, stats, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(f->bad == 0, "the search asked the scorer %d bad things", f->bad);
}

static void compare(const struct setup *u) {
  char what[160];
  snprintf(what, sizeof what,
           "V %d peak %g finish_len %d beam %d min_len %d fib %d canonical %d alpha %g beta %g "
           "seed %llu",
           u->vocab, u->peak, u->finish_len, u->beam, u->min_len, u->fib, u->canonical,
           u->alpha, u->beta, (unsigned long long)u->seed);
  struct intrus_ins_hyp res[2][B];
  struct intrus_ins_search_stats st[2] = {{0}};
  struct fake f[2];
  for (int p = 0; p < 2; p++) run(u, p, res[p], &st[p], &f[p]);
  int k = u->beam == 1 ? 0 : u->beam == 2 ? 1 : 2;
  total[k] += st[1].slots_total;
  scored[k] += st[1].slots_scored;
  unpruned[k] += st[0].slots_scored;
  finish[k] += st[1].slots_finish;
  EXPECT(st[0].slots_scored == st[0].slots_total && st[0].slots_finish == 0,
         "%s: without pruning %ld of %ld slots scored, %ld skipped", what, st[0].slots_scored,
         st[0].slots_total, st[0].slots_finish);
  EXPECT(st[1].slots_scored + st[1].slots_finish <= st[1].slots_total, "%s: stats", what);
  for (int b = 0; b < B; b++) {
    EXPECT(same_hyp(&res[0][b], &res[1][b]),
           "%s sentence %d: pruning changed the result (length %d, logp %.17g vs length %d, "
           "logp %.17g)", what, b, res[0][b].len, res[0][b].logp, res[1][b].len,
           res[1][b].logp);
    if (!u->canonical && u->min_len == 0 && u->beta == 0.0) {
      struct ref_hyp want;
      ref_beam(&f[1], b, ms[b], u->beam, u->alpha, u->fib, &want);
      EXPECT(res[1][b].len == want.len &&
                 memcmp(res[1][b].tokens, want.y, (size_t)want.len * sizeof *want.y) == 0 &&
                 memcmp(res[1][b].steps, want.steps, (size_t)want.len * sizeof *want.steps) == 0,
             "%s sentence %d: not what a plain beam search finds (length %d vs %d)", what, b,
             res[1][b].len, want.len);
      EXPECT(rel_err(res[1][b].logp, want.logp) <= 1e-9, "%s sentence %d: logp %.12g vs %.12g",
             what, b, res[1][b].logp, want.logp);
      checked_ref++;
    }
    intrus_ins_hyp_free(&res[0][b]);
    intrus_ins_hyp_free(&res[1][b]);
  }
  fake_free(&f[0]);
  fake_free(&f[1]);
}

int main(void) {
  static const double alphas[] = {1.0, 0.0, 0.5, 2.0, -0.5};
  static const int beams[] = {1, 2, 4};
  static const struct {
    int vocab;
    double peak;
  } scorers[] = {{INTRUS_NUM_SPECIAL + 3, 2.0}, {INTRUS_NUM_SPECIAL + 6, 6.0}};
  /* Seeds 35 and 36 hold cases (beam 4, canonical, alpha 0) where skipping single slots
   * below the finish bound at beam > 1 would change a kept string's merged log p: the
   * reason insertion_search_finish.c skips only whole steps there. */
  static const uint64_t seeds[] = {1, 2, 3, 35, 36};
  for (size_t si = 0; si < sizeof seeds / sizeof *seeds; si++)
    for (size_t s = 0; s < sizeof scorers / sizeof *scorers; s++)
      for (int fl = 0; fl < 2; fl++)
        for (size_t bi = 0; bi < sizeof beams / sizeof *beams; bi++)
          for (int fib = 0; fib < 2; fib++)
            for (int canonical = 0; canonical < 2; canonical++)
              for (int min_len = 0; min_len <= 2; min_len += 2)
                for (size_t a = 0; a < sizeof alphas / sizeof *alphas; a++)
                  for (int pen = 0; pen < 2; pen++) {
                    struct setup u = {.vocab = scorers[s].vocab, .peak = scorers[s].peak,
                                      .finish_len = fl, .beam = beams[bi], .min_len = min_len,
                                      .fib = fib, .canonical = canonical, .alpha = alphas[a],
                                      .beta = 1.5 * pen, .seed = seeds[si]};
                    compare(&u);
                  }
  for (int k = 0; k < 3; k++)
    printf("beam %d: %ld of %ld slots scored with pruning (%ld without), %ld skipped for the "
           "finish bound alone\n", beams[k], scored[k], total[k], unpruned[k], finish[k]);
  printf("%d results also checked against a plain beam search\n", checked_ref);
  EXPECT(checked_ref > 0, "no result was checked against brute force");
  /* The finish bound must do something at beam 1 (per slot) and at beam 4 (whole steps),
   * or the comparisons above would not test it. */
  EXPECT(finish[0] > 0, "beam 1: the finish bound skipped no slot");
  EXPECT(finish[2] > 0, "beam 4: the finish bound skipped no slot");
  return test_finish("test_ins_search_prune");
}

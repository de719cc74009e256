/* Which trajectories the order policies choose (DESIGN.md section 4, "Trajectories"),
 * against the fake model of order_fixture.h: uniform and sampled (at temperatures 1
 * and 2, with and without the scorer's slot_logits()) draw their steps with the right
 * frequencies; a tiny temperature and a beam of 1 both take the model's favourite
 * insertion; argmax finds the best trajectory of exhaustive search when its beam is
 * large enough; the greedy driver (intrus_order_greedy and _relative) offers choose()
 * exactly the correct pairs with the model's scores, one model call per step, and
 * stops on scorer errors; a step split into several tokens() rounds chooses what one
 * round does; a caller that reads only the first need[b] insertions gets the same
 * prefixes as one that reads them all. test_order checks validity, fixed orders, determinism and settings. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/config.h"
#include "intrus/insertion.h"
#include "intrus/plugin.h"
#include "intrus/rng.h"
#include "order_fixture.h"
#include "testutil.h"

/* ---- choice frequencies ----------------------------------------------------------- */

/* First-step frequencies over many seeds, and second-step frequencies given the first
 * step, against `prob` (computed by the caller for the two states). */
#define FREQ_RUNS 4000
static const int32_t FREQ_Y[] = {4, 5, 4, 6, 5};
#define FREQ_N 5

struct freq {
  int n1, n2, obs1[64], obs2[64], given;
};

/* Tallies the policy's first step, and its second step after (slot 0, token `after`). */
static void tally(const struct policy *p, void *self, struct freq *fq, int32_t after,
                  const int *ps1, const int32_t *pt1, const int *ps2, const int32_t *pt2) {
  struct targets t;
  t.count = 0;
  targets_add(&t, FREQ_Y, FREQ_N);
  memset(fq->obs1, 0, sizeof fq->obs1);
  memset(fq->obs2, 0, sizeof fq->obs2);
  fq->given = 0;
  for (int run = 0; run < FREQ_RUNS; run++) {
    struct intrus_ins_step steps[FREQ_N];
    struct intrus_error err = {0};
    struct fake f;
    if (policy_run(p, self, &t, 0x5eed0000ULL + (uint64_t)run, &f, steps, &err) != INTRUS_OK) {
      EXPECT(0, "run %d: %s", run, err.msg);
      return;
    }
    for (int j = 0; j < fq->n1; j++)
      if (steps[0].slot == ps1[j] && steps[0].token == pt1[j]) fq->obs1[j]++;
    if (steps[0].slot != 0 || steps[0].token != after) continue;
    fq->given++;
    for (int j = 0; j < fq->n2; j++)
      if (steps[1].slot == ps2[j] && steps[1].token == pt2[j]) fq->obs2[j]++;
  }
}

static void test_frequencies(void) {
  struct policy uni, smp;
  if (!policy_load("uniform", &uni) || !policy_load("sampled", &smp)) return;
  int ps1[64], ps2[64];
  int32_t pt1[64], pt2[64];
  double p1[64], p2[64], u1[64], u2[64];
  const int32_t empty[1] = {0};
  int32_t first[1] = {4};
  struct freq fq;
  fq.n1 = restricted(0, FREQ_Y, FREQ_N, empty, 0, 1.0, ps1, pt1, p1);
  fq.n2 = restricted(0, FREQ_Y, FREQ_N, first, 1, 1.0, ps2, pt2, p2);
  /* {4, 5, 6} at slot 0; then {4, 5} before the 4 and {5, 4, 6} after it: a token that
   * fits two slots is two pairs, each as likely as any other. */
  EXPECT(fq.n1 == 3 && fq.n2 == 5, "correct sets of %d and %d pairs", fq.n1, fq.n2);
  for (int j = 0; j < fq.n1; j++) u1[j] = 1.0 / fq.n1;
  for (int j = 0; j < fq.n2; j++) u2[j] = 1.0 / fq.n2;

  struct intrus_error err = {0};
  void *self = NULL;
  if (policy_create(&uni, NULL, &self, &err) == INTRUS_OK) {
    tally(&uni, self, &fq, 4, ps1, pt1, ps2, pt2);
    double c1 = chi_square(fq.obs1, u1, fq.n1, FREQ_RUNS);
    double c2 = chi_square(fq.obs2, u2, fq.n2, fq.given);
    EXPECT(c1 < chi_bound(fq.n1 - 1), "uniform first step: chi2 %.2f (%d %d %d)", c1,
           fq.obs1[0], fq.obs1[1], fq.obs1[2]);
    EXPECT(fq.given > FREQ_RUNS / 5 && c2 < chi_bound(fq.n2 - 1),
           "uniform second step: chi2 %.2f over %d", c2, fq.given);
    uni.vt->destroy(self);
  } else {
    EXPECT(0, "uniform: %s", err.msg);
  }

  /* At temperature 2 the model's distribution is flattened to sqrt(p); the frequencies
   * must follow that and not p itself. */
  double q1[64], q2[64];
  /* Both with and without the scorer's slot_logits() (which leaves out the position
   * normaliser): the frequencies must not change. */
  for (int tc = 0; tc < 4; tc++) {
    double temp = tc & 1 ? 2.0 : 1.0;
    fake_slots = tc >= 2;
    if (policy_create(&smp, tc & 1 ? "temperature = 2.0;" : NULL, &self, &err) != INTRUS_OK) {
      EXPECT(0, "sampled: %s", err.msg);
      continue;
    }
    /* The second step is tallied after the model's favourite first token, so that
     * most runs reach it. */
    restricted(0, FREQ_Y, FREQ_N, empty, 0, temp, ps1, pt1, p1);
    restricted(0, FREQ_Y, FREQ_N, empty, 0, 1.0, ps1, pt1, q1);
    int fav = 0;
    for (int j = 1; j < fq.n1; j++)
      if (p1[j] > p1[fav]) fav = j;
    first[0] = pt1[fav];
    fq.n2 = restricted(0, FREQ_Y, FREQ_N, first, 1, temp, ps2, pt2, p2);
    restricted(0, FREQ_Y, FREQ_N, first, 1, 1.0, ps2, pt2, q2);
    for (int j = 0; j < fq.n2; j++) u2[j] = 1.0 / fq.n2;
    tally(&smp, self, &fq, first[0], ps1, pt1, ps2, pt2);
    double c1 = chi_square(fq.obs1, p1, fq.n1, FREQ_RUNS);
    double c2 = chi_square(fq.obs2, p2, fq.n2, fq.given);
    EXPECT(c1 < chi_bound(fq.n1 - 1), "sampled T=%g first step: chi2 %.2f", temp, c1);
    EXPECT(fq.given >= FREQ_RUNS / 2 && c2 < chi_bound(fq.n2 - 1),
           "sampled T=%g second step (after %d): chi2 %.2f over %d", temp, (int)first[0], c2,
           fq.given);
    /* The model's preferences are far from uniform at both states (and from their
     * square roots), so the checks above tell the policies and temperatures apart. */
    double d1 = chi_square(fq.obs1, u1, fq.n1, FREQ_RUNS);
    double d2 = chi_square(fq.obs2, u2, fq.n2, fq.given);
    EXPECT(d1 > 10 * chi_bound(fq.n1 - 1) && d2 > 4 * chi_bound(fq.n2 - 1),
           "sampled T=%g looks uniform: chi2 %.2f and %.2f against uniform", temp, d1, d2);
    if (tc & 1) {
      d1 = chi_square(fq.obs1, q1, fq.n1, FREQ_RUNS);
      d2 = chi_square(fq.obs2, q2, fq.n2, fq.given);
      EXPECT(d1 > 4 * chi_bound(fq.n1 - 1) && d2 > 4 * chi_bound(fq.n2 - 1),
             "sampled T=2 follows p, not sqrt(p): chi2 %.2f and %.2f against p", d1, d2);
    }
    smp.vt->destroy(self);
  }
  fake_slots = false;
  intrus_plugin_close(uni.plugin);
  intrus_plugin_close(smp.plugin);
}

/* A tiny temperature takes the model's favourite correct insertion at every step; so
 * does the search with a beam of 1. */
static void test_tiny_temperature(void) {
  struct policy smp, amx;
  if (!policy_load("sampled", &smp) || !policy_load("argmax", &amx)) return;
  struct intrus_rng r;
  intrus_rng_seed(&r, 3);
  struct targets t;
  targets_random(&t, &r, MIXED_LENS, NMIXED, 3);
  struct intrus_error err = {0};
  void *ss = policy_new(&smp, "temperature = 1e-6;"), *sa = policy_new(&amx, "beam = 1;");
  struct intrus_ins_step a[64 * MAXN], g[64 * MAXN];
  struct fake f;
  for (int seed = 0; seed < 4; seed++) {
    EXPECT(policy_run(&smp, ss, &t, (uint64_t)seed, &f, a, &err) == INTRUS_OK, "%s", err.msg);
    for (int b = 0; b < t.count; b++) {
      int n = t.off[b + 1] - t.off[b];
      const int32_t *y = t.tok + t.off[b];
      int32_t part[MAXN + 1] = {0};
      for (int k = 0; k < n; k++) {
        int ps[(MAXN + 1) * MAXN];
        int32_t pt[(MAXN + 1) * MAXN];
        double prob[(MAXN + 1) * MAXN];
        int np = restricted(b, y, n, part, k, 1.0, ps, pt, prob), best = 0;
        for (int j = 1; j < np; j++)
          if (prob[j] > prob[best]) best = j;
        const struct intrus_ins_step *s = a + t.off[b] + k;
        EXPECT(s->slot == ps[best] && s->token == pt[best],
               "seed %d sentence %d step %d: (%d, %d), argmax (%d, %d)", seed, b, k,
               (int)s->slot, (int)s->token, ps[best], (int)pt[best]);
        intrus_ins_apply(part, k, *s);
      }
    }
  }
  EXPECT(policy_run(&amx, sa, &t, 0, &f, g, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(!memcmp(a, g, (size_t)t.off[t.count] * sizeof *a),
         "argmax with beam 1 is not the greedy trajectory");
  smp.vt->destroy(ss);
  amx.vt->destroy(sa);
  intrus_plugin_close(smp.plugin);
  intrus_plugin_close(amx.plugin);
}

/* Exhaustive search over every correct trajectory. */
static void brute_best(int sent, const int32_t *y, int n, int32_t *part, int k, double sum,
                       double *best, long *count) {
  if (k == n) {
    if (sum > *best) *best = sum;
    (*count)++;
    return;
  }
  int ps[(MAXN + 1) * MAXN];
  int32_t pt[(MAXN + 1) * MAXN];
  int np = intrus_ins_correct_brute(y, n, part, k, ps, pt, (MAXN + 1) * MAXN);
  for (int j = 0; j < np; j++) {
    int32_t next[MAXN + 1];
    memcpy(next, part, (size_t)k * sizeof *part);
    float lp = fake_logp(sent, part, k, ps[j], pt[j]);
    intrus_ins_apply(next, k, (struct intrus_ins_step){ps[j], pt[j]});
    brute_best(sent, y, n, next, k + 1, sum + lp, best, count);
  }
}

/* Distinct subsequences of y of length k, at most: the beam that makes search exact. */
static int max_distinct_subsequences(const int32_t *y, int n) {
  int worst = 1;
  for (int k = 1; k < n; k++) {
    int32_t seen[64][MAXN];
    int nseen = 0;
    for (unsigned mask = 0; mask < (1u << n); mask++) {
      if (__builtin_popcount(mask) != k) continue;
      int32_t s[MAXN];
      int m = 0;
      for (int i = 0; i < n; i++)
        if (mask >> i & 1) s[m++] = y[i];
      bool dup = false;
      for (int e = 0; e < nseen && !dup; e++) dup = !memcmp(seen[e], s, (size_t)k * sizeof *s);
      if (!dup && nseen < 64) memcpy(seen[nseen++], s, (size_t)k * sizeof *s);
    }
    if (nseen > worst) worst = nseen;
  }
  return worst;
}

/* Checks argmax against exhaustive search on a batch whose targets all have at most
 * `beam` distinct subsequences of each length (so the search must be exact); returns on
 * how many sentences the best trajectory beats left-to-right. */
static int argmax_exact(const struct policy *amx, void *self, const struct policy *l2r,
                        void *ls, int beam, const struct targets *t) {
  struct intrus_ins_step steps[64 * MAXN], lsteps[64 * MAXN];
  struct intrus_error err = {0};
  struct fake f;
  int improved = 0;
  EXPECT(policy_run(amx, self, t, 9, &f, steps, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(f.positions_calls == max_len(t) && f.tokens_calls == max_len(t) && !f.bad,
         "argmax: %d positions() and %d tokens() calls for %d steps, %d protocol errors",
         f.positions_calls, f.tokens_calls, max_len(t), f.bad);
  EXPECT(policy_run(l2r, ls, t, 9, &f, lsteps, &err) == INTRUS_OK, "%s", err.msg);
  for (int b = 0; b < t->count; b++) {
    int n = t->off[b + 1] - t->off[b];
    const int32_t *y = t->tok + t->off[b];
    EXPECT(max_distinct_subsequences(y, n) <= beam, "beam %d too small for sentence %d", beam,
           b);
    char why[128];
    if (!trajectory_valid(y, n, steps + t->off[b], why, sizeof why)) {
      EXPECT(0, "argmax (beam %d) sentence %d: %s", beam, b, why);
      continue;
    }
    double best = -INFINITY;
    long count = 0;
    int32_t part[MAXN + 1] = {0};
    brute_best(b, y, n, part, 0, 0.0, &best, &count);
    double got = trajectory_logp(b, n, steps + t->off[b]);
    EXPECT(fabs(got - best) <= 1e-9 * (1 + fabs(best)),
           "beam %d sentence %d: argmax %.9f, best of %ld trajectories %.9f", beam, b, got,
           count, best);
    if (trajectory_logp(b, n, lsteps + t->off[b]) < best - 1e-6) improved++;
  }
  return improved;
}

static void test_argmax_exact(void) {
  struct policy amx, l2r;
  if (!policy_load("argmax", &amx) || !policy_load("l2r", &l2r)) return;
  struct intrus_rng r;
  intrus_rng_seed(&r, 19);
  void *ls = policy_new(&l2r, NULL);

  /* Beam 10 = C(5, 2): no target of length 5 has more distinct subsequences. */
  static const int lens[] = {5, 4, 5, 3, 5, 1, 2, 5, 0, 4, 5, 5};
  void *self = policy_new(&amx, "beam = 10;");
  int improved = 0;
  for (int alphabet = 1; alphabet <= 5; alphabet++) {
    struct targets t;
    targets_random(&t, &r, lens, 12, alphabet);
    improved += argmax_exact(&amx, self, &l2r, ls, 10, &t);
  }
  amx.vt->destroy(self);
  /* The left-to-right trajectory is rarely the best: the search had work to do. */
  EXPECT(improved > 20, "argmax beat l2r on only %d sentences", improved);

  /* Beams just large enough: exact only if duplicate outputs do not take the places of
   * distinct ones. */
  for (int beam = 2; beam <= 4; beam++) {
    char settings[32];
    snprintf(settings, sizeof settings, "beam = %d;", beam);
    self = policy_new(&amx, settings);
    struct targets t = {0};
    while (t.count < 24) {
      int32_t y[5];
      int n = 3 + (int)intrus_rng_below(&r, 3);
      for (int i = 0; i < n; i++) y[i] = 4 + (int32_t)intrus_rng_below(&r, 2);
      if (max_distinct_subsequences(y, n) <= beam) targets_add(&t, y, n);
    }
    argmax_exact(&amx, self, &l2r, ls, beam, &t);
    amx.vt->destroy(self);
  }
  l2r.vt->destroy(ls);
  intrus_plugin_close(amx.plugin);
  intrus_plugin_close(l2r.plugin);
}

/* ---- the greedy driver directly ---------------------------------------------------- */

struct chooser {
  const struct targets *t;
  uint64_t seed;
  bool scored;
  bool relative, by_slot;  /* intrus_order_greedy_relative; the fake has slot_logits() */
  int multi[MAXN];         /* sentences with more than one correct pair at step k */
  int32_t part[64][MAXN + 1];
  int k[64];
  struct intrus_ins_step chosen[64][MAXN];
  int bad, calls;
};

static int check_choose(void *user, int b, int npairs, const int *slot, const int32_t *token,
                        const float *logp, struct intrus_rng *rng) {
  struct chooser *c = user;
  c->calls++;
  const int32_t *y = c->t->tok + c->t->off[b];
  int n = c->t->off[b + 1] - c->t->off[b], k = c->k[b];
  if (k >= n) {
    c->bad++;
    fprintf(stderr, "choose(): sentence %d (length %d) asked at step %d\n", b, n, k);
    return 0;
  }
  /* The pairs are the oracle's correct set for this sentence's output so far. */
  int ps[(MAXN + 1) * MAXN];
  int32_t pt[(MAXN + 1) * MAXN];
  int np = intrus_ins_correct_brute(y, n, c->part[b], k, ps, pt, (MAXN + 1) * MAXN);
  bool same = np == npairs;
  for (int j = 0; j < npairs && same; j++) {
    bool found = false;
    for (int e = 0; e < np; e++) found |= ps[e] == slot[j] && pt[e] == token[j];
    same = found;
  }
  if (!same) c->bad++, fprintf(stderr, "choose(): sentence %d step %d: wrong pairs\n", b, k);
  if ((logp != NULL) != c->scored)
    c->bad++, fprintf(stderr, "choose(): logp %s\n", logp ? "given" : "missing");
  if (npairs > 1 && k < MAXN) c->multi[k]++;
  for (int j = 0; logp && same && j < npairs; j++) {
    /* Relative: log p(i, c) plus slot_logits()'s constant of the state; a forced step is
     * not scored and reads 0. */
    float want = fake_logp(b, c->part[b], k, slot[j], token[j]);
    float tol = 0.0f;
    if (c->relative && npairs == 1) {
      want = 0.0f;
    } else if (c->by_slot) {
      want += fake_shift(b, k);
      tol = 1e-5f * (1.0f + fabsf(want));
    }
    if (!(fabsf(logp[j] - want) <= tol)) {
      c->bad++;
      fprintf(stderr, "choose(): sentence %d step %d pair %d: logp %g, want %g\n", b, k, j,
              logp[j], want);
    }
  }
  if (k == 0) {
    struct intrus_rng want;
    intrus_rng_seed(&want, intrus_hash64(c->seed, (uint64_t)b));
    if (memcmp(&want, rng, sizeof want))
      c->bad++, fprintf(stderr, "choose(): sentence %d: not its own stream\n", b);
  }
  int pick = (int)intrus_rng_below(rng, (uint64_t)npairs);
  struct intrus_ins_step s = {slot[pick], token[pick]};
  intrus_ins_apply(c->part[b], k, s);
  c->chosen[b][k] = s;
  c->k[b]++;
  return pick;
}

static void test_driver(void) {
  struct intrus_rng r;
  intrus_rng_seed(&r, 8);
  struct targets t;
  targets_random(&t, &r, MIXED_LENS, NMIXED, 3);
  int total_steps = t.off[t.count], maxn = max_len(&t);
  /* Modes: no scorer; scored; relative through positions(); relative through
   * slot_logits(). */
  for (int mode = 0; mode < 4; mode++) {
    const bool scored = mode > 0, relative = mode >= 2;
    struct chooser *c = calloc(1, sizeof *c);
    c->t = &t;
    c->seed = 99;
    c->scored = scored;
    c->relative = relative;
    c->by_slot = mode == 3;
    struct fake f;
    fake_init(&f, t.off, t.tok, t.count);
    f.relative = relative;
    fake_slots = mode == 3;
    struct intrus_ins_scorer sc = fake_scorer(&f);
    fake_slots = false;
    struct intrus_order_batch batch = batch_of(&t, 99);
    struct intrus_ins_step steps[64 * MAXN];
    struct intrus_error err = {0};
    enum intrus_status st =
        relative ? intrus_order_greedy_relative(&batch, &sc, check_choose, c, steps, &err)
                 : intrus_order_greedy(&batch, scored ? &sc : NULL, check_choose, c, steps, &err);
    EXPECT(st == INTRUS_OK, "greedy: %s", err.msg);
    EXPECT(!c->bad && c->calls == total_steps, "mode %d: %d bad choose() calls, %d of %d",
           mode, c->bad, c->calls, total_steps);
    /* The same seed draws the same trajectories in every mode: choose() is asked at
     * every step, forced or not. */
    static struct intrus_ins_step first[64 * MAXN];
    if (mode == 0) memcpy(first, steps, (size_t)total_steps * sizeof *steps);
    EXPECT(!memcmp(first, steps, (size_t)total_steps * sizeof *steps),
           "mode %d: other trajectories than without a scorer", mode);
    for (int b = 0; b < t.count; b++) {
      int n = t.off[b + 1] - t.off[b];
      EXPECT(c->k[b] == n && !memcmp(steps + t.off[b], c->chosen[b], (size_t)n * sizeof *steps),
             "sentence %d: the steps are not the choices made", b);
      EXPECT(!memcmp(c->part[b], t.tok + t.off[b], (size_t)n * sizeof *t.tok),
             "sentence %d: did not end at Y", b);
    }
    /* Exactly one positions() (or slot_logits()) and one tokens() call per step, over
     * every unfinished sentence (relative: every one with a choice to make; steps
     * without any call nothing), all at the same length. */
    int want = 0;
    for (int s = 0; scored && s < maxn; s++) want += !relative || c->multi[s] > 0;
    EXPECT(f.positions_calls == want && f.tokens_calls == want && !f.bad,
           "mode %d: %d positions(), %d tokens() for %d steps, %d protocol errors", mode,
           f.positions_calls, f.tokens_calls, want, f.bad);
    for (int s = 0, call = 0; scored && s < maxn && call <= MAXN; s++) {
      int active = 0;
      for (int b = 0; b < t.count; b++) active += t.off[b + 1] - t.off[b] > s;
      if (relative && !(active = c->multi[s])) continue;
      EXPECT(f.states_per_call[call] == active && f.state_k[call] == s,
             "mode %d step %d: %d states of length %d, want %d of length %d", mode, s,
             f.states_per_call[call], f.state_k[call], active, s);
      call++;
    }
    EXPECT(!relative || want < maxn || total_steps == 0,
           "mode %d: no step was forced for all sentences (the test checks nothing)", mode);
    fake_free(&f);
    free(c);
  }

  /* A failing scorer stops the driver with its error (and nothing leaks). */
  struct chooser *c = calloc(1, sizeof *c);
  c->t = &t;
  c->seed = 1;
  c->scored = true;
  struct fake f;
  fake_init(&f, t.off, t.tok, t.count);
  f.fail_call = 2;
  struct intrus_ins_scorer sc = fake_scorer(&f);
  struct intrus_order_batch batch = batch_of(&t, 1);
  struct intrus_ins_step steps[64 * MAXN];
  struct intrus_error err = {0};
  enum intrus_status st = intrus_order_greedy(&batch, &sc, check_choose, c, steps, &err);
  EXPECT(st == INTRUS_ERR_INVALID, "status %d", (int)st);
  EXPECT_CONTAINS(err.msg, "fake scorer fails call 2");
  EXPECT(f.positions_calls == 3 && f.tokens_calls == 2, "%d positions(), %d tokens()",
         f.positions_calls, f.tokens_calls);
  fake_free(&f);

  /* No sentences, and only empty sentences: nothing to do, no model runs. */
  int32_t oov[] = {4, VOCAB, 5};
  struct targets e = {0};
  fake_init(&f, e.off, e.tok, 0);
  batch = batch_of(&e, 1);
  EXPECT(intrus_order_greedy(&batch, &sc, check_choose, c, steps, &err) == INTRUS_OK, "%s",
         err.msg);
  targets_add(&e, oov, 0);
  targets_add(&e, oov, 0);
  batch = batch_of(&e, 1);
  EXPECT(intrus_order_greedy(&batch, &sc, check_choose, c, steps, &err) == INTRUS_OK, "%s",
         err.msg);
  EXPECT(f.positions_calls == 0 && f.tokens_calls == 0, "the model ran for empty sentences");
  fake_free(&f);

  /* A target token the model cannot score is an input error, not a crash. */
  struct targets o = {0};
  targets_add(&o, oov, 3);
  fake_init(&f, o.off, o.tok, 1);
  batch = batch_of(&o, 1);
  st = intrus_order_greedy(&batch, &sc, check_choose, c, steps, &err);
  EXPECT(st == INTRUS_ERR_INVALID, "status %d", (int)st);
  EXPECT_CONTAINS(err.msg, "vocabulary");
  fake_free(&f);
  free(c);
}

/* ---- tokens() in rounds ----------------------------------------------------------- */

/* A vocabulary so wide that one tokens() round holds 20 slots: the policies must ask for
 * a step's slots in several rounds (each slot once) and choose exactly what they choose
 * when the whole step fits one call (the extra tokens have probability 0). */
static void test_rounds(void) {
  const int wide = 200000;
  EXPECT(intrus_ins_token_round_rows(wide, 1000) == 20, "%zu rows per round",
         intrus_ins_token_round_rows(wide, 1000));
  struct intrus_rng r;
  intrus_rng_seed(&r, 31);
  int lens[30];
  for (int b = 0; b < 30; b++) lens[b] = 6 + b % 5;
  struct targets t;
  targets_random(&t, &r, lens, 30, 3);
  size_t total = (size_t)t.off[t.count];
  static const char *const names[] = {"sampled", "argmax"};
  for (int i = 0; i < 2; i++) {
    struct policy p;
    if (!policy_load(names[i], &p)) continue;
    void *self = policy_new(&p, NULL);
    struct intrus_ins_step one[64 * MAXN], rounds[64 * MAXN];
    struct intrus_error err = {0};
    struct fake f;
    EXPECT(policy_run(&p, self, &t, 5, &f, one, &err) == INTRUS_OK, "%s: %s", names[i], err.msg);
    int calls_one = f.tokens_calls, bad_one = f.bad;
    fake_width = wide;
    EXPECT(policy_run(&p, self, &t, 5, &f, rounds, &err) == INTRUS_OK, "%s: %s", names[i],
           err.msg);
    fake_width = VOCAB;
    EXPECT(!bad_one && !f.bad, "%s: %d / %d protocol errors", names[i], bad_one, f.bad);
    EXPECT(calls_one == f.positions_calls && f.tokens_calls > f.positions_calls,
           "%s: %d tokens() calls in one piece, %d in rounds, %d positions()", names[i],
           calls_one, f.tokens_calls, f.positions_calls);
    EXPECT(!memcmp(one, rounds, total * sizeof *one), "%s: rounds changed the trajectories",
           names[i]);
    p.vt->destroy(self);
    intrus_plugin_close(p.plugin);
  }
}

/* ---- need: only a prefix of each trajectory --------------------------------------- */

/* The trainer asks for a trajectory only up to its latest trained state: every policy
 * must then write the same first need[b] insertions as without the limit (the greedy
 * driver stops the sentence, argmax may fill more), and a negative need is refused. */
static void test_need(void) {
  static const char *const names[] = {"uniform", "sampled", "argmax"};
  for (int pi = 0; pi < 3; pi++) {
    struct policy p;
    if (!policy_load(names[pi], &p)) continue;
    for (int slots = 0; slots < 2; slots++) {
      fake_slots = slots == 1;
      void *self = policy_new(&p, pi == 2 ? "beam = 2;" : NULL);
      if (!self) continue;
      struct intrus_rng r;
      intrus_rng_seed(&r, 11 + (uint64_t)pi);
      long all_cut = 0, all_full = 0;
      for (int trial = 0; trial < 20; trial++) {
        struct targets t;
        targets_random(&t, &r, MIXED_LENS, NMIXED, 3);
        int need[NMIXED], full_states = 0, cut_states = 0;
        for (int b = 0; b < t.count; b++) {
          int n = t.off[b + 1] - t.off[b];
          /* 0, n, beyond n, and in between */
          need[b] = trial % 4 == 0 ? (b % 3 == 0 ? 0 : n + 2)
                                   : (int)intrus_rng_below(&r, (uint64_t)n + 1);
        }
        struct intrus_ins_step full[64 * MAXN], cut[64 * MAXN];
        for (int i = 0; i < t.off[t.count]; i++) cut[i] = (struct intrus_ins_step){-1, -1};
        struct intrus_error err = {0};
        struct fake f;
        uint64_t seed = 0xabc0ULL + (uint64_t)trial;
        enum intrus_status st = policy_run(&p, self, &t, seed, &f, full, &err);
        for (int c = 0; c < f.positions_calls && c <= MAXN; c++) full_states += f.states_per_call[c];
        struct intrus_order_batch batch = batch_of(&t, seed);
        batch.need = need;
        if (st == INTRUS_OK) {
          fake_init(&f, t.off, t.tok, t.count);
          struct intrus_ins_scorer sc = fake_scorer(&f);
          st = p.vt->trajectories(self, &batch, p.vt->needs_model(self) ? &sc : NULL, cut,
                                  &err);
          for (int c = 0; c < f.positions_calls && c <= MAXN; c++)
            cut_states += f.states_per_call[c];
          fake_free(&f);
        }
        if (st != INTRUS_OK) {
          EXPECT(0, "%s need trial %d: %s", names[pi], trial, err.msg);
          continue;
        }
        int diff = -1;
        for (int b = 0; b < t.count && diff < 0; b++)
          for (int k = 0; k < need[b] && k < t.off[b + 1] - t.off[b]; k++)
            if (cut[t.off[b] + k].slot != full[t.off[b] + k].slot ||
                cut[t.off[b] + k].token != full[t.off[b] + k].token)
              diff = b;
        EXPECT(diff < 0, "%s (slot_logits %d) trial %d: sentence %d's prefix of %d steps "
               "differs from the full trajectory's", names[pi], slots, trial, diff,
               diff < 0 ? 0 : need[diff]);
        /* The greedy driver does the less work: never more states scored. */
        if (pi == 1) {
          EXPECT(cut_states <= full_states, "sampled: %d states scored with need, %d without",
                 cut_states, full_states);
          all_cut += cut_states;
          all_full += full_states;
        }
      }
      if (pi == 1)
        EXPECT(all_cut < all_full, "sampled: need saved nothing (%ld states of %ld)", all_cut,
               all_full);
      struct targets t;
      targets_random(&t, &r, MIXED_LENS, NMIXED, 3);
      int bad[NMIXED] = {0};
      bad[4] = -1;
      struct intrus_order_batch batch = batch_of(&t, 1);
      batch.need = bad;
      struct intrus_ins_step steps[64 * MAXN];
      struct intrus_error err = {0};
      struct fake f;
      fake_init(&f, t.off, t.tok, t.count);
      struct intrus_ins_scorer sc = fake_scorer(&f);
      enum intrus_status st =
          p.vt->trajectories(self, &batch, p.vt->needs_model(self) ? &sc : NULL, steps, &err);
      fake_free(&f);
      if (pi != 2)
        EXPECT(st == INTRUS_ERR_INVALID && strstr(err.msg, "sentence 4 needs -1"),
               "%s: negative need gave %d (%s)", names[pi], (int)st, err.msg);
      p.vt->destroy(self);
    }
    fake_slots = false;
    intrus_plugin_close(p.plugin);
  }
}

int main(void) {
  search = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(search);
  test_frequencies();
  test_tiny_temperature();
  test_argmax_exact();
  test_driver();
  test_rounds();
  test_need();
  intrus_plugin_search_free(search);
  return test_finish("test_order_choice");
}

/* Order policies (DESIGN.md section 4, "Trajectories"), loaded as plugins and run
 * against the fake model of order_fixture.h: every policy's descriptor and creation
 * with no or empty settings; every trajectory of every policy is a valid insertion
 * order ending in the target, with the model run once per step and only when asked
 * for; l2r and r2l insert in their fixed orders, as does intrus_order_fixed itself;
 * the same seed gives the same trajectories whatever the batch; bad settings are
 * refused with the setting named, and the model-based policies need a scorer.
 * test_order_choice checks which trajectories the policies choose. */
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

/* ---- tests ------------------------------------------------------------------------ */

static const char *const POLICIES[] = {"uniform", "l2r", "r2l", "sampled", "argmax"};
#define NPOLICIES 5

static void test_descriptors(void) {
  for (int i = 0; i < NPOLICIES; i++) {
    struct policy p;
    if (!policy_load(POLICIES[i], &p)) continue;
    struct intrus_error err = {0};
    void *self = NULL;
    enum intrus_status st = policy_create(&p, NULL, &self, &err);
    EXPECT(st == INTRUS_OK, "%s: create without settings: %s", POLICIES[i], err.msg);
    bool want = !strcmp(POLICIES[i], "sampled") || !strcmp(POLICIES[i], "argmax");
    if (st == INTRUS_OK) {
      EXPECT(p.vt->needs_model(self) == want, "%s: needs_model %d", POLICIES[i], !want);
      p.vt->destroy(self);
    }
    st = policy_create(&p, "", &self, &err);
    EXPECT(st == INTRUS_OK, "%s: create with an empty group: %s", POLICIES[i], err.msg);
    if (st == INTRUS_OK) p.vt->destroy(self);
    intrus_plugin_close(p.plugin);
  }
}

static void test_valid(void) {
  static const struct {
    const char *name, *settings;
  } cases[] = {{"uniform", NULL},      {"l2r", NULL},          {"r2l", NULL},
               {"sampled", NULL},      {"sampled", "temperature = 0.5;"},
               {"sampled", "temperature = 4;"}, {"argmax", NULL}, {"argmax", "beam = 1;"},
               {"argmax", "beam = 9;"}};
  struct intrus_rng r;
  intrus_rng_seed(&r, 11);
  for (int alphabet = 1; alphabet <= 4; alphabet++) {
    struct targets t;
    targets_random(&t, &r, MIXED_LENS, NMIXED, alphabet);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      struct policy p;
      if (!policy_load(cases[c].name, &p)) continue;
      struct intrus_error err = {0};
      void *self = policy_new(&p, cases[c].settings);
      struct intrus_ins_step steps[64 * MAXN];
      memset(steps, 0xff, sizeof steps);
      struct fake f;
      enum intrus_status st = policy_run(&p, self, &t, 42, &f, steps, &err);
      EXPECT(st == INTRUS_OK, "%s %s: %s", cases[c].name,
             cases[c].settings ? cases[c].settings : "", err.msg);
      for (int b = 0; b < t.count && st == INTRUS_OK; b++) {
        char why[128];
        int n = t.off[b + 1] - t.off[b];
        EXPECT(trajectory_valid(t.tok + t.off[b], n, steps + t.off[b], why, sizeof why),
               "%s %s, alphabet %d, sentence %d (length %d): %s", cases[c].name,
               cases[c].settings ? cases[c].settings : "", alphabet, b, n, why);
      }
      /* The model runs once per step for the whole batch, and only when asked for;
       * "sampled" skips steps where every sentence's choice is forced (test_driver
       * counts those). */
      bool model = p.vt->needs_model(self), some = !strcmp(cases[c].name, "sampled");
      int want = model ? max_len(&t) : 0;
      EXPECT((some ? f.positions_calls <= want && f.positions_calls > 0
                   : f.positions_calls == want) &&
                 f.tokens_calls == f.positions_calls && !f.bad,
             "%s: %d positions() and %d tokens() calls for %d steps, %d protocol errors",
             cases[c].name, f.positions_calls, f.tokens_calls, want, f.bad);
      p.vt->destroy(self);
      intrus_plugin_close(p.plugin);
    }
  }
}

static void test_l2r_r2l(void) {
  struct policy l2r, r2l;
  if (!policy_load("l2r", &l2r) || !policy_load("r2l", &r2l)) return;
  struct intrus_rng r;
  intrus_rng_seed(&r, 5);
  struct targets t;
  targets_random(&t, &r, MIXED_LENS, NMIXED, 3);
  struct intrus_ins_step a[64 * MAXN], b[64 * MAXN];
  struct intrus_error err = {0};
  struct fake f;
  void *sa = policy_new(&l2r, NULL), *sb = policy_new(&r2l, NULL);
  EXPECT(policy_run(&l2r, sa, &t, 1, &f, a, &err) == INTRUS_OK, "l2r: %s", err.msg);
  EXPECT(policy_run(&r2l, sb, &t, 1, &f, b, &err) == INTRUS_OK, "r2l: %s", err.msg);
  for (int s = 0; s < t.count; s++) {
    int n = t.off[s + 1] - t.off[s];
    const int32_t *y = t.tok + t.off[s];
    for (int k = 0; k < n; k++) {
      const struct intrus_ins_step *x = a + t.off[s] + k, *z = b + t.off[s] + k;
      EXPECT(x->slot == k && x->token == y[k], "l2r sentence %d step %d: (%d, %d)", s, k,
             (int)x->slot, (int)x->token);
      EXPECT(z->slot == 0 && z->token == y[n - 1 - k], "r2l sentence %d step %d: (%d, %d)", s,
             k, (int)z->slot, (int)z->token);
    }
  }
  l2r.vt->destroy(sa);
  r2l.vt->destroy(sb);
  intrus_plugin_close(l2r.plugin);
  intrus_plugin_close(r2l.plugin);
}

/* intrus_order_fixed itself, the loop the l2r and r2l plugins share: the exact steps of
 * both directions (empty sentences included), every step a correct insertion whose
 * replay ends in the target, nothing written outside the batch's steps, and a negative
 * length reported with the direction's name. */
static void test_fixed(void) {
  struct intrus_rng r;
  intrus_rng_seed(&r, 11);
  struct targets t;
  targets_random(&t, &r, MIXED_LENS, NMIXED, 3);
  struct intrus_order_batch batch = batch_of(&t, 1);
  int total = t.off[t.count];
  for (int rev = 0; rev < 2; rev++) {
    const char *name = rev ? "r2l" : "l2r";
    struct intrus_ins_step steps[64 * MAXN + 1];
    for (int i = 0; i <= total; i++) steps[i] = (struct intrus_ins_step){-7, -7};
    struct intrus_error err = {0};
    EXPECT(intrus_order_fixed(&batch, rev, steps, &err) == INTRUS_OK, "%s: %s", name, err.msg);
    EXPECT(steps[total].slot == -7 && steps[total].token == -7,
           "%s wrote past the batch's %d steps", name, total);
    for (int s = 0; s < t.count; s++) {
      int n = t.off[s + 1] - t.off[s];
      const int32_t *y = t.tok + t.off[s];
      const struct intrus_ins_step *st = steps + t.off[s];
      for (int k = 0; k < n; k++) {
        int want_slot = rev ? 0 : k;
        int32_t want_tok = rev ? y[n - 1 - k] : y[k];
        EXPECT(st[k].slot == want_slot && st[k].token == want_tok,
               "%s sentence %d step %d: (%d, %d), want (%d, %d)", name, s, k, (int)st[k].slot,
               (int)st[k].token, want_slot, (int)want_tok);
      }
      if (n == 0) continue;
      int32_t states[(MAXN + 1) * MAXN];
      intrus_ins_replay(st, n, states);
      for (int k = 0; k < n; k++) {
        int slot[(MAXN + 1) * MAXN];
        int32_t tok[(MAXN + 1) * MAXN];
        int c = intrus_ins_correct(y, n, states + (size_t)k * n, k, slot, tok,
                                   (MAXN + 1) * MAXN);
        bool found = false;
        for (int j = 0; j < c; j++) found |= slot[j] == st[k].slot && tok[j] == st[k].token;
        EXPECT(found, "%s sentence %d step %d: (%d, %d) is not a correct insertion", name, s,
               k, (int)st[k].slot, (int)st[k].token);
      }
      EXPECT(memcmp(states + (size_t)n * n, y, (size_t)n * sizeof *y) == 0,
             "%s sentence %d: the replay does not end in the target", name, s);
    }

    /* An empty batch writes nothing. */
    struct intrus_order_batch none = {.count = 0, .off = t.off, .tok = t.tok, .seed = 1};
    steps[0] = (struct intrus_ins_step){-7, -7};
    EXPECT(intrus_order_fixed(&none, rev, steps, &err) == INTRUS_OK && steps[0].slot == -7,
           "%s on an empty batch", name);

    /* Sentence 1 ends before it starts. */
    int off[] = {0, 2, 1, 3};
    int32_t bad_tok[] = {4, 5, 6};
    struct intrus_order_batch bad = {.count = 3, .off = off, .tok = bad_tok, .seed = 1};
    struct intrus_error e2 = {0};
    enum intrus_status status = intrus_order_fixed(&bad, rev, steps, &e2);
    char want[64];
    snprintf(want, sizeof want, "order %s: sentence 1 has length -1", name);
    EXPECT(status == INTRUS_ERR_INVALID, "%s with a negative length: status %d", name,
           (int)status);
    EXPECT_CONTAINS(e2.msg, want);
  }
}

/* Same seed, same trajectories; a sentence's trajectory does not depend on the other
 * sentences of its batch (their targets, lengths, or how many there are). */
static void test_determinism(void) {
  static const char *const names[] = {"uniform", "sampled", "argmax"};
  struct intrus_rng r;
  intrus_rng_seed(&r, 77);
  struct targets ta, tb;
  targets_random(&ta, &r, MIXED_LENS, NMIXED, 3);
  /* Batch b: other targets everywhere (longer ones too, and more sentences) except
   * sentences 2, 4 and 9, copied from batch a. */
  static const int other_lens[] = {5, 2, 8, 12, 3, 0, 9, 1, 6, 7, 2, 11, 4, 3, 8};
  struct targets tmp;
  targets_random(&tmp, &r, other_lens, 15, 4);
  tb.count = 0;
  for (int s = 0; s < 15; s++) {
    const struct targets *src = (s == 2 || s == 4 || s == 9) ? &ta : &tmp;
    targets_add(&tb, src->tok + src->off[s], src->off[s + 1] - src->off[s]);
  }
  for (int i = 0; i < 3; i++) {
    struct policy p;
    if (!policy_load(names[i], &p)) continue;
    struct intrus_error err = {0};
    void *self = policy_new(&p, NULL);
    struct intrus_ins_step s1[64 * MAXN], s2[64 * MAXN], s3[64 * MAXN], s4[64 * MAXN];
    struct fake f;
    EXPECT(policy_run(&p, self, &ta, 123, &f, s1, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT(policy_run(&p, self, &ta, 123, &f, s2, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT(policy_run(&p, self, &tb, 123, &f, s3, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT(policy_run(&p, self, &ta, 124, &f, s4, &err) == INTRUS_OK, "%s", err.msg);
    size_t total = (size_t)ta.off[ta.count];
    EXPECT(!memcmp(s1, s2, total * sizeof *s1), "%s: same seed, other trajectories", names[i]);
    for (int s = 0; s < 15; s++) {
      if (s != 2 && s != 4 && s != 9) continue;
      int n = ta.off[s + 1] - ta.off[s];
      EXPECT(!memcmp(s1 + ta.off[s], s3 + tb.off[s], (size_t)n * sizeof *s1),
             "%s: sentence %d changed with its batch-mates", names[i], s);
    }
    /* The seed matters to the random policies, not to the search. */
    bool differs = memcmp(s1, s4, total * sizeof *s1) != 0;
    EXPECT(differs == (i < 2), "%s: another seed %s the trajectories", names[i],
           differs ? "changed" : "did not change");
    p.vt->destroy(self);
    intrus_plugin_close(p.plugin);
  }
}

/* ---- settings ---------------------------------------------------------------------- */

static void expect_bad(const char *name, const char *settings, enum intrus_status want,
                       const char *needle) {
  struct policy p;
  if (!policy_load(name, &p)) return;
  struct intrus_error err = {0};
  void *self = NULL;
  enum intrus_status st = policy_create(&p, settings, &self, &err);
  EXPECT(st == want, "%s { %s }: status %s", name, settings, intrus_status_name(st));
  EXPECT_CONTAINS(err.msg, needle);
  EXPECT_CONTAINS(err.msg, "order-test.cfg:");
  if (st == INTRUS_OK) p.vt->destroy(self);
  intrus_plugin_close(p.plugin);
}

static void test_settings(void) {
  expect_bad("sampled", "temperature = 0.0;", INTRUS_ERR_CONFIG, "order.temperature");
  expect_bad("sampled", "temperature = -1.0;", INTRUS_ERR_CONFIG, "order.temperature");
  expect_bad("sampled", "temperature = \"hot\";", INTRUS_ERR_CONFIG, "temperature");
  expect_bad("sampled", "temprature = 0.5;", INTRUS_ERR_CONFIG, "temprature");
  expect_bad("argmax", "beam = 0;", INTRUS_ERR_CONFIG, "order.beam");
  expect_bad("argmax", "beam = 2.5;", INTRUS_ERR_CONFIG, "beam");
  expect_bad("argmax", "beams = 4;", INTRUS_ERR_CONFIG, "beams");
  expect_bad("uniform", "temperature = 1.0;", INTRUS_ERR_CONFIG, "temperature");
  expect_bad("l2r", "beam = 4;", INTRUS_ERR_CONFIG, "beam");
  expect_bad("r2l", "reverse = true;", INTRUS_ERR_CONFIG, "reverse");

  /* Policies that need the model say so when run without it. */
  static const char *const need[] = {"sampled", "argmax"};
  int32_t y[] = {4, 5};
  struct targets t = {0};
  targets_add(&t, y, 2);
  struct intrus_order_batch batch = batch_of(&t, 1);
  for (int i = 0; i < 2; i++) {
    struct policy p;
    if (!policy_load(need[i], &p)) continue;
    struct intrus_error err = {0};
    void *self = policy_new(&p, i ? "beam = 2;" : "temperature = 2;");
    struct intrus_ins_step steps[2];
    enum intrus_status st = p.vt->trajectories(self, &batch, NULL, steps, &err);
    EXPECT(st == INTRUS_ERR_INVALID, "%s without a scorer: status %d", need[i], (int)st);
    EXPECT_CONTAINS(err.msg, need[i]);
    EXPECT_CONTAINS(err.msg, "scorer");
    p.vt->destroy(self);
    intrus_plugin_close(p.plugin);
  }
}

int main(void) {
  search = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(search);
  test_descriptors();
  test_valid();
  test_l2r_r2l();
  test_fixed();
  test_determinism();
  test_settings();
  intrus_plugin_search_free(search);
  return test_finish("test_order");
}

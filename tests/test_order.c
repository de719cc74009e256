/* Order policies and the greedy driver they share (DESIGN.md section 4, "Trajectories").
 *
 * The policies are loaded as plugins from the build tree and run against a fake model:
 * a normalised distribution over positions and tokens derived from a hash of each
 * state's sentence index and tokens, so the scores are deterministic, differ from state
 * to state and can be recomputed here independently of the code under test. The fake
 * also checks the scorer protocol (positions() then tokens(), queries only at slots
 * that have correct insertions) and counts calls. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/config.h"
#include "intrus/insertion.h"
#include "intrus/plugin.h"
#include "intrus/rng.h"
#include "testutil.h"

/* Token ids 0..3 are special; targets use 4..VOCAB-1. */
#define VOCAB 10
#define MAXN 16

/* ---- the fake model --------------------------------------------------------------- */

static uint64_t state_key(int sent, const int32_t *tok, int k) {
  uint64_t h = intrus_fnv1a(INTRUS_FNV_INIT, &sent, sizeof sent);
  h = intrus_fnv1a(h, &k, sizeof k);
  return intrus_fnv1a(h, tok, (size_t)k * sizeof *tok);
}

/* log softmax of m logits drawn uniformly from [-3, 3] by key. */
static void hashed_log_softmax(uint64_t key, int m, float *out) {
  double x[64], mx = -INFINITY, z = 0;
  for (int i = 0; i < m; i++) {
    x[i] = 6.0 * intrus_hash_uniform(key, (uint64_t)i) - 3.0;
    if (x[i] > mx) mx = x[i];
  }
  for (int i = 0; i < m; i++) z += exp(x[i] - mx);
  for (int i = 0; i < m; i++) out[i] = (float)(x[i] - mx - log(z));
}

static void fake_pos(int sent, const int32_t *tok, int k, float *out) {
  hashed_log_softmax(state_key(sent, tok, k), k + 2, out);
}

static void fake_tok(int sent, const int32_t *tok, int k, int slot, float *out) {
  hashed_log_softmax(intrus_hash64(state_key(sent, tok, k), 1000 + (uint64_t)slot), VOCAB, out);
}

/* The model's log p(slot, token) at a state, as the policies must compute it. */
static float fake_logp(int sent, const int32_t *tok, int k, int slot, int32_t token) {
  float pos[MAXN + 2], tl[VOCAB];
  fake_pos(sent, tok, k, pos);
  fake_tok(sent, tok, k, slot, tl);
  return pos[slot] + tl[token];
}

struct fake {
  const int *off;      /* the targets, to check what the policies ask for */
  const int32_t *y;
  int nsent;
  int positions_calls, tokens_calls, bad;
  int fail_call;       /* positions() call (0-based) that fails; -1: none */
  int states_per_call[MAXN + 1];
  int state_k[MAXN + 1];  /* k of every state of that call, or -1 when they differ */
  bool pending;        /* a positions() call awaits its first tokens() call */
  bool open;           /* tokens() may read the last positions() call's states */
  int vocab;           /* row width of tok_logp: VOCAB, or wider (padded with -inf) so
                          that the callers must split a step into several tokens() rounds */
  unsigned char *asked; /* [nstates][MAXN + 1]: slots read since the last positions() */
  unsigned char *queried; /* after slot_logits(): [nstates][MAXN + 1], the slots asked */
  bool by_slot;        /* the last call was slot_logits() */
  bool relative;       /* the caller is intrus_order_greedy_relative: no forced states */
  /* The states of the last positions() call. */
  int nstates, cap, tcap;
  int *sent, *soff;
  int32_t *tok;
};

static void fake_free(struct fake *f) {
  free(f->sent);
  free(f->soff);
  free(f->tok);
  free(f->asked);
  free(f->queried);
}

/* The position logit slot_logits() reports: log p(pos) plus a constant of the state. */
static float fake_shift(int sent, int k) { return 0.75f * (float)sent - 0.5f * (float)k; }

static bool is_subseq(const int32_t *a, int k, const int32_t *y, int n) {
  int i = 0;
  for (int j = 0; j < n && i < k; j++)
    if (y[j] == a[i]) i++;
  return i == k;
}

/* Records a batch of states (for the checks of the tokens() calls that follow) and
 * checks that each is an unfinished partial output of its sentence; writes each state's
 * log p(pos) to pos_logp (packed as positions() does) unless it is NULL. */
static enum intrus_status fake_states(struct fake *f, const struct intrus_ins_states *st,
                                      float *pos_logp, struct intrus_error *err) {
  int call = f->positions_calls++;
  if (f->pending) f->bad++, fprintf(stderr, "positions() twice without tokens()\n");
  f->pending = true;
  f->open = true;
  if (call == f->fail_call)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "fake scorer fails call %d", call);
  if (call <= MAXN) {
    f->states_per_call[call] = st->count;
    f->state_k[call] = st->count ? st->off[1] - st->off[0] : 0;
  }
  if (st->count > f->cap) {
    f->cap = st->count;
    f->sent = realloc(f->sent, (size_t)f->cap * sizeof *f->sent);
    f->soff = realloc(f->soff, ((size_t)f->cap + 1) * sizeof *f->soff);
  }
  if (st->off[st->count] + 1 > f->tcap) {
    f->tcap = st->off[st->count] + 1;
    f->tok = realloc(f->tok, (size_t)f->tcap * sizeof *f->tok);
  }
  f->nstates = st->count;
  free(f->asked);
  f->asked = calloc((size_t)st->count * (MAXN + 1) + 1, 1);
  memcpy(f->tok, st->tok, (size_t)st->off[st->count] * sizeof *f->tok);
  for (int s = 0; s < st->count; s++) {
    int b = st->sent[s], k = st->off[s + 1] - st->off[s];
    f->sent[s] = b;
    f->soff[s] = st->off[s];
    if (call <= MAXN && k != f->state_k[call]) f->state_k[call] = -1;
    bool ok = b >= 0 && b < f->nsent;
    if (ok) {
      int n = f->off[b + 1] - f->off[b];
      ok = k < n && is_subseq(st->tok + st->off[s], k, f->y + f->off[b], n);
    }
    if (!ok) {
      f->bad++;
      fprintf(stderr, "positions(): state %d (sentence %d, k %d) is not an unfinished "
              "partial output\n", s, b, k);
      continue;
    }
    if (f->relative) {
      /* A state with one correct pair has nothing to choose: it is not scored. */
      int ps[(MAXN + 1) * MAXN];
      int32_t pt[(MAXN + 1) * MAXN];
      int n = f->off[b + 1] - f->off[b];
      if (intrus_ins_correct_brute(f->y + f->off[b], n, st->tok + st->off[s], k, ps, pt,
                                   (MAXN + 1) * MAXN) < 2)
        f->bad++, fprintf(stderr, "state %d (sentence %d, k %d) is forced but scored\n", s,
                          b, k);
    }
    if (pos_logp) fake_pos(b, st->tok + st->off[s], k, pos_logp + st->off[s] + 2 * s);
  }
  f->soff[st->count] = st->off[st->count];
  return INTRUS_OK;
}

static enum intrus_status fake_positions(void *user, const struct intrus_ins_states *st,
                                         float *pos_logp, struct intrus_error *err) {
  struct fake *f = user;
  f->by_slot = false;
  return fake_states(f, st, pos_logp, err);
}

static enum intrus_status fake_slot_logits(void *user, const struct intrus_ins_states *st,
                                           int Q, const int *qstate, const int *qslot,
                                           float *logit, struct intrus_error *err) {
  struct fake *f = user;
  f->by_slot = true;
  enum intrus_status e = fake_states(f, st, NULL, err);
  if (e) return e;
  free(f->queried);
  f->queried = calloc((size_t)st->count * (MAXN + 1) + 1, 1);
  for (int j = 0; j < Q; j++) {
    int s = qstate[j], k = s >= 0 && s < st->count ? st->off[s + 1] - st->off[s] : -1;
    if (k < 0 || qslot[j] < 0 || qslot[j] > k ||
        (j && (qstate[j] < qstate[j - 1] ||
               (qstate[j] == qstate[j - 1] && qslot[j] <= qslot[j - 1])))) {
      f->bad++;
      fprintf(stderr, "slot_logits(): query %d (state %d slot %d) out of range or order\n", j,
              s, qslot[j]);
      continue;
    }
    f->queried[(size_t)s * (MAXN + 1) + qslot[j]] = 1;
    float pos[MAXN + 2];
    fake_pos(st->sent[s], st->tok + st->off[s], k, pos);
    logit[j] = pos[qslot[j]] + fake_shift(st->sent[s], k);
  }
  return INTRUS_OK;
}

static enum intrus_status fake_tokens(void *user, int n, const int *state, const int *slot,
                                      float *tok_logp, struct intrus_error *err) {
  (void)err;
  struct fake *f = user;
  f->tokens_calls++;
  if (!f->open) f->bad++, fprintf(stderr, "tokens() without positions()\n");
  f->pending = false;
  for (int q = 0; q < n; q++) {
    int s = state[q];
    if (s < 0 || s >= f->nstates) {
      f->bad++;
      fprintf(stderr, "tokens(): state %d of %d\n", s, f->nstates);
      continue;
    }
    if (slot[q] >= 0 && slot[q] <= MAXN && f->asked[(size_t)s * (MAXN + 1) + slot[q]]++) {
      f->bad++;
      fprintf(stderr, "tokens(): state %d slot %d asked twice\n", s, slot[q]);
    }
    if (f->by_slot && slot[q] >= 0 && slot[q] <= MAXN &&
        !f->queried[(size_t)s * (MAXN + 1) + slot[q]]) {
      f->bad++;
      fprintf(stderr, "tokens(): state %d slot %d was not given to slot_logits()\n", s,
              slot[q]);
    }
    int b = f->sent[s], k = f->soff[s + 1] - f->soff[s];
    const int32_t *tok = f->tok + f->soff[s];
    /* The expensive V-wide softmax is only wanted where a correct insertion can go. */
    int ps[(MAXN + 1) * MAXN];
    int32_t pt[(MAXN + 1) * MAXN];
    int np = intrus_ins_correct_brute(f->y + f->off[b], f->off[b + 1] - f->off[b], tok, k, ps,
                                      pt, (MAXN + 1) * MAXN);
    bool useful = false;
    for (int j = 0; j < np; j++) useful |= ps[j] == slot[q];
    if (slot[q] < 0 || slot[q] > k || !useful) {
      f->bad++;
      fprintf(stderr, "tokens(): sentence %d k %d slot %d has no correct insertion\n", b, k,
              slot[q]);
      continue;
    }
    float *row = tok_logp + (size_t)q * f->vocab;
    fake_tok(b, tok, k, slot[q], row);
    for (int c = VOCAB; c < f->vocab; c++) row[c] = -INFINITY;
  }
  return INTRUS_OK;
}

/* Row width of the fakes fake_init() makes, and whether fake_scorer() gives them
 * slot_logits(). */
static int fake_width = VOCAB;
static bool fake_slots = false;

static void fake_init(struct fake *f, const int *off, const int32_t *y, int nsent) {
  memset(f, 0, sizeof *f);
  f->off = off;
  f->y = y;
  f->nsent = nsent;
  f->fail_call = -1;
  f->vocab = fake_width;
}

static struct intrus_ins_scorer fake_scorer(struct fake *f) {
  return (struct intrus_ins_scorer){
      .vocab = f->vocab, .positions = fake_positions, .tokens = fake_tokens, .user = f,
      .slot_logits = fake_slots ? fake_slot_logits : NULL};
}

/* ---- targets and checks ----------------------------------------------------------- */

struct targets {
  int count;
  int off[64];
  int32_t tok[64 * MAXN];
};

static void targets_add(struct targets *t, const int32_t *y, int n) {
  if (t->count == 0) t->off[0] = 0;
  if (n) memcpy(t->tok + t->off[t->count], y, (size_t)n * sizeof *y);
  t->off[t->count + 1] = t->off[t->count] + n;
  t->count++;
}

/* Random targets over `alphabet` tokens (4, 5, ...), so that tokens repeat. */
static void targets_random(struct targets *t, struct intrus_rng *r, const int *lens, int count,
                           int alphabet) {
  t->count = 0;
  for (int b = 0; b < count; b++) {
    int32_t y[MAXN];
    for (int i = 0; i < lens[b]; i++) y[i] = 4 + (int32_t)intrus_rng_below(r, (uint64_t)alphabet);
    targets_add(t, y, lens[b]);
  }
}

static struct intrus_order_batch batch_of(const struct targets *t, uint64_t seed) {
  return (struct intrus_order_batch){t->count, t->off, t->tok, seed};
}

static int max_len(const struct targets *t) {
  int m = 0;
  for (int b = 0; b < t->count; b++)
    if (t->off[b + 1] - t->off[b] > m) m = t->off[b + 1] - t->off[b];
  return m;
}

/* A trajectory is valid when every step is one of the oracle's correct pairs for the
 * output so far, keeps the output a subsequence of y, and the steps end at y. */
static bool trajectory_valid(const int32_t *y, int n, const struct intrus_ins_step *steps,
                             char *why, size_t whylen) {
  int32_t part[MAXN + 1] = {0};
  int ps[(MAXN + 1) * MAXN];
  int32_t pt[(MAXN + 1) * MAXN];
  for (int t = 0; t < n; t++) {
    int np = intrus_ins_correct(y, n, part, t, ps, pt, (MAXN + 1) * MAXN);
    bool found = false;
    for (int j = 0; j < np; j++) found |= ps[j] == steps[t].slot && pt[j] == steps[t].token;
    if (!found || steps[t].slot < 0 || steps[t].slot > t) {
      snprintf(why, whylen, "step %d (slot %d, token %d) is not a correct insertion", t,
               (int)steps[t].slot, (int)steps[t].token);
      return false;
    }
    intrus_ins_apply(part, t, steps[t]);
    if (!is_subseq(part, t + 1, y, n)) {
      snprintf(why, whylen, "after step %d the output is not a subsequence of Y", t);
      return false;
    }
  }
  if (n && memcmp(part, y, (size_t)n * sizeof *y)) {
    snprintf(why, whylen, "the final output is not Y");
    return false;
  }
  return true;
}

/* Total log-probability of a trajectory under the fake model, summed as the argmax
 * policy sums it (float log p(i, c) per step, double accumulation). */
static double trajectory_logp(int sent, int n, const struct intrus_ins_step *steps) {
  int32_t part[MAXN + 1] = {0};
  double total = 0;
  for (int t = 0; t < n; t++) {
    total += fake_logp(sent, part, t, steps[t].slot, steps[t].token);
    intrus_ins_apply(part, t, steps[t]);
  }
  return total;
}

/* The restricted distribution p(i, c)^(1/temp) over the correct pairs of a state. */
static int restricted(int sent, const int32_t *y, int n, const int32_t *part, int k, double temp,
                      int *ps, int32_t *pt, double *prob) {
  int np = intrus_ins_correct_brute(y, n, part, k, ps, pt, (MAXN + 1) * MAXN);
  double z = 0, mx = -INFINITY;
  for (int j = 0; j < np; j++) {
    prob[j] = fake_logp(sent, part, k, ps[j], pt[j]) / temp;
    if (prob[j] > mx) mx = prob[j];
  }
  for (int j = 0; j < np; j++) z += prob[j] = exp(prob[j] - mx);
  for (int j = 0; j < np; j++) prob[j] /= z;
  return np;
}

static double chi_square(const int *obs, const double *p, int m, int total) {
  double c = 0;
  for (int j = 0; j < m; j++) {
    double e = total * p[j];
    c += (obs[j] - e) * (obs[j] - e) / e;
  }
  return c;
}

/* A bound far in the tail (p < 1e-5 for the degrees of freedom used here). The seeds are
 * fixed, so the statistic is the same on every run: the test cannot flake. */
static double chi_bound(int df) { return df + 8.0 * sqrt(2.0 * df) + 8.0; }

/* ---- loading and running the plugins ---------------------------------------------- */

static const char *const POLICIES[] = {"uniform", "l2r", "r2l", "sampled", "argmax"};
#define NPOLICIES 5

struct policy {
  struct intrus_plugin *plugin;
  const struct intrus_order_vtable *vt;
};

static struct intrus_plugin_search *search;

static bool policy_load(const char *name, struct policy *p) {
  struct intrus_error err = {0};
  p->vt = NULL;
  enum intrus_status st = intrus_plugin_load(search, INTRUS_KIND_ORDER, name, &p->plugin, &err);
  EXPECT(st == INTRUS_OK, "loading order plugin %s: %s", name, err.msg);
  if (st != INTRUS_OK) return false;
  const struct intrus_plugin_desc *d = intrus_plugin_descriptor(p->plugin);
  EXPECT(d->kind == INTRUS_KIND_ORDER && !strcmp(d->name, name), "%s: descriptor %d %s", name,
         (int)d->kind, d->name);
  EXPECT(d->abi_major == INTRUS_ABI_MAJOR && d->abi_minor == INTRUS_ABI_MINOR, "%s: abi %u.%u",
         name, d->abi_major, d->abi_minor);
  p->vt = d->vtable;
  return true;
}

/* Creates a policy from the settings text of its group ("" = an empty group, NULL = no
 * group at all). */
static enum intrus_status policy_create(const struct policy *p, const char *settings,
                                        void **self, struct intrus_error *err) {
  if (!settings) return p->vt->create(NULL, self, err);
  char text[512];
  snprintf(text, sizeof text, "order: {\n  %s\n};\n", settings);
  struct intrus_config *c = intrus_config_load_string(text, "order-test.cfg", err);
  if (!c) return err->status;
  const intrus_cfg *g;
  enum intrus_status st = intrus_cfg_group_req(intrus_config_root(c), "order", &g, err);
  if (st == INTRUS_OK) st = p->vt->create(g, self, err);
  intrus_config_free(c);
  return st;
}

/* A policy with valid settings; failing to create one ends the test (a failure). */
static void *policy_new(const struct policy *p, const char *settings) {
  void *self = NULL;
  struct intrus_error err = {0};
  if (policy_create(p, settings, &self, &err) != INTRUS_OK) {
    fprintf(stderr, "FAIL: creating order %s with { %s }: %s\n",
            intrus_plugin_descriptor(p->plugin)->name, settings ? settings : "", err.msg);
    exit(1);
  }
  return self;
}

/* Runs a policy as the core does: the scorer only when the policy asks for it. */
static enum intrus_status policy_run(const struct policy *p, void *self, const struct targets *t,
                                     uint64_t seed, struct fake *f, struct intrus_ins_step *steps,
                                     struct intrus_error *err) {
  struct intrus_order_batch batch = batch_of(t, seed);
  fake_init(f, t->off, t->tok, t->count);
  struct intrus_ins_scorer sc = fake_scorer(f);
  enum intrus_status st =
      p->vt->trajectories(self, &batch, p->vt->needs_model(self) ? &sc : NULL, steps, err);
  fake_free(f);
  return st;
}

/* ---- tests ------------------------------------------------------------------------ */

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

/* Lengths 0..8 in one batch, empty sentences first, in the middle and last. */
static const int MIXED_LENS[] = {0, 3, 8, 1, 5, 0, 2, 7, 4, 6, 8, 1, 0};
#define NMIXED ((int)(sizeof MIXED_LENS / sizeof MIXED_LENS[0]))

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
    struct intrus_order_batch none = {0, t.off, t.tok, 1};
    steps[0] = (struct intrus_ins_step){-7, -7};
    EXPECT(intrus_order_fixed(&none, rev, steps, &err) == INTRUS_OK && steps[0].slot == -7,
           "%s on an empty batch", name);

    /* Sentence 1 ends before it starts. */
    int off[] = {0, 2, 1, 3};
    int32_t bad_tok[] = {4, 5, 6};
    struct intrus_order_batch bad = {3, off, bad_tok, 1};
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
  test_frequencies();
  test_tiny_temperature();
  test_argmax_exact();
  test_driver();
  test_rounds();
  test_settings();
  intrus_plugin_search_free(search);
  return test_finish("test_order");
}

/* Fixtures of the order-policy tests (test_order, test_order_choice): a fake model,
 * targets and checks on trajectories, and loading and running the order plugins.
 *
 * The policies are loaded as plugins from the build tree and run against a fake model:
 * a normalised distribution over positions and tokens derived from a hash of each
 * state's sentence index and tokens, so the scores are deterministic, differ from state
 * to state and can be recomputed here independently of the code under test. The fake
 * also checks the scorer protocol (positions() then tokens(), queries only at slots
 * that have correct insertions) and counts calls.
 *
 * Header-only, like testutil.h, so that the EXPECTs in these helpers count in the test
 * that includes it; the test's main() sets `search` before loading any policy. */
#ifndef INTRUS_TESTS_ORDER_FIXTURE_H
#define INTRUS_TESTS_ORDER_FIXTURE_H

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

static inline uint64_t state_key(int sent, const int32_t *tok, int k) {
  uint64_t h = intrus_fnv1a(INTRUS_FNV_INIT, &sent, sizeof sent);
  h = intrus_fnv1a(h, &k, sizeof k);
  return intrus_fnv1a(h, tok, (size_t)k * sizeof *tok);
}

/* log softmax of m logits drawn uniformly from [-3, 3] by key. */
static inline void hashed_log_softmax(uint64_t key, int m, float *out) {
  double x[64], mx = -INFINITY, z = 0;
  for (int i = 0; i < m; i++) {
    x[i] = 6.0 * intrus_hash_uniform(key, (uint64_t)i) - 3.0;
    if (x[i] > mx) mx = x[i];
  }
  for (int i = 0; i < m; i++) z += exp(x[i] - mx);
  for (int i = 0; i < m; i++) out[i] = (float)(x[i] - mx - log(z));
}

static inline void fake_pos(int sent, const int32_t *tok, int k, float *out) {
  hashed_log_softmax(state_key(sent, tok, k), k + 2, out);
}

static inline void fake_tok(int sent, const int32_t *tok, int k, int slot, float *out) {
  hashed_log_softmax(intrus_hash64(state_key(sent, tok, k), 1000 + (uint64_t)slot), VOCAB, out);
}

/* The model's log p(slot, token) at a state, as the policies must compute it. */
static inline float fake_logp(int sent, const int32_t *tok, int k, int slot, int32_t token) {
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

static inline void fake_free(struct fake *f) {
  free(f->sent);
  free(f->soff);
  free(f->tok);
  free(f->asked);
  free(f->queried);
}

/* The position logit slot_logits() reports: log p(pos) plus a constant of the state. */
static inline float fake_shift(int sent, int k) { return 0.75f * (float)sent - 0.5f * (float)k; }

static inline bool is_subseq(const int32_t *a, int k, const int32_t *y, int n) {
  int i = 0;
  for (int j = 0; j < n && i < k; j++)
    if (y[j] == a[i]) i++;
  return i == k;
}

/* Records a batch of states (for the checks of the tokens() calls that follow) and
 * checks that each is an unfinished partial output of its sentence; writes each state's
 * log p(pos) to pos_logp (packed as positions() does) unless it is NULL. */
static inline enum intrus_status fake_states(struct fake *f, const struct intrus_ins_states *st,
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

static inline enum intrus_status fake_positions(void *user, const struct intrus_ins_states *st,
                                                float *pos_logp, struct intrus_error *err) {
  struct fake *f = user;
  f->by_slot = false;
  return fake_states(f, st, pos_logp, err);
}

static inline enum intrus_status fake_slot_logits(void *user, const struct intrus_ins_states *st,
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

static inline enum intrus_status fake_tokens(void *user, int n, const int *state, const int *slot,
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

static inline void fake_init(struct fake *f, const int *off, const int32_t *y, int nsent) {
  memset(f, 0, sizeof *f);
  f->off = off;
  f->y = y;
  f->nsent = nsent;
  f->fail_call = -1;
  f->vocab = fake_width;
}

static inline struct intrus_ins_scorer fake_scorer(struct fake *f) {
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

static inline void targets_add(struct targets *t, const int32_t *y, int n) {
  if (t->count == 0) t->off[0] = 0;
  if (n) memcpy(t->tok + t->off[t->count], y, (size_t)n * sizeof *y);
  t->off[t->count + 1] = t->off[t->count] + n;
  t->count++;
}

/* Random targets over `alphabet` tokens (4, 5, ...), so that tokens repeat. */
static inline void targets_random(struct targets *t, struct intrus_rng *r, const int *lens,
                                  int count, int alphabet) {
  t->count = 0;
  for (int b = 0; b < count; b++) {
    int32_t y[MAXN];
    for (int i = 0; i < lens[b]; i++) y[i] = 4 + (int32_t)intrus_rng_below(r, (uint64_t)alphabet);
    targets_add(t, y, lens[b]);
  }
}

static inline struct intrus_order_batch batch_of(const struct targets *t, uint64_t seed) {
  return (struct intrus_order_batch){.count = t->count, .off = t->off, .tok = t->tok,
                                     .seed = seed};
}

static inline int max_len(const struct targets *t) {
  int m = 0;
  for (int b = 0; b < t->count; b++)
    if (t->off[b + 1] - t->off[b] > m) m = t->off[b + 1] - t->off[b];
  return m;
}

/* A trajectory is valid when every step is one of the oracle's correct pairs for the
 * output so far, keeps the output a subsequence of y, and the steps end at y. */
static inline bool trajectory_valid(const int32_t *y, int n, const struct intrus_ins_step *steps,
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
static inline double trajectory_logp(int sent, int n, const struct intrus_ins_step *steps) {
  int32_t part[MAXN + 1] = {0};
  double total = 0;
  for (int t = 0; t < n; t++) {
    total += fake_logp(sent, part, t, steps[t].slot, steps[t].token);
    intrus_ins_apply(part, t, steps[t]);
  }
  return total;
}

/* The restricted distribution p(i, c)^(1/temp) over the correct pairs of a state. */
static inline int restricted(int sent, const int32_t *y, int n, const int32_t *part, int k,
                             double temp, int *ps, int32_t *pt, double *prob) {
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

static inline double chi_square(const int *obs, const double *p, int m, int total) {
  double c = 0;
  for (int j = 0; j < m; j++) {
    double e = total * p[j];
    c += (obs[j] - e) * (obs[j] - e) / e;
  }
  return c;
}

/* A bound far in the tail (p < 1e-5 for the degrees of freedom used here). The seeds are
 * fixed, so the statistic is the same on every run: the test cannot flake. */
static inline double chi_bound(int df) { return df + 8.0 * sqrt(2.0 * df) + 8.0; }

/* ---- loading and running the plugins ---------------------------------------------- */

struct policy {
  struct intrus_plugin *plugin;
  const struct intrus_order_vtable *vt;
};

static struct intrus_plugin_search *search;

static inline bool policy_load(const char *name, struct policy *p) {
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
static inline enum intrus_status policy_create(const struct policy *p, const char *settings,
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
static inline void *policy_new(const struct policy *p, const char *settings) {
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
static inline enum intrus_status policy_run(const struct policy *p, void *self,
                                            const struct targets *t, uint64_t seed, struct fake *f,
                                            struct intrus_ins_step *steps,
                                            struct intrus_error *err) {
  struct intrus_order_batch batch = batch_of(t, seed);
  fake_init(f, t->off, t->tok, t->count);
  struct intrus_ins_scorer sc = fake_scorer(f);
  enum intrus_status st =
      p->vt->trajectories(self, &batch, p->vt->needs_model(self) ? &sc : NULL, steps, err);
  fake_free(f);
  return st;
}

/* Lengths 0..8 in one batch, empty sentences first, in the middle and last. */
static const int MIXED_LENS[] = {0, 3, 8, 1, 5, 0, 2, 7, 4, 6, 8, 1, 0};
#define NMIXED ((int)(sizeof MIXED_LENS / sizeof MIXED_LENS[0]))

#endif

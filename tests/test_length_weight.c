/* A phase's `weight = "length"` against brute force, on a tiny batch (targets of 4, 1, 0
 * and 2 tokens, repeated tokens among them) and a toy model, for every order policy and
 * both losses:
 *  - brute force: every state k = 0..n of each sentence's trajectory scored on its own
 *    (a one-sentence call training on that state alone); their mean over the batch's
 *    sum of n + 1 states is the all-states loss, and states = "all" must give it;
 *  - the expectation of the length-weighted loss over the uniform choice of states,
 *    computed exactly by running every choice (every state of every sentence jointly
 *    for states = "one"; every pair for "some" with per_sentence = 2; every incomplete
 *    state with finish_state), must equal the all-states loss, and the expectation of
 *    its gradient the all-states gradient; with weight = "state" it must not (the
 *    unweighted mean over one state per sentence overweighs short sentences);
 *  - states = "all" with weight = "length" is the plain all-states mean bit for bit;
 *    weight = "state" is the default's loss and gradient bit for bit;
 *  - the setting is read strictly: an unknown value or a wrong type is an error naming
 *    the file, its line and the setting. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/params.h"
#include "toy_insertion.h"
#include "train/train_phases.h"

#define VOCAB 12
#define SEED 91
enum { B = 4, L = 4, PER = 2 };

static const int lens[B] = {4, 1, 0, 2};
static const int32_t tgt_tok[B * L] = {5, 7, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 6, 6, 0, 0};
static const int src_lens[B] = {2, 3, 1, 4};
static const int32_t src_tok[B * L] = {4, 9, 0, 0, 10, 5, 8, 0, 11, 0, 0, 0, 6, 7, 9, 5};

/* The first phase of the text `phase` inside cfg's train group (its policy stays open in
 * ph). false, with err filled, when train_phases_read refuses it. */
static bool phase_read(const char *cfg, const char *phase, struct intrus_plugin_search *s,
                       struct train_phases *ph, struct intrus_error *err) {
  memset(ph, 0, sizeof *ph);
  const char *a = strstr(cfg, "phases = ("), *b = a ? strstr(a, ");") : NULL;
  EXPECT(b != NULL, "toy-intrus.cfg has no phases list");
  if (!b) return false;
  size_t n = strlen(cfg) + strlen(phase) + 32;
  char *text = malloc(n);
  /* The phase on a line of its own, so that a setting's line is known: the line after
   * the one of "phases = (". */
  snprintf(text, n, "%.*sphases = (\n%s\n);%s", (int)(a - cfg), cfg, phase, b + 2);
  struct intrus_config *c = intrus_config_load_string(text, "toy.cfg", err);
  const intrus_cfg *g = NULL;
  enum intrus_status st = c ? intrus_cfg_group_req(intrus_config_root(c), "train", &g, err)
                            : INTRUS_ERR_CONFIG;
  if (!st) st = train_phases_read(g, s, ph, err);
  intrus_config_free(c);
  free(text);
  return st == INTRUS_OK;
}

static bool phase_of(const char *cfg, const char *phase, struct intrus_plugin_search *s,
                     struct train_phases *ph) {
  struct intrus_error err = {0};
  bool ok = phase_read(cfg, phase, s, ph, &err);
  EXPECT(ok, "%s: %s", phase, err.msg);
  return ok;
}

/* The loss of sentences b0..b1 (as sentences b0.. of the step's batch) under spec, and
 * the gradient of out.loss in grad (numel floats). */
static intrus_ctx *ctx, *scratch;

static bool loss_of(struct intrus_model *m, const struct ins_train_spec *spec, int b0, int b1,
                    float *loss, float *grad) {
  struct intrus_params *p = intrus_model_params(m);
  struct intrus_src_batch sb = {.batch = b1 - b0, .len = L, .tokens = src_tok + b0 * L,
                                .lens = src_lens + b0};
  struct intrus_tgt_batch tb = {.batch = b1 - b0, .len = L, .tokens = tgt_tok + b0 * L,
                                .lens = lens + b0};
  intrus_params_zero_grad(p);
  intrus_ctx_reset(ctx);
  intrus_ctx_set_training(ctx, false);
  struct intrus_loss_out out;
  struct intrus_error err = {0};
  enum intrus_status st = ins_train_loss_at(m, ctx, scratch, &sb, &tb, b0, spec, SEED, &out, &err);
  EXPECT(st == INTRUS_OK, "loss of sentences %d..%d: %s", b0, b1, err.msg);
  if (st) return false;
  intrus_backward(ctx, out.loss);
  *loss = out.loss->data[0];
  memcpy(grad, intrus_params_grads(p), intrus_params_numel(p) * sizeof *grad);
  return true;
}

/* A sentence's possible choices of states: cnt states each, ascending. */
struct choices {
  int count, cnt;
  int k[16][PER];
};

/* 0 one state; 1 per_sentence = PER distinct; 2 one incomplete state and the complete. */
static void choices_of(int how, int n, struct choices *c) {
  c->count = 0;
  if (how == 0) {
    c->cnt = 1;
    for (int k = 0; k <= n; k++) c->k[c->count++][0] = k;
  } else if (how == 1) {
    c->cnt = n + 1 < PER ? n + 1 : PER;
    if (c->cnt == 1) c->k[c->count++][0] = 0;
    for (int i = 0; c->cnt == 2 && i <= n; i++)
      for (int j = i + 1; j <= n; j++) {
        c->k[c->count][0] = i;
        c->k[c->count++][1] = j;
      }
  } else {
    c->cnt = n ? 2 : 1;
    if (!n) c->k[c->count++][0] = 0;
    for (int k = 0; k < n; k++) {
      c->k[c->count][0] = k;
      c->k[c->count++][1] = n;
    }
  }
}

/* Exact expectation over every joint choice (uniform, independent per sentence) of the
 * loss and its gradient under spec (states given); the number of choices. */
static long expectation(struct intrus_model *m, struct ins_train_spec spec, int how,
                        double *loss, double *grad, float *g, size_t numel) {
  struct choices c[B];
  long total = 1;
  for (int b = 0; b < B; b++) {
    choices_of(how, lens[b], &c[b]);
    total *= c[b].count;
  }
  int given[B * PER], at[B] = {0};
  spec.given = given;
  *loss = 0.0;
  memset(grad, 0, numel * sizeof *grad);
  const int stride = spec.per_sentence + (spec.finish_state ? 1 : 0);
  for (long i = 0; i < total; i++) {
    for (int b = 0, r = (int)i; b < B; b++) {
      at[b] = r % c[b].count;
      r /= c[b].count;
      for (int j = 0; j < c[b].cnt; j++) given[b * stride + j] = c[b].k[at[b]][j];
    }
    float l;
    if (!loss_of(m, &spec, 0, B, &l, g)) return 0;
    *loss += (double)l / (double)total;
    for (size_t q = 0; q < numel; q++) grad[q] += (double)g[q] / (double)total;
  }
  return total;
}

static double worst_diff(const double *a, const float *b, size_t n, double *scale) {
  double w = 0.0;
  *scale = 0.0;
  for (size_t i = 0; i < n; i++) {
    w = fmax(w, fabs(a[i] - (double)b[i]));
    *scale = fmax(*scale, fabs((double)b[i]));
  }
  return w;
}

static void check_policy(struct intrus_model *m, const char *cfg, const char *order,
                         const char *loss, struct intrus_plugin_search *s) {
  const size_t numel = intrus_params_numel(intrus_model_params(m));
  float *g = malloc(numel * sizeof *g), *g_all = malloc(numel * sizeof *g_all);
  double *acc = malloc(numel * sizeof *acc);
  char text[512], name[64];
  snprintf(name, sizeof name, "%s/%s", order, loss);
  /* The phases: [0] all states, [1] one state weighted, [2] one state unweighted,
   * [3] per_sentence = PER weighted, [4] one state + finish_state weighted, [5] all
   * states weighted. */
  static const char *const forms[6] = {
      "", "states = \"one\"; weight = \"length\";", "states = \"one\"; weight = \"state\";",
      "states = \"some\"; per_sentence = 2; weight = \"length\";",
      "states = \"one\"; finish_state = true; weight = \"length\";",
      "states = \"all\"; weight = \"length\";"};
  struct train_phases ph[6];
  bool ok = true;
  for (int f = 0; f < 6; f++) {
    snprintf(text, sizeof text,
             "{ order = { plugin = \"%s\"; }; loss = \"%s\"; steps = 1; %s }", order, loss,
             forms[f]);
    memset(&ph[f], 0, sizeof ph[f]);
    ok = phase_of(cfg, text, s, &ph[f]) && ok;
  }
  if (!ok) goto done;

  /* Brute force: each state of each sentence's trajectory on its own. */
  struct ins_train_spec one = ph[2].phase[0].spec;
  double brute = 0.0;
  memset(acc, 0, numel * sizeof *acc);
  long T = 0;
  for (int b = 0; b < B; b++) T += lens[b] + 1;
  for (int b = 0; b < B && ok; b++)
    for (int k = 0; k <= lens[b] && ok; k++) {
      int given = k;
      float l;
      one.given = &given;
      ok = loss_of(m, &one, b, b + 1, &l, g);
      brute += (double)l / (double)T;
      for (size_t q = 0; q < numel; q++) acc[q] += (double)g[q] / (double)T;
    }
  float all;
  ok = ok && loss_of(m, &ph[0].phase[0].spec, 0, B, &all, g_all);
  if (!ok) goto done;
  double scale, d = worst_diff(acc, g_all, numel, &scale);
  EXPECT(fabs(brute - all) <= 1e-5 * fabs(all), "%s: all states %.7f, brute force %.7f", name,
         all, brute);
  EXPECT(d <= 1e-5 * scale, "%s: all-states gradient off brute force by %.3g (of %.3g)", name,
         d, scale);

  /* Expectations over every choice of states. */
  static const struct { int form, how; const char *what; } cases[4] = {
      {1, 0, "one state, length"}, {3, 1, "some (2), length"},
      {4, 2, "finish_state, length"}, {2, 0, "one state, state"}};
  for (int c = 0; c < 4; c++) {
    double e;
    long n = expectation(m, ph[cases[c].form].phase[0].spec, cases[c].how, &e, acc, g, numel);
    if (!n) break;
    d = worst_diff(acc, g_all, numel, &scale);
    printf("%-16s %-22s E over %3ld choices %.7f, all states %.7f (rel %.1e); gradient "
           "off by %.1e of %.1e\n", name, cases[c].what, n, e, all, fabs(e - all) / all, d,
           scale);
    if (c < 3) {
      EXPECT(fabs(e - all) <= 2e-6 * fabs(all), "%s, %s: expectation %.7f, all states %.7f",
             name, cases[c].what, e, all);
      EXPECT(d <= 1e-5 * scale, "%s, %s: expected gradient off by %.3g (of %.3g)", name,
             cases[c].what, d, scale);
    } else {
      /* Unweighted, one state per sentence is not the per-state loss: the difference
       * is what the weighting is for (and shows this test can fail). */
      EXPECT(fabs(e - all) > 1e-3 * fabs(all), "%s: the unweighted expectation %.7f is the "
             "all-states loss %.7f", name, e, all);
    }
  }

  /* All states, weighted: every weight 1 over the states' count, the plain mean. */
  float lw;
  if (loss_of(m, &ph[5].phase[0].spec, 0, B, &lw, g)) {
    EXPECT(memcmp(&lw, &all, sizeof lw) == 0 && memcmp(g, g_all, numel * sizeof *g) == 0,
           "%s: all states weighted by length (%.9g) is not the plain mean (%.9g) bit for bit",
           name, lw, all);
  }
done:
  for (int f = 0; f < 6; f++) train_phases_free(&ph[f]);
  free(g);
  free(g_all);
  free(acc);
}

/* weight = "state" is the default, bit for bit, on random draws (no given states). */
static void check_default(struct intrus_model *m, const char *cfg,
                          struct intrus_plugin_search *s) {
  const size_t numel = intrus_params_numel(intrus_model_params(m));
  float *g0 = malloc(numel * sizeof *g0), *g1 = malloc(numel * sizeof *g1);
  static const char *const texts[2][2] = {
      {"{ order = { plugin = \"sampled\"; }; states = \"some\"; per_sentence = 2; steps = 1; }",
       "{ order = { plugin = \"sampled\"; }; states = \"some\"; per_sentence = 2; steps = 1; "
       "weight = \"state\"; }"},
      {"{ order = { plugin = \"uniform\"; }; loss = \"uniform\"; states = \"one\"; steps = 1; }",
       "{ order = { plugin = \"uniform\"; }; loss = \"uniform\"; states = \"one\"; steps = 1; "
       "weight = \"state\"; }"}};
  for (int t = 0; t < 2; t++) {
    struct train_phases a = {0}, b = {0};
    float la, lb;
    if (phase_of(cfg, texts[t][0], s, &a) && phase_of(cfg, texts[t][1], s, &b) &&
        loss_of(m, &a.phase[0].spec, 0, B, &la, g0) &&
        loss_of(m, &b.phase[0].spec, 0, B, &lb, g1))
      EXPECT(memcmp(&la, &lb, sizeof la) == 0 && memcmp(g0, g1, numel * sizeof *g0) == 0,
             "weight = \"state\" (%.9g) is not the default (%.9g) bit for bit", lb, la);
    train_phases_free(&a);
    train_phases_free(&b);
  }
  free(g0);
  free(g1);
}

/* Bad settings: an error naming toy.cfg, the phase's line and the setting. */
static void check_settings(const char *cfg, struct intrus_plugin_search *s) {
  static const char *const bad[3][2] = {
      {"{ order = { plugin = \"uniform\"; }; states = \"one\"; steps = 1; weight = \"tokens\"; }",
       "unknown value 'tokens'"},
      {"{ order = { plugin = \"uniform\"; }; states = \"one\"; steps = 1; weight = 2; }",
       "weight"},
      {"{ order = { plugin = \"uniform\"; }; states = \"one\"; steps = 1; weigth = \"length\"; }",
       "weigth"}};
  /* The phase's line: that of "phases = (" plus one. */
  const char *a = strstr(cfg, "phases = (");
  int line = 2;
  for (const char *p = cfg; a && p < a; p++) line += *p == '\n';
  char where[32];
  snprintf(where, sizeof where, "toy.cfg:%d", line);
  for (int i = 0; i < 3; i++) {
    struct train_phases ph;
    struct intrus_error err = {0};
    bool ok = phase_read(cfg, bad[i][0], s, &ph, &err);
    EXPECT(!ok, "accepted %s", bad[i][0]);
    if (!ok) {
      EXPECT_CONTAINS(err.msg, where);
      EXPECT_CONTAINS(err.msg, bad[i][1]);
      printf("refused: %s\n", err.msg);
    }
    train_phases_free(&ph);
  }
}

int main(void) {
  char *cfg = test_read_srcfile("experiments/toy-intrus.cfg");
  if (!cfg) return 1;
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(s);
  ctx = intrus_ctx_create(0);
  scratch = intrus_ctx_create(0);
  char *pair = toy_canonical_pair(cfg);
  struct intrus_model *m = pair ? toy_load_model(pair, VOCAB) : NULL;
  static const char *const orders[] = {"uniform", "l2r", "r2l", "sampled", "argmax"};
  static const char *const losses[] = {"main", "uniform"};
  for (size_t o = 0; m && o < sizeof orders / sizeof *orders; o++)
    for (int l = 0; l < 2; l++) check_policy(m, cfg, orders[o], losses[l], s);
  if (m) check_default(m, cfg, s);
  check_settings(cfg, s);
  intrus_model_destroy(m);
  intrus_ctx_destroy(ctx);
  intrus_ctx_destroy(scratch);
  intrus_plugin_search_free(s);
  free(pair);
  free(cfg);
  return test_finish("test_length_weight");
}

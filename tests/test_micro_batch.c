/* train.micro_batch_tokens: a step's batch in pieces, each piece's loss weighted by its
 * share of the batch's states (INTRUS; under weight = "length" its trajectories' states)
 * or tokens (baseline) and backpropagated before the next. Checked two ways:
 *  - directly: the parameter gradients of the pieces, summed, against those of the
 *    whole batch (INTRUS with the uniform, l2r and sampled policies on every state and
 *    on `some` states, and length-weighted on one and on `some`; the autoregressive
 *    decoder), to float summation order;
 *  - end to end: training with micro-batches logs the unsplit run's losses (the first
 *    step to float rounding, later ones within a small tolerance: Adam's first steps
 *    amplify rounding in parameters whose gradient is near zero). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/model.h"
#include "intrus/params.h"
#include "intrus/plugin.h"
#include "model/insertion_model.h"
#include "testutil.h"
#include "train/train_phases.h"

#define VOCAB 12
enum { B = 6, L = 6 };

static const int32_t tgt_tok[B * L] = {9, 5, 0, 0, 0, 0, 4, 7, 11, 6, 8, 5, 6, 6, 4, 0, 0, 0,
                                       10, 9, 8, 7, 6, 0, 5, 0, 0, 0, 0, 0, 11, 4, 11, 4, 9, 7};
static const int lens[B] = {2, 6, 3, 5, 1, 6};

static struct intrus_model *model_of(const char *text) {
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_string(text, "toy.cfg", &err);
  struct intrus_model *m = NULL;
  enum intrus_status st = cfg ? test_model_create(cfg, VOCAB, VOCAB, 7, NULL, &m, &err) : err.status;
  EXPECT(st == INTRUS_OK, "model: %s", err.msg);
  intrus_config_free(cfg);
  return m;
}

/* The training phase `phase` of cfg as a spec (its policy plugin stays open in ph). */
static bool phase_of(const char *cfg, const char *phase, struct intrus_plugin_search *s,
                     struct train_phases *ph) {
  const char *a = strstr(cfg, "phases = ("), *b = a ? strstr(a, ");") : NULL;
  if (!b) return false;
  size_t n = strlen(cfg) + strlen(phase) + 32;
  char *text = malloc(n);
  snprintf(text, n, "%.*sphases = (%s);%s", (int)(a - cfg), cfg, phase, b + 2);
  struct intrus_error err = {0};
  struct intrus_config *c = intrus_config_load_string(text, "toy.cfg", &err);
  const intrus_cfg *g = NULL;
  enum intrus_status st = c ? intrus_cfg_group_req(intrus_config_root(c), "train", &g, &err)
                            : INTRUS_ERR_CONFIG;
  if (!st) st = train_phases_read(g, s, ph, &err);
  EXPECT(st == INTRUS_OK, "%s: %s", phase, err.msg);
  intrus_config_free(c);
  free(text);
  return st == INTRUS_OK;
}

/* Sentences b0..b1 of the fixed batch. */
static void slice(int b0, int b1, struct intrus_src_batch *sb, struct intrus_tgt_batch *tb) {
  *sb = (struct intrus_src_batch){.batch = b1 - b0, .len = L, .tokens = tgt_tok + b0 * L,
                                  .lens = lens + b0};
  *tb = (struct intrus_tgt_batch){.batch = b1 - b0, .len = L, .tokens = tgt_tok + b0 * L,
                                  .lens = lens + b0};
}

/* The gradient of the batch's loss, whole (cuts NULL) or in the pieces cuts[0] = 0 <
 * cuts[1] < ... = B, each weighted by its share of the batch's states or tokens. */
static void gradient(struct intrus_model *m, const struct ins_train_spec *spec,
                     const int *cuts, float *grad) {
  struct intrus_params *p = intrus_model_params(m);
  intrus_ctx *ctx = intrus_ctx_create(0), *scratch = intrus_ctx_create(0);
  static const int whole[2] = {0, B};
  if (!cuts) cuts = whole;
  long total = 0;
  if (spec) total = ins_train_units(spec, lens, B);
  else
    for (int b = 0; b < B; b++) total += lens[b] + 1;
  intrus_params_zero_grad(p);
  for (int i = 0; cuts[i] < B; i++) {
    int b0 = cuts[i], b1 = cuts[i + 1];
    struct intrus_src_batch sb;
    struct intrus_tgt_batch tb;
    slice(b0, b1, &sb, &tb);
    intrus_ctx_reset(ctx);
    intrus_ctx_set_training(ctx, false); /* no dropout: the pieces' masks would differ */
    struct intrus_loss_out out;
    struct intrus_error err = {0};
    struct intrus_train_opts opts = {.direction = 1};
    enum intrus_status st =
        spec ? ins_train_loss_at(m, ctx, scratch, &sb, &tb, b0, spec, 77, &out, &err)
             : intrus_model_loss(m, ctx, &sb, &tb, &opts, &out, &err);
    EXPECT(st == INTRUS_OK, "loss of sentences %d..%d: %s", b0, b1, err.msg);
    if (st) break;
    long units = 0;
    if (spec) units = ins_train_units(spec, lens + b0, b1 - b0);
    else
      for (int b = b0; b < b1; b++) units += lens[b] + 1;
    intrus_backward(ctx, intrus_scale(ctx, out.loss, (float)((double)units / total)));
  }
  memcpy(grad, intrus_params_grads(p), intrus_params_numel(p) * sizeof *grad);
  intrus_ctx_destroy(ctx);
  intrus_ctx_destroy(scratch);
}

static void compare_pieces(const char *name, struct intrus_model *m,
                           const struct ins_train_spec *spec) {
  size_t n = intrus_params_numel(intrus_model_params(m));
  float *whole = malloc(n * sizeof *whole), *parts = malloc(n * sizeof *parts);
  gradient(m, spec, NULL, whole);
  static const int cuts[][5] = {{0, 1, B, 0, 0}, {0, 2, 3, 5, B}};
  for (int c = 0; c < 2; c++) {
    gradient(m, spec, cuts[c], parts);
    double worst = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(whole[i]));
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(whole[i] - parts[i]));
    printf("%-22s %s pieces: largest gradient difference %.2e (largest gradient %.2e)\n", name,
           c ? "4" : "2", worst, scale);
    EXPECT(scale > 0 && worst <= 1e-5 * scale, "%s: pieces' gradient differs by %g (of %g)",
           name, worst, scale);
  }
  free(whole);
  free(parts);
}

static void test_gradients(const char *ins_cfg, const char *ar_cfg) {
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(s);
  struct intrus_model *m = model_of(ins_cfg);
  static const char *const phases[][2] = {
      {"uniform, all states", "{ order = { plugin = \"uniform\"; }; loss = \"uniform\"; steps = 1; }"},
      {"uniform, some states", "{ order = { plugin = \"uniform\"; }; states = \"some\"; "
                               "per_sentence = 2; steps = 1; }"},
      {"l2r, one state", "{ order = { plugin = \"l2r\"; }; states = \"one\"; steps = 1; }"},
      {"sampled, all states", "{ order = { plugin = \"sampled\"; }; steps = 1; }"},
      {"uniform, one, length", "{ order = { plugin = \"uniform\"; }; loss = \"uniform\"; "
                               "states = \"one\"; weight = \"length\"; steps = 1; }"},
      {"sampled, some, length", "{ order = { plugin = \"sampled\"; }; states = \"some\"; "
                                "per_sentence = 2; weight = \"length\"; steps = 1; }"}};
  for (size_t i = 0; m && i < sizeof phases / sizeof *phases; i++) {
    struct train_phases ph = {0};
    if (phase_of(ins_cfg, phases[i][1], s, &ph)) {
      ph.phase[0].spec.label_smoothing = i == 0 ? 0.1f : 0.0f;
      compare_pieces(phases[i][0], m, &ph.phase[0].spec);
    }
    train_phases_free(&ph);
  }
  intrus_model_destroy(m);
  m = model_of(ar_cfg);
  if (m) compare_pieces("autoregressive", m, NULL);
  intrus_model_destroy(m);
  intrus_plugin_search_free(s);
}

/* The trainer end to end, with and without micro_batch_tokens. */
static void test_trainer(const char *cfg, const char *name, const char *train_line) {
  enum { STEPS = 30 };
  char *micro = test_replace(cfg, train_line, "micro_batch_tokens = 20;\n  batch = 32;");
  EXPECT(micro != NULL, "%s: no '%s' line to extend", name, train_line);
  if (!micro) return;
  struct test_losses whole = {0}, parts = {0};
  struct intrus_train_result res;
  struct intrus_error err = {0};
  char run[64];
  snprintf(run, sizeof run, "%s-whole", name);
  enum intrus_status st = test_train_text(cfg, run, STEPS, &whole, &res, &err);
  EXPECT(st == INTRUS_OK, "%s: %s", name, err.msg);
  snprintf(run, sizeof run, "%s-micro", name);
  st = test_train_text(micro, run, STEPS, &parts, &res, &err);
  EXPECT(st == INTRUS_OK, "%s with micro-batches: %s", name, err.msg);
  double first = fabs(whole.loss[1] - parts.loss[1]) / whole.loss[1], later = 0.0;
  for (int k = 2; k <= STEPS; k++)
    later = fmax(later, fabs(whole.loss[k] - parts.loss[k]) / whole.loss[k]);
  printf("%-22s trainer: step 1 loss %.6f vs %.6f (rel %.1e); steps 2..%d largest rel "
         "difference %.1e\n", name, whole.loss[1], parts.loss[1], first, STEPS, later);
  EXPECT(first <= 1e-5, "%s: step 1 loss %.7f whole, %.7f in micro-batches", name,
         whole.loss[1], parts.loss[1]);
  EXPECT(later <= 2e-3, "%s: losses drift apart by %.2e (relative) within %d steps", name,
         later, STEPS);
  free(micro);
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-micro-XXXXXX")) return 1;
  char *ins = test_read_srcfile("experiments/toy-intrus.cfg");
  char *ar = test_read_srcfile("experiments/toy-copy.cfg");
  if (!ins || !ar) return 1;
  test_gradients(ins, ar);
  test_trainer(ins, "intrus", "batch = 32;");
  test_trainer(ar, "autoregressive", "batch = 32;");
  free(ins);
  free(ar);
  test_remove_tmpdir();
  return test_finish("test_micro_batch");
}

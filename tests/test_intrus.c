/* INTRUS end to end: an insertion model learns the copy task through each order policy
 * (trained by phases from an experiment file) and then writes it with insertion beam
 * search; a phased run stopped and resumed logs the same losses as an uninterrupted
 * one; on a tiny real model, beam search with a beam as large as the space finds what
 * exhaustive search finds; experiment errors name the setting. states = "some" trains on
 * per_sentence distinct states of each sentence (checked against the states' own
 * losses), equals "all" and "one" at its extremes, and refuses bad settings. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/insertion_model.h"
#include "intrus/checkpoint.h"
#include "intrus/rng.h"
#include "intrus/train.h"
#include "testutil.h"
#include "train/train_phases.h"

#define VOCAB 12

/* The model of cfg_text with the parameters of run's checkpoint (NULL run: as
 * initialised). */
static struct intrus_model *load_model(const char *cfg_text, const char *run) {
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_string(cfg_text, "toy.cfg", &err);
  struct intrus_model *m = NULL;
  char ckpt[600];
  if (run) snprintf(ckpt, sizeof ckpt, "%s/%s/checkpoint.ckpt", test_tmpdir, run);
  enum intrus_status st =
      cfg ? test_model_create(cfg, VOCAB, VOCAB, 7, run ? ckpt : NULL, &m, &err) : err.status;
  EXPECT(st == INTRUS_OK, "loading the model: %s", err.msg);
  intrus_config_free(cfg);
  return m;
}

/* Share of n random strings the model copies exactly with insertion beam search. */
static double copy_accuracy(struct intrus_model *m, int n, int beam) {
  enum { L = 6 };
  struct intrus_rng r;
  intrus_rng_seed(&r, 99);
  int32_t *src = calloc((size_t)n * L, sizeof *src);
  int *lens = calloc((size_t)n, sizeof *lens), *max_steps = calloc((size_t)n, sizeof *max_steps);
  for (int b = 0; b < n; b++) {
    lens[b] = 2 + (int)intrus_rng_below(&r, L - 1);
    for (int j = 0; j < lens[b]; j++)
      src[b * L + j] = INTRUS_NUM_SPECIAL + (int32_t)intrus_rng_below(&r, VOCAB - INTRUS_NUM_SPECIAL);
    max_steps[b] = 2 * lens[b] + 3;
  }
  struct intrus_src_batch sb = {.batch = n, .len = L, .tokens = src, .lens = lens};
  intrus_ctx *ctx = intrus_ctx_create(0);
  struct ins_model_scorer sc;
  struct intrus_ins_hyp *h = calloc((size_t)n, sizeof *h);
  struct intrus_error err = {0};
  struct intrus_ins_search_opts o = intrus_ins_search_defaults();
  o.beam = beam;
  enum intrus_status st = ins_scorer_open(&sc, m, ctx, &sb, &err);
  if (!st) st = intrus_ins_beam_search(&sc.sc, n, max_steps, &o, h, NULL, &err);
  ins_scorer_close(&sc);
  EXPECT(st == INTRUS_OK, "search: %s", err.msg);
  int right = 0;
  for (int b = 0; b < n && !st; b++) {
    right += h[b].len == lens[b] && memcmp(h[b].tokens, src + b * L, (size_t)lens[b] * 4) == 0;
    /* the trajectory replays to the output */
    int32_t out[64] = {0};
    for (int t = 0; t < h[b].len && t < 64; t++) intrus_ins_apply(out, t, h[b].steps[t]);
    EXPECT(h[b].len < 64 && memcmp(out, h[b].tokens, (size_t)h[b].len * 4) == 0,
           "sentence %d: trajectory does not replay to the output", b);
  }
  for (int b = 0; b < n; b++) intrus_ins_hyp_free(&h[b]);
  free(h);
  intrus_ctx_destroy(ctx);
  free(src);
  free(lens);
  free(max_steps);
  return (double)right / n;
}

/* The experiment with its phases replaced. */
static char *with_phases(const char *cfg, const char *phases) {
  const char *a = strstr(cfg, "phases = (");
  const char *b = a ? strstr(a, ");") : NULL;
  if (!b) return NULL;
  size_t n = strlen(cfg) + strlen(phases) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(a - cfg), cfg, phases, b + 2);
  return out;
}

/* Each policy teaches the copy task. A model trained only on left-to-right (or
 * right-to-left) states never sees the other states insertion search visits, so those
 * two policies pretrain and a sampled phase follows (the paper's "left-to-right
 * pretraining" strategy); their own phase must still fit its states. */
static void test_policies(const char *cfg) {
  static const char *const phases[][2] = {
      {"uniform", "{ order = { plugin = \"uniform\"; }; steps = 500; }"},
      {"sampled", "{ order = { plugin = \"sampled\"; }; steps = 500; }"},
      {"argmax", "{ order = { plugin = \"argmax\"; beam = 4; }; steps = 500; }"},
      {"l2r", "{ order = { plugin = \"l2r\"; }; steps = 250; }, "
              "{ order = { plugin = \"sampled\"; }; steps = 250; }"},
      {"r2l", "{ order = { plugin = \"r2l\"; }; steps = 250; }, "
              "{ order = { plugin = \"sampled\"; }; steps = 250; }"}};
  for (int i = 0; i < 5; i++) {
    char list[512];
    snprintf(list, sizeof list, "phases = (%s);", phases[i][1]);
    char *text = with_phases(cfg, list);
    struct test_losses tr = {0};
    struct intrus_train_result res;
    struct intrus_error err = {0};
    const char *name = phases[i][0];
    enum intrus_status st = test_train_text(text, name, 0, &tr, &res, &err);
    EXPECT(st == INTRUS_OK, "%s: %s", name, err.msg);
    EXPECT(res.steps_done == 500, "%s: %ld steps", name, res.steps_done);
    EXPECT(tr.loss[250] < 0.25 * tr.loss[1], "%s: loss %.4f -> %.4f at step 250", name,
           tr.loss[1], tr.loss[250]);
    struct intrus_model *m = load_model(text, name);
    if (m) {
      double acc = copy_accuracy(m, 48, 4);
      printf("policy %-8s loss %.3f -> %.4f (step 250) -> %.4f, copies %.0f%% of 48 strings\n",
             name, tr.loss[1], tr.loss[250], tr.loss[500], 100 * acc);
      /* Chance is about 0; how far above the bar a run lands moves with the
       * floating-point details (thread count, kernels), so the bar leaves room for them.
       * argmax trains on the one order its own model prefers and generalises least
       * (docs/studies/2026-11-24-model-checks.md, "Memorisation"): it copied 71% on an Intel Xeon with AVX-512
       * (2026-11-26) where the others copied 79-96%, so its bar is lower. */
      const double bar = strcmp(name, "argmax") ? 0.75 : 0.6;
      EXPECT(acc >= bar, "%s: copies %.2f (at least %.2f expected)", name, acc, bar);
    }
    intrus_model_destroy(m);
    free(text);
  }
}

static void test_phases_resume(const char *cfg) {
  struct test_losses full = {0}, part = {0};
  struct intrus_train_result res;
  struct intrus_error err = {0};
  enum intrus_status st = test_train_text(cfg, "phased", 0, &full, &res, &err);
  EXPECT(st == INTRUS_OK, "%s", err.msg);
  EXPECT(res.steps_done == 400, "steps %ld", res.steps_done);
  struct intrus_model *m = load_model(cfg, "phased");
  if (m) {
    double acc = copy_accuracy(m, 64, 4);
    printf("phased (uniform pretraining, then sampled): copies %.0f%% of 64 strings\n", 100 * acc);
    EXPECT(acc >= 0.85, "copies %.2f", acc);
  }
  intrus_model_destroy(m);
  /* stop inside phase 1, then inside phase 2 (with its optimizer restart), resume */
  static const long stops[] = {150, 260, 0};
  for (int i = 0; i < 3; i++) {
    st = test_train_text(cfg, "resumed", stops[i], &part, &res, &err);
    EXPECT(st == INTRUS_OK, "%s", err.msg);
  }
  int same = 1;
  for (int k = 1; k <= 400; k++) same &= full.loss[k] == part.loss[k];
  EXPECT(same, "resumed phased run logs other losses than the uninterrupted one");
  EXPECT(part.last == 400, "resumed run ended at %ld", part.last);
}

static void test_restart_and_plateau(const char *cfg) {
  char *text = with_phases(
      cfg, "phases = ({ name = \"a\"; order = { plugin = \"uniform\"; }; loss = \"uniform\"; "
           "steps = 100; }, { name = \"b\"; order = { plugin = \"l2r\"; }; steps = 1000; "
           "until = \"plateau\"; patience = 1; restart_optimizer = true; });");
  char *t2 = test_replace(text, "valid_every = 100;", "valid_every = 20;");
  struct test_losses tr = {0};
  struct intrus_train_result res;
  struct intrus_error err = {0};
  enum intrus_status st = test_train_text(t2, "plateau", 0, &tr, &res, &err);
  EXPECT(st == INTRUS_OK, "%s", err.msg);
  EXPECT(res.steps_done > 100 && res.steps_done < 1100,
         "a plateau phase with patience 1 should end before its 1000 steps: %ld",
         res.steps_done);
  /* Validation ended that phase: more steps for it in the config do not reopen it. */
  const long plateau_end = res.steps_done;
  char *t3 = test_replace(t2, "steps = 1000;", "steps = 2000;");
  st = test_train_text(t3, "plateau", 0, &tr, &res, &err);
  EXPECT(st == INTRUS_OK && res.steps_done == plateau_end,
         "a run whose last phase validation ended trained on when that phase got more steps "
         "(%s; step %ld, ended at %ld)", err.msg, res.steps_done, plateau_end);
  free(t3);
  free(text);
  free(t2);
  /* A finished one-phase run extended by a phase with restart_optimizer trains as a run
   * that had both phases from the start: the restart applies when the added phase
   * begins on resume. */
  static const char *const a = "{ name = \"a\"; order = { plugin = \"uniform\"; }; "
                               "loss = \"uniform\"; steps = 60; }";
  static const char *const b = "{ name = \"b\"; order = { plugin = \"sampled\"; }; "
                               "steps = 40; restart_optimizer = true; }";
  char list[512];
  snprintf(list, sizeof list, "phases = (%s, %s);", a, b);
  char *both = with_phases(cfg, list);
  snprintf(list, sizeof list, "phases = (%s);", a);
  char *first = with_phases(cfg, list);
  struct test_losses whole = {0}, ext = {0};
  st = test_train_text(both, "restart-whole", 0, &whole, &res, &err);
  EXPECT(st == INTRUS_OK, "%s", err.msg);
  st = test_train_text(first, "restart-ext", 0, &ext, &res, &err);
  EXPECT(st == INTRUS_OK && res.steps_done == 60, "%s (%ld steps)", err.msg, res.steps_done);
  st = test_train_text(both, "restart-ext", 0, &ext, &res, &err);
  EXPECT(st == INTRUS_OK && ext.last == 100, "%s (ended at %ld)", err.msg, ext.last);
  int diff = 0;
  for (int k = 100; k >= 1; k--)
    if (whole.loss[k] != ext.loss[k]) diff = k;
  EXPECT(diff == 0, "a run extended by a restarting phase logs other losses than one "
         "trained with both phases (from step %d: %.7f vs %.7f)", diff, whole.loss[diff],
         ext.loss[diff]);
  /* A finished run whose last phase ended by its steps continues that phase when the
   * config gives it more (a finished run continued under a longer schedule, as
   * experiments/small/en-ru/intrus-warm-distill-long.cfg is): as a run that had the
   * longer phase from the start. */
  static const char *const b80 = "{ name = \"b\"; order = { plugin = \"sampled\"; }; "
                                 "steps = 80; restart_optimizer = true; }";
  snprintf(list, sizeof list, "phases = (%s, %s);", a, b80);
  char *longer = with_phases(cfg, list);
  struct test_losses lwhole = {0}, lext = {0};
  st = test_train_text(longer, "longer-whole", 0, &lwhole, &res, &err);
  EXPECT(st == INTRUS_OK && res.steps_done == 140, "%s (%ld steps)", err.msg, res.steps_done);
  st = test_train_text(both, "longer-ext", 0, &lext, &res, &err);
  EXPECT(st == INTRUS_OK && res.steps_done == 100, "%s (%ld steps)", err.msg, res.steps_done);
  /* its train.log lost (a checkpoint copied without it): the resumed log has a header */
  char logpath[600];
  snprintf(logpath, sizeof logpath, "%s/longer-ext/train.log", test_tmpdir);
  EXPECT(remove(logpath) == 0, "no %s", logpath);
  st = test_train_text(longer, "longer-ext", 0, &lext, &res, &err);
  EXPECT(st == INTRUS_OK && lext.last == 140, "%s (ended at %ld)", err.msg, lext.last);
  FILE *lf = fopen(logpath, "r");
  char head[256] = "";
  EXPECT(lf && fgets(head, sizeof head, lf) && strncmp(head, "step\tloss\t", 10) == 0,
         "the resumed run's new train.log starts with \"%s\", not its header", head);
  if (lf) fclose(lf);
  diff = 0;
  for (int k = 140; k >= 1; k--)
    if (lwhole.loss[k] != lext.loss[k]) diff = k;
  EXPECT(diff == 0, "a finished run whose last phase got more steps logs other losses than "
         "one trained with the longer phase (from step %d: %.7f vs %.7f)", diff,
         lwhole.loss[diff], lext.loss[diff]);
  free(longer);
  free(both);
  free(first);
}

/* The progress line's ETA times the phase at hand only and names the later phases'
 * steps: the last step of a phase has nothing left of it (0:00:00), whatever comes
 * after. */
static void test_phase_eta(const char *text) {
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_string(text, "toy.cfg", &err);
  EXPECT(cfg != NULL, "%s", err.msg);
  if (!cfg) return;
  FILE *progress = tmpfile();
  EXPECT(progress != NULL, "no temporary file for the progress lines");
  if (!progress) {
    intrus_config_free(cfg);
    return;
  }
  struct intrus_train_result res;
  EXPECT(test_train_config_progress(cfg, "phase-eta", 0, NULL, NULL, progress, &res, &err) ==
             INTRUS_OK,
         "%s", err.msg);
  intrus_config_free(cfg);
  rewind(progress);
  char line[512];
  int seen = 0;
  while (fgets(line, sizeof line, progress)) {
    long step;
    if (sscanf(line, "step %ld/", &step) != 1) continue;
    const char *later = strstr(line, "(+");
    long want = step <= 60 ? 60 : step <= 100 ? 20 : 0;
    long got = later ? strtol(later + 2, NULL, 10) : 0;
    EXPECT(got == want, "step %ld: %ld later steps named, expected %ld: %s", step, got, want,
           line);
    if (step == 60 || step == 100 || step == 120) {
      EXPECT(strstr(line, "ETA 0:00:00") != NULL, "step %ld ends its phase: %s", step, line);
      seen++;
    }
  }
  EXPECT(seen == 3, "%d phase-ending progress lines", seen);
  fclose(progress);
}

/* A phase's own lr and warm-up replace train.lr and train.warmup while it runs: the
 * learning rate train.log shows at each logged step is the schedule of that step's
 * phase (counted from the restart when the phase restarts the optimizer). */
static void test_phase_lr(const char *cfg) {
  char *text = with_phases(
      cfg, "phases = ({ name = \"a\"; order = { plugin = \"uniform\"; }; loss = \"uniform\"; "
           "steps = 60; }, { name = \"b\"; order = { plugin = \"sampled\"; }; steps = 40; "
           "lr = 0.006; warmup = 0; }, { name = \"c\"; order = { plugin = \"sampled\"; }; "
           "steps = 20; warmup = 8; restart_optimizer = true; });");
  char *t2 = test_replace(text, "log_every = 50;", "log_every = 10;");
  struct test_losses tr = {0};
  struct intrus_train_result res;
  struct intrus_error err = {0};
  enum intrus_status st = test_train_text(t2, "phase-lr", 0, &tr, &res, &err);
  EXPECT(st == INTRUS_OK && res.steps_done == 120, "%s (%ld steps)", err.msg, res.steps_done);
  char path[600];
  snprintf(path, sizeof path, "%s/phase-lr/train.log", test_tmpdir);
  FILE *f = fopen(path, "r");
  EXPECT(f != NULL, "no %s", path);
  char line[512];
  int rows = 0;
  while (f && fgets(line, sizeof line, f)) {
    long step;
    double loss, lr;
    if (sscanf(line, "%ld\t%lf\t%lf", &step, &loss, &lr) != 3) continue;
    /* the row of step s logs the rate of its last update, step s - 1 counted from 0 */
    double want;
    long k = step - 1;
    if (step <= 60) want = 3e-3 * fmin(sqrt(50.0 / (k + 1)), (k + 1) / 50.0);
    else if (step <= 100) want = 0.006;
    else want = 3e-3 * fmin(sqrt(8.0 / (k - 100 + 1)), (k - 100 + 1) / 8.0);
    EXPECT(fabs(lr - want) <= 1e-5 * want, "step %ld: lr %g, expected %g", step, lr, want);
    rows++;
  }
  if (f) fclose(f);
  EXPECT(rows == 12, "%d logged rows", rows);
  test_phase_eta(t2);
  free(text);
  free(t2);
  /* a negative phase lr is an error naming the setting */
  char *bad = test_replace(cfg, "loss = \"main\";", "loss = \"main\"; lr = -1.0;");
  EXPECT(test_train_text(bad, "phase-lr-bad", 0, &tr, &res, &err) == INTRUS_ERR_CONFIG,
         "a negative phase lr accepted");
  EXPECT_CONTAINS(err.msg, "lr");
  free(bad);
}

/* Exhaustive search over every string of up to 3 tokens (8 real tokens: 585 strings),
 * summing over all insertion paths, on an untrained model (spread-out distributions). */
#define EX_MAX 3
static int key_of(const int32_t *s, int k) {
  int key = 0;
  for (int j = 0; j < k; j++) key = key * 8 + (s[j] - INTRUS_NUM_SPECIAL);
  return key;
}

static double logaddexp(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  double m = a > b ? a : b;
  return m + log(exp(a - m) + exp(b - m));
}

static void test_beam_equals_exhaustive(const char *cfg) {
  struct intrus_model *m = load_model(cfg, NULL);
  if (!m) return;
  int32_t src[2 * 4] = {4, 5, 6, 7, 9, 8, 0, 0};
  int lens[2] = {4, 2}, max_steps[2] = {EX_MAX, EX_MAX};
  struct intrus_src_batch sb = {.batch = 2, .len = 4, .tokens = src, .lens = lens};
  intrus_ctx *ctx = intrus_ctx_create(0);
  struct ins_model_scorer sc;
  struct intrus_error err = {0};
  enum intrus_status st = ins_scorer_open(&sc, m, ctx, &sb, &err);
  EXPECT(st == INTRUS_OK, "%s", err.msg);
  int nstr[EX_MAX + 1] = {1, 8, 64, 512};
  for (int b = 0; b < 2 && !st; b++) {
    double *logp[EX_MAX + 1];
    for (int k = 0; k <= EX_MAX; k++) {
      logp[k] = malloc((size_t)nstr[k] * sizeof(double));
      for (int i = 0; i < nstr[k]; i++) logp[k][i] = -INFINITY;
    }
    logp[0][0] = 0.0;
    /* [0]: any length may finish; [1]: min_len = EX_MAX (only full-length strings) */
    double best[2] = {-INFINITY, -INFINITY};
    int best_k[2] = {-1, -1}, best_key[2] = {-1, -1};
    for (int k = 0; k <= EX_MAX; k++)
      for (int key = 0; key < nstr[k]; key++) {
        int32_t str[EX_MAX + 1];
        for (int j = k - 1, x = key; j >= 0; j--, x /= 8) str[j] = INTRUS_NUM_SPECIAL + x % 8;
        int off[2] = {0, k}, sent = b;
        struct intrus_ins_states one = {.count = 1, .sent = &sent, .off = off, .tok = str};
        float pos[EX_MAX + 2], tok[(EX_MAX + 1) * VOCAB];
        int states[EX_MAX + 1] = {0}, slots[EX_MAX + 1];
        for (int i = 0; i <= k; i++) slots[i] = i;
        st = sc.sc.positions(sc.sc.user, &one, pos, &err);
        if (!st) st = sc.sc.tokens(sc.sc.user, k + 1, states, slots, tok, &err);
        if (st) break;
        double fin = (logp[k][key] + pos[k + 1]) / (k + 1);
        for (int v = 0; v < 2; v++)
          if ((v == 0 || k == EX_MAX) && fin > best[v]) best[v] = fin, best_k[v] = k, best_key[v] = key;
        if (k == EX_MAX) continue;
        for (int i = 0; i <= k; i++)
          for (int c = INTRUS_NUM_SPECIAL; c < VOCAB; c++) {
            int32_t next[EX_MAX + 1];
            memcpy(next, str, (size_t)i * 4);
            next[i] = c;
            memcpy(next + i + 1, str + i, (size_t)(k - i) * 4);
            int nk = key_of(next, k + 1);
            logp[k + 1][nk] = logaddexp(logp[k + 1][nk], logp[k][key] + pos[i] + tok[i * VOCAB + c]);
          }
      }
    EXPECT(st == INTRUS_OK, "%s", err.msg);
    for (int run = 0; run < 4 && !st; run++) {
      int prune = run & 1, v = run >> 1;
      struct intrus_ins_search_opts o = {.beam = 600, .alpha = 1.0f, .prune = prune,
                                         .min_len = v ? EX_MAX : 0};
      struct intrus_ins_hyp h[2] = {{0}};
      st = intrus_ins_beam_search(&sc.sc, 2, max_steps, &o, h, NULL, &err);
      EXPECT(st == INTRUS_OK, "%s", err.msg);
      EXPECT(h[b].len == best_k[v] && key_of(h[b].tokens, h[b].len) == best_key[v],
             "sentence %d prune %d min_len %d: beam found length %d key %d, exhaustive %d key %d",
             b, prune, o.min_len, h[b].len, key_of(h[b].tokens, h[b].len), best_k[v], best_key[v]);
      EXPECT(fabs(h[b].score - best[v]) <= 1e-4 * fabs(best[v]), "score %.8f vs exhaustive %.8f",
             h[b].score, best[v]);
      intrus_ins_hyp_free(&h[0]);
      intrus_ins_hyp_free(&h[1]);
    }
    printf("sentence %d: exhaustive best of %d strings has %d tokens, score %.5f; of the "
           "512 of length 3: score %.5f\n", b, 1 + 8 + 64 + 512, best_k[0], best[0], best[1]);
    for (int k = 0; k <= EX_MAX; k++) free(logp[k]);
  }
  ins_scorer_close(&sc);
  intrus_ctx_destroy(ctx);
  intrus_model_destroy(m);
}

/* The scorer's slot_logits() against positions(): the same position log-probs up to a
 * constant per state and the same token distributions, through the decoder's restricted
 * step and through the fallback that runs every row; tokens() then refuses other
 * slots. One- and two-layer decoders (the restricted step changes the last layer). */
static void test_slot_logits(const char *cfg) {
  char *two = test_replace(cfg, "plugin = \"insertion\"; layers = 1;",
                           "plugin = \"insertion\"; layers = 2;");
  EXPECT(two != NULL, "toy-intrus.cfg no longer sets a one-layer decoder");
  if (!two) return;
  /* slots = "pair" reads a slot's right neighbour too: the restricted step then runs
   * the neighbours of the asked rows as well. */
  char *pair = test_replace(two, "plugin = \"insertion\"; layers = 2;",
                            "plugin = \"insertion\"; layers = 2; slots = \"pair\";");
  /* tie_embeddings: the token layer is the embedding table, read transposed. */
  char *tied = test_replace(pair, "slots = \"pair\";", "slots = \"pair\"; tie_embeddings = true;");
  enum { NS = 5, MAXK = 5 };
  int32_t src[3 * 5] = {4, 5, 6, 7, 0, 9, 8, 0, 0, 0, 11, 10, 9, 8, 7};
  int lens[3] = {4, 2, 5};
  struct intrus_src_batch sb = {.batch = 3, .len = 5, .tokens = src, .lens = lens};
  /* States of mixed sentences and lengths; queries leave state 2 out entirely. */
  int sent[NS] = {0, 2, 1, 0, 2}, off[NS + 1] = {0, 0, 3, 4, 9, 11};
  int32_t tok[11] = {7, 8, 9, 5, 4, 6, 6, 5, 11, 10, 4};
  int qstate[] = {0, 1, 1, 1, 3, 3, 3, 4, 4}, qslot[] = {0, 0, 2, 3, 0, 1, 5, 1, 2};
  const int Q = (int)(sizeof qstate / sizeof *qstate);
  for (int variant = 0; variant < 8; variant++) {
    struct intrus_model *m =
        load_model(variant < 2 ? cfg : variant < 4 ? two : variant < 6 ? pair : tied, NULL);
    if (!m) break;
    intrus_tensor *next = intrus_params_find(intrus_model_params(m), "decoder.slot_next");
    EXPECT((next != NULL) == (variant >= 4), "variant %d: decoder.slot_next %s", variant,
           next ? "present" : "missing");
    const bool is_tied = variant >= 6;
    EXPECT((intrus_params_find(intrus_model_params(m), "decoder.out_token") == NULL) == is_tied,
           "variant %d: decoder.out_token %s", variant, is_tied ? "present" : "missing");
    /* Starts at zero (the "token" form): made non-zero so that the pairing shows. */
    struct intrus_rng rg;
    intrus_rng_seed(&rg, 99);
    for (size_t i = 0; next && i < next->n; i++)
      next->data[i] = (float)((double)(intrus_rng_next(&rg) >> 11) / 9007199254740992.0 - 0.5);
    intrus_ctx *ctx = intrus_ctx_create(0);
    struct ins_model_scorer sc;
    struct intrus_error err = {0};
    struct intrus_ins_states st = {.count = NS, .sent = sent, .off = off, .tok = tok};
    float pos[11 + 2 * NS], logit[16], *full = malloc(sizeof(float) * NS * (MAXK + 1) * VOCAB);
    float *part = malloc(sizeof(float) * (size_t)Q * VOCAB);
    int fs[NS * (MAXK + 1)], fl[NS * (MAXK + 1)], nf = 0;
    for (int i = 0; i < NS; i++)
      for (int j = 0; j <= off[i + 1] - off[i]; j++) fs[nf] = i, fl[nf++] = j;
    enum intrus_status e = ins_scorer_open(&sc, m, ctx, &sb, &err);
    EXPECT(e == INTRUS_OK && sc.step_rows, "open: %s (restricted step %d)", err.msg,
           (int)sc.step_rows);
    sc.step_rows = variant % 2 == 0; /* odd variants: the fallback over every row */
    if (!e) e = sc.sc.positions(sc.sc.user, &st, pos, &err);
    if (!e) e = sc.sc.tokens(sc.sc.user, nf, fs, fl, full, &err);
    if (!e) e = sc.sc.slot_logits(sc.sc.user, &st, Q, qstate, qslot, logit, &err);
    if (!e) e = sc.sc.tokens(sc.sc.user, Q, qstate, qslot, part, &err);
    EXPECT(e == INTRUS_OK, "variant %d: %s", variant, err.msg);
    double worst = 0;
    for (int j = 0; j < Q && !e; j++) {
      int s0 = qstate[j], row = off[s0] + 2 * s0 + qslot[j], first = j;
      while (first > 0 && qstate[first - 1] == s0) first--;
      double shift = logit[first] - pos[off[s0] + 2 * s0 + qslot[first]];
      worst = fmax(worst, fabs(logit[j] - pos[row] - shift));
      int f = 0;
      while (fs[f] != s0 || fl[f] != qslot[j]) f++;
      for (int c = 0; c < VOCAB; c++)
        worst = fmax(worst, fabs(part[(size_t)j * VOCAB + c] - full[(size_t)f * VOCAB + c]));
    }
    EXPECT(worst <= 1e-5, "variant %d: slot_logits() and positions() differ by %g", variant,
           worst);
    if (!e) {
      /* A slot the last slot_logits() call was not given; queries out of order. */
      int s2 = 2, l0 = 0, bs[2] = {3, 1}, bl[2] = {0, 0};
      EXPECT(sc.sc.tokens(sc.sc.user, 1, &s2, &l0, part, &err) == INTRUS_ERR_INVALID,
             "tokens() read a slot slot_logits() did not run");
      EXPECT_CONTAINS(err.msg, "slot_logits");
      EXPECT(sc.sc.slot_logits(sc.sc.user, &st, 2, bs, bl, logit, &err) == INTRUS_ERR_INVALID,
             "slot_logits() took queries out of order");
      EXPECT_CONTAINS(err.msg, "ascend");
      /* No slot asked for: the decoder checks the states and runs nothing; no slot is
       * readable. */
      EXPECT(sc.sc.slot_logits(sc.sc.user, &st, 0, qstate, qslot, logit, &err) == INTRUS_OK,
             "slot_logits() without slots: %s", err.msg);
      EXPECT(sc.sc.tokens(sc.sc.user, 1, qstate, qslot, part, &err) == INTRUS_ERR_INVALID,
             "tokens() read a slot after slot_logits() asked for none");
      /* positions() makes every slot readable again. */
      EXPECT(sc.sc.positions(sc.sc.user, &st, pos, &err) == INTRUS_OK &&
                 sc.sc.tokens(sc.sc.user, 1, &s2, &l0, part, &err) == INTRUS_OK,
             "after positions(): %s", err.msg);
    }
    if (!e) {
      /* The training path (ins_hidden) gives the same position log-probs. */
      void *dself;
      const struct intrus_decoder_vtable *dec = intrus_model_decoder(m, &dself);
      intrus_ctx *tc = intrus_ctx_create(0);
      intrus_ctx_set_training(tc, false);
      intrus_ctx_set_grad(tc, false);
      struct intrus_memory mem;
      intrus_tensor *hid, *wt, *wp;
      e = intrus_model_encode(m, tc, &sb, &mem, &err);
      if (!e) e = dec->ins_hidden(dself, tc, &mem, &st, &hid, &err);
      EXPECT(e == INTRUS_OK, "variant %d: ins_hidden: %s", variant, err.msg);
      if (!e) {
        dec->ins_output(dself, &wt, &wp);
        intrus_tensor *lg = intrus_matmul(tc, hid, wp, false, false);
        double tw = 0;
        for (int i = 0; i < NS; i++) {
          int r0 = off[i] + 2 * i, len = off[i + 1] - off[i] + 2;
          double mx = -INFINITY, sum = 0;
          for (int j = 0; j < len; j++) mx = fmax(mx, lg->data[r0 + j]);
          for (int j = 0; j < len; j++) sum += exp(lg->data[r0 + j] - mx);
          for (int j = 0; j < len; j++)
            tw = fmax(tw, fabs(lg->data[r0 + j] - mx - log(sum) - pos[r0 + j]));
        }
        EXPECT(tw <= 1e-5, "variant %d: ins_hidden and ins_step differ by %g", variant, tw);
        /* And the same token distributions: the training path's product with w_token
         * (transposed when tied) against the scorer's packed one. */
        intrus_tensor *tl = intrus_matmul(tc, hid, wt, false, is_tied);
        double tt = 0;
        for (int f = 0; f < nf; f++) {
          const float *x = tl->data + (size_t)(off[fs[f]] + 2 * fs[f] + fl[f]) * VOCAB;
          double mx = -INFINITY, sum = 0;
          for (int c = 0; c < VOCAB; c++) mx = fmax(mx, x[c]);
          for (int c = 0; c < VOCAB; c++) sum += exp(x[c] - mx);
          for (int c = 0; c < VOCAB; c++)
            tt = fmax(tt, fabs(x[c] - mx - log(sum) - full[(size_t)f * VOCAB + c]));
        }
        EXPECT(tt <= 1e-5, "variant %d: token log-probs of ins_hidden and the scorer differ by "
               "%g", variant, tt);
      }
      intrus_ctx_destroy(tc);
    }
    printf("slot_logits, %d-layer decoder%s, %s: largest difference %.3g\n", variant < 2 ? 1 : 2,
           variant >= 6 ? " (pair slots, tied)" : variant >= 4 ? " (pair slots)" : "",
           variant % 2 ? "every row then the asked ones" : "restricted last layer", worst);
    ins_scorer_close(&sc);
    free(full);
    free(part);
    intrus_ctx_destroy(ctx);
    intrus_model_destroy(m);
  }
  free(two);
  free(pair);
  free(tied);
}

static void test_config_errors(const char *cfg) {
  struct test_losses tr = {0};
  struct intrus_train_result res;
  struct intrus_error err = {0};
  /* an insertion decoder without phases */
  char *a = with_phases(cfg, "steps = 10;");
  EXPECT(test_train_text(a, "e1", 0, &tr, &res, &err) == INTRUS_ERR_CONFIG, "no phases accepted");
  EXPECT_CONTAINS(err.msg, "phases");
  free(a);
  /* phases with the autoregressive decoder */
  a = test_replace(cfg, "plugin = \"insertion\";", "plugin = \"autoregressive\";");
  EXPECT(test_train_text(a, "e2", 0, &tr, &res, &err) == INTRUS_ERR_CONFIG, "phases accepted");
  EXPECT_CONTAINS(err.msg, "insertion decoders");
  free(a);
  /* an unknown policy: the error lists the available ones and points at the line */
  a = test_replace(cfg, "plugin = \"sampled\";", "plugin = \"sampeld\";");
  EXPECT(test_train_text(a, "e3", 0, &tr, &res, &err) != INTRUS_OK, "unknown policy accepted");
  EXPECT_CONTAINS(err.msg, "toy.cfg:");
  EXPECT_CONTAINS(err.msg, "sampeld");
  EXPECT_CONTAINS(err.msg, "uniform");
  free(a);
  /* a bad loss name */
  a = test_replace(cfg, "loss = \"main\";", "loss = \"mian\";");
  EXPECT(test_train_text(a, "e4", 0, &tr, &res, &err) == INTRUS_ERR_CONFIG, "bad loss accepted");
  EXPECT_CONTAINS(err.msg, "mian");
  free(a);
  /* model.order with an insertion decoder */
  a = test_replace(cfg, "d_model = 32;", "d_model = 32; order = \"r2l\";");
  EXPECT(test_train_text(a, "e5", 0, &tr, &res, &err) == INTRUS_ERR_CONFIG, "order accepted");
  EXPECT_CONTAINS(err.msg, "order");
  free(a);
}

/* ---- states = "some" ------------------------------------------------------------- */

/* The main loss of each state k = 0..n of sentence b's left-to-right trajectory of y (the
 * prefix y[0..k)), from the model as a scorer (in double): -log sum p(i, c) over the
 * correct insertions, -log p(finish) for the complete state. */
static bool l2r_state_losses(struct intrus_model *m, const struct intrus_src_batch *sb, int b,
                             const int32_t *y, int n, double *loss) {
  enum { MAXN = 8 };
  if (n > MAXN) return false;
  intrus_ctx *ctx = intrus_ctx_create(0);
  struct ins_model_scorer sc;
  struct intrus_error err = {0};
  enum { MAXQ = (MAXN + 1) * (MAXN + 2) / 2 }; /* slots of all the states */
  int sent[MAXN + 1], off[MAXN + 2], qs[MAXQ], ql[MAXQ];
  int32_t tok[MAXN * (MAXN + 1) / 2 + 1];
  float pos[MAXQ + MAXN + 1];
  static float tl[MAXQ * VOCAB];
  int nq = 0;
  off[0] = 0;
  for (int k = 0; k <= n; k++) {
    sent[k] = b;
    memcpy(tok + off[k], y, (size_t)k * sizeof *tok);
    off[k + 1] = off[k] + k;
    for (int i = 0; i <= k; i++) qs[nq] = k, ql[nq++] = i;
  }
  struct intrus_ins_states st = {.count = n + 1, .sent = sent, .off = off, .tok = tok};
  enum intrus_status e = ins_scorer_open(&sc, m, ctx, sb, &err);
  if (!e) e = sc.sc.positions(sc.sc.user, &st, pos, &err);
  if (!e) e = sc.sc.tokens(sc.sc.user, nq, qs, ql, tl, &err);
  EXPECT(e == INTRUS_OK, "scoring the states: %s", err.msg);
  for (int k = 0, q0 = 0; k <= n && !e; q0 += k + 1, k++) {
    const float *p = pos + off[k] + 2 * k;
    int slot[(MAXN + 1) * MAXN];
    int32_t c[(MAXN + 1) * MAXN];
    int np = intrus_ins_correct(y, n, y, k, slot, c, (MAXN + 1) * MAXN);
    if (np == 0) {
      loss[k] = -(double)p[k + 1];
      continue;
    }
    double mx = -INFINITY, sum = 0.0;
    for (int j = 0; j < np; j++)
      mx = fmax(mx, (double)p[slot[j]] + tl[(size_t)(q0 + slot[j]) * VOCAB + c[j]]);
    for (int j = 0; j < np; j++)
      sum += exp((double)p[slot[j]] + tl[(size_t)(q0 + slot[j]) * VOCAB + c[j]] - mx);
    loss[k] = -(mx + log(sum));
  }
  ins_scorer_close(&sc);
  intrus_ctx_destroy(ctx);
  return e == INTRUS_OK;
}

/* The phase spec of a one-phase experiment (its order plugin open in *ph). */
static bool phase_spec(const char *cfg, const char *phase, struct intrus_plugin_search *s,
                       struct train_phases *ph) {
  char list[512];
  snprintf(list, sizeof list, "phases = (%s);", phase);
  char *text = with_phases(cfg, list);
  struct intrus_error err = {0};
  struct intrus_config *c = text ? intrus_config_load_string(text, "toy.cfg", &err) : NULL;
  const intrus_cfg *g = NULL;
  enum intrus_status st = c ? intrus_cfg_group_req(intrus_config_root(c), "train", &g, &err)
                            : INTRUS_ERR_CONFIG;
  if (!st) st = train_phases_read(g, s, ph, &err);
  EXPECT(st == INTRUS_OK && ph->count == 1, "%s: %s", phase, err.msg);
  intrus_config_free(c);
  free(text);
  return st == INTRUS_OK;
}

/* states = "some": per_sentence distinct states of each sentence, drawn anew with every
 * seed; all of them for a sentence with fewer. Checked on the loss's sum over the
 * states against the states' own losses: sentence 0 (2 tokens, 3 states, fewer than
 * K) contributes all its states, sentence 1 (6 tokens) a K-subset, never a state
 * twice, and over the seeds every state comes up. */
static void test_states_some_draws(const char *cfg) {
  enum { N0 = 2, N1 = 6, L = 6, SEEDS = 40 };
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(s); /* for the phase's order plugin */
  struct intrus_model *m = load_model(cfg, NULL);
  struct train_phases ph = {0};
  if (!m || !phase_spec(cfg,
                        "{ order = { plugin = \"l2r\"; }; states = \"some\"; per_sentence = 4; "
                        "steps = 1; }",
                        s, &ph)) {
    intrus_model_destroy(m);
    intrus_plugin_search_free(s);
    return;
  }
  EXPECT(ph.phase[0].spec.per_sentence == 4 && !ph.phase[0].spec.all_states,
         "states = \"some\", per_sentence = 4 read as per_sentence %d, all_states %d",
         ph.phase[0].spec.per_sentence, ph.phase[0].spec.all_states);
  int32_t tgt[2 * L] = {9, 5, 0, 0, 0, 0, 4, 7, 11, 6, 8, 5};
  int lens[2] = {N0, N1};
  struct intrus_src_batch sb = {.batch = 2, .len = L, .tokens = tgt, .lens = lens};
  struct intrus_tgt_batch tb = {.batch = 2, .len = L, .tokens = tgt, .lens = lens};
  double l0[N0 + 1], l1[N1 + 1], all0 = 0.0, all1 = 0.0;
  if (!l2r_state_losses(m, &sb, 0, tgt, N0, l0) || !l2r_state_losses(m, &sb, 1, tgt + L, N1, l1))
    goto done;
  for (int k = 0; k <= N0; k++) all0 += l0[k];
  for (int k = 0; k <= N1; k++) all1 += l1[k];
  intrus_ctx *ctx = intrus_ctx_create(0), *scratch = intrus_ctx_create(0);
  intrus_ctx_set_training(ctx, false);
  /* The sum over the states and their count (sum / mean) for a spec and seed. */
#define SOME_LOSS(spec_, seed_, sum_, count_)                                              \
  do {                                                                                   \
    struct intrus_loss_out o_;                                                           \
    struct intrus_error e_ = {0};                                                        \
    intrus_ctx_reset(ctx);                                                               \
    enum intrus_status st_ = ins_train_loss(m, ctx, scratch, &sb, &tb, &(spec_), (seed_), \
                                            &o_, &e_);                                   \
    EXPECT(st_ == INTRUS_OK, "ins_train_loss: %s", e_.msg);                              \
    (sum_) = st_ ? NAN : o_.nll_sum;                                                     \
    (count_) = st_ ? NAN : o_.nll_sum / o_.loss->data[0];                                \
  } while (0)
  struct ins_train_spec spec = ph.phase[0].spec;
  double sum, count;
  /* Every state, by the reference and by all_states. */
  spec.all_states = true;
  SOME_LOSS(spec, 1, sum, count);
  EXPECT(fabs(sum - (all0 + all1)) <= 1e-4 * (all0 + all1) && fabs(count - 10) < 1e-3,
         "all states: sum %.6f over %.3f states, the states' own losses %.6f over 10", sum, count,
         all0 + all1);
  int seen[N1 + 1] = {0};
  static const int Ks[] = {1, 2, 4, 6};
  for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++) {
    int K = Ks[ki];
    spec = ph.phase[0].spec;
    spec.per_sentence = K;
    int bad = 0;
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
      SOME_LOSS(spec, seed * 7919, sum, count);
      /* Sentence 0 has fewer states than K >= 3: all of them; else K of them. */
      int k0 = K < N0 + 1 ? K : N0 + 1;
      EXPECT(fabs(count - (k0 + K)) < 1e-3, "per_sentence %d seed %llu: %.4f states, not %d", K,
             (unsigned long long)seed, count, k0 + K);
      /* The best K-subset of sentence 1's states (and of sentence 0's when K < 3). */
      double best = INFINITY;
      int best_mask = -1;
      for (int m0 = 0; m0 < 1 << (N0 + 1); m0++) {
        if (__builtin_popcount((unsigned)m0) != k0) continue;
        double s0 = 0.0;
        for (int k = 0; k <= N0; k++) s0 += m0 >> k & 1 ? l0[k] : 0.0;
        for (int m1 = 0; m1 < 1 << (N1 + 1); m1++) {
          if (__builtin_popcount((unsigned)m1) != K) continue;
          double s1 = s0;
          for (int k = 0; k <= N1; k++) s1 += m1 >> k & 1 ? l1[k] : 0.0;
          if (fabs(s1 - sum) < best) best = fabs(s1 - sum), best_mask = m1;
        }
      }
      if (!(best <= 1e-4 * fabs(sum))) bad++;
      for (int k = 0; k <= N1 && best_mask >= 0; k++) seen[k] += best_mask >> k & 1;
      if (K == 1) {
        /* One state: the draw states = "one" has always made (so that older runs resume
         * with the same losses). */
        struct intrus_rng r;
        intrus_rng_seed(&r, intrus_hash64(seed * 7919 ^ 0x5eedf00dULL, 1));
        int want = (int)intrus_rng_below(&r, N1 + 1);
        EXPECT(best_mask == 1 << want, "per_sentence 1 seed %llu: drew states %#x, not state %d",
               (unsigned long long)seed, best_mask, want);
      }
    }
    EXPECT(bad == 0,
           "per_sentence %d: %d of %d draws are no set of %d distinct states of each sentence",
           K, bad, SEEDS, K);
  }
  for (int k = 0; k <= N1; k++)
    EXPECT(seen[k] >= 5, "state %d of sentence 1 was drawn %d times in %d draws", k, seen[k],
           SEEDS * 4);
  /* late_bias 3: one state of sentence 1 drawn with weight (k + 1)^3, so state 6 comes
   * up 343 / 784 of the time (175 of 400 draws, sd 9.9) and state 0 almost never. */
  {
    enum { DRAWS = 400 };
    int got[N1 + 1] = {0}, unmatched = 0;
    spec = ph.phase[0].spec;
    spec.per_sentence = 1;
    spec.late_bias = 3.0f;
    for (uint64_t seed = 1; seed <= DRAWS; seed++) {
      SOME_LOSS(spec, seed * 31337, sum, count);
      int which = -1;
      for (int k0 = 0; k0 <= N0; k0++)
        for (int k = 0; k <= N1; k++)
          if (fabs(l0[k0] + l1[k] - sum) <= 1e-4 * fabs(sum)) which = k;
      if (which < 0) unmatched++;
      else got[which]++;
    }
    EXPECT(unmatched == 0, "late_bias: %d draws matched no pair of states", unmatched);
    EXPECT(abs(got[N1] - 175) < 50 && got[0] <= 3 && got[N1] > got[3] && got[3] > got[1],
           "late_bias 3: states drawn %d %d %d %d %d %d %d times", got[0], got[1], got[2],
           got[3], got[4], got[5], got[6]);
  }
  /* finish_state: min(K, n) distinct incomplete states and the complete one, always. */
  for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++) {
    int K = Ks[ki], bad = 0;
    spec = ph.phase[0].spec;
    spec.per_sentence = K;
    spec.finish_state = true;
    int k0 = K < N0 ? K : N0, k1 = K < N1 ? K : N1;
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
      SOME_LOSS(spec, seed * 104729, sum, count);
      EXPECT(fabs(count - (k0 + 1 + k1 + 1)) < 1e-3,
             "finish_state, per_sentence %d: %.4f states, not %d", K, count, k0 + k1 + 2);
      double best = INFINITY;
      for (int m0 = 0; m0 < 1 << N0; m0++) {
        if (__builtin_popcount((unsigned)m0) != k0) continue;
        double s0 = l0[N0];
        for (int k = 0; k < N0; k++) s0 += m0 >> k & 1 ? l0[k] : 0.0;
        for (int m1 = 0; m1 < 1 << N1; m1++) {
          if (__builtin_popcount((unsigned)m1) != k1) continue;
          double s1 = s0 + l1[N1];
          for (int k = 0; k < N1; k++) s1 += m1 >> k & 1 ? l1[k] : 0.0;
          best = fmin(best, fabs(s1 - sum));
        }
      }
      if (!(best <= 1e-4 * fabs(sum))) bad++;
    }
    EXPECT(bad == 0,
           "finish_state, per_sentence %d: %d of %d draws are not %d incomplete states and "
           "the complete one",
           K, bad, SEEDS, K);
  }
  /* per_sentence >= n + 1 is "all", bit for bit; per_sentence = 1 is "one". */
  double sum_all, sum_k;
  spec = ph.phase[0].spec;
  spec.all_states = true;
  SOME_LOSS(spec, 5, sum_all, count);
  spec.all_states = false;
  spec.per_sentence = N1 + 1;
  SOME_LOSS(spec, 5, sum_k, count);
  EXPECT(memcmp(&sum_all, &sum_k, sizeof sum_all) == 0,
         "per_sentence = n + 1: %.9g, every state: %.9g", sum_k, sum_all);
  /* Windows of states (validation's bound on memory) add up to every state: over the
   * batch, and for sentence 1 alone as sentence first = 1 of the batch. */
  {
    static const int cuts[] = {0, 3, 5, 7};
    double wsum = 0.0, wcount = 0.0, part;
    spec = ph.phase[0].spec;
    spec.all_states = true;
    for (int w = 0; w < 3; w++) {
      spec.state_lo = cuts[w];
      spec.state_hi = cuts[w + 1];
      SOME_LOSS(spec, 5, part, count);
      wsum += part;
      wcount += count;
    }
    EXPECT(fabs(wsum - sum_all) <= 1e-5 * sum_all && fabs(wcount - 10) < 1e-3,
           "windows of states: %.6f over %.3f states, every state at once %.6f over 10", wsum,
           wcount, sum_all);
    double one = 0.0;
    struct intrus_src_batch s1 = {.batch = 1, .len = sb.len, .tokens = sb.tokens + sb.len,
                                  .lens = sb.lens + 1};
    struct intrus_tgt_batch t1 = {.batch = 1, .len = L, .tokens = tgt + L, .lens = lens + 1};
    for (int w = 0; w < 3; w++) {
      struct intrus_loss_out o;
      struct intrus_error e = {0};
      spec.state_lo = cuts[w];
      spec.state_hi = cuts[w + 1];
      intrus_ctx_reset(ctx);
      enum intrus_status st = ins_train_loss_at(m, ctx, scratch, &s1, &t1, 1, &spec, 5, &o, &e);
      EXPECT(st == INTRUS_OK, "ins_train_loss_at: %s", e.msg);
      one += st ? NAN : o.nll_sum;
    }
    EXPECT(fabs(one - all1) <= 1e-4 * all1,
           "sentence 1 alone in windows of states: %.6f, its states' own losses %.6f", one,
           all1);
  }
#undef SOME_LOSS
  intrus_ctx_destroy(ctx);
  intrus_ctx_destroy(scratch);
done:
  train_phases_free(&ph);
  intrus_model_destroy(m);
  intrus_plugin_search_free(s);
}

/* The phase settings end to end: training on states = "some" with per_sentence >= n + 1
 * (targets have at most 6 tokens) logs the losses of states = "all", per_sentence = 1
 * those of states = "one", bit for bit, and per_sentence defaults to 4; errors name
 * the setting. */
static void test_states_some(const char *cfg) {
  enum { STEPS = 20, RUNS = 7 };
  static const char *const states[RUNS] = {
      "states = \"all\";", "states = \"some\"; per_sentence = 7;",
      "states = \"some\"; per_sentence = 50;", "states = \"one\";",
      "states = \"some\"; per_sentence = 1;", "states = \"some\"; per_sentence = 4;",
      "states = \"some\";"};
  static struct test_losses tr[RUNS];
  for (int i = 0; i < RUNS; i++) {
    char list[512], run[32];
    snprintf(list, sizeof list,
             "phases = ({ order = { plugin = \"uniform\"; }; loss = \"main\"; %s steps = %d; });",
             states[i], STEPS);
    snprintf(run, sizeof run, "some%d", i);
    char *text = with_phases(cfg, list);
    struct intrus_train_result res;
    struct intrus_error err = {0};
    memset(&tr[i], 0, sizeof tr[i]);
    EXPECT(test_train_text(text, run, 0, &tr[i], &res, &err) == INTRUS_OK, "%s: %s",
           states[i], err.msg);
    EXPECT(res.steps_done == STEPS, "%s: %ld steps", states[i], res.steps_done);
    free(text);
  }
  /* [run, the run it must equal] */
  static const int same[][2] = {{1, 0}, {2, 0}, {4, 3}, {6, 5}};
  for (size_t j = 0; j < sizeof same / sizeof *same; j++) {
    int a = same[j][0], b = same[j][1], equal = 0;
    for (int k = 1; k <= STEPS; k++)
      equal += memcmp(&tr[a].loss[k], &tr[b].loss[k], sizeof(double)) == 0;
    EXPECT(equal == STEPS, "%s logs the losses of %s at %d of %d steps", states[a], states[b],
           equal, STEPS);
  }
  /* ... and a few states per sentence is neither. */
  EXPECT(tr[5].loss[1] != tr[0].loss[1] && tr[5].loss[1] != tr[3].loss[1],
         "per_sentence = 4: loss %.9g, all %.9g, one %.9g", tr[5].loss[1], tr[0].loss[1],
         tr[3].loss[1]);
  /* Each error names the setting and, for a per_sentence without states = "some", says
   * what it needs. */
  static const struct {
    const char *states, *want, *want2;
  } bad[] = {
      {"states = \"one\"; per_sentence = 2;", "per_sentence", "\"some\""},
      {"states = \"all\"; per_sentence = 2;", "per_sentence", "\"some\""},
      {"per_sentence = 2;", "per_sentence", "\"some\""},
      {"states = \"some\"; per_sentence = 0;", "per_sentence", "0"},
      {"states = \"some\"; per_sentence = -3;", "per_sentence", "-3"},
      {"states = \"some\"; per_sentence = \"two\";", "per_sentence", "per_sentence"},
      {"states = \"all\"; finish_state = true;", "finish_state", "\"one\" or \"some\""},
      {"finish_state = true;", "finish_state", "\"all\""},
      {"states = \"one\"; finish_state = 1;", "finish_state", "finish_state"},
      {"states = \"all\"; late_bias = 1.0;", "late_bias", "\"one\" or \"some\""},
      {"states = \"one\"; late_bias = -1.0;", "late_bias", "-1"},
      {"states = \"sum\";", "states", "some"},
  };
  for (size_t j = 0; j < sizeof bad / sizeof *bad; j++) {
    char list[512];
    snprintf(list, sizeof list,
             "phases = ({ order = { plugin = \"uniform\"; }; %s steps = 5; });", bad[j].states);
    char *text = with_phases(cfg, list);
    struct test_losses t = {0};
    struct intrus_train_result res;
    struct intrus_error err = {0};
    EXPECT(test_train_text(text, "somebad", 0, &t, &res, &err) == INTRUS_ERR_CONFIG, "%s accepted",
           bad[j].states);
    EXPECT_CONTAINS(err.msg, bad[j].want);
    EXPECT_CONTAINS(err.msg, bad[j].want2);
    EXPECT_CONTAINS(err.msg, "toy.cfg:");
    free(text);
  }
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-test-intrus-XXXXXX")) return 1;
  char *cfg = test_read_srcfile("experiments/toy-intrus.cfg");
  if (!cfg) return 1;
  test_beam_equals_exhaustive(cfg);
  test_slot_logits(cfg);
  test_config_errors(cfg);
  test_states_some_draws(cfg);
  test_states_some(cfg);
  test_phases_resume(cfg);
  test_restart_and_plateau(cfg);
  test_phase_lr(cfg);
  test_policies(cfg);
  free(cfg);
  test_remove_tmpdir();
  return test_finish("test_intrus");
}

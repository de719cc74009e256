/* What each cell of a results table still needs, and how long that should take. */
#include <inttypes.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intrus/blas.h"
#include "intrus/checkpoint.h"
#include "intrus/corpus.h"
#include "table_run.h"
#include "text/dataset.h"
#include "base/clock.h"

/* ---- what the run directory holds ------------------------------------------------ */

/* results.json of exactly these settings (its "fingerprint") and the test output. */
static bool results_match(const char *run_dir, uint64_t fp) {
  char path[4300], *json = NULL, want[64];
  size_t len;
  struct intrus_error e = {0};
  snprintf(path, sizeof path, "%s/test.hyp", run_dir);
  if (access(path, R_OK) != 0) return false;
  snprintf(path, sizeof path, "%s/results.json", run_dir);
  if (access(path, R_OK) != 0 || intrus_file_read_all(path, &json, &len, &e)) return false;
  snprintf(want, sizeof want, "\"fingerprint\": \"%016" PRIx64 "\"", fp);
  bool ok = strstr(json, want) != NULL;
  free(json);
  return ok;
}

static long checkpoint_step(const char *run_dir) {
  char path[4300];
  snprintf(path, sizeof path, "%s/checkpoint.ckpt", run_dir);
  if (access(path, R_OK) != 0) return -1;
  struct intrus_ckpt *c;
  struct intrus_error e = {0};
  if (intrus_ckpt_read(path, false, 0, &c, &e)) return -1;
  uint64_t step = 0;
  bool ok = intrus_ckpt_u64(c, "step", &step);
  intrus_ckpt_free(c);
  return ok ? (long)step : -1;
}

/* From train.log: the last row's step and train_s (the last column), and the seconds per
 * step of the last rows (up to 5 rows back: the current phase's speed, not the run's
 * average, which an INTRUS run's cheap pretraining would pull down). */
static bool log_speed(const char *run_dir, long *step, double *train_s, double *s_per_step) {
  enum { BACK = 5 };
  char path[4300], line[1024];
  long steps[BACK + 1];
  double secs[BACK + 1];
  int n = 0;
  snprintf(path, sizeof path, "%s/train.log", run_dir);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  while (fgets(line, sizeof line, f)) {
    const char *tab = strrchr(line, '\t');
    if (line[0] < '0' || line[0] > '9' || !tab) continue;
    if (n == BACK + 1) {
      memmove(steps, steps + 1, BACK * sizeof *steps);
      memmove(secs, secs + 1, BACK * sizeof *secs);
      n--;
    }
    steps[n] = strtol(line, NULL, 10);
    secs[n] = strtod(tab + 1, NULL);
    n++;
  }
  fclose(f);
  if (n == 0 || steps[n - 1] <= 0 || !(secs[n - 1] > 0)) return false;
  *step = steps[n - 1];
  *train_s = secs[n - 1];
  *s_per_step = *train_s / (double)*step;
  if (n >= 2 && steps[n - 1] > steps[0] && secs[n - 1] > secs[0])
    *s_per_step = (secs[n - 1] - secs[0]) / (double)(steps[n - 1] - steps[0]);
  return true;
}

/* ---- the cost model --------------------------------------------------------------- */

/* A lookup that adds no default to the tree (the config is written out by training). */
static long long peek_int(const intrus_cfg *g, const char *key, long long def) {
  long long v = def;
  if (g && intrus_cfg_has(g, key)) intrus_cfg_int(g, key, def, &v, NULL);
  return v;
}
static const char *peek_string(const intrus_cfg *g, const char *key, const char *def) {
  const char *v = def;
  if (g && intrus_cfg_has(g, key)) intrus_cfg_string(g, key, def, &v, NULL);
  return v;
}
static const intrus_cfg *peek_group(const intrus_cfg *g, const char *key) {
  const intrus_cfg *v = NULL;
  if (g && intrus_cfg_has(g, key)) intrus_cfg_group(g, key, &v, NULL);
  return v;
}

/* Steps the experiment trains: train.steps, or the sum of its phases' (an upper bound
 * when a phase stops at a plateau). */
static long total_steps(const struct intrus_config *cfg) {
  const intrus_cfg *train = peek_group(intrus_config_root(cfg), "train");
  int n = 0;
  if (train && intrus_cfg_has(train, "phases") && !intrus_cfg_list_len(train, "phases", &n, NULL)) {
    long sum = 0;
    for (int i = 0; i < n; i++) {
      const intrus_cfg *ph;
      if (!intrus_cfg_list_group(train, "phases", i, &ph, NULL)) sum += peek_int(ph, "steps", 0);
    }
    return sum;
  }
  return (long)peek_int(train, "steps", 0);
}

/* sgemm GFLOP/s of this machine (a 768^3 product, best of 12: about 0.1 s). */
static double sgemm_probe(void) {
  enum { N = 768 };
  float *a = calloc((size_t)3 * N * N, sizeof *a);
  if (!a) return 0.0;
  for (size_t i = 0; i < (size_t)2 * N * N; i++) a[i] = (float)(i % 7) * 0.1f;
  double best = 1e30;
  for (int rep = 0; rep < 12; rep++) {
    double t0 = mono_s();
    intrus_gemm(false, false, N, N, N, 1.0f, a, N, a + (size_t)N * N, N, 0.0f,
                a + (size_t)2 * N * N, N);
    double s = mono_s() - t0;
    if (s < best) best = s;
  }
  free(a);
  return 2.0 * N * N * N / best / 1e9;
}

/* Seconds per step from the model's size: 6 FLOPs per parameter and target token at 60%
 * of the sgemm peak for the left-to-right Transformer (what docs/benchmarks.md measures
 * on 2 cores), and for insertion phases the states scored per sentence at half a
 * sentence each, plus a rollout for the sampled and argmax policies. Fitted to this
 * project's quickstart runs; an order of magnitude, not a measurement. */
static double model_s_per_step(const struct intrus_config *cfg, double peak_gflops) {
  const intrus_cfg *root = intrus_config_root(cfg);
  const intrus_cfg *data = peek_group(root, "data"), *model = peek_group(root, "model"),
                   *train = peek_group(root, "train");
  const intrus_cfg *enc = peek_group(model, "encoder"), *dec = peek_group(model, "decoder");
  double d = (double)peek_int(model, "d_model", 256);
  double vocab, tokens;
  const char *kind = peek_string(data, "kind", "");
  if (strcmp(kind, "parallel") == 0 || strcmp(kind, "images") == 0) {
    /* Images: the decoder's cost only (the CNN's is not modelled). */
    vocab = (double)peek_int(data, "bpe_merges", 8000) + 300.0;
    tokens = (double)peek_int(train, "batch_tokens", 4000);
  } else {
    vocab = (double)peek_int(data, "vocab", 16);
    tokens = (double)peek_int(train, "batch", 32) *
             (double)(peek_int(data, "min_len", 2) + peek_int(data, "max_len", 8)) / 2.0;
  }
  double enc_p = (double)peek_int(enc, "layers", 1) *
                 (4 * d * d + 2 * d * (double)peek_int(enc, "ff", (long long)(4 * d)));
  double dec_p = (double)peek_int(dec, "layers", 1) *
                 (8 * d * d + 2 * d * (double)peek_int(dec, "ff", (long long)(4 * d)));
  double flops = 6.0 * (enc_p + dec_p + d * vocab) * tokens;
  double factor = 1.0;
  if (strcmp(peek_string(dec, "plugin", ""), "insertion") == 0 && train &&
      intrus_cfg_has(train, "phases")) {
    /* Weighted by each phase's steps. */
    int n = 0;
    double sum = 0.0, steps = 0.0;
    intrus_cfg_list_len(train, "phases", &n, NULL);
    for (int i = 0; i < n; i++) {
      const intrus_cfg *ph;
      if (intrus_cfg_list_group(train, "phases", i, &ph, NULL)) continue;
      const char *states = peek_string(ph, "states", "all");
      double k = strcmp(states, "one") == 0    ? 1.0
                 : strcmp(states, "some") == 0 ? (double)peek_int(ph, "per_sentence", 4)
                                               : 12.0;
      const char *policy = peek_string(peek_group(ph, "order"), "plugin", "uniform");
      bool rollout = strcmp(policy, "sampled") == 0 || strcmp(policy, "argmax") == 0;
      double st = (double)peek_int(ph, "steps", 0);
      sum += st * (0.5 * k + (rollout ? 0.9 : 0.0));
      steps += st;
    }
    if (steps > 0) factor = sum / steps;
  }
  return peak_gflops > 0 ? flops * factor / (0.6 * peak_gflops * 1e9) : NAN;
}

/* ---- data -------------------------------------------------------------------------- */

/* The corpus files a cell will read are there (train, valid, test of both sides; the test
 * pair's line counts agree): a table that would run for days learns of a missing corpus
 * before the first run, not after it. */
static enum intrus_status check_data(const char *experiment, struct intrus_error *err) {
  struct intrus_config *cfg = intrus_config_load_file(experiment, err);
  if (!cfg) return err->status;
  const intrus_cfg *data;
  struct dataset d = {0};
  enum intrus_status st;
  if ((st = intrus_cfg_group_req(intrus_config_root(cfg), "data", &data, err)) ||
      (st = dataset_configure(&d, data, intrus_config_filename(cfg), err)))
    goto done;
  if (d.kind == DATA_PARALLEL) {
    static const char *const splits[] = {"train", "valid", "test"};
    char path[4200];
    for (int i = 0; i < 3 && !st; i++)
      for (int side = 0; side < 2 && !st; side++) {
        dataset_split_path(&d, splits[i], side ? d.tgt_lang : d.src_lang, path, sizeof path);
        if (access(path, R_OK) != 0)
          st = intrus_error_set(err, INTRUS_ERR_DATA,
                                "%s: %s (the corpus of %s; the README's \"Data\" says how to "
                                "build it)", path, strerror(errno), experiment);
      }
    if (!st) st = intrus_run_check_test(cfg, err);
  } else if (d.kind == DATA_IMAGES) {
    /* The image lists and their references (their line counts); the images themselves
     * are read when the cell trains. */
    static const char *const splits[] = {"train", "valid"};
    char path[4200];
    for (int i = 0; i < 2 && !st; i++) {
      snprintf(path, sizeof path, "%s/%s.img", d.dir, splits[i]);
      if (access(path, R_OK) != 0)
        st = intrus_error_set(err, INTRUS_ERR_DATA,
                              "%s: %s (the image data of %s; the README's \"Data\" says how "
                              "to build it)", path, strerror(errno), experiment);
    }
    if (!st) st = intrus_run_check_test(cfg, err);
  }
done:
  dataset_free(&d);
  intrus_config_free(cfg);
  return st;
}

enum intrus_status table_check_data(const struct table_state *s, struct intrus_error *err) {
  for (int r = 0; r < s->t->nrows; r++)
    for (int c = 0; c < s->t->ncols; c++) {
      const struct table_cell_state *cs = &s->cells[r][c];
      if (cs->state != CELL_NEW && cs->state != CELL_PARTIAL) continue;
      enum intrus_status st = check_data(cs->experiment, err);
      if (st)
        return intrus_error_prefix(err, "row %s, column %s", s->t->rows[r].name,
                                   s->t->cols[c].name);
    }
  return INTRUS_OK;
}

/* ---- cells ------------------------------------------------------------------------ */

static enum intrus_status examine(struct table_state *s, int r, int c,
                                  struct intrus_error *err) {
  struct table_cell_state *cs = &s->cells[r][c];
  const struct table_cell *cell = &s->t->rows[r].cells[c];
  if (!cell->present) {
    cs->state = CELL_EMPTY;
    return INTRUS_OK;
  }
  struct intrus_config *cfg = intrus_config_load_file(cell->experiment, err);
  if (!cfg) return err->status;
  /* The fingerprints first: the lookups below must not see filled-in settings. */
  uint64_t fp = intrus_config_results_fingerprint(cfg);
  static const char *const cost_paths[] = {"model", "train"};
  cs->cost_fp = intrus_config_fingerprint(cfg, cost_paths, 2);
  struct cli_experiment x;
  enum intrus_status st = intrus_cli_experiment(cfg, NULL, s->plugin_path, &x, err);
  if (st) {
    intrus_config_free(cfg);
    return st;
  }
  intrus_plugin_search_free(x.search);
  snprintf(cs->experiment, sizeof cs->experiment, "%s", cell->experiment);
  snprintf(cs->name, sizeof cs->name, "%s", x.name);
  snprintf(cs->run_dir, sizeof cs->run_dir, "%s/%s", s->runs, x.name);
  cs->total_steps = total_steps(cfg);
  cs->step = checkpoint_step(cs->run_dir);
  long log_step;
  double train_s, sps;
  cs->train_s = NAN;
  cs->log_s_per_step = cs->model_s_per_step = NAN;
  if (log_speed(cs->run_dir, &log_step, &train_s, &sps)) {
    cs->train_s = train_s;
    cs->log_s_per_step = sps;
  }
  if (results_match(cs->run_dir, fp)) cs->state = CELL_DONE;
  else if (cs->step >= 0) cs->state = CELL_PARTIAL;
  else {
    cs->state = CELL_NEW;
    cs->step = 0;
  }
  if (cs->state != CELL_DONE && isnan(cs->log_s_per_step)) {
    if (s->peak_gflops == 0.0) s->peak_gflops = sgemm_probe();
    cs->model_s_per_step = model_s_per_step(cfg, s->peak_gflops);
  }
  intrus_config_free(cfg);
  return INTRUS_OK;
}

/* The time cell (r, c) still needs: at its own train.log's speed, else at that of a
 * cell of the same model and training settings that has run, else the cost model's. */
static void estimate(struct table_state *s, int r, int c) {
  struct table_cell_state *cs = &s->cells[r][c];
  cs->s_per_step = cs->log_s_per_step;
  for (int rr = 0; rr < s->t->nrows && isnan(cs->s_per_step); rr++)
    for (int cc = 0; cc < s->t->ncols && isnan(cs->s_per_step); cc++) {
      const struct table_cell_state *o = &s->cells[rr][cc];
      if (o->state != CELL_EMPTY && o->cost_fp == cs->cost_fp) cs->s_per_step = o->log_s_per_step;
    }
  cs->measured = !isnan(cs->s_per_step);
  if (!cs->measured) cs->s_per_step = cs->model_s_per_step;
  long left = cs->total_steps - cs->step;
  cs->estimate_s = cs->state == CELL_DONE ? 0.0 : (left > 0 ? left : 0) * cs->s_per_step;
}

struct table_state *table_state_new(const struct table_spec *t, const char *runs,
                                    const char *plugin_path, struct intrus_error *err) {
  struct table_state *s = calloc(1, sizeof *s);
  if (!s) {
    intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    return NULL;
  }
  s->t = t;
  snprintf(s->runs, sizeof s->runs, "%s", runs);
  s->plugin_path = plugin_path;
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++) {
      enum intrus_status st = examine(s, r, c, err);
      if (st) {
        intrus_error_prefix(err, "row %s, column %s", t->rows[r].name, t->cols[c].name);
        free(s);
        return NULL;
      }
    }
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++)
      if (s->cells[r][c].state != CELL_EMPTY) estimate(s, r, c);
  /* Two cells that train into one run directory would each undo the other's results. */
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++)
      for (int r2 = 0; r2 < t->nrows; r2++)
        for (int c2 = 0; c2 < t->ncols; c2++) {
          const struct table_cell_state *a = &s->cells[r][c], *b = &s->cells[r2][c2];
          if ((r2 * t->ncols + c2) > (r * t->ncols + c) && a->state != CELL_EMPTY &&
              b->state != CELL_EMPTY && strcmp(a->run_dir, b->run_dir) == 0 &&
              strcmp(a->experiment, b->experiment) != 0) {
            intrus_error_set(err, INTRUS_ERR_CONFIG,
                             "%s and %s both name experiment '%s' (run directory %s): give "
                             "each experiment its own name",
                             a->experiment, b->experiment, a->name, a->run_dir);
            free(s);
            return NULL;
          }
        }
  return s;
}

void table_state_free(struct table_state *s) { free(s); }

void table_cell_refresh(struct table_state *s, int r, int c) {
  struct intrus_error e = {0};
  struct table_cell_state *cs = &s->cells[r][c];
  if (examine(s, r, c, &e)) {
    cs->state = CELL_FAILED;
    snprintf(cs->error, sizeof cs->error, "%s", e.msg);
  } else if (cs->state != CELL_EMPTY) {
    estimate(s, r, c);
  }
}

void table_duration(double sec, char *out, size_t n) {
  if (!isfinite(sec)) snprintf(out, n, "?");
  else if (sec < 90) snprintf(out, n, "%.0f s", sec);
  else if (sec < 5400) snprintf(out, n, "%.0f min", sec / 60);
  else snprintf(out, n, "%.1f h", sec / 3600);
}

void table_print_plan(const struct table_state *s, FILE *f) {
  const struct table_spec *t = s->t;
  double total = 0.0;
  int runs = 0, modelled = 0;
  fprintf(f, "%s (%s)\n", t->title, t->name);
  int wr = 4, wc = 6; /* widths of the row and column names */
  for (int r = 0; r < t->nrows; r++)
    if ((int)strlen(t->rows[r].name) > wr) wr = (int)strlen(t->rows[r].name);
  for (int c = 0; c < t->ncols; c++)
    if ((int)strlen(t->cols[c].name) > wc) wc = (int)strlen(t->cols[c].name);
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++) {
      const struct table_cell_state *cs = &s->cells[r][c];
      if (cs->state == CELL_EMPTY) continue;
      char est[32];
      table_duration(cs->estimate_s, est, sizeof est);
      fprintf(f, "  %-*s  %-*s  ", wr, t->rows[r].name, wc, t->cols[c].name);
      switch (cs->state) {
      case CELL_DONE: fprintf(f, "done      %s", cs->run_dir); break;
      case CELL_PARTIAL:
        fprintf(f, "resume    %s at step %ld of %ld, %s%s", cs->run_dir, cs->step,
                cs->total_steps, cs->measured ? "" : "~", est);
        break;
      case CELL_NEW:
        fprintf(f, "train     %s, %ld steps, %s%s", cs->run_dir, cs->total_steps,
                cs->measured ? "" : "~", est);
        break;
      default: fprintf(f, "failed    %s: %s", cs->run_dir, cs->error); break;
      }
      fputc('\n', f);
      /* Cells that share a run (one experiment in two columns: BLEU and CIDEr-D of
       * the same captions) train it once. */
      bool first = true;
      for (int k = 0; k < r * t->ncols + c && first; k++) {
        const struct table_cell_state *o = &s->cells[k / t->ncols][k % t->ncols];
        if (o->state != CELL_EMPTY && strcmp(o->run_dir, cs->run_dir) == 0) first = false;
      }
      if (first && (cs->state == CELL_PARTIAL || cs->state == CELL_NEW)) {
        runs++;
        modelled += !cs->measured;
        if (isfinite(cs->estimate_s)) total += cs->estimate_s;
      }
    }
  char est[32];
  table_duration(total, est, sizeof est);
  if (!runs) fprintf(f, "nothing to train\n");
  else
    fprintf(f, "%d run%s to train, about %s of training%s\n", runs, runs == 1 ? "" : "s", est,
            modelled ? " (~: from the model's size, not yet measured on this machine; "
                       "decoding the test sets comes on top)"
                     : " (from the runs' own speed; decoding the test sets comes on top)");
}

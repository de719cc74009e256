/* What each cell of a results table still needs, and how long that should take. */
#include <dirent.h>
#include <inttypes.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "intrus/blas.h"
#include "intrus/checkpoint.h"
#include "intrus/corpus.h"
#include "intrus/rng.h"
#include "cli_distill.h"
#include "table_run.h"
#include "train/run_dir.h"
#include "train/run_log.h"
#include "text/dataset.h"
#include "base/clock.h"
#include "base/xalloc.h"

/* ---- what the run directory holds ------------------------------------------------ */

/* results.json of exactly these settings (its "fingerprint") and the test output; its
 * "steps" into *steps (left alone without one): a finished run copied without its
 * checkpoint still says how far it trained. */
static bool results_match(const char *run_dir, uint64_t fp, long *steps) {
  char path[4500], *json = NULL, want[64];
  size_t len;
  struct intrus_error e = {0};
  snprintf(path, sizeof path, "%s/test.hyp", run_dir);
  if (access(path, R_OK) != 0) return false;
  snprintf(path, sizeof path, "%s/results.json", run_dir);
  if (access(path, R_OK) != 0 || intrus_file_read_all(path, &json, &len, &e)) return false;
  snprintf(want, sizeof want, "\"fingerprint\": \"%016" PRIx64 "\"", fp);
  bool ok = strstr(json, want) != NULL;
  const char *st = strstr(json, "\"steps\": ");
  if (ok && st) *steps = strtol(st + 9, NULL, 10);
  free(json);
  return ok;
}

/* The checkpoint's step and, for a phased run, the phase it is in and the step that
 * phase began after (0 and 0 without phases). false when there is no checkpoint. */
static bool checkpoint_where(const char *run_dir, long *step, int *phase, long *phase_start) {
  char path[4500];
  snprintf(path, sizeof path, "%s/checkpoint.ckpt", run_dir);
  if (access(path, R_OK) != 0) return false;
  struct intrus_ckpt *c;
  struct intrus_error e = {0};
  if (intrus_ckpt_read(path, false, 0, &c, &e)) return false;
  uint64_t v = 0, ph = 0, start = 0;
  bool ok = intrus_ckpt_u64(c, "step", &v);
  if (ok && intrus_ckpt_u64(c, "phase", &ph) && intrus_ckpt_u64(c, "phase_start", &start)) {
    *phase = (int)ph;
    *phase_start = (long)start;
  } else {
    *phase = 0;
    *phase_start = 0;
  }
  intrus_ckpt_free(c);
  *step = (long)v;
  return ok;
}

/* train.log's rows as (step, train_s), steps strictly increasing. A log from before
 * resumes trimmed it (run_log_trim) repeats the steps a killed run logged after its
 * last checkpoint: the later rows replace the earlier ones, as `intrus plot` reads them. */
struct log_row {
  long step;
  double secs;
};
struct log_rows {
  struct log_row *row;
  size_t n, cap;
};

static bool log_rows_read(const char *run_dir, struct log_rows *r) {
  char path[4500], line[1024];
  memset(r, 0, sizeof *r);
  snprintf(path, sizeof path, "%s/train.log", run_dir);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  int col = -1; /* train_s by the header's name: later columns follow it */
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "step\t", 5) == 0) col = run_log_column(line, "train_s");
    const char *cell = line;
    for (int i = 0; i < col && cell; i++)
      if ((cell = strchr(cell, '\t'))) cell++;
    if (line[0] < '0' || line[0] > '9' || col < 1 || !cell) continue;
    struct log_row row = {strtol(line, NULL, 10), strtod(cell, NULL)};
    if (row.step <= 0 || !(row.secs > 0)) continue;
    while (r->n > 0 && r->row[r->n - 1].step >= row.step) r->n--;
    xgrow((void **)&r->row, &r->cap, r->n + 1, sizeof *r->row, 256);
    r->row[r->n++] = row;
  }
  fclose(f);
  if (r->n == 0) {
    free(r->row);
    r->row = NULL;
  }
  return r->n > 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (n > 0), sorting v in place. */
static double median_sort(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Seconds per step of the phase whose rows are lo <= step <= hi (the row at lo, the step
 * the phase began after, times where it starts): the median over the intervals between
 * its last rows (up to 20). The last rows, not the phase's average: the current speed.
 * The median, not their mean: a pause, or a stretch shared with another job, moves a
 * few intervals, not the estimate. NAN without two such rows. */
static double log_rate(const struct log_rows *r, long lo, long hi) {
  enum { BACK = 20 };
  double rate[BACK];
  int n = 0;
  const struct log_row *w = r->row;
  long i = (long)r->n - 1;
  while (i >= 0 && w[i].step > hi) i--;
  for (; i >= 1 && n < BACK && w[i - 1].step >= lo; i--)
    if (w[i].secs > w[i - 1].secs)
      rate[n++] = (w[i].secs - w[i - 1].secs) / (double)(w[i].step - w[i - 1].step);
  return n == 0 ? NAN : median_sort(rate, n);
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
static bool peek_bool(const intrus_cfg *g, const char *key, bool def) {
  bool v = def;
  if (g && intrus_cfg_has(g, key)) intrus_cfg_bool(g, key, def, &v, NULL);
  return v;
}
static const intrus_cfg *peek_group(const intrus_cfg *g, const char *key) {
  const intrus_cfg *v = NULL;
  if (g && intrus_cfg_has(g, key)) intrus_cfg_group(g, key, &v, NULL);
  return v;
}

/* The experiment's phases (train.phases; a run without them is one phase of
 * train.steps), each one's steps (at most, when it stops at a plateau) and its cost
 * relative to a left-to-right step of the same model in the cost model below: the states
 * scored per sentence at half a sentence each, plus a rollout for the sampled and argmax
 * policies. Fitted to this project's quickstart runs; an order of magnitude. argmax's
 * rollout is a beam search to the end of each sentence with the normalised scores: 1.8
 * per hypothesis of its beam, fitted to its step against the sampled phase's on the small
 * preset's model (3.2 times, 60 steps of each from scratch on en-ru, 2026-11-28). */
static int read_phases(const struct intrus_config *cfg, long steps[TABLE_MAX_PHASES],
                       double factor[TABLE_MAX_PHASES]) {
  const intrus_cfg *root = intrus_config_root(cfg);
  const intrus_cfg *train = peek_group(root, "train");
  const intrus_cfg *dec = peek_group(peek_group(root, "model"), "decoder");
  bool insertion = strcmp(peek_string(dec, "plugin", ""), "insertion") == 0;
  int n = 0;
  if (!train || !intrus_cfg_has(train, "phases") ||
      intrus_cfg_list_len(train, "phases", &n, NULL) || n < 1) {
    steps[0] = (long)peek_int(train, "steps", 0);
    factor[0] = 1.0;
    return 1;
  }
  if (n > TABLE_MAX_PHASES) n = TABLE_MAX_PHASES;
  for (int i = 0; i < n; i++) {
    const intrus_cfg *ph = NULL;
    if (intrus_cfg_list_group(train, "phases", i, &ph, NULL)) ph = NULL;
    steps[i] = (long)peek_int(ph, "steps", 0);
    factor[i] = 1.0;
    if (insertion) {
      const char *states = peek_string(ph, "states", "all");
      double k = strcmp(states, "one") == 0    ? 1.0
                 : strcmp(states, "some") == 0 ? (double)peek_int(ph, "per_sentence", 4)
                                               : 12.0;
      const char *policy = peek_string(peek_group(ph, "order"), "plugin", "uniform");
      double rollout = strcmp(policy, "sampled") == 0 ? 0.9
                       : strcmp(policy, "argmax") == 0
                           ? 1.8 * (double)peek_int(peek_group(ph, "order"), "beam", 4)
                           : 0.0;
      factor[i] = 0.5 * k + rollout;
    }
  }
  return n;
}

static uint64_t key_int(uint64_t h, long long v) { return intrus_fnv1a(h, &v, sizeof v); }
static uint64_t key_str(uint64_t h, const char *v) { return intrus_fnv1a(h, v, strlen(v) + 1); }

/* A Transformer stack's shape: plugin, layers, heads, ff (training's defaults where the
 * file leaves one out). */
static uint64_t key_stack(uint64_t h, const intrus_cfg *g, long long d_model) {
  h = key_str(h, peek_string(g, "plugin", ""));
  h = key_int(h, peek_int(g, "layers", 6));
  h = key_int(h, peek_int(g, "heads", 8));
  return key_int(h, peek_int(g, "ff", 4 * d_model));
}

/* What one step of phase p costs depends on: the model's shape, the batch, and what the
 * phase scores (its policy, states, loss); not its schedule (lr, warm-up, steps), its
 * seed or its corpus (batches are counted in tokens). Values as read, with training's
 * defaults for what a file leaves out, so an experiment file and the effective.cfg its
 * run wrote give one key. 0 (none) for a model this does not read: an encoder other
 * than the Transformer. */
static uint64_t phase_key(const struct intrus_config *cfg, int p) {
  const intrus_cfg *root = intrus_config_root(cfg);
  const intrus_cfg *model = peek_group(root, "model"), *train = peek_group(root, "train");
  const intrus_cfg *enc = peek_group(model, "encoder"), *dec = peek_group(model, "decoder");
  if (strcmp(peek_string(enc, "plugin", ""), "transformer") != 0) return 0;
  long long d = peek_int(model, "d_model", 512);
  uint64_t h = key_int(INTRUS_FNV_INIT, d);
  h = key_stack(h, enc, d);
  h = key_stack(h, dec, d);
  h = key_str(h, peek_string(dec, "slots", "token"));
  h = key_int(h, peek_int(train, "batch_tokens", 4000));
  h = key_int(h, peek_int(train, "micro_batch_tokens", 0));
  int n = 0;
  if (!train || !intrus_cfg_has(train, "phases") ||
      intrus_cfg_list_len(train, "phases", &n, NULL) || n < 1)
    return key_str(h, "one phase");
  const intrus_cfg *ph = NULL;
  if (p >= n || intrus_cfg_list_group(train, "phases", p, &ph, NULL)) return 0;
  h = key_str(h, peek_string(peek_group(ph, "order"), "plugin", ""));
  h = key_str(h, peek_string(ph, "loss", "main"));
  const char *states = peek_string(ph, "states", "all");
  h = key_str(h, states);
  h = key_int(h, strcmp(states, "some") == 0 ? peek_int(ph, "per_sentence", 4) : 0);
  h = key_int(h, peek_bool(ph, "finish_state", false));
  return h ? h : 1;
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

/* GFLOP of a left-to-right step from the model's size: 6 FLOPs per parameter and target
 * token; read_phases scales it per phase. Seconds come from timed runs
 * (table_s_per_gflop) or the sgemm probe: the FLOP count alone does not depend on what
 * else the machine is running. */
static double model_gflop_per_step(const struct intrus_config *cfg) {
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
  return 6.0 * (enc_p + dec_p + d * vocab) * tokens / 1e9;
}

/* ---- data -------------------------------------------------------------------------- */

/* The corpus files a cell will read are there (train, valid, test of both sides; the test
 * pair's line counts agree): a table that would run for days learns of a missing corpus
 * before the first run, not after it. A distilled corpus is made when its cell runs: the
 * corpus its teacher reads is checked. */
static enum intrus_status check_data(const char *cell, const char *cell_run,
                                     struct intrus_error *err) {
  char experiment[4200], run_dir[4200];
  enum intrus_status st = cli_distill_origin(cell, cell_run, experiment, run_dir, 4200, err);
  if (st) return st;
  struct intrus_config *cfg = intrus_config_load_file(experiment, err);
  if (!cfg) return err->status;
  const intrus_cfg *data;
  struct dataset d = {0};
  if ((st = intrus_cfg_group_req(intrus_config_root(cfg), "data", &data, err)) ||
      (st = dataset_configure(&d, data, intrus_config_filename(cfg), run_dir, err)))
    goto done;
  if (d.kind == DATA_PARALLEL) {
    static const char *const splits[] = {"train", "valid", "test"};
    char path[4200];
    for (int i = 0; i < 3 && !st; i++)
      for (int side = 0; side < 2 && !st; side++) {
        dataset_split_path(&d, splits[i], side ? d.tgt_lang : d.src_lang, path, sizeof path);
        if (access(path, R_OK) != 0)
          st = intrus_error_set(err, INTRUS_ERR_DATA,
                                "%s: %s (the corpus of %s; docs/guide.md, \"Data\", says how to "
                                "build it)", path, strerror(errno), experiment);
      }
    if (!st) st = intrus_run_check_test(cfg, run_dir, err);
  } else if (d.kind == DATA_IMAGES) {
    /* The image lists and their references (their line counts); the images themselves
     * are read when the cell trains. */
    static const char *const splits[] = {"train", "valid"};
    char path[4200];
    for (int i = 0; i < 2 && !st; i++) {
      snprintf(path, sizeof path, "%s/%s.img", d.dir, splits[i]);
      if (access(path, R_OK) != 0)
        st = intrus_error_set(err, INTRUS_ERR_DATA,
                              "%s: %s (the image data of %s; docs/guide.md, \"Data\", says how "
                              "to build it)", path, strerror(errno), experiment);
    }
    if (!st) st = intrus_run_check_test(cfg, run_dir, err);
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
      if (!table_cell_to_run(cs)) continue;
      enum intrus_status st = check_data(cs->experiment, cs->run_dir, err);
      if (st)
        return intrus_error_prefix(err, "row %s, column %s", s->t->rows[r].name,
                                   s->t->cols[c].name);
    }
  return INTRUS_OK;
}

/* ---- the training data ------------------------------------------------------------ */

/* The fingerprint of the experiment's training split as its corpus holds it now (what a
 * run records in tokenizer.txt: dataset_train_fp of the raw pairs); false for other data
 * kinds or an unreadable corpus (table_check_data names it before anything runs). Each
 * pair of files is read once per table. */
static bool corpus_now(struct table_state *s, const struct intrus_config *cfg,
                       const char *run_dir, uint64_t *fp) {
  const intrus_cfg *data;
  struct dataset d = {0};
  struct intrus_error e = {0};
  bool ok = false;
  if (intrus_cfg_group_req(intrus_config_root(cfg), "data", &data, &e) ||
      dataset_configure(&d, data, intrus_config_filename(cfg), run_dir, &e) ||
      d.kind != DATA_PARALLEL)
    goto done;
  char sp[4200], tp[4200];
  dataset_split_path(&d, "train", d.src_lang, sp, sizeof sp);
  dataset_split_path(&d, "train", d.tgt_lang, tp, sizeof tp);
  const uint64_t key =
      intrus_fnv1a(intrus_fnv1a(INTRUS_FNV_INIT, sp, strlen(sp) + 1), tp, strlen(tp) + 1);
  for (int i = 0; i < s->ncorpora && !ok; i++)
    if (s->corpora[i].paths == key) {
      *fp = s->corpora[i].fp;
      ok = true;
    }
  if (ok) goto done;
  struct intrus_parallel_text train = {0};
  if (intrus_parallel_read(sp, tp, &train, &e)) goto done;
  *fp = dataset_train_fp(&train);
  intrus_parallel_free(&train);
  ok = true;
  if (s->ncorpora < TABLE_MAX_CORPORA) {
    s->corpora[s->ncorpora].paths = key;
    s->corpora[s->ncorpora++].fp = *fp;
  }
done:
  dataset_free(&d);
  return ok;
}

void table_data_text(const struct table_cell_state *cs, char *out, size_t n) {
  if (!cs->data_recorded) snprintf(out, n, "not recorded");
  else if (cs->data_known && cs->data_now != cs->data_trained)
    snprintf(out, n, "0x%08" PRIx64 " (corpus now 0x%08" PRIx64 ")", cs->data_trained >> 32,
             cs->data_now >> 32);
  else snprintf(out, n, "0x%08" PRIx64, cs->data_trained >> 32);
}

int table_data_notes(const struct table_state *s, FILE *f, const char *prefix) {
  const struct table_spec *t = s->t;
  int n = 0;
  for (int c = 0; c < t->ncols; c++) {
    const struct table_cell_state *first = NULL;
    bool differ = false;
    for (int r = 0; r < t->nrows; r++) {
      const struct table_cell_state *cs = &s->cells[r][c];
      if (cs->state == CELL_EMPTY || cs->state == CELL_NEW) continue;
      if (!cs->data_recorded) {
        if (cs->data_known) {
          fprintf(f, "%srow %s, column %s: %s records no training data (no tokenizer.txt): "
                     "not checked against the corpus or the column's other cells\n",
                  prefix, t->rows[r].name, t->cols[c].name, cs->run_dir);
          n++;
        }
        continue;
      }
      if (cs->data_known && cs->data_now != cs->data_trained) {
        fprintf(f, "%srow %s, column %s: %s was trained on other training data (0x%016" PRIx64
                   ") than its corpus holds now (0x%016" PRIx64 ")%s\n",
                prefix, t->rows[r].name, t->cols[c].name, cs->run_dir, cs->data_trained,
                cs->data_now, cs->state == CELL_PARTIAL ? "; resuming it will be refused" : "");
        n++;
      }
      if (!first) first = cs;
      else if (cs->data_trained != first->data_trained) differ = true;
    }
    if (!differ) continue;
    fprintf(f, "%scolumn %s: its cells were trained on different training data (", prefix,
            t->cols[c].name);
    const char *sep = "";
    for (int r = 0; r < t->nrows; r++) {
      const struct table_cell_state *cs = &s->cells[r][c];
      if (cs->state == CELL_EMPTY || cs->state == CELL_NEW || !cs->data_recorded) continue;
      fprintf(f, "%s%s 0x%08" PRIx64, sep, t->rows[r].name, cs->data_trained >> 32);
      sep = ", ";
    }
    fputs("): their scores do not compare\n", f);
    n++;
  }
  return n;
}

/* ---- cells ------------------------------------------------------------------------ */

/* Each phase's seconds per step in run_dir's train.log (NAN where it has too few rows),
 * for a run of these phases whose checkpoint is in phase cur, begun after step start: the
 * phase it is in from where it began; the ones before back from there by their steps (a
 * phase that stopped at a plateau ran fewer: its predecessor's rows are then looked for a
 * little early). Returns the log's last train_s, NAN without one. */
static double phase_rates(const char *run_dir, int nphases, const long *steps, int cur,
                          long start, double *rate) {
  struct log_rows rows;
  for (int p = 0; p < nphases; p++) rate[p] = NAN;
  if (!log_rows_read(run_dir, &rows)) return NAN;
  double train_s = rows.row[rows.n - 1].secs;
  if (cur < nphases) rate[cur] = log_rate(&rows, start, start + steps[cur]);
  long end = start;
  for (int p = (cur < nphases ? cur : nphases) - 1; p >= 0; p--) {
    rate[p] = log_rate(&rows, end - steps[p], end);
    end -= steps[p];
  }
  free(rows.row);
  return train_s;
}

/* Remembers the phase speeds of the runs in the runs directory that are no cell of this
 * table, from the effective.cfg each wrote, its checkpoint and its train.log. Once per
 * table state, and only when a cell to run needs it (estimate). */
static void scan_other_runs(struct table_state *s) {
  if (s->scanned) return;
  s->scanned = true;
  DIR *d = opendir(s->runs);
  if (!d) return;
  const struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char dir[4400], path[4500];
    snprintf(dir, sizeof dir, "%s/%s", s->runs, e->d_name);
    bool cell = false;
    for (int k = 0; k < s->t->nrows * s->t->ncols && !cell; k++)
      cell = s->cells[k / s->t->ncols][k % s->t->ncols].state != CELL_EMPTY &&
             strcmp(s->cells[k / s->t->ncols][k % s->t->ncols].run_dir, dir) == 0;
    long step, start;
    int cur;
    struct stat st;
    snprintf(path, sizeof path, "%s/train.log", dir);
    if (cell || stat(path, &st) != 0 || !checkpoint_where(dir, &step, &cur, &start)) continue;
    snprintf(path, sizeof path, "%s/effective.cfg", dir);
    struct intrus_error err = {0};
    struct intrus_config *cfg = intrus_config_load_file(path, &err);
    if (!cfg) continue;
    long steps[TABLE_MAX_PHASES];
    double factor[TABLE_MAX_PHASES], rate[TABLE_MAX_PHASES];
    int n = read_phases(cfg, steps, factor);
    double gflop = model_gflop_per_step(cfg);
    phase_rates(dir, n, steps, cur, start, rate);
    for (int p = 0; p < n; p++) {
      uint64_t key = phase_key(cfg, p);
      if (!key || !isfinite(rate[p])) continue;
      int k = 0;
      while (k < s->nknown && s->known[k].key != key) k++;
      if (k == s->nknown && s->nknown == TABLE_MAX_KNOWN) continue;
      if (k < s->nknown && s->known[k].mtime >= (double)st.st_mtime) continue;
      s->known[k] = (struct table_known_phase){key, rate[p], gflop * factor[p],
                                               (double)st.st_mtime};
      if (k == s->nknown) s->nknown++;
    }
    intrus_config_free(cfg);
  }
  closedir(d);
}

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
  long steps[TABLE_MAX_PHASES], start = 0;
  int cur = 0;
  cs->nphases = read_phases(cfg, steps, cs->phase_factor);
  cs->total_steps = 0;
  for (int p = 0; p < cs->nphases; p++) cs->total_steps += steps[p];
  bool have_ckpt = checkpoint_where(cs->run_dir, &cs->step, &cur, &start);
  if (!have_ckpt) cs->step = 0;
  bool done = results_match(cs->run_dir, fp, &cs->step);
  if (done && !have_ckpt) {
    /* A finished run kept without its checkpoint (docs/small-* copied back): every phase
     * ended by the last step, so its phases are timed back from there and still time
     * other cells' phases of the same kind. */
    cur = cs->nphases;
    start = cs->step;
  }
  for (int p = 0; p < cs->nphases; p++) {
    long left = p < cur ? 0 : p == cur ? steps[p] - (cs->step - start) : steps[p];
    cs->phase_left[p] = left > 0 ? left : 0;
    cs->phase_rate[p] = NAN;
  }
  cs->train_s = phase_rates(cs->run_dir, cs->nphases, steps, cur, start, cs->phase_rate);
  cs->setups = run_dir_count_setups(cs->run_dir);
  for (int p = 0; p < cs->nphases; p++) cs->phase_key[p] = phase_key(cfg, p);
  if (done) cs->state = CELL_DONE;
  else if (have_ckpt) cs->state = CELL_PARTIAL;
  else cs->state = CELL_NEW;
  cs->data_recorded = dataset_manifest_train(cs->run_dir, &cs->data_trained);
  cs->data_known = corpus_now(s, cfg, cs->run_dir, &cs->data_now);
  cs->model_gflop = model_gflop_per_step(cfg);
  intrus_config_free(cfg);
  return INTRUS_OK;
}

/* Seconds per GFLOP of the cost model (model_gflop_per_step times a phase's factor) where
 * a cell has no timed phase of its own: the median over every phase that was timed, in
 * the table's cells and in the other runs read (known), so that the model is scaled by
 * how far it was off on this machine's runs; without any, the sgemm probe at 60% of its
 * peak (what docs/benchmarks.md measures on 2 cores). The probe reads what the machine
 * gives it now: beside a training run, about half, and every modelled estimate twice
 * as long; a run's train.log does not depend on when the table is looked at. */
static double table_s_per_gflop(struct table_state *s) {
  double *v = xmalloc(sizeof *v * (size_t)(s->t->nrows * s->t->ncols * TABLE_MAX_PHASES +
                                           s->nknown + 1));
  int n = 0;
  for (int k = 0; k < s->t->nrows * s->t->ncols; k++) {
    const struct table_cell_state *o = &s->cells[k / s->t->ncols][k % s->t->ncols];
    if (o->state == CELL_EMPTY || !(o->model_gflop > 0)) continue;
    for (int q = 0; q < o->nphases; q++)
      if (isfinite(o->phase_rate[q]) && o->phase_factor[q] > 0)
        v[n++] = o->phase_rate[q] / (o->model_gflop * o->phase_factor[q]);
  }
  for (int k = 0; k < s->nknown; k++)
    if (isfinite(s->known[k].rate) && s->known[k].gflop > 0)
      v[n++] = s->known[k].rate / s->known[k].gflop;
  double spg;
  if (n > 0) {
    spg = median_sort(v, n);
  } else {
    if (s->peak_gflops == 0.0) s->peak_gflops = sgemm_probe();
    spg = s->peak_gflops > 0 ? 1.0 / (0.6 * s->peak_gflops) : NAN;
  }
  free(v);
  return spg;
}

/* The time cell (r, c) still needs, phase by phase (an INTRUS run's sampled step costs
 * several of its pretraining steps): at the speed of that phase in its own train.log,
 * else of a phase with the same key (phase_key: same model, batch and what the phase
 * scores) in another cell's train.log, else in another run's of the runs directory,
 * else the cost model's, scaled by how far the model was off on a phase of this cell
 * that was timed, else on the runs that were (table_s_per_gflop). */
static void estimate(struct table_state *s, int r, int c) {
  struct table_cell_state *cs = &s->cells[r][c];
  double rate[TABLE_MAX_PHASES];
  for (int p = 0; p < cs->nphases; p++) {
    rate[p] = cs->phase_rate[p];
    uint64_t key = cs->phase_key[p];
    for (int k = 0; k < s->t->nrows * s->t->ncols && isnan(rate[p]) && key; k++) {
      const struct table_cell_state *o = &s->cells[k / s->t->ncols][k % s->t->ncols];
      if (o->state == CELL_EMPTY) continue;
      for (int q = 0; q < o->nphases && isnan(rate[p]); q++)
        if (o->phase_key[q] == key) rate[p] = o->phase_rate[q];
    }
    if (isnan(rate[p]) && key && cs->state != CELL_DONE) scan_other_runs(s);
    for (int k = 0; k < s->nknown && isnan(rate[p]) && key; k++)
      if (s->known[k].key == key) rate[p] = s->known[k].rate;
  }
  cs->estimate_s = 0.0;
  cs->measured = true;
  if (cs->state == CELL_DONE) return;
  double spg = NAN; /* seconds per model GFLOP, once a phase needs the model */
  for (int p = cs->nphases - 1; p >= 0 && cs->model_gflop > 0; p--)
    if (isfinite(rate[p]) && cs->phase_factor[p] > 0) {
      spg = rate[p] / (cs->model_gflop * cs->phase_factor[p]);
      break;
    }
  double sum = 0.0;
  for (int p = 0; p < cs->nphases; p++) {
    if (cs->phase_left[p] == 0) continue;
    double sp = rate[p];
    if (isnan(sp)) {
      scan_other_runs(s); /* a cell without keys (another encoder) calibrates on them too */
      if (isnan(spg)) spg = table_s_per_gflop(s);
      sp = cs->model_gflop * cs->phase_factor[p] * spg;
      cs->measured = false;
    }
    sum += (double)cs->phase_left[p] * sp;
  }
  cs->estimate_s = sum;
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

/* "a, b, c": the names an unknown --row or --column could have been. */
static void names_text(const char *const *names, int n, char *out, size_t size) {
  size_t at = 0;
  out[0] = '\0';
  for (int i = 0; i < n && at < size; i++) {
    int w = snprintf(out + at, size - at, "%s%s", i ? ", " : "", names[i]);
    if (w < 0) break;
    at += (size_t)w;
  }
}

/* The index of name among names, or -1 with err set (what names there are). */
static int select_find(const char *what, const char *name, const char *const *names, int n,
                       const char *table, struct intrus_error *err) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return i;
  char all[2048];
  names_text(names, n, all, sizeof all);
  intrus_error_set(err, INTRUS_ERR_INVALID, "--%s %s: %s has no %s of that name (%ss: %s)",
                   what, name, table, what, what, all);
  return -1;
}

enum intrus_status table_select(struct table_state *s, const char *const *rows, int nrows,
                                const char *const *cols, int ncols, struct intrus_error *err) {
  const struct table_spec *t = s->t;
  const char *row_names[TABLE_MAX_ROWS], *col_names[TABLE_MAX_COLUMNS];
  bool row_on[TABLE_MAX_ROWS] = {0}, col_on[TABLE_MAX_COLUMNS] = {0};
  for (int r = 0; r < t->nrows; r++) row_names[r] = t->rows[r].name;
  for (int c = 0; c < t->ncols; c++) col_names[c] = t->cols[c].name;
  for (int i = 0; i < nrows; i++) {
    int r = select_find("row", rows[i], row_names, t->nrows, t->name, err);
    if (r < 0) return err->status;
    row_on[r] = true;
  }
  for (int i = 0; i < ncols; i++) {
    int c = select_find("column", cols[i], col_names, t->ncols, t->name, err);
    if (c < 0) return err->status;
    col_on[c] = true;
  }
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++)
      s->cells[r][c].held = (nrows > 0 && !row_on[r]) || (ncols > 0 && !col_on[c]);
  /* A run is one: a cell that shares its run with a selected cell (BLEU and CIDEr-D of
   * the same captions) is trained with it. */
  for (int k = 0; k < t->nrows * t->ncols; k++) {
    struct table_cell_state *cs = &s->cells[k / t->ncols][k % t->ncols];
    for (int o = 0; o < t->nrows * t->ncols && cs->held && cs->state != CELL_EMPTY; o++) {
      const struct table_cell_state *os = &s->cells[o / t->ncols][o % t->ncols];
      if (!os->held && os->state != CELL_EMPTY && strcmp(os->run_dir, cs->run_dir) == 0)
        cs->held = false;
    }
  }
  return INTRUS_OK;
}

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
  else if (sec < 172800) snprintf(out, n, "%.1f h", sec / 3600);
  else snprintf(out, n, "%.1f days", sec / 86400);
}

void table_print_plan(const struct table_state *s, FILE *f) {
  const struct table_spec *t = s->t;
  double total = 0.0, held_total = 0.0;
  int runs = 0, modelled = 0, held = 0;
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
      if (cs->held && table_cell_unfinished(cs)) fputs("  (not selected)", f);
      fputc('\n', f);
      /* Cells that share a run (one experiment in two columns: BLEU and CIDEr-D of
       * the same captions) train it once. */
      bool first = true;
      for (int k = 0; k < r * t->ncols + c && first; k++) {
        const struct table_cell_state *o = &s->cells[k / t->ncols][k % t->ncols];
        if (o->state != CELL_EMPTY && strcmp(o->run_dir, cs->run_dir) == 0) first = false;
      }
      if (first && cs->held && table_cell_unfinished(cs)) {
        held++;
        if (isfinite(cs->estimate_s)) held_total += cs->estimate_s;
      } else if (first && table_cell_unfinished(cs)) {
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
            modelled ? " (~: a phase of a kind no run has timed is timed from the model's "
                       "size, scaled by how far that model was off on the runs that were "
                       "timed; validation and the test decode come on top)"
                     : " (from the runs' own speed; validation and the test decode come on "
                       "top)");
  if (held) {
    table_duration(held_total, est, sizeof est);
    fprintf(f, "%d more run%s not selected by --row / --column (about %s): not run now\n",
            held, held == 1 ? "" : "s", est);
  }
  table_data_notes(s, f, "note: ");
}

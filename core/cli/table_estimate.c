/* How long each cell of a results table should take to train: the speed of each phase
 * in a run's train.log, of the same kind of phase in other cells and runs, or the
 * cost model's. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "intrus/blas.h"
#include "intrus/rng.h"
#include "table_run.h"
#include "table_run_internal.h"
#include "train/run_log.h"
#include "base/clock.h"
#include "base/xalloc.h"

/* ---- train.log's speeds ---------------------------------------------------------- */

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
 * relative to a left-to-right step of the same decoder in the cost model below: the states
 * scored per sentence at half a sentence each, plus a rollout for the sampled and argmax
 * policies. Fitted to this project's quickstart runs; an order of magnitude. argmax's
 * rollout is a beam search to the end of each sentence with the normalised scores: 1.8
 * per hypothesis of its beam, fitted to its step against the sampled phase's on the small
 * preset's model (3.2 times, 60 steps of each from scratch on en-ru, 2026-11-28). */
int table_read_phases(const struct intrus_config *cfg, long steps[TABLE_MAX_PHASES],
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

bool table_last_phase_restarts(const struct intrus_config *cfg) {
  const intrus_cfg *train = peek_group(intrus_config_root(cfg), "train"), *ph = NULL;
  int n = 0;
  if (!train || !intrus_cfg_has(train, "phases") ||
      intrus_cfg_list_len(train, "phases", &n, NULL) || n < 1 ||
      intrus_cfg_list_group(train, "phases", n - 1, &ph, NULL))
    return false;
  return peek_bool(ph, "restart_optimizer", false);
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
uint64_t table_phase_key(const struct intrus_config *cfg, int p) {
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

/* GFLOP of a CNN encoder's training step (forward and backward: 3 times the forward's
 * multiply-adds, 2 FLOPs each) over a batch of `pixels` padded pixels: each stage's 3x3
 * convolution at the resolution the pools before it leave (a quarter per pool), then the
 * projection to d_model. An image step is mostly this: on data/caption-full's batches of
 * 2^20 pixels the small preset's CNN is about 60 GFLOP a step, its decoder a fifth of it. */
static double cnn_gflop(const intrus_cfg *enc, double d, double pixels, double channels) {
  static const long long def_filters[] = {64, 128, 256, 512, 512};
  long long filters[16];
  bool def_pool[16], pool[16];
  int nf = 0, np = 0;
  if (!enc || intrus_cfg_ints(enc, "filters", def_filters, 5, 1, 4096, 16, filters, &nf, NULL))
    return 0.0;
  for (int i = 0; i < nf; i++) def_pool[i] = i < 3;
  if (intrus_cfg_bools(enc, "pool", def_pool, nf, 16, pool, &np, NULL) || np != nf) return 0.0;
  double flops = 0.0, scale = 1.0, in = (double)peek_int(enc, "channels", (long long)channels);
  for (int i = 0; i < nf; i++) {
    flops += 2.0 * 9.0 * in * (double)filters[i] * scale;
    in = (double)filters[i];
    if (pool[i]) scale *= 0.25;
  }
  flops += 2.0 * in * d * scale;
  return 3.0 * flops * pixels / 1e9;
}

/* GFLOP of a training step of each phase from the model's size: 6 FLOPs per parameter
 * and token, the decoder's times the phase's factor (table_read_phases: the states it
 * scores), the encoder's once (it reads each source once whatever the states); an image
 * model's CNN by its convolutions (cnn_gflop). Seconds come from timed runs
 * (table_s_per_gflop) or the sgemm probe: the FLOP count alone does not depend on what
 * else the machine is running. */
void table_phase_gflop(const struct intrus_config *cfg, int nphases, const double *factor,
                       double *gflop) {
  const intrus_cfg *root = intrus_config_root(cfg);
  const intrus_cfg *data = peek_group(root, "data"), *model = peek_group(root, "model"),
                   *train = peek_group(root, "train");
  const intrus_cfg *enc = peek_group(model, "encoder"), *dec = peek_group(model, "decoder");
  double d = (double)peek_int(model, "d_model", 256);
  double vocab, tokens, enc_gflop;
  const char *kind = peek_string(data, "kind", "");
  bool images = strcmp(kind, "images") == 0;
  if (strcmp(kind, "parallel") == 0 || images) {
    vocab = (double)peek_int(data, "bpe_merges", 8000) + 300.0;
    tokens = (double)peek_int(train, "batch_tokens", 4000);
  } else {
    vocab = (double)peek_int(data, "vocab", 16);
    tokens = (double)peek_int(train, "batch", 32) *
             (double)(peek_int(data, "min_len", 2) + peek_int(data, "max_len", 8)) / 2.0;
  }
  if (strcmp(peek_string(enc, "plugin", ""), "cnn") == 0) {
    enc_gflop = cnn_gflop(enc, d, (double)peek_int(data, "batch_pixels", 1 << 19),
                          (double)peek_int(data, "channels", 1));
  } else {
    double enc_p = (double)peek_int(enc, "layers", 1) *
                   (4 * d * d + 2 * d * (double)peek_int(enc, "ff", (long long)(4 * d)));
    enc_gflop = images ? 0.0 : 6.0 * enc_p * tokens / 1e9;
  }
  double dec_p = (double)peek_int(dec, "layers", 1) *
                 (8 * d * d + 2 * d * (double)peek_int(dec, "ff", (long long)(4 * d)));
  double dec_gflop = 6.0 * (dec_p + d * vocab) * tokens / 1e9;
  for (int p = 0; p < nphases; p++) gflop[p] = enc_gflop + dec_gflop * factor[p];
}

/* ---- phase speeds and estimates -------------------------------------------------- */

/* Each phase's seconds per step in run_dir's train.log (NAN where it has too few rows),
 * for a run of these phases whose checkpoint is in phase cur, begun after step start: the
 * phase it is in from where it began; the ones before back from there by their steps (a
 * phase that stopped at a plateau ran fewer: its predecessor's rows are then looked for a
 * little early). Returns the log's last train_s, NAN without one. */
double table_phase_rates(const char *run_dir, int nphases, const long *steps, int cur,
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
 * table state, and only when a cell to run needs it (table_estimate). */
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
    if (cell || stat(path, &st) != 0 || !table_checkpoint_where(dir, &step, &cur, &start, NULL)) continue;
    snprintf(path, sizeof path, "%s/effective.cfg", dir);
    struct intrus_error err = {0};
    struct intrus_config *cfg = intrus_config_load_file(path, &err);
    if (!cfg) continue;
    long steps[TABLE_MAX_PHASES];
    double factor[TABLE_MAX_PHASES], rate[TABLE_MAX_PHASES];
    double gflop[TABLE_MAX_PHASES];
    int n = table_read_phases(cfg, steps, factor);
    table_phase_gflop(cfg, n, factor, gflop);
    table_phase_rates(dir, n, steps, cur, start, rate);
    for (int p = 0; p < n; p++) {
      uint64_t key = table_phase_key(cfg, p);
      if (!key || !isfinite(rate[p])) continue;
      int k = 0;
      while (k < s->nknown && s->known[k].key != key) k++;
      if (k == s->nknown && s->nknown == TABLE_MAX_KNOWN) continue;
      if (k < s->nknown && s->known[k].mtime >= (double)st.st_mtime) continue;
      s->known[k] = (struct table_known_phase){key, rate[p], gflop[p],
                                               (double)st.st_mtime};
      if (k == s->nknown) s->nknown++;
    }
    intrus_config_free(cfg);
  }
  closedir(d);
}

/* Seconds per GFLOP of the cost model (table_phase_gflop) where
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
    if (o->state == CELL_EMPTY) continue;
    for (int q = 0; q < o->nphases; q++)
      if (isfinite(o->phase_rate[q]) && o->phase_gflop[q] > 0)
        v[n++] = o->phase_rate[q] / o->phase_gflop[q];
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
 * else of a phase with the same key (table_phase_key: same model, batch and what the phase
 * scores) in another cell's train.log, else in another run's of the runs directory,
 * else the cost model's, scaled by how far the model was off on a phase of this cell
 * that was timed, else on the runs that were (table_s_per_gflop). */
void table_estimate(struct table_state *s, int r, int c) {
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
  for (int p = cs->nphases - 1; p >= 0; p--)
    if (isfinite(rate[p]) && cs->phase_gflop[p] > 0) {
      spg = rate[p] / cs->phase_gflop[p];
      break;
    }
  double sum = 0.0;
  for (int p = 0; p < cs->nphases; p++) {
    if (cs->phase_left[p] == 0) continue;
    double sp = rate[p];
    if (isnan(sp)) {
      scan_other_runs(s); /* a cell without keys (another encoder) calibrates on them too */
      if (isnan(spg)) spg = table_s_per_gflop(s);
      sp = cs->phase_gflop[p] * spg;
      cs->measured = false;
    }
    sum += (double)cs->phase_left[p] * sp;
  }
  cs->estimate_s = sum;
}

/* What each cell of a results table still needs: its run directory examined (the
 * checkpoint, results of these settings), the table's state built from them, and a
 * cell looked at again after it ran. How long a cell should take is
 * table_estimate.c's, its data table_data.c's, the selection and the plan
 * table_plan.c's. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intrus/checkpoint.h"
#include "table_run.h"
#include "table_run_internal.h"
#include "model/warm_start.h"
#include "train/run_dir.h"
#include "text/dataset.h"

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
 * phase began after (0 and 0 without phases), and the records resume_reopen_start reads
 * (ended, may be NULL). false when there is no checkpoint. */
bool table_checkpoint_where(const char *run_dir, long *step, int *phase, long *phase_start,
                            struct resume_state *ended) {
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
  if (ended) {
    memset(ended, 0, sizeof *ended);
    ended->step = v;
    ended->has_ended = intrus_ckpt_u64(c, "ended_start", &ended->ended_start) &&
                       intrus_ckpt_u64(c, "ended_plateau", &ended->ended_plateau);
    /* Without the record no schedule restart is known: as if at the step itself. */
    if (!intrus_ckpt_u64(c, "sched_start", &ended->sched_start)) ended->sched_start = v;
  }
  intrus_ckpt_free(c);
  *step = (long)v;
  return ok;
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
  struct cli_experiment x;
  enum intrus_status st = intrus_cli_experiment(cfg, NULL, s->plugin_path, &x, err);
  if (st) {
    intrus_config_free(cfg);
    return st;
  }
  intrus_plugin_search_free(x.search);
  /* A distilled cell by the settings' own test (data.distill present), as a warm start
   * below by model.init's. */
  const intrus_cfg *data = NULL;
  cs->distilled = intrus_cfg_group(intrus_config_root(cfg), "data", &data, NULL) == INTRUS_OK &&
                  data && intrus_cfg_has(data, "distill");
  /* The trainer's own test for a warm start (intrus_warm_source_read). */
  const intrus_cfg *model = NULL;
  cs->warm_started = intrus_cfg_group(intrus_config_root(cfg), "model", &model, NULL) ==
                         INTRUS_OK &&
                     model && intrus_cfg_has(model, "init");
  cs->warm_source[0] = '\0';
  if (cs->warm_started) {
    struct warm_source ws;
    if ((st = intrus_warm_source_read(model, cell->experiment, &ws, err))) {
      intrus_config_free(cfg);
      return st;
    }
    snprintf(cs->warm_source, sizeof cs->warm_source, "%s", ws.path);
    cs->warm_missing[0] = '\0';
    if (access(ws.path, F_OK) != 0) {
      /* Said with the setting's file and line; whether another cell trains it first is
       * table_check_warm_sources's to say. */
      struct intrus_error e = {0};
      intrus_cfg_error(ws.group, "checkpoint", &e, "%s: %s", ws.path, strerror(errno));
      snprintf(cs->warm_missing, sizeof cs->warm_missing, "%s", e.msg);
    }
  }
  snprintf(cs->experiment, sizeof cs->experiment, "%s", cell->experiment);
  snprintf(cs->name, sizeof cs->name, "%s", x.name);
  snprintf(cs->run_dir, sizeof cs->run_dir, "%s/%s", s->runs, x.name);
  long steps[TABLE_MAX_PHASES], start = 0;
  int cur = 0;
  cs->nphases = table_read_phases(cfg, steps, cs->phase_factor);
  cs->total_steps = 0;
  for (int p = 0; p < cs->nphases; p++) cs->total_steps += steps[p];
  struct resume_state ended;
  bool have_ckpt = table_checkpoint_where(cs->run_dir, &cs->step, &cur, &start, &ended);
  if (!have_ckpt) cs->step = 0;
  if (have_ckpt && cs->nphases > 0 && cur == cs->nphases) {
    /* Past its last phase: the trainer reopens that phase when the config now gives it
     * more steps (resume_reopen_start, the rule it follows). */
    long s0 = resume_reopen_start(&ended, steps[cs->nphases - 1], table_last_phase_restarts(cfg));
    if (s0 >= 0) {
      cur = cs->nphases - 1;
      start = s0;
    }
  }
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
  cs->train_s = table_phase_rates(cs->run_dir, cs->nphases, steps, cur, start, cs->phase_rate);
  cs->setups = run_dir_count_setups(cs->run_dir);
  for (int p = 0; p < cs->nphases; p++) cs->phase_key[p] = table_phase_key(cfg, p);
  if (done) cs->state = CELL_DONE;
  else if (have_ckpt) cs->state = CELL_PARTIAL;
  else cs->state = CELL_NEW;
  cs->data_recorded = dataset_manifest_train(cs->run_dir, &cs->data_trained);
  cs->data_known = table_corpus_now(s, cfg, cs->run_dir, &cs->data_now);
  table_phase_gflop(cfg, cs->nphases, cs->phase_factor, cs->phase_gflop);
  intrus_config_free(cfg);
  return INTRUS_OK;
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
      if (s->cells[r][c].state != CELL_EMPTY) table_estimate(s, r, c);
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
    table_estimate(s, r, c);
  }
}

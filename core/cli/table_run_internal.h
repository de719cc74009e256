/* Internal to the files that find what each cell of a results table still needs
 * (table_run.h's table_state): table_run.c examines each cell's run directory,
 * table_estimate.c times what is left to train, table_data.c checks the corpora a cell
 * reads and what it was trained on. */
#ifndef INTRUS_TABLE_RUN_INTERNAL_H
#define INTRUS_TABLE_RUN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "intrus/config.h"
#include "table_run.h"
#include "train/train_resume.h"

/* table_run.c: the checkpoint's step and, for a phased run, its phase and the step that
 * phase began after (0 and 0 without phases); when ended is not NULL, also the records
 * resume_reopen_start reads (the rest of *ended is zero); false when there is no
 * checkpoint. */
bool table_checkpoint_where(const char *run_dir, long *step, int *phase, long *phase_start,
                            struct resume_state *ended);

/* table_estimate.c: the experiment's phases, each one's steps and cost factor (a run
 * without train.phases is one phase); returns how many. */
int table_read_phases(const struct intrus_config *cfg, long steps[TABLE_MAX_PHASES],
                      double factor[TABLE_MAX_PHASES]);
/* What a step of phase p costs depends on, as a key; 0 for a model it does not read. */
uint64_t table_phase_key(const struct intrus_config *cfg, int p);
/* GFLOP of a training step of each of the experiment's phases (the cost model), from
 * the phases' factors (table_read_phases). */
void table_phase_gflop(const struct intrus_config *cfg, int nphases, const double *factor,
                       double *gflop);
/* Whether the experiment's last phase restarts the optimizer (and so its schedule). */
bool table_last_phase_restarts(const struct intrus_config *cfg);
/* Each phase's seconds per step in run_dir's train.log (NAN where it has too few rows);
 * returns the log's last train_s, NAN without one. */
double table_phase_rates(const char *run_dir, int nphases, const long *steps, int cur,
                         long start, double *rate);
/* The training time cell (r, c) still needs (cs->estimate_s, cs->measured). */
void table_estimate(struct table_state *s, int r, int c);

/* table_data.c: the fingerprint of the experiment's training split as its corpus holds
 * it now; false for other data kinds or an unreadable corpus. */
bool table_corpus_now(struct table_state *s, const struct intrus_config *cfg,
                      const char *run_dir, uint64_t *fp);

#endif

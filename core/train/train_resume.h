/* Where a checkpoint says a run stands: its records other than the parameters, read and
 * range-checked against the run's config before any is used (train_resume.c). */
#ifndef INTRUS_TRAIN_RESUME_H
#define INTRUS_TRAIN_RESUME_H

#include <stdbool.h>
#include <stdint.h>

#include "intrus/checkpoint.h"
#include "intrus/status.h"

struct resume_state {
  uint64_t step, vocab;
  double last_loss, best;      /* best: BLEU where measured, else minus the loss */
  bool has_train_ms;           /* checkpoints from before the record lack it */
  uint64_t train_ms;
  bool has_phase;              /* the five phase records, all or none */
  uint64_t phase, phase_start, sched_start, phase_stale;
  double phase_best;
  bool has_ended;              /* the last phase's records once it has ended (optional) */
  uint64_t ended_plateau;      /* 1 when validation ended it, 0 when its steps did */
  uint64_t ended_start, ended_stale;
  double ended_best;
  bool has_init_source;        /* warm-started runs: the source's content (model.init) */
  uint64_t init_source;
};

/* The bounds of the run the checkpoint is resumed into: total_steps (train.steps, or
 * the sum of the phases' steps) and, for phased runs, each phase's patience. */
struct resume_limits {
  long total_steps;
  int phases;
  const int *patience;
};

/* Reads ck's records into *rs. INTRUS_ERR_FORMAT naming path and the record when a
 * required record is missing or a value is out of range: a step outside
 * 1..total_steps, a phase past the config's, a phase or schedule start after the step,
 * a plateau count past the patience, NaN or +Inf scores, a non-finite loss. */
enum intrus_status resume_state_read(const struct intrus_ckpt *ck, const char *path,
                                     const struct resume_limits *lim, struct resume_state *rs,
                                     struct intrus_error *err);

/* Where a run whose checkpoint is past its last phase continues that phase, now that the
 * config gives it last_steps steps (last_restarts: whether it restarts the optimizer):
 * the step the phase began after, or -1 when the run stays finished: validation ended
 * the phase, it has no steps left, or the checkpoint is from before the ended_* records
 * and does not say where the phase began (only sched_start does, where the last phase
 * restarted the schedule). Reads rs->step, has_ended, ended_plateau, ended_start and
 * sched_start. The trainer (trainer_resume) and intrus table's time estimate both
 * follow it. */
long resume_reopen_start(const struct resume_state *rs, long last_steps, bool last_restarts);

#endif

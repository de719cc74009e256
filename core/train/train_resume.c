/* Resuming trusts nothing a checkpoint says about the run until it is checked against
 * the config: a well-formed but edited (or foreign) record must not index past the
 * phases, run the learning-rate schedule backwards or carry NaN into the plateau rule.
 * (A phase record of 2^64-1 crashed the trainer; a schedule start after the step gave a
 * negative learning rate and a NaN validation loss.) tests/test_harden and
 * fuzz/fuzz_checkpoint.c exercise it. */
#include <math.h>
#include <string.h>

#include "train_resume.h"

static double as_double(uint64_t bits) {
  double x;
  memcpy(&x, &bits, sizeof x);
  return x;
}

/* Records names[0..n) into v: true when every one is there (they come all or none). */
static bool read_all(const struct intrus_ckpt *ck, const char *const *names, int n,
                     uint64_t *v) {
  for (int i = 0; i < n; i++)
    if (!intrus_ckpt_u64(ck, names[i], &v[i])) return false;
  return true;
}

enum intrus_status resume_state_read(const struct intrus_ckpt *ck, const char *path,
                                     const struct resume_limits *lim, struct resume_state *rs,
                                     struct intrus_error *err) {
  uint64_t loss_bits, best_bits, v[5];
  memset(rs, 0, sizeof *rs);
  if (!intrus_ckpt_u64(ck, "step", &rs->step) || !intrus_ckpt_u64(ck, "last_loss", &loss_bits) ||
      !intrus_ckpt_u64(ck, "vocab", &rs->vocab) || !intrus_ckpt_u64(ck, "best", &best_bits))
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: no 'step', 'last_loss', 'vocab' or 'best' record", path);
  rs->last_loss = as_double(loss_bits);
  rs->best = as_double(best_bits);
  rs->has_train_ms = intrus_ckpt_u64(ck, "train_ms", &rs->train_ms);
  rs->has_init_source = intrus_ckpt_u64(ck, "init_source", &rs->init_source);
  static const char *const phase_rec[] = {"phase", "phase_start", "sched_start", "phase_stale",
                                          "phase_best"};
  static const char *const ended_rec[] = {"ended_start", "ended_stale", "ended_best",
                                          "ended_plateau"};
  rs->has_phase = read_all(ck, phase_rec, 5, v);
  if (rs->has_phase) {
    rs->phase = v[0];
    rs->phase_start = v[1];
    rs->sched_start = v[2];
    rs->phase_stale = v[3];
    rs->phase_best = as_double(v[4]);
  } else {
    rs->phase_best = -INFINITY;
  }
  /* The last phase's records once it has ended: optional (older checkpoints lack them). */
  rs->has_ended = rs->has_phase && read_all(ck, ended_rec, 4, v);
  if (rs->has_ended) {
    rs->ended_start = v[0];
    rs->ended_stale = v[1];
    rs->ended_best = as_double(v[2]);
    rs->ended_plateau = v[3];
  }

  const char *why = "the checkpoint is damaged or belongs to another run";
  const char *what = lim->phases ? "the sum of train.phases' steps" : "train.steps";
  const uint64_t step = rs->step, phases = (uint64_t)lim->phases;
  if (step == 0 || step > (uint64_t)lim->total_steps)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: record 'step' is %llu, outside 1..%ld (%s): %s", path,
                            (unsigned long long)step, lim->total_steps, what, why);
  if (!isfinite(rs->last_loss))
    return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: record 'last_loss' is %g: %s", path,
                            rs->last_loss, why);
  if (isnan(rs->best) || rs->best == INFINITY)
    return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: record 'best' is %g: %s", path,
                            rs->best, why);
  if (rs->has_train_ms && rs->train_ms > (uint64_t)1e15)
    return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: record 'train_ms' is %llu: %s", path,
                            (unsigned long long)rs->train_ms, why);
  if (rs->phase > phases || (!phases && rs->phase != 0))
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: record 'phase' is %llu, but the config has %llu phase(s): %s",
                            path, (unsigned long long)rs->phase, (unsigned long long)phases, why);
  if (rs->phase_start > step || rs->sched_start > step) {
    bool start = rs->phase_start > step;
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: record '%s' is %llu, after the checkpoint's step %llu: %s", path,
                            start ? "phase_start" : "sched_start",
                            (unsigned long long)(start ? rs->phase_start : rs->sched_start),
                            (unsigned long long)step, why);
  }
  if (rs->phase < phases && rs->phase_stale > (uint64_t)lim->patience[rs->phase])
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: record 'phase_stale' is %llu, beyond the phase's patience %d: %s",
                            path, (unsigned long long)rs->phase_stale, lim->patience[rs->phase],
                            why);
  if (isnan(rs->phase_best) || rs->phase_best == INFINITY)
    return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: record 'phase_best' is %g: %s", path,
                            rs->phase_best, why);
  if (rs->has_ended && (rs->ended_start > step || rs->ended_stale > (uint64_t)1 << 40 ||
                        isnan(rs->ended_best) || rs->ended_best == INFINITY || rs->ended_plateau > 1))
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: records 'ended_*' are out of range (start %llu, step %llu): %s",
                            path, (unsigned long long)rs->ended_start,
                            (unsigned long long)step, why);
  return INTRUS_OK;
}

long resume_reopen_start(const struct resume_state *rs, long last_steps, bool last_restarts) {
  long start;
  if (rs->has_ended) {
    if (rs->ended_plateau) return -1;
    start = (long)rs->ended_start;
  } else if (last_restarts && rs->sched_start < rs->step) {
    start = (long)rs->sched_start;
  } else {
    return -1;
  }
  return (long)rs->step - start < last_steps ? start : -1;
}

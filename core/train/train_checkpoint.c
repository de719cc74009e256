/* A training run's checkpoints: what each records beside the parameters (the step, the
 * scores, where the phases stand), a run continued from its own (trainer_resume) and a
 * fresh run started from another run's (trainer_warm_start). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intrus/checkpoint.h"
#include "intrus/model.h"
#include "train_internal.h"
#include "train_resume.h"

static enum intrus_status put_phase_state(struct intrus_ckpt_writer *w,
                                          const struct phase_state *ps,
                                          struct intrus_error *err) {
  uint64_t best_bits;
  memcpy(&best_bits, &ps->best, sizeof best_bits);
  enum intrus_status st;
  if ((st = intrus_ckpt_put_u64(w, "phase", (uint64_t)ps->cur, err)) ||
      (st = intrus_ckpt_put_u64(w, "phase_start", (uint64_t)ps->start, err)) ||
      (st = intrus_ckpt_put_u64(w, "sched_start", (uint64_t)ps->sched_start, err)) ||
      (st = intrus_ckpt_put_u64(w, "phase_stale", (uint64_t)ps->stale, err)) ||
      (st = intrus_ckpt_put_u64(w, "phase_best", best_bits, err)))
    return st;
  if (!ps->has_ended) return INTRUS_OK;
  memcpy(&best_bits, &ps->ended_best, sizeof best_bits);
  if ((st = intrus_ckpt_put_u64(w, "ended_start", (uint64_t)ps->ended_start, err)) ||
      (st = intrus_ckpt_put_u64(w, "ended_stale", (uint64_t)ps->ended_stale, err)) ||
      (st = intrus_ckpt_put_u64(w, "ended_best", best_bits, err)) ||
      (st = intrus_ckpt_put_u64(w, "ended_plateau", ps->ended_plateau ? 1 : 0, err)))
    return st;
  return INTRUS_OK;
}

/* A finished run whose config now gives its last phase more steps than it ran (e.g. a
 * copy of a finished run continued under a longer schedule, as
 * experiments/small/en-ru/intrus-warm-distill-long.cfg is) continues that phase, unless
 * validation ended it. Checkpoints from before the ended_* records know where the last
 * phase began only when it restarted the schedule (sched_start), and not why it ended:
 * they continue with the plateau count at 0 and the run's best score as the phase's. */
static void reopen_last_phase(struct trainer *t, const struct resume_state *rs) {
  const struct train_phase *last = &t->ph.phase[t->ph.count - 1];
  const long start = resume_reopen_start(rs, last->steps, last->restart_optimizer);
  if (start < 0) return;
  long stale = rs->has_ended ? (long)rs->ended_stale : 0;
  const double best = rs->has_ended ? rs->ended_best : t->best;
  if (stale >= last->patience) stale = last->patience - 1;
  t->ps.cur = t->ph.count - 1;
  t->ps.start = start;
  t->ps.stale = stale < 0 ? 0 : stale;
  t->ps.best = best;
  if (t->opt->progress)
    fprintf(t->opt->progress,
            "phase %s ended at step %ld after %ld steps; it now has %ld: it continues%s\n",
            last->name, t->step, t->step - start, last->steps,
            rs->has_ended ? "" : " (a checkpoint from before the record of why a phase "
                                 "ended: its plateau count starts at 0)");
}

/* init_source: the warm start's source content (model.init), NULL without one.
 * with_moments: Adam's moments too (what a resume needs; best.ckpt, which only decodes
 * and warm-starts, leaves them out: a third of the bytes). */
enum intrus_status train_save_checkpoint(const char *path, uint64_t fp, bool with_moments,
                                         struct intrus_model *m, long step, double last_loss,
                                         double best, uint64_t vocab_fp,
                                         const struct phase_state *ps, double train_s,
                                         const uint64_t *init_source, struct intrus_error *err) {
  uint64_t loss_bits, best_bits;
  memcpy(&loss_bits, &last_loss, sizeof loss_bits);
  memcpy(&best_bits, &best, sizeof best_bits);
  struct intrus_ckpt_writer *w;
  enum intrus_status st = intrus_ckpt_begin(path, fp, &w, err);
  if (st) return st;
  if ((st = intrus_ckpt_put_params(w, intrus_model_params(m), with_moments, err)) ||
      (st = intrus_ckpt_put_u64(w, "step", (uint64_t)step, err)) ||
      (st = intrus_ckpt_put_u64(w, "last_loss", loss_bits, err)) ||
      (st = intrus_ckpt_put_u64(w, "vocab", vocab_fp, err)) ||
      (st = intrus_ckpt_put_u64(w, "best", best_bits, err)) ||
      (st = intrus_ckpt_put_u64(w, "train_ms", (uint64_t)llround(fmax(train_s, 0.0) * 1e3), err)) ||
      (st = put_phase_state(w, ps, err)) ||
      (init_source && (st = intrus_ckpt_put_u64(w, "init_source", *init_source, err)))) {
    intrus_ckpt_abort(w);
    return st;
  }
  return intrus_ckpt_commit(w, err);
}

/* Continues from the run's checkpoint.ckpt when there is one: parameters, Adam's
 * moments, step, best score, training time and where the phases stand. */
enum intrus_status trainer_resume(struct trainer *t, struct intrus_error *err) {
  if (access(t->ckpt_path, F_OK) != 0) return INTRUS_OK;
  const char *path = t->ckpt_path;
  struct intrus_ckpt *ck;
  struct resume_state rs;
  int *patience = malloc(((size_t)t->ph.count + 1) * sizeof *patience);
  if (!patience) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  for (int i = 0; i < t->ph.count; i++) patience[i] = t->ph.phase[i].patience;
  struct resume_limits lim = {.total_steps = t->ph.count ? t->ph.total_steps : t->tc.steps,
                              .phases = t->ph.count, .patience = patience};
  enum intrus_status st = intrus_ckpt_read(path, true, t->fp, &ck, err);
  if (!st) {
    if (!(st = resume_state_read(ck, path, &lim, &rs, err)) &&
        !(st = intrus_ckpt_check_finite(ck, t->params, true, err)))
      st = intrus_ckpt_get_params(ck, t->params, true, err);
    intrus_ckpt_free(ck);
  }
  free(patience);
  if (st) return st;
  if (rs.vocab != t->data.vocab_fingerprint)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: written with another vocabulary than %s/vocab*.txt "
                            "(fingerprint 0x%016llx, vocabulary 0x%016llx)",
                            path, t->opt->run_dir, (unsigned long long)rs.vocab,
                            (unsigned long long)t->data.vocab_fingerprint);
  t->res->last_loss = rs.last_loss;
  t->has_init_source = rs.has_init_source;
  t->init_source = rs.init_source;
  t->best = rs.best;
  t->step = (long)rs.step;
  /* Checkpoints from before the record: the time before the resume is unknown. */
  if (rs.has_train_ms) t->train_before = (double)rs.train_ms / 1e3;
  if (rs.has_phase) {
    t->ps.cur = (long)rs.phase;
    t->ps.start = (long)rs.phase_start;
    t->ps.sched_start = (long)rs.sched_start;
    t->ps.stale = (long)rs.phase_stale;
    t->ps.best = rs.phase_best;
    /* A run extended by a phase after its last one ended begins that phase now: the
     * transition that applies restart_optimizer ran when the phase did not exist yet. */
    if (t->ps.cur < t->ph.count && t->ps.start == t->step && t->ps.sched_start != t->step &&
        t->ph.phase[t->ps.cur].restart_optimizer) {
      intrus_params_zero_moments(t->params);
      t->ps.sched_start = t->step;
    }
    if (t->ph.count && t->ps.cur == t->ph.count) reopen_last_phase(t, &rs);
  }
  t->res->resumed_from = t->step;
  if (t->opt->progress)
    fprintf(t->opt->progress, "resuming %s from step %ld (%s)\n", t->name, t->step, path);
  return INTRUS_OK;
}

/* model.init: a fresh run starts from the source's matching parameters (warm_start.c);
 * a resumed run keeps its own and only checks that the source is the one it began from.
 * The source's content goes into every checkpoint of the run. */
enum intrus_status trainer_warm_start(struct trainer *t, struct intrus_error *err) {
  if (!t->warm.given) return INTRUS_OK;
  if (t->step)
    return intrus_warm_source_recheck(&t->warm, t->has_init_source, t->init_source,
                                      t->ckpt_path, t->opt->progress, err);
  char vocab[4200] = "data.vocab";
  if (t->data.kind != DATA_SYNTHETIC)
    snprintf(vocab, sizeof vocab, "%s/vocab*.txt", t->opt->run_dir);
  t->has_init_source = true;
  return intrus_warm_start(t->model, &t->warm, t->data.vocab_fingerprint, vocab,
                           t->opt->run_dir, t->opt->progress, &t->init_source, err);
}

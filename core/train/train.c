/* The training loop (intrus_train): a step's loss over this rank's share of the batch,
 * in micro-batches when asked, the optimizer step, the log row, validation and the
 * phase schedule after it, and checkpoints when due. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "intrus/model.h"
#include "intrus/optim.h"
#include "intrus/rng.h"
#include "intrus/train.h"
#include "base/clock.h"
#include "dist/dist.h"
#include "run_dir.h"
#include "run_snapshots.h"
#include "train_internal.h"

/* After a step of a phased run: updates the phase's plateau count with the validation
 * score (NAN when there was none) and moves to the next phase when this one is over
 * (restarting Adam's moments and the schedule when the next phase asks for it).
 * Returns true when the phase changed. */
static bool advance_phase(const struct train_phases *ph, struct phase_state *ps, long step,
                          double score, struct intrus_params *params, FILE *progress) {
  const struct train_phase *p = &ph->phase[ps->cur];
  bool plateaued = false;
  if (!isnan(score) && p->plateau) {
    if (score > ps->best) {
      ps->best = score;
      ps->stale = 0;
    } else if (++ps->stale >= p->patience) {
      plateaued = true;
    }
  }
  if (!plateaued && step - ps->start < p->steps) return false;
  if (progress)
    fprintf(progress, "phase %s ended at step %ld (%s)\n", p->name, step,
            plateaued ? "validation stopped improving" : "its steps are done");
  if (ps->cur + 1 == ph->count) {
    ps->has_ended = true;
    ps->ended_plateau = plateaued;
    ps->ended_start = ps->start;
    ps->ended_stale = ps->stale;
    ps->ended_best = ps->best;
  }
  ps->cur++;
  ps->start = step;
  ps->stale = 0;
  ps->best = -INFINITY;
  if (ps->cur < ph->count && ph->phase[ps->cur].restart_optimizer) {
    intrus_params_zero_moments(params);
    ps->sched_start = step;
  }
  if (progress && ps->cur < ph->count)
    fprintf(progress, "phase %s begins at step %ld\n", ph->phase[ps->cur].name, step);
  return true;
}

static void format_eta(char *buf, size_t n, double s) {
  if (!isfinite(s) || s < 0) s = 0;
  long t = (long)(s + 0.5);
  snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* What the step's loss is a mean over, for sentences b0..b1: states, or under
 * weight = "length" trajectory states (insertion, ins_train_units), or target tokens with
 * EOS (autoregressive). */
static long loss_units(const struct trainer *t, const struct intrus_tgt_batch *tb, int b0,
                       int b1) {
  if (t->ph.count) return ins_train_units(&t->ph.phase[t->ps.cur].spec, tb->lens + b0, b1 - b0);
  long n = 0;
  for (int b = b0; b < b1; b++) n += tb->lens[b] + 1;
  return n;
}

/* The loss of sentences b0..b1 of the step's batch, recorded on t->ctx's tape. */
static enum intrus_status piece_loss(struct trainer *t, const struct intrus_src_batch *sb,
                                     const struct intrus_tgt_batch *tb, int b0, int b1,
                                     struct intrus_loss_out *out, struct intrus_error *err) {
  struct intrus_src_batch s;
  struct intrus_tgt_batch g;
  train_batch_slice(sb, tb, b0, b1, &s, &g);
  uint64_t seed = (uint64_t)t->seed;
  struct intrus_train_opts topts = {.direction = intrus_model_direction(t->model),
                                    .label_smoothing = t->tc.label_smoothing};
  return t->ph.count ? ins_train_loss_at(t->model, t->ctx, t->scratch, &s, &g, b0,
                                         &t->ph.phase[t->ps.cur].spec,
                                         intrus_hash64(seed, (uint64_t)t->step), out, err)
                     : intrus_model_loss(t->model, t->ctx, &s, &g, &topts, out, err);
}

/* This rank's share of a batch: the consecutive sentences [*b0, *b1) whose target
 * tokens (EOS included) start in its 1/N of the batch's, so that every rank gets about
 * as many tokens. One rank: the whole batch. */
static void rank_share(const struct intrus_tgt_batch *tb, int *b0, int *b1) {
  const int N = dist_size(), r = dist_rank();
  *b0 = 0;
  *b1 = tb->batch;
  if (N == 1) return;
  long total = 0;
  for (int b = 0; b < tb->batch; b++) total += tb->lens[b] + 1;
  /* Sentence b belongs to the rank r with r * total <= N * (tokens before b) < (r + 1) * total. */
  long before = 0;
  int lo = tb->batch, hi = tb->batch;
  for (int b = 0; b < tb->batch; b++) {
    long k = before * N / (total ? total : 1);
    if (k >= r && lo == tb->batch) lo = b;
    if (k >= r + 1) {
      hi = b;
      break;
    }
    before += tb->lens[b] + 1;
  }
  *b0 = lo < hi ? lo : hi;
  *b1 = hi;
}

/* The forward and backward passes of this rank's share of the step's batch, the
 * gradients left in the parameter block; *sum and *tokens are its share of the loss
 * and of the target tokens. With micro_batch_tokens the share's sentences are taken in
 * consecutive pieces of at most that many target tokens (one sentence at least). Each
 * piece's loss, weighted by its share of the whole batch's states or tokens, is
 * backpropagated before the next is built, so the gradients of every piece of every
 * rank add up to the whole batch's (up to float summation order; dropout masks differ)
 * while only one piece's activations are held. */
static enum intrus_status step_local(struct trainer *t, double *sum, long *tokens,
                                     struct intrus_error *err) {
  intrus_ctx *ctx = t->ctx, *bctx = t->bctx ? t->bctx : t->ctx;
  uint64_t seed = (uint64_t)t->seed;
  intrus_ctx_reset(ctx);
  if (bctx != ctx) intrus_ctx_reset(bctx);
  struct intrus_src_batch sb;
  struct intrus_tgt_batch tb;
  /* Every rank builds the whole batch (the step alone says which), then takes its share:
   * the batches, and so the training, do not depend on the number of ranks. */
  dataset_train_batch(&t->data, bctx, seed, t->step, t->tc.batch, &sb, &tb);
  const long total = loss_units(t, &tb, 0, tb.batch);
  int r0, r1;
  rank_share(&tb, &r0, &r1);
  struct intrus_loss_out out;
  *sum = 0.0;
  *tokens = 0;
  intrus_params_zero_grad(t->params);
  for (int b0 = r0, piece = 0; b0 < r1; piece++) {
    int b1 = r1;
    if (t->tc.micro_tokens) {
      b1 = b0 + 1;
      for (long n = tb.lens[b0]; b1 < r1 && n + tb.lens[b1] <= t->tc.micro_tokens; b1++)
        n += tb.lens[b1];
    }
    if (piece) intrus_ctx_reset(ctx);
    intrus_ctx_set_training(ctx, true);
    /* A piece's dropout stream follows its first sentence; the first piece's is the
     * unsplit step's. */
    intrus_ctx_set_seed(ctx, b0 ? intrus_hash64(seed, (uint64_t)b0) : seed, (uint64_t)t->step);
    enum intrus_status st = piece_loss(t, &sb, &tb, b0, b1, &out, err);
    if (st) return st;
    intrus_tensor *l = out.loss;
    if (b1 - b0 < tb.batch) {
      const double w = (double)loss_units(t, &tb, b0, b1) / (double)(total ? total : 1);
      l = intrus_scale(ctx, l, (float)w);
    }
    intrus_backward(ctx, l);
    *sum += l->data[0];
    *tokens += out.tokens;
    b0 = b1;
  }
  return INTRUS_OK;
}

/* Adam's settings for the current phase: train's, with the phase's own lr and warm-up. */
static struct intrus_adam phase_adam(const struct trainer *t) {
  struct intrus_adam a = t->tc.adam;
  if (t->ph.count && t->ps.cur < t->ph.count) {
    const struct train_phase *p = &t->ph.phase[t->ps.cur];
    if (p->has_lr) a.base_lr = (float)p->lr;
    if (p->has_warmup) a.warmup = (int)p->warmup;
  }
  return a;
}

/* One optimizer step on the step's batch; *loss is its training loss. Collective: the
 * ranks agree that each computed its share, sum the gradients and take the same step. */
static enum intrus_status trainer_step(struct trainer *t, double *loss, struct intrus_error *err) {
  double sums[2];
  long tokens;
  enum intrus_status st = step_local(t, &sums[0], &tokens, err);
  if ((st = dist_agree(st, err))) return st;
  if (dist_size() > 1) {
    sums[1] = (double)tokens;
    dist_sum_floats(intrus_params_grads(t->params), intrus_params_numel(t->params));
    dist_sum_doubles(sums, 2);
    tokens = (long)sums[1];
  }
  /* The phase is that of this step: it advances only after the step is logged. */
  struct intrus_adam adam = phase_adam(t);
  intrus_adam_step(t->params, &adam, t->step - t->ps.sched_start);
  t->last_lr = intrus_lr_at(&adam, t->step - t->ps.sched_start);
  *loss = sums[0];
  if (!isfinite(*loss))
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "training diverged at step %ld (loss %g): lower train.lr", t->step,
                            *loss);
  t->step++;
  t->res->last_loss = *loss;
  t->tokens_total += tokens;
  t->window_tokens += tokens;
  t->window_steps++;
  t->loss_sum += *loss;
  return INTRUS_OK;
}

/* One progress line and one train.log row for the window since the last. */
static void trainer_log(struct trainer *t, bool validated, double vloss, double vbleu,
                        bool new_best, double train_s, double decode_s) {
  const struct intrus_train_options *opt = t->opt;
  long step = t->step;
  double now = mono_s(), tps = t->window_tokens / fmax(now - t->window_t, 1e-9);
  double loss = t->loss_sum / t->window_steps;
  double lr = t->last_lr;
  char eta[32];
  /* The ETA covers the phase at hand, at its own speed; the steps of later phases are
   * named, not timed: how fast they run is not known before they start. */
  long phase_end = t->stop, later = 0;
  if (t->ph.count && t->ps.cur < t->ph.count) {
    phase_end = t->ps.start + t->ph.phase[t->ps.cur].steps;
    if (phase_end > t->stop) phase_end = t->stop;
    for (long j = t->ps.cur + 1; j < t->ph.count; j++) later += t->ph.phase[j].steps;
    if (later > t->stop - phase_end) later = t->stop - phase_end;
  }
  format_eta(eta, sizeof eta,
             (phase_end - step) * (now - t->eta_t0) / (double)(step - t->eta_step0));
  if (opt->progress) {
    fprintf(opt->progress, "step %ld/%ld  ", step, t->stop);
    if (t->ph.count) fprintf(opt->progress, "[%s]  ", t->ph.phase[t->ps.cur].name);
    fprintf(opt->progress, "loss %.4f  lr %.2e  %.0f tok/s  ETA %s", loss, lr, tps, eta);
    if (later > 0) fprintf(opt->progress, " (+%ld steps of later phases)", later);
    if (validated) fprintf(opt->progress, "  valid %.4f", vloss);
    if (!isnan(vbleu))
      fprintf(opt->progress, "  BLEU %.2f (decoded in %.1f s)", vbleu, decode_s);
    if (new_best) fprintf(opt->progress, "  (best)");
    fputc('\n', opt->progress);
    fflush(opt->progress);
  }
  fprintf(t->log, "%ld\t%.6f\t%.6g\t%.1f\t", step, loss, lr, tps);
  if (validated) fprintf(t->log, "%.6f", vloss);
  fputc('\t', t->log);
  if (!isnan(vbleu)) fprintf(t->log, "%.2f", vbleu);
  fprintf(t->log, "\t%.1f\t", train_s);
  if (!isnan(decode_s)) fprintf(t->log, "%.1f", decode_s);
  fputc('\n', t->log);
  fflush(t->log);
  t->window_t = now;
  t->window_tokens = t->window_steps = 0;
  t->loss_sum = 0.0;
}

/* The run's state at step into path (best.ckpt, a snapshot, or with Adam's moments
 * checkpoint.ckpt). */
static enum intrus_status save_run_checkpoint(const struct trainer *t, const char *path,
                                              bool with_moments, long step, double train_s,
                                              struct intrus_error *err) {
  return train_save_checkpoint(path, t->fp, with_moments, t->model, step, t->res->last_loss,
                               t->best, t->data.vocab_fingerprint, &t->ps, train_s,
                               t->has_init_source ? &t->init_source : NULL, err);
}

/* What follows a step: validation when due (loss, and BLEU when due), the log row, the
 * phase schedule, and the checkpoints (best.ckpt on a new best score). */
static enum intrus_status trainer_after_step(struct trainer *t, struct intrus_error *err) {
  long step = t->step;
  const struct train_cfg *tc = &t->tc;
  bool validate_now = step % tc->valid_every == 0 || step == t->stop;
  bool bleu_now = validate_now && (step % tc->bleu_every == 0 || step == t->stop);
  double vloss = NAN, vbleu = NAN, decode_s = NAN, tv = mono_s();
  enum intrus_status st;
  if (validate_now &&
      (st = train_validate(t->model, t->ctx, t->scratch, &t->ph, &t->data, tc, (uint64_t)t->seed,
                     &vloss, err)))
    return st;
  /* Validation BLEU: rank 0 decodes, the others wait for its score. */
  if (bleu_now) {
    double td = mono_s();
    st = dist_rank() == 0 ? train_validate_bleu(t->model, &t->data, tc, &t->search, t->opt->search,
                                          t->bleu_cfg, &vbleu, err)
                          : INTRUS_OK;
    if ((st = dist_agree(st, err))) return st;
    dist_bcast(&vbleu, sizeof vbleu);
    if (train_bleu_measured(&t->data, tc)) decode_s = mono_s() - td;
  }
  /* A non-finite score would pass every comparison of the plateau rule and of best.ckpt
   * silently; the run stops here instead, before the checkpoint of this step. */
  if (validate_now && !isfinite(vloss))
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "validation loss at step %ld is %g: training diverged; lower "
                            "train.lr (the last checkpoint is from before this step)",
                            step, vloss);
  if (bleu_now && train_bleu_measured(&t->data, tc) && !isfinite(vbleu))
    return intrus_error_set(err, INTRUS_ERR_INVALID, "validation BLEU at step %ld is %g", step,
                            vbleu);
  /* The score best.ckpt and the plateau rule follow: BLEU where it is measured at all
   * (validations without it then leave both alone), else minus the loss. */
  double vscore = !validate_now ? NAN : train_bleu_measured(&t->data, tc) ? vbleu : -vloss;
  t->valid_time += mono_s() - tv;
  double train_s = t->train_before + mono_s() - t->t0 - t->valid_time;
  bool new_best = false;
  if (!isnan(vscore) && vscore > t->best) {
    t->best = vscore;
    new_best = true;
  }
  const bool lead = dist_rank() == 0;
  if (lead && (step % tc->log_every == 0 || step == t->stop || validate_now))
    trainer_log(t, validate_now, vloss, vbleu, new_best, train_s, decode_s);
  if (validate_now) {
    t->res->valid_loss = vloss;
    t->res->valid_bleu = vbleu;
  }
  if (t->ph.count && advance_phase(&t->ph, &t->ps, step, vscore, t->params, t->opt->progress)) {
    if (t->ps.cur >= t->ph.count) t->stop = step;
    t->eta_step0 = step;
    t->eta_t0 = mono_s();
  }
  /* Checkpoints: rank 0 writes them; the others learn whether it could. */
  st = INTRUS_OK;
  if (lead && new_best)
    st = save_run_checkpoint(t, t->best_path, false, step, train_s, err);
  /* The snapshot before the checkpoint: a run killed between the two resumes from the
   * checkpoint before and writes the same snapshot again (run_snapshots_prune). A run
   * killed between snapshot steps resumes from a checkpoint after the last snapshot
   * and goes on to the next, so the snapshots are the same as without the kill. The
   * last step is one only where the run ends there, not where -n stops it. */
  const bool run_ends = t->ph.count ? t->ps.cur >= t->ph.count : step >= tc->steps;
  if (lead && !st && tc->keep_checkpoints &&
      (step % tc->snapshot_every == 0 || (step == t->stop && run_ends))) {
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/snapshots", t->opt->run_dir);
    run_snapshot_path(path, sizeof path, t->opt->run_dir, step);
    if (!(st = run_dir_make(dir, err)))
      st = save_run_checkpoint(t, path, false, step, train_s, err);
    if (!st) st = run_snapshots_prune(t->opt->run_dir, step, tc->keep_checkpoints, err);
  }
  if (lead && !st && (step % tc->checkpoint_every == 0 || step == t->stop))
    st = save_run_checkpoint(t, t->ckpt_path, true, step, train_s, err);
  return dist_agree(st, err);
}

enum intrus_status intrus_train(struct intrus_config *cfg, const struct intrus_train_options *opt,
                                struct intrus_train_result *res, struct intrus_error *err) {
  memset(res, 0, sizeof *res);
  res->valid_bleu = NAN;
  struct trainer t = {.opt = opt, .res = res, .lock_fd = -1, .best = -INFINITY,
                     .ps = {.best = -INFINITY}};
  enum intrus_status st;
  const bool lead = dist_rank() == 0;
  const double sum_s0 = dist_sum_seconds();
  if (opt->settings_only) {
    st = trainer_setup(&t, cfg, err);
    goto done;
  }
  if (lead && dist_size() > 1) {
    /* The followers wait for this (core/cli/dist_follow.c) and then join the agreements
     * below in the same order. */
    struct dist_job job = {.kind = DIST_TRAIN, .max_steps = opt->max_steps};
    snprintf(job.experiment, sizeof job.experiment, "%s", intrus_config_filename(cfg));
    snprintf(job.run_dir, sizeof job.run_dir, "%s", opt->run_dir);
    size_t used = 0;
    for (int i = 0; opt->search && i < intrus_plugin_search_count(opt->search); i++) {
      int w = snprintf(job.plugin_dirs + used, sizeof job.plugin_dirs - used, "%s%s",
                       i ? ":" : "", intrus_plugin_search_dir(opt->search, i));
      if (w < 0 || (size_t)w >= sizeof job.plugin_dirs - used) break;
      used += (size_t)w;
    }
    dist_job_send(&job);
  }
  /* Rank 0 sets up first (it learns the vocabulary and writes it into the run
   * directory), the others then read what it wrote. */
  st = lead ? trainer_setup(&t, cfg, err) : INTRUS_OK;
  if ((st = dist_agree(st, err))) goto done;
  st = lead ? INTRUS_OK : trainer_setup(&t, cfg, err);
  if ((st = dist_agree(st, err)) || (st = trainer_check_same_config(cfg, err))) goto done;
  st = lead ? trainer_resume(&t, err) : INTRUS_OK;
  if (!st && lead) st = trainer_warm_start(&t, err);
  if ((st = dist_agree(st, err))) goto done;
  trainer_share(&t);
  st = trainer_start(&t, cfg, err);
  if ((st = dist_agree(st, err))) goto done;
  while (t.step < t.stop) {
    double loss;
    if ((st = trainer_step(&t, &loss, err))) goto done;
    if (opt->on_step) opt->on_step(t.step, loss, opt->user);
    if ((st = trainer_after_step(&t, err))) goto done;
  }
  res->steps_done = t.step;
  res->seconds = mono_s() - t.t0;
  res->ranks = dist_size();
  res->sum_seconds = dist_sum_seconds() - sum_s0;
  res->tokens_per_s = t.tokens_total / fmax(res->seconds, 1e-9);
  /* A run that was already complete still reports its validation loss. */
  if (res->resumed_from == t.step && t.step > 0)
    st = train_validate(t.model, t.ctx, t.scratch, &t.ph, &t.data, &t.tc, (uint64_t)t.seed,
                  &res->valid_loss, err);
done:
  trainer_free(&t);
  return st;
}

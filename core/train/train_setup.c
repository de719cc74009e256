/* Setting up a training run: train's settings read strictly, the data, vocabulary and
 * model built (trainer_setup), the run's files opened and its last step worked out
 * (trainer_start), the ranks of a data-parallel run given the same start, and the run
 * released (trainer_free). */
/* PACKAGE_VERSION comes from config.h; the fuzzers (tests/fuzz/run.sh) compile the core
 * without it. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intrus/blas.h"
#include "intrus/model.h"
#include "base/clock.h"
#include "dist/dist.h"
#include "run_dir.h"
#include "tensor/ops_internal.h"
#include "train_internal.h"

static enum intrus_status read_train(const intrus_cfg *root, struct train_cfg *t,
                                     struct intrus_error *err) {
  const intrus_cfg *g;
  long long steps, batch, batch_tokens, valid_bleu, warmup, log_every, valid_every, ckpt_every;
  long long bleu_every, valid_beam, micro_tokens, keep_ckpts, snapshot_every;
  double lr, clip, smoothing, beta1, beta2;
  enum intrus_status st;
  if ((st = intrus_cfg_group_req(root, "train", &g, err))) return st;
  t->has_phases = intrus_cfg_has(g, "phases");
  if (t->has_phases && intrus_cfg_has(g, "steps"))
    return intrus_cfg_error(g, "steps", err,
                            "not with train.phases: each phase gives its own steps");
  if (t->has_phases) intrus_cfg_mark_read(g, "phases");
  /* With phases the steps are theirs: reading train.steps would put its default into
   * effective.cfg, which then could not be trained again (steps beside phases). */
  steps = 0;
  if ((!t->has_phases &&
       (st = intrus_cfg_int_range(g, "steps", 1000, 1, 1LL << 40, &steps, err))) ||
      (st = intrus_cfg_int_range(g, "batch", 32, 1, 1 << 20, &batch, err)) ||
      (st = intrus_cfg_int_range(g, "batch_tokens", 4000, 1, 1 << 24, &batch_tokens, err)) ||
      (st = intrus_cfg_int_range(g, "micro_batch_tokens", 0, 0, 1 << 24, &micro_tokens, err)) ||
      (st = intrus_cfg_double_range(g, "lr", 1.4e-3, 0.0, 10.0, &lr, err)) ||
      (st = intrus_cfg_int_range(g, "warmup", 16000, 0, 1LL << 40, &warmup, err)) ||
      (st = intrus_cfg_double_range(g, "beta1", 0.9, 0.0, 0.999999, &beta1, err)) ||
      (st = intrus_cfg_double_range(g, "beta2", 0.998, 0.0, 0.999999, &beta2, err)) ||
      (st = intrus_cfg_double_range(g, "clip", 0.0, 0.0, 1e9, &clip, err)) ||
      (st = intrus_cfg_double_range(g, "label_smoothing", 0.0, 0.0, 0.99, &smoothing, err)) ||
      (st = intrus_cfg_int_range(g, "log_every", 100, 1, 1LL << 40, &log_every, err)) ||
      (st = intrus_cfg_int_range(g, "valid_every", 1000, 1, 1LL << 40, &valid_every, err)) ||
      (st = intrus_cfg_int_range(g, "checkpoint_every", 1000, 1, 1LL << 40, &ckpt_every, err)) ||
      (st = intrus_cfg_int_range(g, "keep_checkpoints", 0, 0, 1000, &keep_ckpts, err)) ||
      (st = intrus_cfg_int_range(g, "snapshot_every", ckpt_every, 1, 1LL << 40, &snapshot_every,
                                 err)) ||
      (st = intrus_cfg_int_range(g, "valid_bleu", 200, 0, 1 << 20, &valid_bleu, err)) ||
      (st = intrus_cfg_int_range(g, "valid_bleu_every", valid_every, 1, 1LL << 40, &bleu_every,
                                 err)) ||
      (st = intrus_cfg_int_range(g, "valid_beam", 0, 0, 1024, &valid_beam, err)) ||
      (st = intrus_cfg_check_unknown(g, err)))
    return st;
  if (bleu_every % valid_every)
    return intrus_cfg_error(g, "valid_bleu_every", err,
                            "must be a multiple of valid_every (%lld), got %lld", valid_every,
                            bleu_every);
  t->bleu_every = bleu_every;
  t->valid_beam = (int)valid_beam;
  t->steps = steps;
  t->batch = (int)batch;
  t->batch_tokens = batch_tokens;
  t->micro_tokens = micro_tokens;
  t->valid_bleu = valid_bleu;
  t->log_every = log_every;
  t->valid_every = valid_every;
  t->checkpoint_every = ckpt_every;
  t->keep_checkpoints = keep_ckpts;
  t->snapshot_every = snapshot_every;
  t->label_smoothing = (float)smoothing;
  t->adam = intrus_adam_defaults();
  t->adam.base_lr = (float)lr;
  t->adam.warmup = (int)warmup;
  t->adam.beta1 = (float)beta1;
  t->adam.beta2 = (float)beta2;
  t->adam.clip_norm = (float)clip;
  return INTRUS_OK;
}

/* Reads the experiment (strictly: unknown keys are errors), prepares the data and the
 * vocabulary, and builds the model. */
enum intrus_status trainer_setup(struct trainer *t, struct intrus_config *cfg,
                                 struct intrus_error *err) {
  const intrus_cfg *root = intrus_config_root(cfg);
  const char *plugin_path;
  const intrus_cfg *model_cfg, *data_cfg, *train_cfg, *eval_cfg = NULL;
  enum intrus_status st;
  if ((st = intrus_cfg_string(root, "name", "experiment", &t->name, err)) ||
      (st = intrus_cfg_int_range(root, "seed", 1, 0, INT64_MAX, &t->seed, err)) ||
      (st = intrus_cfg_string(root, "plugin_path", "", &plugin_path, err)) ||
      (st = intrus_cfg_group_req(root, "data", &data_cfg, err)) ||
      (st = dataset_configure(&t->data, data_cfg, intrus_config_filename(cfg), t->opt->run_dir,
                              err)) ||
      (st = read_train(root, &t->tc, err)) ||
      (st = intrus_cfg_group_req(root, "train", &train_cfg, err)) ||
      (t->tc.has_phases && (st = train_phases_read(train_cfg, t->opt->search, &t->ph, err))) ||
      (st = intrus_cfg_group_req(root, "model", &model_cfg, err)) ||
      /* Rank 0 alone owns the run directory; the other ranks only read it. */
      (dist_rank() == 0 && !t->opt->settings_only &&
       ((st = run_dir_make(t->opt->run_dir, err)) ||
        (st = run_dir_lock(t->opt->run_dir, &t->lock_fd, err)))) ||
      (!t->opt->settings_only &&
       (st = dataset_prepare(&t->data, t->opt->run_dir, t->tc.batch_tokens, (uint64_t)t->seed,
                             t->opt->progress, err))) ||
      /* Reading settings alone learns no vocabulary: the model gets a small stand-in. */
      (t->opt->settings_only && !t->data.src_vocab_size &&
       (t->data.src_vocab_size = t->data.tgt_vocab_size = 64) == 0) ||
      (st = intrus_model_create(model_cfg, t->opt->search, t->data.src_vocab_size,
                                t->data.tgt_vocab_size, (uint64_t)t->seed, &t->model, err)) ||
      (st = intrus_warm_source_read(model_cfg, intrus_config_filename(cfg), &t->warm, err)) ||
      (st = translator_read_search(root, &t->search, err)) ||
      (st = translator_set_beam(&t->search, 0, NULL, err)))
    return st;
  /* Refused now, not at the first validation decode. */
  if (t->search.beam.slots > 0 && t->tc.valid_beam > t->search.beam.slots)
    return intrus_cfg_error(train_cfg, "valid_beam", err,
                            "%d is more than search.slots = %d (at least `beam` slots)",
                            t->tc.valid_beam, t->search.beam.slots);
  if (intrus_model_is_insertion(t->model) != t->tc.has_phases)
    return t->tc.has_phases
               ? intrus_cfg_error(train_cfg, "phases", err,
                                  "phases (order policies) train insertion decoders; this "
                                  "model's decoder is not one")
               : intrus_cfg_error(train_cfg, NULL, err,
                                  "an insertion decoder trains in phases: give train.phases "
                                  "(see docs/intrus.md)");
  /* Training phases smooth their token terms as the baseline smooths its targets; the
   * validation loss, compared across runs, never does. */
  for (int i = 0; i < t->ph.count; i++) t->ph.phase[i].spec.label_smoothing = t->tc.label_smoothing;
  /* eval.checkpoint is intrus run's (which checkpoint decodes the test set); read here
   * too so that a bad value is refused before training rather than after it. */
  static const char *const test_ckpts[] = {"last", "best", "average", NULL};
  int test_ckpt;
  const intrus_cfg *cider_cfg;
  if ((st = intrus_cfg_group(root, "eval", &eval_cfg, err)) ||
      (eval_cfg && (st = intrus_cfg_group(eval_cfg, "bleu", &t->bleu_cfg, err))) ||
      (eval_cfg && (st = intrus_cfg_group(eval_cfg, "cider", &cider_cfg, err))) ||
      (eval_cfg &&
       (st = intrus_cfg_choice(eval_cfg, "checkpoint", "last", test_ckpts, &test_ckpt, err))) ||
      (eval_cfg && (st = intrus_cfg_check_unknown(eval_cfg, err))) ||
      (st = intrus_cfg_check_unknown(root, err)))
    return st;
  if (test_ckpt == 2 && t->tc.keep_checkpoints < 1)
    return intrus_cfg_error(eval_cfg, "checkpoint", err,
                            "\"average\" averages the snapshots train.keep_checkpoints keeps; "
                            "set it (e.g. 5: the last 5 snapshots, one every "
                            "train.snapshot_every steps)");
  static const char *const fp_paths[] = {"data", "model"};
  t->fp = intrus_config_fingerprint(cfg, fp_paths, 2);
  t->params = intrus_model_params(t->model);
  snprintf(t->ckpt_path, sizeof t->ckpt_path, "%s/checkpoint.ckpt", t->opt->run_dir);
  snprintf(t->best_path, sizeof t->best_path, "%s/best.ckpt", t->opt->run_dir);
  return INTRUS_OK;
}

/* Once a resume is accepted (a refused one leaves the run as it was): writes the
 * effective config, opens train.log (appending on a resume) and works out the last step
 * of this run. */
enum intrus_status trainer_start(struct trainer *t, struct intrus_config *cfg,
                                 struct intrus_error *err) {
  char path[4096];
  enum intrus_status st;
  if (dist_rank() == 0) {
    snprintf(path, sizeof path, "%s/effective.cfg", t->opt->run_dir);
    if ((st = intrus_config_write(cfg, path, err))) return st;
    snprintf(path, sizeof path, "%s/train.log", t->opt->run_dir);
    if (t->step && (st = run_log_trim(path, t->step, err))) return st;
    if (!(t->log = fopen(path, t->step ? "a" : "w")))
      return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    /* The header on a new file, also on a resume whose log was lost (a checkpoint copied
     * without it): the rows that follow are then still readable by intrus plot. */
    if (!t->step || (fseek(t->log, 0, SEEK_END) == 0 && ftell(t->log) == 0))
      fprintf(t->log,
              "step\tloss\tlr\ttokens_per_s\tvalid_loss\tvalid_bleu\ttrain_s\tvalid_decode_s\n");
  }
  t->ctx = intrus_ctx_create(0);
  if (t->tc.micro_tokens) t->bctx = intrus_ctx_create(0);
  if (t->ph.count) t->scratch = intrus_ctx_create(0);
  t->stop = t->ph.count ? t->ph.total_steps : t->tc.steps;
  /* A phased run that stopped after its last phase ended early is complete. */
  if (t->ph.count && t->ps.cur >= t->ph.count) t->stop = t->step;
  if (t->opt->max_steps > 0 && t->opt->max_steps < t->stop) t->stop = t->opt->max_steps;
  /* -n below the step already reached: nothing to train (never a range like 5..3). */
  if (t->stop < t->step) t->stop = t->step;
  if (dist_rank() == 0 && t->stop > t->step) {
    const struct run_session rs = {.from_step = t->step,
                                   .threads = intrus_blas_threads(),
                                   .ranks = dist_size(),
                                   .kernels = intrus_x86_level_name(intrus_x86_level()),
                                   .blas_core = intrus_blas_corename(),
                                   .version = PACKAGE_VERSION};
    if ((st = run_dir_note_session(t->opt->run_dir, &rs, err))) return st;
  }
  t->t0 = t->window_t = t->eta_t0 = mono_s();
  t->eta_step0 = t->step;
  if (t->opt->progress && t->stop > t->step) {
    fprintf(t->opt->progress, "training %s: %zu parameters, steps %ld..%ld", t->name,
            intrus_params_numel(t->params), t->step + 1, t->stop);
    if (dist_size() > 1)
      fprintf(t->opt->progress, ", data-parallel over %d ranks", dist_size());
    fputc('\n', t->opt->progress);
  }
  return INTRUS_OK;
}

/* Rank 0's parameters, Adam's moments and where the run stands, copied to every rank
 * after rank 0 resumed (or initialised) them: all ranks start the same. */
void trainer_share(struct trainer *t) {
  if (dist_size() == 1) return;
  const size_t n = intrus_params_numel(t->params);
  dist_bcast(intrus_params_values(t->params), n * sizeof(float));
  dist_bcast(intrus_params_adam_m(t->params), n * sizeof(float));
  dist_bcast(intrus_params_adam_v(t->params), n * sizeof(float));
  struct {
    long step, resumed_from;
    double best, train_before, last_loss;
    struct phase_state ps;
  } s = {t->step, t->res->resumed_from, t->best, t->train_before, t->res->last_loss, t->ps};
  dist_bcast(&s, sizeof s);
  t->step = s.step;
  t->res->resumed_from = s.resumed_from;
  t->best = s.best;
  t->train_before = s.train_before;
  t->res->last_loss = s.last_loss;
  t->ps = s.ps;
}

/* Every rank must train the same experiment: its results fingerprint, compared across
 * the ranks. */
enum intrus_status trainer_check_same_config(struct intrus_config *cfg, struct intrus_error *err) {
  const int N = dist_size();
  if (N == 1) return INTRUS_OK;
  uint64_t mine = intrus_config_results_fingerprint(cfg);
  uint64_t *all = malloc((size_t)N * sizeof *all);
  if (!all) abort(); /* a few bytes per rank; and every rank must reach the gather */
  dist_gather_u64(mine, all);
  enum intrus_status st = INTRUS_OK;
  for (int r = 1; r < N && !st; r++)
    if (all[r] != all[0])
      st = intrus_error_set(err, INTRUS_ERR_CONFIG,
                            "rank %d's experiment (%s on that rank) differs from rank 0's "
                            "(settings fingerprint %016llx against %016llx): start every rank "
                            "with the same experiment file (and --set), on a file system all "
                            "of them see",
                            r, r == dist_rank() ? intrus_config_filename(cfg) : "its file",
                            (unsigned long long)all[r], (unsigned long long)all[0]);
  free(all);
  return st;
}

void trainer_free(struct trainer *t) {
  if (t->log) fclose(t->log);
  if (t->lock_fd >= 0) close(t->lock_fd);
  intrus_ctx_destroy(t->scratch);
  train_phases_free(&t->ph);
  intrus_ctx_destroy(t->ctx);
  intrus_ctx_destroy(t->bctx);
  intrus_model_destroy(t->model);
  dataset_free(&t->data);
}

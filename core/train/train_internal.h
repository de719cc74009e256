/* Internal to the training loop (intrus_train, train.c) and the files it is cut into:
 * train_setup.c reads the experiment, builds the data and the model and opens the run;
 * train_checkpoint.c writes checkpoints and continues a run from one (resume, warm
 * start); train_validate.c measures the validation loss and BLEU; train.c takes the
 * steps. They share the trainer, which holds everything one run needs. */
#ifndef INTRUS_TRAIN_INTERNAL_H
#define INTRUS_TRAIN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "intrus/config.h"
#include "intrus/model.h"
#include "intrus/optim.h"
#include "intrus/train.h"
#include "model/warm_start.h"
#include "search/translate.h"
#include "text/dataset.h"
#include "train_phases.h"

/* train's settings, read by read_train (train_setup.c). */
struct train_cfg {
  long steps, log_every, valid_every, checkpoint_every, batch_tokens, valid_bleu;
  long bleu_every;  /* steps between validation BLEU decodes (a multiple of valid_every) */
  long keep_checkpoints; /* snapshots kept of the last snapshot steps (0: none) */
  long snapshot_every;   /* steps between snapshots (default: checkpoint_every) */
  int valid_beam;   /* beam of the validation decodes (0: the search group's) */
  int batch;
  long micro_tokens; /* micro_batch_tokens: a step's batch in pieces of at most this (0: whole) */
  bool has_phases;
  float label_smoothing;
  struct intrus_adam adam;
};

/* Where a phased run stands (saved with every checkpoint, so a resumed run continues
 * the same phase with the same schedule). */
struct phase_state {
  long cur, start, sched_start, stale;
  double best;
  /* The last phase once it has ended in this process (advance_phase): where it began,
   * its plateau count and best, and whether validation ended it, for the checkpoint's
   * ended_* records, from which a finished run whose config now gives that phase more
   * steps continues it (trainer_resume reads them from the checkpoint, not from here). */
  bool has_ended, ended_plateau;
  long ended_start, ended_stale;
  double ended_best;
};

/* Everything one training run holds, so that intrus_train reads as its steps. */
struct trainer {
  const struct intrus_train_options *opt;
  struct intrus_train_result *res;
  const char *name;
  long long seed;
  struct train_cfg tc;
  struct train_phases ph;
  struct dataset data;
  struct translator search;      /* the search settings, read and checked before training */
  const intrus_cfg *bleu_cfg;    /* eval.bleu, or NULL */
  struct intrus_model *model;
  struct intrus_params *params;
  intrus_ctx *ctx, *scratch;     /* scratch: insertion models' order-policy scoring */
  intrus_ctx *bctx;              /* the step's batch when it is split into micro-batches */
  FILE *log;
  int lock_fd;                   /* holds the run directory's lock; -1 before */
  uint64_t fp;                   /* config fingerprint every checkpoint carries */
  struct warm_source warm;       /* model.init */
  bool has_init_source;          /* warm-started: the source's content, in every checkpoint */
  uint64_t init_source;
  char ckpt_path[4096], best_path[4096];
  long step, stop;
  double best;                   /* best validation score: BLEU when measured, else -loss */
  struct phase_state ps;
  /* Wall seconds spent training (validation excluded) before this process, and in it. */
  double train_before, valid_time, t0;
  /* The progress window since the last log row. */
  double window_t, loss_sum;
  /* Where the progress line's rate is measured from: the start of this process or of
   * the phase, whichever is later (phases cost differently per step: INTRUS's sampled
   * steps 3-4 times its pretraining steps). */
  long eta_step0;
  double eta_t0;
  double last_lr;                /* the learning rate of the last update, for the log */
  long tokens_total, window_tokens, window_steps;
};

/* ---- train_setup.c ---------------------------------------------------------------- */

/* Reads the experiment strictly, prepares the data and the vocabulary, builds the model. */
enum intrus_status trainer_setup(struct trainer *t, struct intrus_config *cfg,
                                 struct intrus_error *err);
/* Once a resume is accepted: effective.cfg, train.log, sessions.tsv, the run's last step. */
enum intrus_status trainer_start(struct trainer *t, struct intrus_config *cfg,
                                 struct intrus_error *err);
/* Rank 0's parameters, Adam's moments and run state copied to every rank. */
void trainer_share(struct trainer *t);
/* Every rank trains the same experiment (INTRUS_ERR_CONFIG naming the rank if not). */
enum intrus_status trainer_check_same_config(struct intrus_config *cfg,
                                             struct intrus_error *err);
void trainer_free(struct trainer *t);

/* ---- train_checkpoint.c ----------------------------------------------------------- */

/* Writes a checkpoint of the run at step (parameters, with_moments: Adam's moments, run
 * state); init_source: the warm start's source content (model.init), NULL without one. */
enum intrus_status train_save_checkpoint(const char *path, uint64_t fp, bool with_moments,
                                         struct intrus_model *m, long step, double last_loss,
                                         double best, uint64_t vocab_fp,
                                         const struct phase_state *ps, double train_s,
                                         const uint64_t *init_source, struct intrus_error *err);
/* Continues from the run's checkpoint.ckpt when there is one. */
enum intrus_status trainer_resume(struct trainer *t, struct intrus_error *err);
/* model.init: a fresh run starts from the source's parameters; a resumed one rechecks it. */
enum intrus_status trainer_warm_start(struct trainer *t, struct intrus_error *err);

/* ---- train_validate.c ------------------------------------------------------------- */

/* Sentences b0..b1 of a batch as a batch of their own (views, no copies): a validation
 * batch cut into pieces, and a training step into micro-batches (train.c). */
void train_batch_slice(const struct intrus_src_batch *sb, const struct intrus_tgt_batch *tb,
                       int b0, int b1, struct intrus_src_batch *s, struct intrus_tgt_batch *t);
/* Per-token validation loss (no label smoothing, no dropout); collective over the ranks. */
enum intrus_status train_validate(struct intrus_model *m, intrus_ctx *ctx, intrus_ctx *scratch,
                                  const struct train_phases *ph, struct dataset *d,
                                  const struct train_cfg *t, uint64_t seed, double *loss,
                                  struct intrus_error *err);
/* Whether validation measures BLEU at all: text or image data and train.valid_bleu > 0. */
bool train_bleu_measured(const struct dataset *d, const struct train_cfg *t);
/* BLEU of the first train.valid_bleu validation sentences; NAN when not measured. */
enum intrus_status train_validate_bleu(struct intrus_model *m, struct dataset *d,
                                       const struct train_cfg *t,
                                       const struct translator *search,
                                       const struct intrus_plugin_search *plugins,
                                       const intrus_cfg *bleu_cfg, double *bleu,
                                       struct intrus_error *err);

#endif

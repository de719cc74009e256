/* Training an experiment: reads the `data`, `model` and `train` groups of an experiment
 * file strictly, writes the effective config into the run directory, trains with Adam
 * and the warm-up schedule, validates periodically, and checkpoints (resuming from the
 * run directory's checkpoint when there is one).
 *
 *   data:  { kind = "synthetic"; task = "copy" | "reverse" | "sort"; vocab = 16;
 *            min_len = 2; max_len = 8; valid_size = 256; };
 *   data:  { kind = "parallel"; dir = "../data/mt/en-de"; src = "en"; tgt = "de";
 *            bpe_merges = 8000; joint_vocab = true; max_len = 100; };
 *            (files DIR/{train,valid,test}.LANG[.gz], relative to the experiment file)
 *   train: { steps = 1000; batch = 32 (synthetic: sentences); batch_tokens = 4000
 *            (parallel); micro_batch_tokens = 0 (> 0: each step's batch is run in pieces
 *            of at most this many target tokens, their gradients summed: the same update
 *            in less memory); lr = 1.4e-3; warmup = 16000; beta1 = 0.9; beta2 = 0.998;
 *            clip = 0.0 (off); label_smoothing = 0.0; log_every = 100;
 *            valid_every = 1000; checkpoint_every = 1000; valid_bleu = 200 (validation
 *            sentences decoded for BLEU; 0 = off); valid_bleu_every = valid_every;
 *            valid_beam = 0 (the search group's) };
 *   (insertion decoders: train.phases instead of steps, see docs/intrus.md)
 *
 * Every validation also keeps RUN_DIR/best.ckpt: the parameters with the best validation
 * BLEU (parallel data) or loss (synthetic) so far.
 */
#ifndef INTRUS_TRAIN_H
#define INTRUS_TRAIN_H

#include <stdbool.h>
#include <stdio.h>

#include "intrus/config.h"
#include "intrus/plugin.h"
#include "intrus/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct intrus_train_options {
  const char *run_dir;               /* created if missing */
  const struct intrus_plugin_search *search;
  FILE *progress;                    /* progress lines (NULL = quiet) */
  long max_steps;                    /* stop after this step even if train.steps is more
                                        (0 = no limit); the checkpoint stays resumable */
  /* Called after every step with the step's training loss (tests, logs). */
  void (*on_step)(long step, double loss, void *user);
  void *user;
  /* Read and check every setting of the experiment and build its model, then stop:
   * no run directory, no data read, no step (`intrus config`; run_dir is unused). */
  bool settings_only;
};

struct intrus_train_result {
  long steps_done;        /* the step count reached (including resumed steps) */
  long resumed_from;      /* 0 for a fresh run */
  double last_loss;       /* training loss of the last step */
  double valid_loss;      /* per-token validation loss at the end */
  double valid_bleu;      /* BLEU of the first train.valid_bleu validation sentences at the
                             end (NAN for synthetic data or valid_bleu = 0) */
  double seconds;         /* wall time of this invocation */
  double tokens_per_s;    /* target tokens per second over this invocation */
  int ranks;              /* processes training together (1 unless under mpirun) */
  double sum_seconds;     /* of `seconds`, the time spent summing gradients across ranks */
};

enum intrus_status intrus_train(struct intrus_config *cfg, const struct intrus_train_options *opt,
                                struct intrus_train_result *res, struct intrus_error *err);

#ifdef __cplusplus
}
#endif
#endif

/* Training phases of an insertion model (DESIGN.md section 4, "Training schedule"):
 *
 *   train: {
 *     phases = (
 *       { name = "pretrain"; order = { plugin = "uniform"; }; loss = "uniform";
 *         states = "one"; steps = 1000; },
 *       { name = "main"; order = { plugin = "sampled"; temperature = 1.0; }; loss = "main";
 *         states = "all"; steps = 5000; until = "plateau"; patience = 3;
 *         restart_optimizer = true; }
 *     );
 *   };
 *
 * Each phase: an order policy (a plugin with its own settings), a loss ("main":
 * log-sum-exp over the correct insertions; "uniform": cross-entropy against the uniform
 * distribution over them), which states of each trajectory are trained on ("all", or
 * "one" drawn per sentence), how a batch's states weigh in its loss (`weight`: "state",
 * the mean over the states; "length", each sentence in proportion to its trajectory's
 * n + 1 states, ins_train_loss), a length (`steps`, or `until = "plateau"`: at most `steps`,
 * ending earlier once `patience` validations in a row have not improved the phase's
 * best score), and whether the optimizer state and the learning-rate schedule restart
 * when the phase begins. */
#ifndef INTRUS_TRAIN_PHASES_H
#define INTRUS_TRAIN_PHASES_H

#include "model/insertion_model.h"
#include "intrus/config.h"
#include "intrus/plugin.h"

struct train_phase {
  const char *name;
  struct intrus_plugin *plugin;
  struct ins_train_spec spec;
  long steps;
  bool plateau;
  int patience;
  bool restart_optimizer;
  /* The phase's own peak learning rate and warm-up, when it gives them (has_*); otherwise
   * train.lr and train.warmup. */
  bool has_lr, has_warmup;
  double lr;
  long warmup;
};

struct train_phases {
  int count;
  struct train_phase *phase;
  long total_steps;                 /* sum of the phases' steps: the most a run can take */
  /* Validation loss of insertion models: uniform-order trajectories, every state, main
   * loss; the same for every phase so that scores compare across phases. */
  struct intrus_plugin *valid_plugin;
  struct ins_train_spec valid;
};

/* Reads train.phases (a list) strictly, loading each phase's order plugin. */
enum intrus_status train_phases_read(const intrus_cfg *train, const struct intrus_plugin_search *search,
                                     struct train_phases *out, struct intrus_error *err);
void train_phases_free(struct train_phases *p);

#endif

/* The core's side of an insertion model: the model as a scorer of states (for search
 * and for the order policies that need the model) and the INTRUS training loss of a
 * batch under an order policy. */
#ifndef INTRUS_INSERTION_MODEL_H
#define INTRUS_INSERTION_MODEL_H

#include "intrus/insertion.h"
#include "intrus/model.h"
#include "intrus/plugin.h"

/* A scorer over one batch of sources: encodes them once (no grad) and keeps the
 * decoder's cache of the memory. ctx is its own scratch arena, reset per positions()
 * call. */
struct ins_model_scorer {
  struct intrus_ins_scorer sc;       /* what search and policies call */
  struct intrus_model *model;
  const struct intrus_decoder_vtable *dec;
  void *dec_self, *cache;
  intrus_ctx *ctx;
  intrus_tensor *w_token, *w_pos, *hidden;
  struct intrus_packed *tok_packed; /* w_token, packed for the token softmax */
  int *row0;                         /* first hidden row of each state of the last batch */
  int nstates, row0_cap;
  /* After slot_logits(): hidden holds the asked slots' rows only, and kept[r] is the
   * hidden row of decoder row r (-1: not asked). */
  bool by_slot;
  int *kept, kept_cap;
  bool step_rows;                    /* the decoder has ins_step_rows (else: ins_step) */
};

/* ctx: a scratch context the scorer may reset (not the caller's training arena). */
enum intrus_status ins_scorer_open(struct ins_model_scorer *s, struct intrus_model *m,
                                   intrus_ctx *ctx, const struct intrus_src_batch *src,
                                   struct intrus_error *err);
void ins_scorer_close(struct ins_model_scorer *s);

/* How one training phase turns targets into states and losses. */
struct ins_train_spec {
  const struct intrus_order_vtable *order;
  void *order_self;
  enum intrus_ins_loss_kind loss;
  bool chosen;          /* the loss of the order's own insertion only (loss = "chosen", the
                           reference code's loss_use_logp_chosen): with the l2r order, a
                           left-to-right model's next-token loss; otherwise every correct
                           insertion of the state */
  bool all_states;      /* every state of each trajectory, or per_sentence random ones */
  int per_sentence;     /* without all_states: distinct states drawn per sentence (1) */
  bool finish_state;    /* without all_states: the per_sentence states are drawn among the
                           incomplete ones and the complete state (the finish decision) is
                           trained as well */
  float late_bias;      /* without all_states: state k (of 0..n) is drawn with weight
                           (k + 1)^late_bias; 0, uniform (the draws as before the setting) */
  bool length_weight;   /* weight = "length": each state's loss weighted so that every
                           sentence weighs its trajectory's n + 1 states in all, the loss
                           normalised by the batch's sum of n + 1 (ins_train_units); false:
                           the plain mean over the states trained on */
  const int *given;     /* tests only (NULL in training): without all_states, instead of
                           drawing, sentence b of the call trains on the states
                           given[b * (per_sentence + finish_state) ..] (as many as it would
                           draw, ascending; with finish_state ending with n), so that a test
                           can enumerate every choice of states */
  float label_smoothing; /* of the token terms (train.label_smoothing; 0 in validation) */
  int state_lo, state_hi; /* with all_states: only the states of k tokens, state_lo <= k <
                             state_hi (state_hi 0: all); validation splits a long target's
                             states into windows so that memory stays bounded */
};

/* The INTRUS loss of a batch, recorded on ctx's tape: the mean over the states trained
 * on, or with spec->length_weight sum_s w_s L_s / sum_b (n_b + 1), where a state drawn
 * uniformly among its sentence's P candidates, D of them drawn, has w_s = P / D (1 for
 * every state under all_states, and for the complete state added by finish_state): the
 * unbiased estimate of the all-states loss per state of the batch (with late_bias the
 * draws stay biased; each sentence still weighs n + 1).
 * scratch: a second context for the order policy's scoring pass (reset here). seed
 * makes the policy's and the state choice's randomness a function of the step.
 * out->tokens counts target tokens plus one finish per sentence (as the baseline counts
 * EOS); out->nll_sum is the sum of the state losses (weighted by w_s with
 * length_weight). */
enum intrus_status ins_train_loss(struct intrus_model *m, intrus_ctx *ctx, intrus_ctx *scratch,
                                  const struct intrus_src_batch *src,
                                  const struct intrus_tgt_batch *tgt,
                                  const struct ins_train_spec *spec, uint64_t seed,
                                  struct intrus_loss_out *out, struct intrus_error *err);
/* The same for a micro-batch: sentence b of src/tgt is sentence first + b of the step's
 * batch, and draws that sentence's random numbers, so that micro-batches together train
 * on exactly the states and orders the whole batch would. */
enum intrus_status ins_train_loss_at(struct intrus_model *m, intrus_ctx *ctx,
                                     intrus_ctx *scratch, const struct intrus_src_batch *src,
                                     const struct intrus_tgt_batch *tgt, int first,
                                     const struct ins_train_spec *spec, uint64_t seed,
                                     struct intrus_loss_out *out, struct intrus_error *err);
/* How many states ins_train_loss trains on for targets of these lengths (the loss is
 * their mean). */
long ins_train_states(const struct ins_train_spec *spec, const int *lens, int count);
/* What ins_train_loss's loss is a mean over, for targets of these lengths: the states
 * trained on, or with length_weight the trajectories' states, n + 1 per sentence (a
 * state window's own states). Micro-batches weight their pieces' losses by their share
 * of it. */
long ins_train_units(const struct ins_train_spec *spec, const int *lens, int count);
/* Wall seconds spent so far in order policies' trajectories() by ins_train_loss and
 * ins_train_loss_at, all threads' calls together: the sampling pass of a model-sampled
 * order, timed inside the steps it belongs to (the benchmarks' measure of it). */
double ins_train_order_seconds(void);

/* A uniformly random order of n target positions, perm[0..n): the position written
 * first, second, ...; a function of (seed, key) alone. */
void ins_uniform_order(uint64_t seed, uint64_t key, int n, int *perm);
/* One state of a uniformly random order (ins_state_losses). */
struct ins_state_loss {
  int sent;          /* its sentence in the batch */
  int k, n;          /* tokens already written, target length */
  float loss;        /* -log of the summed p(i, c) of its correct insertions (canonical
                        ones for a canonical model); at k == n, -log p(finish) */
  float logp_finish; /* log p(finish) in this state */
};
/* For each sentence b of the batch one uniformly random order of its target (drawn from
 * the stream (seed, keys[b]): a sentence gets the same order in any batch), and every
 * state k = 0..n_b of it, scored with the model (no gradient): out[o_b + k], where
 * o_b = sum over b' < b of (n_b' + 1). scratch is reset here. The mean of the losses per
 * (target token + finish) is what validation measures, on other random orders. */
enum intrus_status ins_state_losses(struct intrus_model *m, intrus_ctx *scratch,
                                    const struct intrus_src_batch *src,
                                    const struct intrus_tgt_batch *tgt, uint64_t seed,
                                    const uint64_t *keys, struct ins_state_loss *out,
                                    struct intrus_error *err);

#endif

/* Search strategies over a decoder's step API. */
#ifndef INTRUS_SEARCH_H
#define INTRUS_SEARCH_H

#include <stdbool.h>

#include "intrus/model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct intrus_beam_opts {
  int beam;          /* hypotheses kept per sentence (1 = greedy) */
  float alpha;       /* final score = log p / len^alpha, len counting EOS */
  float max_len_a;   /* at most a * |src| + b tokens before EOS */
  int max_len_b;
  int min_len;       /* EOS is not allowed before this many tokens (0) */
  bool finish_in_beam; /* insertion models: see intrus_ins_search_opts (false) */
  bool prune;        /* insertion models: token softmax only at slots that can still enter
                        the beam (see intrus_ins_search_opts) */
  int slots;         /* insertion models: token softmax only at each hypothesis's `slots`
                        most probable slots (0 = every slot; see intrus_ins_search_opts) */
  double finish_penalty; /* >= 0, subtracted from log p(EOS) / log p(finish) wherever the
                        search compares it; results keep the model's log p, their score is
                        (logp - finish_penalty) / (len + 1)^alpha (0) */
};

/* Defaults: beam 4, alpha 1, max length 2 * |src| + 3 (DESIGN section 4). */
struct intrus_beam_opts intrus_beam_defaults(void);

struct intrus_beam_result {
  int32_t *tokens;   /* generation order, without EOS; malloc'd, free with free() */
  int len;
  double logp;       /* log p(tokens, EOS) */
  double score;      /* (logp - finish_penalty) / (len + 1)^alpha */
};

/* Beam search for every sentence of src. Candidates are every vocabulary entry except
 * PAD, BOS and UNK; a hypothesis that emits EOS is finished; a sentence stops when it has
 * `beam` finished hypotheses or reaches its length limit (where only EOS is allowed).
 * The best finished hypothesis by score goes to out[b]. ctx is reset before every
 * decoder step (not before encoding, so src may live in ctx's arena). */
enum intrus_status intrus_beam_search(struct intrus_model *m, intrus_ctx *ctx,
                                      const struct intrus_src_batch *src,
                                      const struct intrus_beam_opts *opts,
                                      struct intrus_beam_result *out, struct intrus_error *err);

#ifdef __cplusplus
}
#endif
#endif

/* The Transformer settings the encoder and decoder plugins share (nn.h). Kept apart
 * from nn.c, whose layers are pure tensor code: this file is the tensor layer's only
 * reader of experiment configs. */
#include "intrus/nn.h"

enum intrus_status intrus_transformer_cfg_read(const intrus_cfg *g, int d_model,
                                               struct intrus_transformer_cfg *out,
                                               struct intrus_error *err) {
  long long layers, heads, ff;
  double dropout;
  enum intrus_status st;
  /* The order of these reads is the order in which defaults appear in a run's
   * effective config: changing it would change every effective.cfg written since. */
  if ((st = intrus_cfg_int_range(g, "layers", 6, 1, 64, &layers, err)) ||
      (st = intrus_cfg_int_range(g, "heads", 8, 1, 64, &heads, err)) ||
      (st = intrus_cfg_int_range(g, "ff", 4LL * d_model, 1, 1 << 16, &ff, err)) ||
      (st = intrus_cfg_double_range(g, "dropout", 0.1, 0.0, 0.95, &dropout, err)))
    return st;
  *out = (struct intrus_transformer_cfg){.d_model = d_model,
                                         .layers = (int)layers,
                                         .heads = (int)heads,
                                         .ff = (int)ff,
                                         .dropout = (float)dropout};
  return INTRUS_OK;
}

enum intrus_status intrus_transformer_cfg_check(const intrus_cfg *g,
                                                const struct intrus_transformer_cfg *t,
                                                struct intrus_error *err) {
  /* Checked here rather than left to intrus_attention_init, which panics: a bad
   * experiment file is the user's error and gets a message at the heads line. */
  if (t->d_model % t->heads)
    return intrus_cfg_error(g, "heads", err, "d_model %d is not divisible by %d heads",
                            t->d_model, t->heads);
  return INTRUS_OK;
}

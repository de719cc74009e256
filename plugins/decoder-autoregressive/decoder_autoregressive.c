/* decoder "autoregressive": the standard Transformer decoder (the paper's left-to-right
 * and right-to-left baselines). Pre-norm causal self-attention, cross-attention to the
 * encoder memory, feed-forward; trained with teacher forcing. Direction -1 reads and
 * writes the target reversed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "intrus/nn.h"
#include "intrus/plugin.h"

struct decoder {
  int d, layers, heads, ff, vocab;
  float dropout;
  bool tie;
  intrus_tensor *embed; /* [tgt_vocab, d] */
  struct intrus_decoder_layer *layer;
  struct intrus_norm final_norm;
  struct intrus_linear proj; /* [d, tgt_vocab], unused when tied */
};

static enum intrus_status dec_create(const struct intrus_model_init *init, void **self,
                                     struct intrus_error *err) {
  const intrus_cfg *g = init->cfg;
  long long layers, heads, ff;
  double dropout;
  bool tie;
  enum intrus_status st;
  if ((st = intrus_cfg_int_range(g, "layers", 6, 1, 64, &layers, err)) ||
      (st = intrus_cfg_int_range(g, "heads", 8, 1, 64, &heads, err)) ||
      (st = intrus_cfg_int_range(g, "ff", 4LL * init->d_model, 1, 1 << 16, &ff, err)) ||
      (st = intrus_cfg_double_range(g, "dropout", 0.1, 0.0, 0.95, &dropout, err)) ||
      (st = intrus_cfg_bool(g, "tie_embeddings", false, &tie, err)) ||
      (st = intrus_cfg_check_unknown(g, err)))
    return st;
  if (init->d_model % heads)
    return intrus_cfg_error(g, "heads", err, "d_model %d is not divisible by %lld heads",
                            init->d_model, heads);
  struct decoder *dc = calloc(1, sizeof *dc);
  if (!dc || !(dc->layer = calloc((size_t)layers, sizeof *dc->layer))) {
    free(dc);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "decoder autoregressive: out of memory");
  }
  dc->d = init->d_model;
  dc->layers = (int)layers;
  dc->heads = (int)heads;
  dc->ff = (int)ff;
  dc->vocab = init->tgt_vocab;
  dc->dropout = (float)dropout;
  dc->tie = tie;
  char name[256];
  int eshape[2] = {dc->vocab, dc->d};
  snprintf(name, sizeof name, "%sembed", init->prefix);
  dc->embed = intrus_params_add(init->params, name, 2, eshape, INTRUS_INIT_NORMAL,
                                1.0f / sqrtf((float)dc->d));
  for (int i = 0; i < dc->layers; i++) {
    snprintf(name, sizeof name, "%slayer%d", init->prefix, i);
    intrus_decoder_layer_init(&dc->layer[i], init->params, name, dc->d, dc->heads, dc->ff);
  }
  snprintf(name, sizeof name, "%sfinal_norm", init->prefix);
  intrus_norm_init(&dc->final_norm, init->params, name, dc->d);
  if (!tie) {
    snprintf(name, sizeof name, "%sproj", init->prefix);
    intrus_linear_init(&dc->proj, init->params, name, dc->d, dc->vocab, false);
  }
  *self = dc;
  return INTRUS_OK;
}

static void dec_destroy(void *self) {
  struct decoder *dc = self;
  if (!dc) return;
  free(dc->layer);
  free(dc);
}

static enum intrus_status dec_loss(void *self, intrus_ctx *ctx, const struct intrus_memory *mem,
                                   const struct intrus_tgt_batch *tgt,
                                   const struct intrus_train_opts *opts,
                                   struct intrus_loss_out *out, struct intrus_error *err) {
  struct decoder *dc = self;
  int B = tgt->batch, T = tgt->len + 1; /* BOS + tokens in, tokens + EOS out */
  bool reverse = opts && opts->direction < 0;
  int32_t *in = intrus_ctx_alloc(ctx, (size_t)B * T * sizeof *in);
  int32_t *gold = intrus_ctx_alloc(ctx, (size_t)B * T * sizeof *gold);
  int *lens = intrus_ctx_alloc(ctx, (size_t)B * sizeof *lens);
  long tokens = 0;
  for (int b = 0; b < B; b++) {
    int n = tgt->lens[b];
    if (n < 0 || n > tgt->len)
      return intrus_error_set(err, INTRUS_ERR_INVALID, "target %d has length %d of %d", b, n,
                              tgt->len);
    const int32_t *y = tgt->tokens + (size_t)b * tgt->len;
    int32_t *ib = in + (size_t)b * T, *gb = gold + (size_t)b * T;
    ib[0] = INTRUS_BOS;
    for (int t = 0; t < n; t++) {
      int32_t tok = y[reverse ? n - 1 - t : t];
      if (tok < 0 || tok >= dc->vocab)
        return intrus_error_set(err, INTRUS_ERR_INVALID,
                                "target %d has token id %d outside the vocabulary of %d", b,
                                tok, dc->vocab);
      ib[t + 1] = tok;
      gb[t] = tok;
    }
    gb[n] = INTRUS_EOS;
    for (int t = n + 1; t < T; t++) ib[t] = gb[t] = INTRUS_PAD;
    lens[b] = n + 1;
    tokens += n + 1;
  }
  uint8_t *self_mask = intrus_length_mask(ctx, lens, B, T);
  intrus_tensor *x = intrus_embed_tokens(ctx, dc->embed, in, B, T, dc->dropout);
  for (int i = 0; i < dc->layers; i++)
    x = intrus_decoder_layer_forward(ctx, &dc->layer[i], x, self_mask, true, mem->states,
                                     mem->mask, dc->dropout);
  x = intrus_norm_forward(ctx, &dc->final_norm, x);
  int flat[2] = {B * T, dc->d};
  x = intrus_reshape(ctx, x, 2, flat);
  intrus_tensor *logits = dc->tie ? intrus_matmul(ctx, x, dc->embed, false, true)
                                  : intrus_linear_forward(ctx, &dc->proj, x);
  float smoothing = opts ? opts->label_smoothing : 0.0f;
  out->loss = intrus_cross_entropy(ctx, logits, gold, smoothing, INTRUS_PAD);
  out->tokens = tokens;
  out->nll_sum = (double)out->loss->data[0] * tokens;
  return INTRUS_OK;
}

static const struct intrus_decoder_vtable vtable = {
    .create = dec_create, .destroy = dec_destroy, .loss = dec_loss};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(decoder_autoregressive) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "autoregressive",
    .version = "1.0.0",
    .kind = INTRUS_KIND_DECODER,
    .summary = "causal pre-norm Transformer decoder (left-to-right / right-to-left baseline)",
    .vtable = &vtable,
};

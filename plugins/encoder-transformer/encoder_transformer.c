/* encoder "transformer": token embeddings scaled by sqrt(d) plus sinusoidal positions,
 * then pre-norm self-attention layers and a final layer norm. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "intrus/nn.h"
#include "intrus/plugin.h"

struct encoder {
  int d, layers, heads, ff;
  float dropout;
  intrus_tensor *embed; /* [src_vocab, d] */
  struct intrus_encoder_layer *layer;
  struct intrus_norm final_norm;
};

static enum intrus_status enc_create(const struct intrus_model_init *init, void **self,
                                     struct intrus_error *err) {
  const intrus_cfg *g = init->cfg;
  struct intrus_transformer_cfg t;
  enum intrus_status st;
  if ((st = intrus_transformer_cfg_read(g, init->d_model, &t, err)) ||
      (st = intrus_cfg_check_unknown(g, err)) ||
      (st = intrus_transformer_cfg_check(g, &t, err)))
    return st;
  struct encoder *e = calloc(1, sizeof *e);
  if (!e || !(e->layer = calloc((size_t)t.layers, sizeof *e->layer))) {
    free(e);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "encoder transformer: out of memory");
  }
  e->d = t.d_model;
  e->layers = t.layers;
  e->heads = t.heads;
  e->ff = t.ff;
  e->dropout = t.dropout;
  char name[256];
  int eshape[2] = {init->src_vocab, e->d};
  snprintf(name, sizeof name, "%sembed", init->prefix);
  e->embed = intrus_params_add(init->params, name, 2, eshape, INTRUS_INIT_NORMAL,
                               1.0f / sqrtf((float)e->d));
  for (int i = 0; i < e->layers; i++) {
    snprintf(name, sizeof name, "%slayer%d", init->prefix, i);
    intrus_encoder_layer_init(&e->layer[i], init->params, name, e->d, e->heads, e->ff);
  }
  snprintf(name, sizeof name, "%sfinal_norm", init->prefix);
  intrus_norm_init(&e->final_norm, init->params, name, e->d);
  *self = e;
  return INTRUS_OK;
}

static void enc_destroy(void *self) {
  struct encoder *e = self;
  if (!e) return;
  free(e->layer);
  free(e);
}

static enum intrus_status enc_encode(void *self, intrus_ctx *ctx,
                                     const struct intrus_src_batch *src,
                                     struct intrus_memory *out, struct intrus_error *err) {
  struct encoder *e = self;
  if (!src->tokens)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "encoder transformer reads token sources, got images");
  int B = src->batch, S = src->len;
  uint8_t *mask = intrus_length_mask(ctx, src->lens, B, S);
  intrus_tensor *x = intrus_embed_tokens(ctx, e->embed, src->tokens, B, S, e->dropout);
  for (int i = 0; i < e->layers; i++)
    x = intrus_encoder_layer_forward(ctx, &e->layer[i], x, mask, e->dropout);
  out->states = intrus_norm_forward(ctx, &e->final_norm, x);
  out->mask = mask;
  out->batch = B;
  out->len = S;
  return INTRUS_OK;
}

static const struct intrus_encoder_vtable vtable = {
    .create = enc_create, .destroy = enc_destroy, .encode = enc_encode};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(encoder_transformer) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "transformer",
    .version = "1.0.0",
    .kind = INTRUS_KIND_ENCODER,
    .summary = "pre-norm Transformer encoder over tokens (sinusoidal positions)",
    .vtable = &vtable,
};

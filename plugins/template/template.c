/* encoder_template: the smallest complete encoder plugin, meant to be copied.
 *
 * It embeds each source token and multiplies by a constant:
 *
 *     memory[b, t, :] = embedding[tokens[b, t], :] * scale
 *
 * That is a useless encoder (no context at all) but it exercises every part of the
 * plugin contract: strict reading of its config group, registering a parameter, the
 * forward pass through the tensor engine (autodiff comes for free) and the descriptor.
 * See README.md in this directory for how to turn a copy into a new plugin.
 *
 * Experiment file:
 *
 *     model: { encoder: { plugin = "template"; scale = 1.0; }; ... };
 *
 * Everything except the descriptor is static: the module exports one symbol only. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "intrus/plugin.h"

struct template_encoder {
  intrus_tensor *embedding; /* [src_vocab, d_model]; owned by the parameter set */
  float scale;
};

static enum intrus_status template_create(const struct intrus_model_init *init, void **self,
                                          struct intrus_error *err) {
  enum intrus_status st;
  double scale;

  /* Read every setting first and reject unknown ones before registering anything, so a
   * config error leaves the parameter set untouched. The default is written back into
   * the tree, so the run's saved config shows the value actually used. Settings the core
   * itself reads from this group (such as the plugin's name) are already marked read. */
  st = intrus_cfg_double_range(init->cfg, "scale", 1.0, 0.0, 1e3, &scale, err);
  if (st != INTRUS_OK) return st;
  st = intrus_cfg_check_unknown(init->cfg, err);
  if (st != INTRUS_OK) return st;

  struct template_encoder *enc = malloc(sizeof *enc);
  if (!enc) return intrus_error_set(err, INTRUS_ERR_NOMEM, "encoder 'template': out of memory");
  enc->scale = (float)scale;

  /* Parameter names carry the prefix the core gives ("encoder."), which keeps them
   * unique across encoder and decoder and stable in checkpoints. Values are set by
   * intrus_params_finalize; N(0, 1/d_model) keeps embedding * sqrt(d_model) at unit
   * scale, the usual Transformer convention. */
  char name[256];
  snprintf(name, sizeof name, "%sembedding", init->prefix);
  int shape[2] = {init->src_vocab, init->d_model};
  enc->embedding = intrus_params_add(init->params, name, 2, shape, INTRUS_INIT_NORMAL,
                                     1.0f / sqrtf((float)init->d_model));
  *self = enc;
  return INTRUS_OK;
}

static void template_destroy(void *self) {
  /* The embedding tensor belongs to the parameter set; only our struct is ours. */
  free(self);
}

static enum intrus_status template_encode(void *self, intrus_ctx *ctx,
                                          const struct intrus_src_batch *src,
                                          struct intrus_memory *out, struct intrus_error *err) {
  struct template_encoder *enc = self;
  if (!src->tokens)
    return intrus_error_set(err, INTRUS_ERR_CONFIG,
                            "encoder 'template' reads token sequences, but the source data "
                            "are images: choose an image encoder for this data set");

  /* Ops allocate their results in the context's arena and record themselves on the
   * tape, so this forward code is all that training needs. */
  int shape[2] = {src->batch, src->len};
  intrus_tensor *x = intrus_embedding(ctx, enc->embedding, src->tokens, 2, shape);
  out->states = intrus_scale(ctx, x, enc->scale);

  /* The mask lives in the arena too: it must stay valid exactly as long as the states
   * (until the next intrus_ctx_reset) and needs no freeing. */
  uint8_t *mask = intrus_ctx_alloc(ctx, (size_t)src->batch * (size_t)src->len);
  for (int b = 0; b < src->batch; b++)
    for (int t = 0; t < src->len; t++) mask[(size_t)b * src->len + t] = t < src->lens[b];
  out->mask = mask;
  out->batch = src->batch;
  out->len = src->len;
  return INTRUS_OK;
}

static const struct intrus_encoder_vtable template_vtable = {
    .create = template_create,
    .destroy = template_destroy,
    .encode = template_encode,
};

/* The one exported symbol. INTRUS_PLUGIN_DESC(encoder_template) expands to
 * encoder_template_LTX_intrus_plugin_desc: the prefix must be the module's file name
 * (plugins/encoder_template.la), which is how libltdl finds it. */
INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(encoder_template) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "template",
    .version = "1.0.0",
    .kind = INTRUS_KIND_ENCODER,
    .summary = "token embedding times a constant; a starting point for new encoders",
    .vtable = &template_vtable,
};

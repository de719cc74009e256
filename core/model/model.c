#include <stdio.h>
#include <stdlib.h>

#include "intrus/model.h"
#include "warm_start.h"

struct intrus_model {
  struct intrus_plugin *enc_plugin, *dec_plugin;
  const struct intrus_encoder_vtable *enc;
  const struct intrus_decoder_vtable *dec;
  void *enc_self, *dec_self;
  struct intrus_params *params;
  int d_model, tgt_vocab, direction;
  bool insertion; /* the decoder scores partial outputs (ABI 1.2 ins_* slots) */
  bool canonical; /* insertion models: no copy of a slot's left token (intrus_ins_canonical) */
};

/* Reads `plugin` from a component group and loads that plugin. */
static enum intrus_status load_component(const intrus_cfg *model, const char *key,
                                         enum intrus_plugin_kind kind,
                                         const struct intrus_plugin_search *search,
                                         const intrus_cfg **group, struct intrus_plugin **plugin,
                                         struct intrus_error *err) {
  const char *name;
  enum intrus_status st;
  if ((st = intrus_cfg_group_req(model, key, group, err)) ||
      (st = intrus_cfg_string_req(*group, "plugin", &name, err)))
    return st;
  if ((st = intrus_plugin_load(search, kind, name, plugin, err))) {
    /* Point at the experiment's line as well as at the plugin problem. */
    char msg[INTRUS_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
    intrus_cfg_error(*group, "plugin", err, "%s", msg);
    if (err) err->status = st;
    return st;
  }
  return INTRUS_OK;
}

enum intrus_status intrus_model_create(const intrus_cfg *cfg,
                                       const struct intrus_plugin_search *search,
                                       int src_vocab, int tgt_vocab, uint64_t seed,
                                       struct intrus_model **out, struct intrus_error *err) {
  *out = NULL;
  long long d;
  enum intrus_status st;
  static const char *const orders[] = {"l2r", "r2l", NULL};
  int order = 0;
  if ((st = intrus_cfg_int_range(cfg, "d_model", 512, 2, 1 << 14, &d, err))) return st;
  if (d % 2)
    return intrus_cfg_error(cfg, "d_model", err, "must be even (sinusoidal positions), got %lld",
                            d);
  struct intrus_model *m = calloc(1, sizeof *m);
  if (!m) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  m->d_model = (int)d;
  m->tgt_vocab = tgt_vocab;
  m->params = intrus_params_create();
  const intrus_cfg *eg, *dg;
  if ((st = load_component(cfg, "encoder", INTRUS_KIND_ENCODER, search, &eg, &m->enc_plugin,
                           err)) ||
      (st = load_component(cfg, "decoder", INTRUS_KIND_DECODER, search, &dg, &m->dec_plugin,
                           err)))
    goto fail;
  m->enc = intrus_plugin_descriptor(m->enc_plugin)->vtable;
  m->dec = intrus_plugin_descriptor(m->dec_plugin)->vtable;
  /* Slots past `finish` exist only in vtables of ABI minor 2 and later. */
  m->insertion = intrus_plugin_descriptor(m->dec_plugin)->abi_minor >= 2 &&
                 m->dec->ins_hidden && m->dec->ins_output && m->dec->ins_start &&
                 m->dec->ins_step;
  if (!m->insertion && !m->dec->loss) {
    st = intrus_cfg_error(dg, "plugin", err,
                          "decoder plugin '%s' has neither a training loss nor the insertion "
                          "slots", intrus_plugin_descriptor(m->dec_plugin)->name);
    goto fail;
  }
  if (m->insertion && intrus_cfg_has(cfg, "order")) {
    st = intrus_cfg_error(cfg, "order", err,
                          "applies to the autoregressive decoder only; an insertion decoder's "
                          "order comes from the order policy of each training phase");
    goto fail;
  }
  if (!m->insertion && (st = intrus_cfg_choice(cfg, "order", "l2r", orders, &order, err)))
    goto fail;
  m->direction = order == 0 ? 1 : -1;
  if (!m->insertion && intrus_cfg_has(cfg, "canonical")) {
    st = intrus_cfg_error(cfg, "canonical", err, "applies to insertion decoders only");
    goto fail;
  }
  /* Read only when given, so that the fingerprints of runs trained before the setting
   * existed stay the same. */
  if (intrus_cfg_has(cfg, "canonical") &&
      (st = intrus_cfg_bool(cfg, "canonical", false, &m->canonical, err)))
    goto fail;
  /* model.init (a warm start) is the trainer's to apply; read here as well, so that
   * every command that builds the model reads the group strictly. */
  struct warm_source ws;
  if ((st = intrus_warm_source_read(cfg, NULL, &ws, err)) ||
      (st = intrus_cfg_check_unknown(cfg, err)))
    goto fail;
  struct intrus_model_init init = {.cfg = eg, .params = m->params, .prefix = "encoder.",
                                   .d_model = m->d_model, .src_vocab = src_vocab,
                                   .tgt_vocab = tgt_vocab};
  if ((st = m->enc->create(&init, &m->enc_self, err))) goto fail;
  init.cfg = dg;
  init.prefix = "decoder.";
  if ((st = m->dec->create(&init, &m->dec_self, err))) goto fail;
  /* Reading settings alone (`intrus config`) needs the parameters' shapes, not their
   * memory: a Transformer-base would cost a second and 700 MB here. */
  if (!intrus_cfg_settings_only(cfg) && (st = intrus_params_finalize(m->params, seed, err)))
    goto fail;
  *out = m;
  return INTRUS_OK;
fail:
  intrus_model_destroy(m);
  return st;
}

void intrus_model_destroy(struct intrus_model *m) {
  if (!m) return;
  if (m->enc_self) m->enc->destroy(m->enc_self);
  if (m->dec_self) m->dec->destroy(m->dec_self);
  intrus_params_destroy(m->params);
  if (m->enc_plugin) intrus_plugin_close(m->enc_plugin);
  if (m->dec_plugin) intrus_plugin_close(m->dec_plugin);
  free(m);
}

struct intrus_params *intrus_model_params(struct intrus_model *m) { return m->params; }
int intrus_model_d(const struct intrus_model *m) { return m->d_model; }

enum intrus_status intrus_model_loss(struct intrus_model *m, intrus_ctx *ctx,
                                     const struct intrus_src_batch *src,
                                     const struct intrus_tgt_batch *tgt,
                                     const struct intrus_train_opts *opts,
                                     struct intrus_loss_out *out, struct intrus_error *err) {
  if (m->insertion)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "an insertion decoder has no teacher-forcing loss "
                            "(train it through order policies)");
  struct intrus_memory mem;
  enum intrus_status st = intrus_model_encode(m, ctx, src, &mem, err);
  if (st) return st;
  return m->dec->loss(m->dec_self, ctx, &mem, tgt, opts, out, err);
}

enum intrus_status intrus_model_encode(struct intrus_model *m, intrus_ctx *ctx,
                                       const struct intrus_src_batch *src,
                                       struct intrus_memory *mem, struct intrus_error *err) {
  return m->enc->encode(m->enc_self, ctx, src, mem, err);
}

const struct intrus_decoder_vtable *intrus_model_decoder(struct intrus_model *m, void **self) {
  *self = m->dec_self;
  return m->dec;
}

unsigned intrus_model_decoder_abi_minor(const struct intrus_model *m) {
  return intrus_plugin_descriptor(m->dec_plugin)->abi_minor;
}

int intrus_model_tgt_vocab(const struct intrus_model *m) { return m->tgt_vocab; }

int intrus_model_direction(const struct intrus_model *m) { return m->direction; }

bool intrus_model_is_insertion(const struct intrus_model *m) { return m->insertion; }

bool intrus_model_canonical(const struct intrus_model *m) { return m->canonical; }

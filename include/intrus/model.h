/* A model: an encoder plugin and a decoder plugin over one parameter set, built from the
 * experiment's `model` group:
 *
 *   model: {
 *     d_model = 256;
 *     order = "l2r";              # or "r2l"
 *     encoder: { plugin = "transformer"; ... the plugin's own settings ... };
 *     decoder: { plugin = "autoregressive"; ... };
 *   };
 */
#ifndef INTRUS_MODEL_H
#define INTRUS_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "intrus/config.h"
#include "intrus/params.h"
#include "intrus/plugin.h"
#include "intrus/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct intrus_model;

/* Loads the two plugins named in cfg (the `model` group) from the search path, creates
 * them, finalises the parameters with seed. Reads the group strictly. */
enum intrus_status intrus_model_create(const intrus_cfg *cfg,
                                       const struct intrus_plugin_search *search,
                                       int src_vocab, int tgt_vocab, uint64_t seed,
                                       struct intrus_model **out, struct intrus_error *err);
void intrus_model_destroy(struct intrus_model *m);

struct intrus_params *intrus_model_params(struct intrus_model *m);
int intrus_model_d(const struct intrus_model *m);

/* Encodes src and returns the decoder's training loss for tgt. */
enum intrus_status intrus_model_loss(struct intrus_model *m, intrus_ctx *ctx,
                                     const struct intrus_src_batch *src,
                                     const struct intrus_tgt_batch *tgt,
                                     const struct intrus_train_opts *opts,
                                     struct intrus_loss_out *out, struct intrus_error *err);

/* The encoder's output for src (no grad when ctx's grad is off). */
enum intrus_status intrus_model_encode(struct intrus_model *m, intrus_ctx *ctx,
                                       const struct intrus_src_batch *src,
                                       struct intrus_memory *mem, struct intrus_error *err);

/* The decoder's vtable and instance, for search strategies. */
const struct intrus_decoder_vtable *intrus_model_decoder(struct intrus_model *m, void **self);
/* The ABI minor the decoder plugin was built against: slots added after it are absent
 * from its vtable and must not be read. */
unsigned intrus_model_decoder_abi_minor(const struct intrus_model *m);
int intrus_model_tgt_vocab(const struct intrus_model *m);

/* +1 when the model writes left to right (`order = "l2r"`, the default), -1 for
 * right to left (`order = "r2l"`: trained on and decoding the reversed target). */
int intrus_model_direction(const struct intrus_model *m);

/* True when the decoder is an insertion decoder (INTRUS): it has no teacher-forcing
 * loss; training goes through order policies and search through insertion beam search. */
bool intrus_model_is_insertion(const struct intrus_model *m);

/* Insertion models with `canonical = true`: trained and decoded without insertions of a
 * copy of a slot's left token (see intrus_ins_canonical). */
bool intrus_model_canonical(const struct intrus_model *m);

#ifdef __cplusplus
}
#endif
#endif

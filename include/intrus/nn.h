/* Transformer building blocks over the tensor engine, shared by the plugins: each is a
 * parameter struct, an _init that registers its parameters, and a _forward. Shapes:
 * B batch, T / S sequence lengths, d model width, H heads, Dh = d / H. */
#ifndef INTRUS_NN_H
#define INTRUS_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "intrus/config.h"
#include "intrus/params.h"
#include "intrus/blas.h"
#include "intrus/status.h"
#include "intrus/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct intrus_linear {
  intrus_tensor *w; /* [in, out] */
  intrus_tensor *b; /* [out] or NULL */
};
void intrus_linear_init(struct intrus_linear *l, struct intrus_params *p, const char *name,
                        int in, int out, bool bias);
/* x [..., in] -> [..., out]. With gradients off, the product uses a packed copy of l->w
 * set on ctx (intrus_ctx_set_packs), or, from 512 rows, one packed for this call. */
intrus_tensor *intrus_linear_forward(intrus_ctx *ctx, const struct intrus_linear *l,
                                     intrus_tensor *x);

/* Packed copies of a model's linear weights for search, where the same weights multiply
 * a few dozen rows at a time for thousands of steps and OpenBLAS would repack them on
 * every call. Made at the start of a search (from the weights as they are then) and
 * freed at its end; a decoder sets them on its ctx around each step. */
struct intrus_decoder_layer;
struct intrus_weight_packs *intrus_weight_packs_create(void);
void intrus_weight_packs_add(struct intrus_weight_packs *p, const struct intrus_linear *l);
/* The linears a search step of decoder layers [0, n) multiplies by (not cross.k /
 * cross.v: the memory is projected once, at the start). */
struct intrus_weight_packs *intrus_weight_packs_for_decoder(const struct intrus_decoder_layer *l,
                                                            int n);
void intrus_weight_packs_free(struct intrus_weight_packs *p);

/* For search, outside any graph: out[r] = log_softmax(x[r] w + bias) for R rows, written
 * straight into the caller's buffer. x [R, in] with row stride ldx; w [in, V] packed by
 * intrus_pack (from [V, in] for a tied embedding), with its bias if it has one
 * (intrus_packed_set_bias); out [R, V]. Blocks of rows are normalised while their logits
 * are still in cache. */
void intrus_linear_log_softmax(int R, const float *x, int ldx, const struct intrus_packed *w,
                               float *out);
struct intrus_norm {
  intrus_tensor *gain, *bias; /* [d] */
};
void intrus_norm_init(struct intrus_norm *n, struct intrus_params *p, const char *name, int d);
intrus_tensor *intrus_norm_forward(intrus_ctx *ctx, const struct intrus_norm *n,
                                   intrus_tensor *x);

struct intrus_attention {
  struct intrus_linear q, k, v, o;
  int d_model, heads;
};
void intrus_attention_init(struct intrus_attention *a, struct intrus_params *p,
                           const char *name, int d_model, int heads);
/* q_in [B, Tq, d], kv_in [B, Tk, d]; key_mask [B, Tk] bytes (1 = attend) or NULL;
 * causal: query i sees keys <= i. Dropout p on the attention weights.
 * Returns [B, Tq, d]. */
intrus_tensor *intrus_attention_forward(intrus_ctx *ctx, const struct intrus_attention *a,
                                        intrus_tensor *q_in, intrus_tensor *kv_in,
                                        const uint8_t *key_mask, bool causal, float dropout);

struct intrus_ffn {
  struct intrus_linear in, out;
};
void intrus_ffn_init(struct intrus_ffn *f, struct intrus_params *p, const char *name,
                     int d_model, int d_ff);
/* x [..., d] -> ReLU(x W1 + b1) (dropout) W2 + b2 */
intrus_tensor *intrus_ffn_forward(intrus_ctx *ctx, const struct intrus_ffn *f,
                                  intrus_tensor *x, float dropout);

/* Pre-norm Transformer layers (norm -> sublayer -> dropout -> residual). */
struct intrus_encoder_layer {
  struct intrus_norm n_attn, n_ffn;
  struct intrus_attention attn;
  struct intrus_ffn ffn;
};
void intrus_encoder_layer_init(struct intrus_encoder_layer *l, struct intrus_params *p,
                               const char *name, int d_model, int heads, int d_ff);
intrus_tensor *intrus_encoder_layer_forward(intrus_ctx *ctx,
                                            const struct intrus_encoder_layer *l,
                                            intrus_tensor *x, const uint8_t *mask,
                                            float dropout);

struct intrus_decoder_layer {
  struct intrus_norm n_self, n_cross, n_ffn;
  struct intrus_attention self, cross;
  struct intrus_ffn ffn;
};
void intrus_decoder_layer_init(struct intrus_decoder_layer *l, struct intrus_params *p,
                               const char *name, int d_model, int heads, int d_ff);
/* x [B, T, d]; self_mask [B, T] (1 = real token); causal masks the future;
 * mem [B, S, d] with mem_mask [B, S]. */
intrus_tensor *intrus_decoder_layer_forward(intrus_ctx *ctx,
                                            const struct intrus_decoder_layer *l,
                                            intrus_tensor *x, const uint8_t *self_mask,
                                            bool causal, intrus_tensor *mem,
                                            const uint8_t *mem_mask, float dropout);

/* Packed (ragged) forms, no padding: x [N, d] holds the rows of many sequences back to
 * back; self_seg groups rows into sequences (self-attention stays within each), and
 * cross_seg gives each query sequence its rows of mem [M, d] (see intrus_attention).
 * Used by the insertion decoder, whose batches are many partial outputs of different
 * lengths sharing one sentence's memory. */
intrus_tensor *intrus_attention_forward_packed(intrus_ctx *ctx, const struct intrus_attention *a,
                                               intrus_tensor *q_in, intrus_tensor *kv_in,
                                               const struct intrus_segments *seg, bool causal,
                                               float dropout);
intrus_tensor *intrus_decoder_layer_forward_packed(intrus_ctx *ctx,
                                                   const struct intrus_decoder_layer *l,
                                                   intrus_tensor *x,
                                                   const struct intrus_segments *self_seg,
                                                   intrus_tensor *mem,
                                                   const struct intrus_segments *cross_seg,
                                                   float dropout);

/* The settings every Transformer stack of the encoder and decoder plugins reads from
 * its group (model.encoder, model.decoder). One reader keeps their keys, defaults,
 * ranges and messages the same across plugins: a checkpoint's fingerprint covers the
 * model group with its filled-in defaults, so a plugin that drifted would make the same
 * experiment file fingerprint differently. */
struct intrus_transformer_cfg {
  int d_model;   /* the model's width (init->d_model, not a key of the group) */
  int layers;    /* "layers", 1..64, default 6 */
  int heads;     /* "heads", 1..64, default 8; must divide d_model */
  int ff;        /* "ff", the feed-forward width, 1..65536, default 4 * d_model */
  float dropout; /* "dropout", 0..0.95, default 0.1 */
};
/* Reads layers, heads, ff and dropout from g in that order (defaults are added to the
 * tree in reading order, which the effective config shows) and checks their ranges.
 * A plugin then reads its own keys, calls intrus_cfg_check_unknown(g), and only then
 * intrus_transformer_cfg_check: a misspelt "heads" is reported as the misspelling, not
 * as the default 8 failing to divide d_model. */
enum intrus_status intrus_transformer_cfg_read(const intrus_cfg *g, int d_model,
                                               struct intrus_transformer_cfg *out,
                                               struct intrus_error *err);
/* An error at g's "heads" unless heads divides d_model. */
enum intrus_status intrus_transformer_cfg_check(const intrus_cfg *g,
                                                const struct intrus_transformer_cfg *t,
                                                struct intrus_error *err);

/* Sinusoidal position table [T, d] (Vaswani et al.: sin on even, cos on odd columns),
 * as a constant arena tensor. */
intrus_tensor *intrus_positions(intrus_ctx *ctx, int T, int d);

/* ids [B, T] -> table[ids] * sqrt(d) + positions, then dropout. table [V, d]. */
intrus_tensor *intrus_embed_tokens(intrus_ctx *ctx, intrus_tensor *table, const int32_t *ids,
                                   int B, int T, float dropout);

/* [B, T] bytes from lengths: 1 where t < lens[b]. Arena memory. */
uint8_t *intrus_length_mask(intrus_ctx *ctx, const int *lens, int B, int T);

#ifdef __cplusplus
}
#endif
#endif

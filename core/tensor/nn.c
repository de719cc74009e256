#include <math.h>
#include <stdio.h>
#include <string.h>

#include "intrus/nn.h"
#include "ops_internal.h"
#include "base/xalloc.h"

#define NAME_MAX_LEN 256

static const char *join(char *buf, const char *prefix, const char *leaf) {
  snprintf(buf, NAME_MAX_LEN, "%s.%s", prefix, leaf);
  return buf;
}

void intrus_linear_init(struct intrus_linear *l, struct intrus_params *p, const char *name,
                        int in, int out, bool bias) {
  char buf[NAME_MAX_LEN];
  int wshape[2] = {in, out};
  l->w = intrus_params_add(p, join(buf, name, "w"), 2, wshape, INTRUS_INIT_GLOROT_UNIFORM, 1.0f);
  l->b = bias ? intrus_params_add(p, join(buf, name, "b"), 1, &out, INTRUS_INIT_ZEROS, 0.0f)
              : NULL;
}

struct intrus_weight_packs {
  int n, cap;
  const intrus_tensor **w;
  struct intrus_packed **packed;
};

struct intrus_weight_packs *intrus_weight_packs_create(void) {
  return xcalloc(1, sizeof(struct intrus_weight_packs));
}

void intrus_weight_packs_add(struct intrus_weight_packs *p, const struct intrus_linear *l) {
  INTRUS_CHECK(l->w->ndim == 2, "weight_packs_add: a %d-dim weight", l->w->ndim);
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 16;
    p->w = xrealloc(p->w, (size_t)p->cap * sizeof *p->w);
    p->packed = xrealloc(p->packed, (size_t)p->cap * sizeof *p->packed);
  }
  const int in = l->w->shape[0], out = l->w->shape[1];
  p->w[p->n] = l->w;
  p->packed[p->n] = intrus_pack(in, out, l->w->data, out, false);
  if (l->b) intrus_packed_set_bias(p->packed[p->n], l->b->data);
  p->n++;
}

struct intrus_weight_packs *intrus_weight_packs_for_decoder(const struct intrus_decoder_layer *l,
                                                            int n) {
  struct intrus_weight_packs *p = intrus_weight_packs_create();
  for (int i = 0; i < n; i++) {
    const struct intrus_linear *step[] = {&l[i].self.q,  &l[i].self.k,  &l[i].self.v,
                                          &l[i].self.o,  &l[i].cross.q, &l[i].cross.o,
                                          &l[i].ffn.in, &l[i].ffn.out};
    for (size_t j = 0; j < sizeof step / sizeof *step; j++) intrus_weight_packs_add(p, step[j]);
  }
  return p;
}

void intrus_weight_packs_free(struct intrus_weight_packs *p) {
  if (!p) return;
  for (int i = 0; i < p->n; i++) intrus_packed_free(p->packed[i]);
  free(p->w);
  free(p->packed);
  free(p);
}

static const struct intrus_packed *packed_of(const intrus_ctx *ctx, const intrus_tensor *w) {
  const struct intrus_weight_packs *p = intrus_ctx_packs(ctx);
  if (!p || intrus_ctx_grad_enabled(ctx)) return NULL;
  for (int i = 0; i < p->n; i++)
    if (p->w[i] == w) return p->packed[i];
  return NULL;
}

/* Rows from which a no-gradient product without a prepared pack packs the weight for
 * itself: copying the weight once costs less than a tenth of the product from here, and
 * intrus's kernel runs the product about twice as fast as OpenBLAS's (an encoder over a
 * batch, the memory's keys and values). */
#define LINEAR_PACK_ROWS 512

intrus_tensor *intrus_linear_forward(intrus_ctx *ctx, const struct intrus_linear *l,
                                     intrus_tensor *x) {
  const struct intrus_packed *pk = packed_of(ctx, l->w);
  const int in = l->w->shape[0], out = l->w->shape[1];
  const bool fits = x->ndim >= 1 && x->shape[x->ndim - 1] == in && in > 0;
  const int rows = fits ? (int)(x->n / (size_t)in) : 0;
  struct intrus_packed *own = NULL;
  if (!pk && fits && rows >= LINEAR_PACK_ROWS && !intrus_ctx_grad_enabled(ctx)) {
    own = intrus_pack(in, out, l->w->data, out, false);
    if (l->b) intrus_packed_set_bias(own, l->b->data);
    pk = own;
  }
  intrus_tensor *y;
  if (pk && fits) {
    /* A constant result: gradients are off, so nothing would record an op anyway. */
    int shape[INTRUS_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
    shape[x->ndim - 1] = out;
    y = intrus_tensor_new(ctx, x->ndim, shape);
    intrus_gemm_packed(rows, x->data, in, pk, y->data, out);
    intrus_packed_free(own);
    return y; /* the bias is packed with the weight */
  }
  y = intrus_matmul(ctx, x, l->w, false, false);
  return l->b ? intrus_add(ctx, y, l->b) : y;
}

void intrus_norm_init(struct intrus_norm *n, struct intrus_params *p, const char *name, int d) {
  char buf[NAME_MAX_LEN];
  n->gain = intrus_params_add(p, join(buf, name, "gain"), 1, &d, INTRUS_INIT_ONES, 0.0f);
  n->bias = intrus_params_add(p, join(buf, name, "bias"), 1, &d, INTRUS_INIT_ZEROS, 0.0f);
}

intrus_tensor *intrus_norm_forward(intrus_ctx *ctx, const struct intrus_norm *n,
                                   intrus_tensor *x) {
  return intrus_layer_norm(ctx, x, n->gain, n->bias, 1e-5f);
}

void intrus_attention_init(struct intrus_attention *a, struct intrus_params *p,
                           const char *name, int d_model, int heads) {
  INTRUS_CHECK(heads > 0 && d_model % heads == 0, "d_model %d not divisible by %d heads",
               d_model, heads);
  char buf[NAME_MAX_LEN];
  a->d_model = d_model;
  a->heads = heads;
  intrus_linear_init(&a->q, p, join(buf, name, "q"), d_model, d_model, true);
  intrus_linear_init(&a->k, p, join(buf, name, "k"), d_model, d_model, true);
  intrus_linear_init(&a->v, p, join(buf, name, "v"), d_model, d_model, true);
  intrus_linear_init(&a->o, p, join(buf, name, "o"), d_model, d_model, true);
}

/* [B, T, d] -> [B, H, T, Dh] */
static intrus_tensor *split_heads(intrus_ctx *ctx, intrus_tensor *x, int heads) {
  int B = x->shape[0], T = x->shape[1], d = x->shape[2];
  int s4[4] = {B, T, heads, d / heads};
  static const int perm[4] = {0, 2, 1, 3};
  return intrus_permute(ctx, intrus_reshape(ctx, x, 4, s4), perm);
}

/* [B, H, T, Dh] -> [B, T, d] */
static intrus_tensor *merge_heads(intrus_ctx *ctx, intrus_tensor *x) {
  int B = x->shape[0], H = x->shape[1], T = x->shape[2], Dh = x->shape[3];
  static const int perm[4] = {0, 2, 1, 3};
  int s3[3] = {B, T, H * Dh};
  return intrus_reshape(ctx, intrus_permute(ctx, x, perm), 3, s3);
}

/* The attention sublayer composed from engine ops (split heads, matmul, masked
 * softmax, dropout, merge heads): the form for key masks that are not prefixes.
 * q_in [B, Tq, d], kv_in [B, Tk, d] -> [B, Tq, d]. */
static intrus_tensor *attention_composed(intrus_ctx *ctx, const struct intrus_attention *a,
                                         intrus_tensor *q_in, intrus_tensor *kv_in,
                                         const uint8_t *key_mask, bool causal, float dropout) {
  int B = q_in->shape[0], Tq = q_in->shape[1], Tk = kv_in->shape[1], H = a->heads;
  int Dh = a->d_model / H;
  intrus_tensor *q = split_heads(ctx, intrus_linear_forward(ctx, &a->q, q_in), H);
  intrus_tensor *k = split_heads(ctx, intrus_linear_forward(ctx, &a->k, kv_in), H);
  intrus_tensor *v = split_heads(ctx, intrus_linear_forward(ctx, &a->v, kv_in), H);
  /* scores [B, H, Tq, Tk] */
  intrus_tensor *scores =
      intrus_scale(ctx, intrus_matmul(ctx, q, k, false, true), 1.0f / sqrtf((float)Dh));
  uint8_t *mask = NULL;
  if (key_mask || causal) {
    mask = intrus_ctx_alloc(ctx, (size_t)B * H * Tq * Tk);
    for (int b = 0; b < B; b++)
      for (int i = 0; i < Tq; i++) {
        uint8_t *row = mask + ((size_t)b * H * Tq + i) * Tk;
        for (int j = 0; j < Tk; j++)
          row[j] = (uint8_t)((!key_mask || key_mask[(size_t)b * Tk + j]) && (!causal || j <= i));
        for (int h = 1; h < H; h++) memcpy(row + (size_t)h * Tq * Tk, row, (size_t)Tk);
      }
  }
  intrus_tensor *w = intrus_dropout(ctx, intrus_softmax(ctx, scores, mask), dropout);
  intrus_tensor *ctxv = intrus_matmul(ctx, w, v, false, false); /* [B, H, Tq, Dh] */
  return intrus_linear_forward(ctx, &a->o, merge_heads(ctx, ctxv));
}

/* x [..., d] as rows [R, d]. When x is itself a view of such a 2-D tensor (what
 * as_batch made of the previous layer's output), that tensor is used directly:
 * otherwise the gradient would pass through two views, each costing a gradient buffer
 * and a pass over it in backward. */
static intrus_tensor *as_rows(intrus_ctx *ctx, intrus_tensor *x) {
  const int d = x->shape[x->ndim - 1];
  if (x->ndim == 2) return x;
  intrus_tensor *src = x->src[0];
  if (x->op == INTRUS_OP_RESHAPE && src->ndim == 2 && src->shape[1] == d &&
      src->data == x->data)
    return src;
  const int shape[2] = {(int)(x->n / (size_t)(d ? d : 1)), d};
  return intrus_reshape(ctx, x, 2, shape);
}

/* rows [B*T, d] back to [B, T, d]. */
static intrus_tensor *as_batch(intrus_ctx *ctx, intrus_tensor *rows, int B, int T) {
  const int shape[3] = {B, T, rows->shape[1]};
  return intrus_reshape(ctx, rows, 3, shape);
}

/* The lengths of a key mask [B, T] whose rows are each some 1s followed by 0s (NULL:
 * every row all 1s) into lens[B]; false when a row is not of that form. */
static bool prefix_lengths(const uint8_t *mask, int B, int T, int *lens) {
  for (int b = 0; b < B; b++) {
    if (!mask) {
      lens[b] = T;
      continue;
    }
    const uint8_t *m = mask + (size_t)b * T;
    int n = 0;
    while (n < T && m[n]) n++;
    for (int j = n; j < T; j++)
      if (m[j]) return false;
    lens[b] = n;
  }
  return true;
}

/* The padded forms' attention on rows: q2 [B*Tq, d], kv2 [B*Tk, d] -> [B*Tq, d]. With
 * a prefix key mask (lengths, as every padded batch has) it is the fused op, one
 * segment per batch entry: all Tq query rows (padding rows included, as the composed
 * form computes them) against the first len[b] key rows. */
static intrus_tensor *attention_rows(intrus_ctx *ctx, const struct intrus_attention *a,
                                     intrus_tensor *q2, intrus_tensor *kv2, int B, int Tq,
                                     int Tk, const uint8_t *key_mask, bool causal,
                                     float dropout) {
  int *arr = intrus_ctx_alloc(ctx, (size_t)4 * (B ? B : 1) * sizeof *arr);
  int *qb = arr, *ql = arr + B, *kb = arr + 2 * B, *kl = arr + 3 * B;
  if (prefix_lengths(key_mask, B, Tk, kl)) {
    for (int b = 0; b < B; b++) {
      qb[b] = b * Tq;
      ql[b] = Tq;
      kb[b] = b * Tk;
    }
    const struct intrus_segments seg = {
        .count = B, .q_begin = qb, .q_len = ql, .k_begin = kb, .k_len = kl};
    return intrus_attention_forward_packed(ctx, a, q2, kv2, &seg, causal, dropout);
  }
  intrus_tensor *q3 = as_batch(ctx, q2, B, Tq);
  intrus_tensor *kv3 = kv2 == q2 ? q3 : as_batch(ctx, kv2, B, Tk);
  return as_rows(ctx, attention_composed(ctx, a, q3, kv3, key_mask, causal, dropout));
}

intrus_tensor *intrus_attention_forward(intrus_ctx *ctx, const struct intrus_attention *a,
                                        intrus_tensor *q_in, intrus_tensor *kv_in,
                                        const uint8_t *key_mask, bool causal, float dropout) {
  INTRUS_CHECK(q_in->ndim == 3 && kv_in->ndim == 3 && q_in->shape[0] == kv_in->shape[0],
               "attention_forward: q_in and kv_in must be [B, T, d] of the same B");
  const int B = q_in->shape[0], Tq = q_in->shape[1], Tk = kv_in->shape[1];
  intrus_tensor *q2 = as_rows(ctx, q_in);
  intrus_tensor *kv2 = kv_in == q_in ? q2 : as_rows(ctx, kv_in);
  return as_batch(ctx, attention_rows(ctx, a, q2, kv2, B, Tq, Tk, key_mask, causal, dropout),
                  B, Tq);
}

intrus_tensor *intrus_attention_forward_packed(intrus_ctx *ctx, const struct intrus_attention *a,
                                               intrus_tensor *q_in, intrus_tensor *kv_in,
                                               const struct intrus_segments *seg, bool causal,
                                               float dropout) {
  intrus_tensor *q = intrus_linear_forward(ctx, &a->q, q_in);
  intrus_tensor *k = intrus_linear_forward(ctx, &a->k, kv_in);
  intrus_tensor *v = intrus_linear_forward(ctx, &a->v, kv_in);
  intrus_tensor *att = intrus_attention(ctx, q, k, v, a->heads, seg, causal, dropout);
  return intrus_linear_forward(ctx, &a->o, att);
}

void intrus_ffn_init(struct intrus_ffn *f, struct intrus_params *p, const char *name,
                     int d_model, int d_ff) {
  char buf[NAME_MAX_LEN];
  intrus_linear_init(&f->in, p, join(buf, name, "in"), d_model, d_ff, true);
  intrus_linear_init(&f->out, p, join(buf, name, "out"), d_ff, d_model, true);
}

intrus_tensor *intrus_ffn_forward(intrus_ctx *ctx, const struct intrus_ffn *f,
                                  intrus_tensor *x, float dropout) {
  intrus_tensor *h = intrus_relu(ctx, intrus_linear_forward(ctx, &f->in, x));
  return intrus_linear_forward(ctx, &f->out, intrus_dropout(ctx, h, dropout));
}

void intrus_encoder_layer_init(struct intrus_encoder_layer *l, struct intrus_params *p,
                               const char *name, int d_model, int heads, int d_ff) {
  char buf[NAME_MAX_LEN];
  intrus_norm_init(&l->n_attn, p, join(buf, name, "norm_attn"), d_model);
  intrus_attention_init(&l->attn, p, join(buf, name, "attn"), d_model, heads);
  intrus_norm_init(&l->n_ffn, p, join(buf, name, "norm_ffn"), d_model);
  intrus_ffn_init(&l->ffn, p, join(buf, name, "ffn"), d_model, d_ff);
}

intrus_tensor *intrus_encoder_layer_forward(intrus_ctx *ctx,
                                            const struct intrus_encoder_layer *l,
                                            intrus_tensor *x, const uint8_t *mask,
                                            float dropout) {
  /* The whole layer runs on rows [B*T, d]; only its result is a [B, T, d] view. */
  const int B = x->shape[0], T = x->shape[1];
  x = as_rows(ctx, x);
  intrus_tensor *h = intrus_norm_forward(ctx, &l->n_attn, x);
  h = attention_rows(ctx, &l->attn, h, h, B, T, T, mask, false, dropout);
  x = intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
  h = intrus_ffn_forward(ctx, &l->ffn, intrus_norm_forward(ctx, &l->n_ffn, x), dropout);
  return as_batch(ctx, intrus_add(ctx, x, intrus_dropout(ctx, h, dropout)), B, T);
}

void intrus_decoder_layer_init(struct intrus_decoder_layer *l, struct intrus_params *p,
                               const char *name, int d_model, int heads, int d_ff) {
  char buf[NAME_MAX_LEN];
  intrus_norm_init(&l->n_self, p, join(buf, name, "norm_self"), d_model);
  intrus_attention_init(&l->self, p, join(buf, name, "self"), d_model, heads);
  intrus_norm_init(&l->n_cross, p, join(buf, name, "norm_cross"), d_model);
  intrus_attention_init(&l->cross, p, join(buf, name, "cross"), d_model, heads);
  intrus_norm_init(&l->n_ffn, p, join(buf, name, "norm_ffn"), d_model);
  intrus_ffn_init(&l->ffn, p, join(buf, name, "ffn"), d_model, d_ff);
}

intrus_tensor *intrus_decoder_layer_forward(intrus_ctx *ctx,
                                            const struct intrus_decoder_layer *l,
                                            intrus_tensor *x, const uint8_t *self_mask,
                                            bool causal, intrus_tensor *mem,
                                            const uint8_t *mem_mask, float dropout) {
  const int B = x->shape[0], T = x->shape[1], S = mem->shape[1];
  x = as_rows(ctx, x);
  intrus_tensor *mem2 = as_rows(ctx, mem);
  intrus_tensor *h = intrus_norm_forward(ctx, &l->n_self, x);
  h = attention_rows(ctx, &l->self, h, h, B, T, T, self_mask, causal, dropout);
  x = intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
  h = intrus_norm_forward(ctx, &l->n_cross, x);
  h = attention_rows(ctx, &l->cross, h, mem2, B, T, S, mem_mask, false, dropout);
  x = intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
  h = intrus_ffn_forward(ctx, &l->ffn, intrus_norm_forward(ctx, &l->n_ffn, x), dropout);
  return as_batch(ctx, intrus_add(ctx, x, intrus_dropout(ctx, h, dropout)), B, T);
}

intrus_tensor *intrus_decoder_layer_forward_packed(intrus_ctx *ctx,
                                                   const struct intrus_decoder_layer *l,
                                                   intrus_tensor *x,
                                                   const struct intrus_segments *self_seg,
                                                   intrus_tensor *mem,
                                                   const struct intrus_segments *cross_seg,
                                                   float dropout) {
  intrus_tensor *h = intrus_norm_forward(ctx, &l->n_self, x);
  h = intrus_attention_forward_packed(ctx, &l->self, h, h, self_seg, false, dropout);
  x = intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
  h = intrus_norm_forward(ctx, &l->n_cross, x);
  h = intrus_attention_forward_packed(ctx, &l->cross, h, mem, cross_seg, false, dropout);
  x = intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
  h = intrus_ffn_forward(ctx, &l->ffn, intrus_norm_forward(ctx, &l->n_ffn, x), dropout);
  return intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
}

intrus_tensor *intrus_positions(intrus_ctx *ctx, int T, int d) {
  int shape[2] = {T, d};
  intrus_tensor *pe = intrus_tensor_new(ctx, 2, shape);
  for (int t = 0; t < T; t++)
    for (int i = 0; i < d; i += 2) {
      double freq = exp(-log(10000.0) * i / d);
      pe->data[(size_t)t * d + i] = (float)sin(t * freq);
      if (i + 1 < d) pe->data[(size_t)t * d + i + 1] = (float)cos(t * freq);
    }
  return pe;
}

intrus_tensor *intrus_embed_tokens(intrus_ctx *ctx, intrus_tensor *table, const int32_t *ids,
                                   int B, int T, float dropout) {
  int d = table->shape[1];
  int shape[2] = {B, T};
  intrus_tensor *e = intrus_embedding(ctx, table, ids, 2, shape); /* [B, T, d] */
  e = intrus_scale(ctx, e, sqrtf((float)d));
  e = intrus_add(ctx, e, intrus_positions(ctx, T, d));
  return intrus_dropout(ctx, e, dropout);
}

uint8_t *intrus_length_mask(intrus_ctx *ctx, const int *lens, int B, int T) {
  uint8_t *m = intrus_ctx_alloc(ctx, (size_t)B * T);
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) m[(size_t)b * T + t] = (uint8_t)(t < lens[b]);
  return m;
}

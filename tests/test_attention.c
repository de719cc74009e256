/* The fused packed attention against references composed from the engine's other ops
 * (matmul, masked softmax, dropout, permute), forward values and gradients:
 *  - intrus_attention on random data with plain and causal segments, several heads,
 *    shared keys, a segment without keys and rows outside every segment; with dropout
 *    on one segment, whose weights the reference's intrus_dropout numbers alike;
 *  - intrus_attention_forward (padded, which now takes the fused op for length masks)
 *    and the encoder / decoder layers against the composition the padded forms used
 *    before, for length masks, no mask, causal masks, an empty row, a mask that is not
 *    a prefix (the composed fallback) and dropout in training;
 *  - intrus_decoder_layer_forward_packed against the padded layer on the same
 *    sequences;
 *  - bitwise the same results with 1 and 2 OpenMP threads;
 *  - a query row in two segments panics. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "intrus/nn.h"
#include "intrus/params.h"
#include "intrus/rng.h"
#include "intrus/tensor.h"
#include "tensor/ops_internal.h"
#include "testutil.h"

static intrus_tensor *leaf(intrus_ctx *ctx, int ndim, const int *shape, const float *x,
                           bool grad) {
  intrus_tensor *t = intrus_tensor_from(ctx, ndim, shape, x);
  t->requires_grad = grad;
  return t;
}

/* Largest |got - want| / max(1, |want|) over n floats must stay within tol. */
static void expect_close(const char *what, const float *got, const float *want, size_t n,
                         double tol) {
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - want[i]) / fmax(1.0, fabs(want[i]));
    if (!(e <= worst)) {
      worst = e;
      at = i;
    }
  }
  EXPECT(worst <= tol, "%s: element %zu is %.9g, reference %.9g (err %.3g > %.3g)", what, at,
         n ? (double)got[at] : 0.0, n ? (double)want[at] : 0.0, worst, tol);
}

/* ---- the packed op against a composition ------------------------------------------ */

/* Rows r0 .. r0+n-1 of x [R, d]: a 0/1 selection matrix [n, R] times x, so gradients
 * reach x through the engine's own matmul. */
static intrus_tensor *rows_of(intrus_ctx *ctx, intrus_tensor *x, int r0, int n) {
  const int R = x->shape[0], ss[2] = {n, R};
  intrus_tensor *sel = intrus_tensor_zeros(ctx, 2, ss);
  for (int i = 0; i < n; i++) sel->data[(size_t)i * R + r0 + i] = 1.0f;
  return intrus_matmul(ctx, sel, x, false, false);
}

/* y [n, d] placed at rows r0.. of an [R, d] result that is zero elsewhere. */
static intrus_tensor *place_rows(intrus_ctx *ctx, intrus_tensor *y, int r0, int R) {
  const int n = y->shape[0], ss[2] = {n, R};
  intrus_tensor *sel = intrus_tensor_zeros(ctx, 2, ss);
  for (int i = 0; i < n; i++) sel->data[(size_t)i * R + r0 + i] = 1.0f;
  return intrus_matmul(ctx, sel, y, true, false);
}

/* [n, d] -> [H, n, Dh] and back. */
static intrus_tensor *heads_first(intrus_ctx *ctx, intrus_tensor *x, int H) {
  const int n = x->shape[0], d = x->shape[1], s3[3] = {n, H, d / H}, perm[3] = {1, 0, 2};
  return intrus_permute(ctx, intrus_reshape(ctx, x, 3, s3), perm);
}

static intrus_tensor *heads_last(intrus_ctx *ctx, intrus_tensor *x) {
  const int H = x->shape[0], n = x->shape[1], Dh = x->shape[2], s2[2] = {n, H * Dh},
            perm[3] = {1, 0, 2};
  return intrus_reshape(ctx, intrus_permute(ctx, x, perm), 2, s2);
}

/* What intrus_attention computes, segment by segment from the engine's other ops.
 * Dropout draws a stream per segment: the same masks as the fused op for one segment. */
static intrus_tensor *ref_attention(intrus_ctx *ctx, intrus_tensor *q, intrus_tensor *k,
                                    intrus_tensor *v, int H, const struct intrus_segments *sg,
                                    bool causal, float dropout) {
  const int N = q->shape[0], d = q->shape[1];
  const int os[2] = {N, d};
  intrus_tensor *out = intrus_tensor_zeros(ctx, 2, os);
  for (int s = 0; s < sg->count; s++) {
    const int ql = sg->q_len[s], kl = sg->k_len[s];
    if (ql == 0 || kl == 0) continue;
    intrus_tensor *qs = heads_first(ctx, rows_of(ctx, q, sg->q_begin[s], ql), H);
    intrus_tensor *ks = heads_first(ctx, rows_of(ctx, k, sg->k_begin[s], kl), H);
    intrus_tensor *vs = heads_first(ctx, rows_of(ctx, v, sg->k_begin[s], kl), H);
    intrus_tensor *sc =
        intrus_scale(ctx, intrus_matmul(ctx, qs, ks, false, true), 1.0f / sqrtf((float)(d / H)));
    uint8_t *mask = NULL;
    if (causal) {
      mask = malloc((size_t)H * ql * kl);
      for (int h = 0; h < H; h++)
        for (int i = 0; i < ql; i++)
          for (int j = 0; j < kl; j++) mask[((size_t)h * ql + i) * kl + j] = (uint8_t)(j <= i);
    }
    intrus_tensor *w = intrus_dropout(ctx, intrus_softmax(ctx, sc, mask), dropout);
    free(mask);
    intrus_tensor *o = heads_last(ctx, intrus_matmul(ctx, w, vs, false, false));
    out = intrus_add(ctx, out, place_rows(ctx, o, sg->q_begin[s], N));
  }
  return out;
}

struct op_case {
  const char *name;
  int N, M, d, H;
  bool causal, training;
  float dropout;
  int count;
  int qb[8], ql[8], kb[8], kl[8];
};

/* Output and q/k/v gradients (for a random output gradient) of the fused op or of the
 * reference, into res[0..3] (N*d, M*d, M*d, M*d floats). */
static void run_op(const struct op_case *c, bool fused, const float *in[3], const float *dy,
                   float *res[4]) {
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  /* Arena memory that is not zeroed when reused, so the op must zero rows itself. */
  memset(intrus_ctx_alloc(ctx, 1 << 19), 0x7f, 1 << 19);
  intrus_ctx_reset(ctx);
  intrus_ctx_set_seed(ctx, 77, 3);
  intrus_ctx_set_training(ctx, c->training);
  const int qs[2] = {c->N, c->d}, ks[2] = {c->M, c->d};
  intrus_tensor *q = leaf(ctx, 2, qs, in[0], true), *k = leaf(ctx, 2, ks, in[1], true),
                *v = leaf(ctx, 2, ks, in[2], true);
  const struct intrus_segments sg = {c->count, c->qb, c->ql, c->kb, c->kl};
  intrus_tensor *y = fused ? intrus_attention(ctx, q, k, v, c->H, &sg, c->causal, c->dropout)
                           : ref_attention(ctx, q, k, v, c->H, &sg, c->causal, c->dropout);
  EXPECT(y->ndim == 2 && y->shape[0] == c->N && y->shape[1] == c->d, "%s: result shape",
         c->name);
  memcpy(res[0], y->data, sizeof(float) * c->N * c->d);
  intrus_backward_seed(ctx, y, dy);
  intrus_tensor *t[3] = {q, k, v};
  for (int i = 0; i < 3; i++) {
    size_t n = t[i]->n;
    if (t[i]->grad) memcpy(res[i + 1], t[i]->grad, n * sizeof(float));
    else memset(res[i + 1], 0, n * sizeof(float));
  }
  intrus_ctx_destroy(ctx);
}

static void test_op_case(const struct op_case *c) {
  struct intrus_rng r;
  intrus_rng_seed(&r, (uint64_t)c->N * 131 + (uint64_t)c->M);
  const size_t nq = (size_t)c->N * c->d, nk = (size_t)c->M * c->d;
  float *q = malloc(nq * sizeof(float)), *k = malloc(nk * sizeof(float)),
        *v = malloc(nk * sizeof(float)), *dy = malloc(nq * sizeof(float));
  tu_fill_uniform(&r, q, nq, -2.0f, 2.0f);
  tu_fill_uniform(&r, k, nk, -2.0f, 2.0f);
  tu_fill_uniform(&r, v, nk, -1.0f, 1.0f);
  tu_fill_uniform(&r, dy, nq, -1.0f, 1.0f);
  const float *in[3] = {q, k, v};
  float *got[4], *want[4];
  const size_t sizes[4] = {nq, nq, nk, nk};
  for (int i = 0; i < 4; i++) {
    got[i] = malloc(sizes[i] * sizeof(float));
    want[i] = malloc(sizes[i] * sizeof(float));
  }
  run_op(c, true, in, dy, got);
  run_op(c, false, in, dy, want);
  static const char *what[4] = {"output", "dq", "dk", "dv"};
  char label[128];
  for (int i = 0; i < 4; i++) {
    snprintf(label, sizeof label, "%s: %s", c->name, what[i]);
    expect_close(label, got[i], want[i], sizes[i], 2e-5);
  }
  /* Rows outside every segment or in one without keys are exactly 0. */
  uint8_t *keyed = calloc((size_t)c->N, 1);
  for (int s = 0; s < c->count; s++)
    for (int i = 0; i < c->ql[s]; i++) keyed[c->qb[s] + i] = c->kl[s] > 0;
  int nonzero = 0;
  for (int row = 0; row < c->N; row++)
    for (int j = 0; j < c->d && !keyed[row]; j++) nonzero += got[0][(size_t)row * c->d + j] != 0;
  EXPECT(nonzero == 0, "%s: %d entries of rows without keys are not 0", c->name, nonzero);
  free(keyed);
  for (int i = 0; i < 4; i++) {
    free(got[i]);
    free(want[i]);
  }
  free(q);
  free(k);
  free(v);
  free(dy);
}

static void test_op(void) {
  static const struct op_case cases[] = {
      {"one segment, 1 head", 6, 9, 8, 1, false, false, 0.0f, 1, {0}, {6}, {0}, {9}},
      {"self-attention, causal, 4 heads", 13, 13, 16, 4, true, false, 0.0f, 3,
       {0, 5, 6}, {5, 1, 7}, {0, 5, 6}, {5, 1, 7}},
      /* rows 0-2 and 3-7 share keys 2-7 (merged), 10-12 share them again later, 8-9
       * have keys of their own, 13 is in no segment, 14-15 have no keys */
      {"shared keys, empty segment, free row", 16, 12, 12, 3, false, false, 0.0f, 5,
       {0, 3, 8, 10, 14}, {3, 5, 2, 3, 2}, {2, 2, 0, 2, 5}, {6, 6, 2, 6, 0}},
      {"shared keys, causal", 16, 12, 12, 2, true, false, 0.0f, 5,
       {0, 3, 8, 10, 14}, {3, 5, 2, 3, 2}, {2, 2, 0, 2, 5}, {6, 6, 2, 6, 0}},
      /* dropout: one segment, so the reference's only stream is the op's */
      {"dropout 0.4, one segment", 7, 10, 8, 2, false, true, 0.4f, 1, {0}, {7}, {1}, {9}},
      {"dropout 0.2, causal", 9, 9, 8, 4, true, true, 0.2f, 1, {0}, {9}, {0}, {9}},
      /* dropout outside training mode does nothing */
      {"dropout 0.5, not training", 8, 8, 8, 2, false, false, 0.5f, 2, {0, 4}, {4, 4},
       {0, 4}, {4, 4}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_op_case(&cases[i]);
}

/* Dropout does act in training mode, and gives the same result whether or not the op
 * keeps its weights for a backward pass (without one it drops them in place). */
static void test_dropout_acts(void) {
  enum { N = 6, D = 8 };
  struct intrus_rng r;
  intrus_rng_seed(&r, 5);
  float x[N * D];
  tu_fill_uniform(&r, x, N * D, -1.0f, 1.0f);
  const int qb[1] = {0}, ql[1] = {N}, shape[2] = {N, D};
  const struct intrus_segments sg = {1, qb, ql, qb, ql};
  float y[3][N * D];
  for (int run = 0; run < 3; run++) {
    intrus_ctx *ctx = intrus_ctx_create(1 << 16);
    intrus_ctx_set_seed(ctx, 1, 1);
    intrus_ctx_set_training(ctx, run > 0);
    intrus_tensor *t = leaf(ctx, 2, shape, x, run == 2);
    intrus_tensor *out = intrus_attention(ctx, t, t, t, 2, &sg, false, 0.5f);
    EXPECT(out->requires_grad == (run == 2), "run %d: requires_grad %d", run, out->requires_grad);
    memcpy(y[run], out->data, sizeof y[0]);
    intrus_ctx_destroy(ctx);
  }
  EXPECT(memcmp(y[0], y[1], sizeof y[0]) != 0, "dropout 0.5 in training changed nothing");
  EXPECT(memcmp(y[1], y[2], sizeof y[0]) == 0,
         "dropout in place (no grad) differs from dropout kept for backward");
}

/* ---- the padded forms against the composition they used before -------------------- */

/* The padded attention as nn.c composed it before the fused op (kept there as the
 * fallback for masks that are not prefixes; repeated here as the reference). */
static intrus_tensor *old_split_heads(intrus_ctx *ctx, intrus_tensor *x, int heads) {
  int B = x->shape[0], T = x->shape[1], d = x->shape[2];
  int s4[4] = {B, T, heads, d / heads};
  static const int perm[4] = {0, 2, 1, 3};
  return intrus_permute(ctx, intrus_reshape(ctx, x, 4, s4), perm);
}

static intrus_tensor *old_merge_heads(intrus_ctx *ctx, intrus_tensor *x) {
  int B = x->shape[0], H = x->shape[1], T = x->shape[2], Dh = x->shape[3];
  static const int perm[4] = {0, 2, 1, 3};
  int s3[3] = {B, T, H * Dh};
  return intrus_reshape(ctx, intrus_permute(ctx, x, perm), 3, s3);
}

static intrus_tensor *old_attention(intrus_ctx *ctx, const struct intrus_attention *a,
                                    intrus_tensor *q_in, intrus_tensor *kv_in,
                                    const uint8_t *key_mask, bool causal, float dropout) {
  int B = q_in->shape[0], Tq = q_in->shape[1], Tk = kv_in->shape[1], H = a->heads;
  int Dh = a->d_model / H;
  intrus_tensor *q = old_split_heads(ctx, intrus_linear_forward(ctx, &a->q, q_in), H);
  intrus_tensor *k = old_split_heads(ctx, intrus_linear_forward(ctx, &a->k, kv_in), H);
  intrus_tensor *v = old_split_heads(ctx, intrus_linear_forward(ctx, &a->v, kv_in), H);
  intrus_tensor *scores =
      intrus_scale(ctx, intrus_matmul(ctx, q, k, false, true), 1.0f / sqrtf((float)Dh));
  uint8_t *mask = NULL;
  if (key_mask || causal) {
    mask = intrus_ctx_alloc(ctx, (size_t)B * H * Tq * Tk);
    for (int b = 0; b < B; b++)
      for (int h = 0; h < H; h++)
        for (int i = 0; i < Tq; i++)
          for (int j = 0; j < Tk; j++)
            mask[(((size_t)b * H + h) * Tq + i) * Tk + j] =
                (uint8_t)((!key_mask || key_mask[(size_t)b * Tk + j]) && (!causal || j <= i));
  }
  intrus_tensor *w = intrus_dropout(ctx, intrus_softmax(ctx, scores, mask), dropout);
  intrus_tensor *ctxv = intrus_matmul(ctx, w, v, false, false);
  return intrus_linear_forward(ctx, &a->o, old_merge_heads(ctx, ctxv));
}

static intrus_tensor *old_decoder_layer(intrus_ctx *ctx, const struct intrus_decoder_layer *l,
                                        intrus_tensor *x, const uint8_t *self_mask, bool causal,
                                        intrus_tensor *mem, const uint8_t *mem_mask,
                                        float dropout) {
  intrus_tensor *h = intrus_norm_forward(ctx, &l->n_self, x);
  h = old_attention(ctx, &l->self, h, h, self_mask, causal, dropout);
  x = intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
  h = intrus_norm_forward(ctx, &l->n_cross, x);
  h = old_attention(ctx, &l->cross, h, mem, mem_mask, false, dropout);
  x = intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
  h = intrus_ffn_forward(ctx, &l->ffn, intrus_norm_forward(ctx, &l->n_ffn, x), dropout);
  return intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
}

static intrus_tensor *old_encoder_layer(intrus_ctx *ctx, const struct intrus_encoder_layer *l,
                                        intrus_tensor *x, const uint8_t *mask, float dropout) {
  intrus_tensor *h = intrus_norm_forward(ctx, &l->n_attn, x);
  h = old_attention(ctx, &l->attn, h, h, mask, false, dropout);
  x = intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
  h = intrus_ffn_forward(ctx, &l->ffn, intrus_norm_forward(ctx, &l->n_ffn, x), dropout);
  return intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
}

enum { D_MODEL = 16, HEADS = 4, D_FF = 24, B = 4, TQ = 6, TK = 7 };

struct model {
  struct intrus_params *p;
  struct intrus_attention att;
  struct intrus_encoder_layer enc;
  struct intrus_decoder_layer dec;
};

/* Parameters at random values (biases and gains included, so none of them is a no-op). */
static void model_init(struct model *m) {
  m->p = intrus_params_create();
  intrus_attention_init(&m->att, m->p, "att", D_MODEL, HEADS);
  intrus_encoder_layer_init(&m->enc, m->p, "enc", D_MODEL, HEADS, D_FF);
  intrus_decoder_layer_init(&m->dec, m->p, "dec", D_MODEL, HEADS, D_FF);
  EXPECT(intrus_params_finalize(m->p, 11, NULL) == INTRUS_OK, "finalize");
  struct intrus_rng r;
  intrus_rng_seed(&r, 12);
  tu_fill_uniform(&r, intrus_params_values(m->p), intrus_params_numel(m->p), -0.5f, 0.5f);
}

enum which { ATTENTION, ENCODER_LAYER, DECODER_LAYER };

struct padded_case {
  const char *name;
  enum which which;
  int qlens[B], klens[B]; /* length masks; -1 in qlens[0]: no mask */
  bool causal, holes, training;
  float dropout;
};

/* Result [B, TQ, d], gradients of both inputs and of every parameter (concatenated in
 * res), new form or old. */
static size_t run_padded(struct model *m, const struct padded_case *c, bool old, const float *xq,
                         const float *xk, const float *dy, float *res) {
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  intrus_ctx_set_seed(ctx, 5, 9);
  intrus_ctx_set_training(ctx, c->training);
  intrus_params_zero_grad(m->p);
  const bool self = c->which != ATTENTION || c->causal;
  const int tk = self ? TQ : TK;
  const int qs[3] = {B, TQ, D_MODEL}, ks[3] = {B, tk, D_MODEL};
  intrus_tensor *q = leaf(ctx, 3, qs, xq, true);
  intrus_tensor *kv = self ? q : leaf(ctx, 3, ks, xk, true);
  uint8_t *qmask = NULL, *kmask = NULL;
  if (c->qlens[0] >= 0) {
    qmask = intrus_length_mask(ctx, c->qlens, B, TQ);
    kmask = self ? qmask : intrus_length_mask(ctx, c->klens, B, tk);
  }
  if (c->holes) {
    /* Not a prefix: the fallback path. */
    EXPECT(kmask != NULL, "holes need a mask");
    kmask[1] = 0;
    kmask[(size_t)2 * tk + 3] = 0;
  }
  intrus_tensor *y = NULL;
  switch (c->which) {
  case ATTENTION:
    y = old ? old_attention(ctx, &m->att, q, kv, kmask, c->causal, c->dropout)
            : intrus_attention_forward(ctx, &m->att, q, kv, kmask, c->causal, c->dropout);
    break;
  case ENCODER_LAYER:
    y = old ? old_encoder_layer(ctx, &m->enc, q, kmask, c->dropout)
            : intrus_encoder_layer_forward(ctx, &m->enc, q, kmask, c->dropout);
    break;
  case DECODER_LAYER: {
    intrus_tensor *mem = leaf(ctx, 3, (const int[3]){B, TK, D_MODEL}, xk, true);
    uint8_t *mmask = c->qlens[0] >= 0 ? intrus_length_mask(ctx, c->klens, B, TK) : NULL;
    y = old ? old_decoder_layer(ctx, &m->dec, q, kmask, c->causal, mem, mmask, c->dropout)
            : intrus_decoder_layer_forward(ctx, &m->dec, q, kmask, c->causal, mem, mmask,
                                           c->dropout);
    kv = mem;
    break;
  }
  }
  EXPECT(y->ndim == 3 && y->shape[0] == B && y->shape[1] == TQ && y->shape[2] == D_MODEL,
         "%s: result shape", c->name);
  size_t n = 0;
  memcpy(res + n, y->data, y->n * sizeof(float));
  n += y->n;
  intrus_backward_seed(ctx, y, dy);
  const intrus_tensor *ins[2] = {q, kv};
  for (int i = 0; i < 2; i++) {
    if (i == 1 && kv == q) continue;
    if (ins[i]->grad) memcpy(res + n, ins[i]->grad, ins[i]->n * sizeof(float));
    else memset(res + n, 0, ins[i]->n * sizeof(float));
    n += ins[i]->n;
  }
  memcpy(res + n, intrus_params_grads(m->p), intrus_params_numel(m->p) * sizeof(float));
  n += intrus_params_numel(m->p);
  intrus_ctx_destroy(ctx);
  return n;
}

static void test_padded(void) {
  struct model m;
  model_init(&m);
  static const struct padded_case cases[] = {
      {.name = "attention: cross, lengths, an empty row", .which = ATTENTION,
       .qlens = {6, 4, 2, 1}, .klens = {7, 3, 0, 5}},
      {.name = "attention: no mask", .which = ATTENTION, .qlens = {-1}},
      {.name = "attention: causal, lengths", .which = ATTENTION, .qlens = {6, 3, 1, 5},
       .causal = true},
      {.name = "attention: causal, no mask", .which = ATTENTION, .qlens = {-1}, .causal = true},
      {.name = "attention: mask with holes (fallback)", .which = ATTENTION,
       .qlens = {6, 4, 5, 2}, .klens = {7, 6, 7, 5}, .holes = true},
      /* With full lengths the fused op numbers its weights [B, H, Tq, Tk] as the
       * composition's dropout does: the same masks. */
      {.name = "attention: dropout, full lengths", .which = ATTENTION, .qlens = {6, 6, 6, 6},
       .klens = {7, 7, 7, 7}, .training = true, .dropout = 0.3f},
      {.name = "attention: causal dropout, no mask", .which = ATTENTION, .qlens = {-1},
       .causal = true, .training = true, .dropout = 0.3f},
      {.name = "encoder layer: lengths", .which = ENCODER_LAYER, .qlens = {6, 2, 4, 5}},
      {.name = "encoder layer: dropout, full lengths", .which = ENCODER_LAYER,
       .qlens = {6, 6, 6, 6}, .training = true, .dropout = 0.2f},
      {.name = "decoder layer: causal, lengths", .which = DECODER_LAYER, .qlens = {6, 3, 5, 1},
       .klens = {7, 2, 4, 6}, .causal = true},
      {.name = "decoder layer: holes (fallback)", .which = DECODER_LAYER,
       .qlens = {6, 3, 5, 4}, .klens = {7, 2, 4, 6}, .causal = true, .holes = true},
      {.name = "decoder layer: dropout, full lengths", .which = DECODER_LAYER,
       .qlens = {6, 6, 6, 6}, .klens = {7, 7, 7, 7}, .causal = true, .training = true,
       .dropout = 0.25f},
  };
  const size_t nmax = (size_t)B * TQ * D_MODEL * 2 + (size_t)B * TK * D_MODEL +
                      intrus_params_numel(m.p);
  float *got = malloc(nmax * sizeof(float)), *want = malloc(nmax * sizeof(float));
  float *xq = malloc(sizeof(float) * B * TQ * D_MODEL);
  float *xk = malloc(sizeof(float) * B * TK * D_MODEL);
  float *dy = malloc(sizeof(float) * B * TQ * D_MODEL);
  struct intrus_rng r;
  intrus_rng_seed(&r, 21);
  tu_fill_uniform(&r, xq, (size_t)B * TQ * D_MODEL, -1.5f, 1.5f);
  tu_fill_uniform(&r, xk, (size_t)B * TK * D_MODEL, -1.5f, 1.5f);
  tu_fill_uniform(&r, dy, (size_t)B * TQ * D_MODEL, -1.0f, 1.0f);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n1 = run_padded(&m, &cases[i], false, xq, xk, dy, got);
    size_t n2 = run_padded(&m, &cases[i], true, xq, xk, dy, want);
    EXPECT(n1 == n2, "%s: %zu vs %zu results", cases[i].name, n1, n2);
    expect_close(cases[i].name, got, want, n1 < n2 ? n1 : n2, 2e-5);
  }
  free(got);
  free(want);
  free(xq);
  free(xk);
  free(dy);
  intrus_params_destroy(m.p);
}

/* ---- the packed decoder layer against the padded one --------------------------------- */

static void test_packed_layer(void) {
  struct model m;
  model_init(&m);
  static const int tl[B] = {6, 2, 5, 3}, sl[B] = {7, 4, 1, 5};
  int qb[B], ql[B], kb[B], kl[B], N = 0, M = 0;
  for (int b = 0; b < B; b++) {
    qb[b] = N;
    ql[b] = tl[b];
    kb[b] = M;
    kl[b] = sl[b];
    N += tl[b];
    M += sl[b];
  }
  struct intrus_rng r;
  intrus_rng_seed(&r, 33);
  float *xp = malloc(sizeof(float) * B * TQ * D_MODEL);
  float *mp = malloc(sizeof(float) * B * TK * D_MODEL);
  tu_fill_uniform(&r, xp, (size_t)B * TQ * D_MODEL, -1.5f, 1.5f);
  tu_fill_uniform(&r, mp, (size_t)B * TK * D_MODEL, -1.5f, 1.5f);
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  /* Padded [B, T, d] and packed [N, d] views of the same rows. */
  float *xs = malloc(sizeof(float) * N * D_MODEL), *ms = malloc(sizeof(float) * M * D_MODEL);
  for (int b = 0; b < B; b++) {
    memcpy(xs + (size_t)qb[b] * D_MODEL, xp + (size_t)b * TQ * D_MODEL,
           sizeof(float) * tl[b] * D_MODEL);
    memcpy(ms + (size_t)kb[b] * D_MODEL, mp + (size_t)b * TK * D_MODEL,
           sizeof(float) * sl[b] * D_MODEL);
  }
  const int ps[3] = {B, TQ, D_MODEL}, pm[3] = {B, TK, D_MODEL}, s2[2] = {N, D_MODEL},
            m2[2] = {M, D_MODEL};
  intrus_tensor *yp = intrus_decoder_layer_forward(
      ctx, &m.dec, leaf(ctx, 3, ps, xp, false), intrus_length_mask(ctx, tl, B, TQ), false,
      leaf(ctx, 3, pm, mp, false), intrus_length_mask(ctx, sl, B, TK), 0.0f);
  const struct intrus_segments self = {B, qb, ql, qb, ql}, cross = {B, qb, ql, kb, kl};
  intrus_tensor *ys = intrus_decoder_layer_forward_packed(
      ctx, &m.dec, leaf(ctx, 2, s2, xs, false), &self, leaf(ctx, 2, m2, ms, false), &cross, 0.0f);
  EXPECT(ys->ndim == 2 && ys->shape[0] == N && ys->shape[1] == D_MODEL, "packed layer shape");
  for (int b = 0; b < B; b++) {
    char label[64];
    snprintf(label, sizeof label, "packed decoder layer, sequence %d", b);
    expect_close(label, ys->data + (size_t)qb[b] * D_MODEL, yp->data + (size_t)b * TQ * D_MODEL,
                 (size_t)tl[b] * D_MODEL, 2e-5);
  }
  intrus_ctx_destroy(ctx);
  free(xp);
  free(mp);
  free(xs);
  free(ms);
  intrus_params_destroy(m.p);
}

/* ---- thread-count independence ------------------------------------------------------ */

enum { TS = 16, TT = 32, TD = 32, TH = 4 }; /* 16 segments of 32 queries, 4 heads */

static void thread_run(int threads, bool causal, const float *x, const float *dy, float *res) {
  test_set_threads(threads);
  intrus_ctx *ctx = intrus_ctx_create(1 << 22);
  intrus_ctx_set_seed(ctx, 3, 4);
  intrus_ctx_set_training(ctx, true);
  const int n = TS * TT, shape[2] = {n, TD};
  const size_t nn = (size_t)n * TD;
  intrus_tensor *q = leaf(ctx, 2, shape, x, true), *k = leaf(ctx, 2, shape, x + nn, true),
                *v = leaf(ctx, 2, shape, x + 2 * nn, true);
  int qb[TS], ql[TS], kl[TS];
  for (int s = 0; s < TS; s++) {
    qb[s] = s * TT;
    ql[s] = TT;
    kl[s] = TT - s % 5; /* no two neighbours share keys: one block each */
  }
  const struct intrus_segments sg = {TS, qb, ql, qb, kl};
  intrus_tensor *y = intrus_attention(ctx, q, k, v, TH, &sg, causal, 0.1f);
  intrus_backward_seed(ctx, y, dy);
  memcpy(res, y->data, nn * sizeof(float));
  memcpy(res + nn, q->grad, nn * sizeof(float));
  memcpy(res + 2 * nn, k->grad, nn * sizeof(float));
  memcpy(res + 3 * nn, v->grad, nn * sizeof(float));
  intrus_ctx_destroy(ctx);
}

static void test_threads(void) {
  _Static_assert((long)TS * TH * TT * (TT - 4) > INTRUS_OMP_MIN,
                 "the weights must take the OpenMP path");
  const size_t nn = (size_t)TS * TT * TD;
  float *x = malloc(3 * nn * sizeof(float)), *dy = malloc(nn * sizeof(float));
  float *r1 = malloc(4 * nn * sizeof(float)), *r2 = malloc(4 * nn * sizeof(float));
  struct intrus_rng r;
  intrus_rng_seed(&r, 44);
  tu_fill_uniform(&r, x, 3 * nn, -2.0f, 2.0f);
  tu_fill_uniform(&r, dy, nn, -1.0f, 1.0f);
  for (int causal = 0; causal < 2; causal++) {
    thread_run(1, causal, x, dy, r1);
    thread_run(2, causal, x, dy, r2);
    EXPECT(memcmp(r1, r2, 4 * nn * sizeof(float)) == 0,
           "%s attention: results differ between 1 and 2 threads", causal ? "causal" : "plain");
  }
  test_set_threads(2);
  free(x);
  free(dy);
  free(r1);
  free(r2);
}

/* ---- misuse --------------------------------------------------------------------------- */

static void attend_overlapping(const void *unused) {
  (void)unused;
  intrus_ctx *ctx = intrus_ctx_create(1 << 16);
  const int shape[2] = {5, 4}, qb[2] = {0, 2}, ql[2] = {3, 2}, kb[2] = {0, 0}, kl[2] = {5, 5};
  const struct intrus_segments sg = {2, qb, ql, kb, kl};
  intrus_tensor *t = intrus_tensor_zeros(ctx, 2, shape);
  intrus_attention(ctx, t, t, t, 2, &sg, false, 0.0f);
}

/* A query row in two segments panics naming the row (in a child: a panic aborts). */
static void test_overlap_panics(void) {
  char buf[512];
  int st = test_run_child(attend_overlapping, NULL, buf, sizeof buf);
  EXPECT(st != -1 && WIFSIGNALED(st), "overlapping segments did not abort (status %d)", st);
  EXPECT_CONTAINS(buf, "query row 2");
}

int main(void) {
  test_op();
  test_dropout_acts();
  test_padded();
  test_packed_layer();
  test_threads();
  test_overlap_panics();
  return test_finish("test_attention");
}

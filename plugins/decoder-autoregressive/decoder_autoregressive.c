/* decoder "autoregressive": the standard Transformer decoder (the paper's left-to-right
 * and right-to-left baselines). Pre-norm causal self-attention, cross-attention to the
 * encoder memory, feed-forward; trained with teacher forcing. Direction -1 reads and
 * writes the target reversed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  struct intrus_transformer_cfg t;
  bool tie;
  enum intrus_status st;
  if ((st = intrus_transformer_cfg_read(g, init->d_model, &t, err)) ||
      (st = intrus_cfg_bool(g, "tie_embeddings", false, &tie, err)) ||
      (st = intrus_cfg_check_unknown(g, err)) ||
      (st = intrus_transformer_cfg_check(g, &t, err)))
    return st;
  struct decoder *dc = calloc(1, sizeof *dc);
  if (!dc || !(dc->layer = calloc((size_t)t.layers, sizeof *dc->layer))) {
    free(dc);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "decoder autoregressive: out of memory");
  }
  dc->d = t.d_model;
  dc->layers = t.layers;
  dc->heads = t.heads;
  dc->ff = t.ff;
  dc->vocab = init->tgt_vocab;
  dc->dropout = t.dropout;
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

/* ---- incremental decoding ---------------------------------------------------------
 * Keys and values of the self-attention are cached per row, so a step costs one
 * position instead of the whole prefix; the cross-attention keys and values of the
 * encoder memory are computed once at start. Attention is plain loops over
 * (row, head) pieces (see attend()); the projections, norms and feed-forward use the
 * engine's ops with grad off. */

struct step_state {
  int B, per, rows, S, Tmax, t, H, Dh;
  float *kself, *vself;   /* [layers][rows][H][Tmax][Dh] */
  float *kswap, *vswap;   /* same size: target of the row reordering */
  float *kcross, *vcross; /* [layers][B][H][S][Dh] */
  uint8_t *mem_mask;      /* [B, S] */
  float *scores;          /* [rows * H * max(Tmax, S)] */
  struct intrus_packed *out_w; /* the output layer, packed once per search */
  struct intrus_weight_packs *packs; /* the layers' weights, likewise */
};

static size_t self_layer_floats(const struct step_state *st) {
  return (size_t)st->rows * st->H * st->Tmax * st->Dh;
}

/* [n, d] rows -> [H][n][Dh] blocks at dst (one sentence's memory projected). */
static void split_heads_copy(const float *src, int n, int H, int Dh, float *dst) {
  for (int i = 0; i < n; i++)
    for (int h = 0; h < H; h++)
      memcpy(dst + ((size_t)h * n + i) * Dh, src + (size_t)i * H * Dh + (size_t)h * Dh,
             (size_t)Dh * sizeof(float));
}

static void dec_finish(void *self, void *state) {
  (void)self;
  struct step_state *st = state;
  if (!st) return;
  free(st->kself);
  free(st->vself);
  free(st->kswap);
  free(st->vswap);
  free(st->kcross);
  free(st->vcross);
  free(st->mem_mask);
  free(st->scores);
  intrus_packed_free(st->out_w);
  intrus_weight_packs_free(st->packs);
  free(st);
}

static enum intrus_status dec_start(void *self, intrus_ctx *ctx, const struct intrus_memory *mem,
                                    int per, int max_steps, void **state,
                                    struct intrus_error *err) {
  struct decoder *dc = self;
  struct step_state *st = calloc(1, sizeof *st);
  if (!st) return intrus_error_set(err, INTRUS_ERR_NOMEM, "decoder: out of memory");
  st->B = mem->batch;
  st->per = per;
  st->rows = mem->batch * per;
  st->S = mem->len;
  st->Tmax = max_steps;
  st->H = dc->heads;
  st->Dh = dc->d / dc->heads;
  size_t self_n = (size_t)dc->layers * self_layer_floats(st);
  size_t cross_n = (size_t)dc->layers * st->B * st->S * dc->d;
  int widest = st->Tmax > st->S ? st->Tmax : st->S;
  st->kself = malloc(self_n * sizeof(float));
  st->vself = malloc(self_n * sizeof(float));
  st->kswap = malloc(self_n * sizeof(float));
  st->vswap = malloc(self_n * sizeof(float));
  st->kcross = malloc(cross_n * sizeof(float));
  st->vcross = malloc(cross_n * sizeof(float));
  st->mem_mask = malloc((size_t)st->B * st->S);
  st->scores = malloc((size_t)st->rows * st->H * widest * sizeof(float));
  if (!st->kself || !st->vself || !st->kswap || !st->vswap || !st->kcross || !st->vcross ||
      !st->mem_mask || !st->scores) {
    dec_finish(self, st);
    return intrus_error_set(err, INTRUS_ERR_NOMEM,
                            "decoder: out of memory for the decoding cache (%zu MB)",
                            (4 * self_n + 2 * cross_n) * sizeof(float) >> 20);
  }
  memcpy(st->mem_mask, mem->mask, (size_t)st->B * st->S);
  if (dc->tie) {
    st->out_w = intrus_pack(dc->d, dc->vocab, dc->embed->data, dc->d, true);
  } else {
    st->out_w = intrus_pack(dc->d, dc->vocab, dc->proj.w->data, dc->vocab, false);
    if (dc->proj.b) intrus_packed_set_bias(st->out_w, dc->proj.b->data);
  }
  st->packs = intrus_weight_packs_for_decoder(dc->layer, dc->layers);
  bool grad = intrus_ctx_grad_enabled(ctx);
  intrus_ctx_set_grad(ctx, false);
  size_t per_layer = (size_t)st->B * st->S * dc->d;
  for (int l = 0; l < dc->layers; l++) {
    intrus_tensor *k = intrus_linear_forward(ctx, &dc->layer[l].cross.k, mem->states);
    intrus_tensor *v = intrus_linear_forward(ctx, &dc->layer[l].cross.v, mem->states);
    for (int b = 0; b < st->B; b++) {
      size_t off = (size_t)b * st->S * dc->d;
      split_heads_copy(k->data + off, st->S, st->H, st->Dh, st->kcross + l * per_layer + off);
      split_heads_copy(v->data + off, st->S, st->H, st->Dh, st->vcross + l * per_layer + off);
    }
  }
  intrus_ctx_set_grad(ctx, grad);
  *state = st;
  return INTRUS_OK;
}

/* Softmax over n scores in place; masked entries (mask[j] == 0) get 0. */
static void softmax_row(float *x, int n, const uint8_t *mask) {
  float mx = -INFINITY;
  for (int j = 0; j < n; j++)
    if ((!mask || mask[j]) && x[j] > mx) mx = x[j];
  double sum = 0.0;
  for (int j = 0; j < n; j++) {
    x[j] = (!mask || mask[j]) ? expf(x[j] - mx) : 0.0f;
    sum += x[j];
  }
  float inv = sum > 0 ? (float)(1.0 / sum) : 0.0f;
  for (int j = 0; j < n; j++) x[j] *= inv;
}

#ifdef _OPENMP
#define SIMD_SUM(s) _Pragma("omp simd reduction(+ : s)")
#define SIMD _Pragma("omp simd")
#else
#define SIMD_SUM(s)
#define SIMD
#endif

/* nq query rows (stride ldq) of one head attend over n keys / values ([n, Dh] each,
 * contiguous): out rows (stride ldo) = softmax(scale q K^T) V, sc holds nq * n scores.
 * Plain loops: these products are a few thousand multiply-adds, where a BLAS call costs
 * more in set-up and in its buffer lock (contended when both threads call) than the
 * arithmetic. */
static void attend(const float *q, int nq, int ldq, const float *K, const float *V, int n,
                   int Dh, float scale, const uint8_t *mask, float *sc, float *out, int ldo) {
  for (int i = 0; i < nq; i++) {
    const float *qi = q + (size_t)i * ldq;
    float *si = sc + (size_t)i * n, *oi = out + (size_t)i * ldo;
    for (int j = 0; j < n; j++) {
      const float *kj = K + (size_t)j * Dh;
      float s = 0.0f;
      SIMD_SUM(s)
      for (int k = 0; k < Dh; k++) s += qi[k] * kj[k];
      si[j] = s * scale;
    }
    softmax_row(si, n, mask);
    SIMD
    for (int k = 0; k < Dh; k++) oi[k] = 0.0f;
    for (int j = 0; j < n; j++) {
      const float p = si[j], *vj = V + (size_t)j * Dh;
      SIMD
      for (int k = 0; k < Dh; k++) oi[k] += p * vj[k];
    }
  }
}

/* Self-attention of one new position per row against the cache (positions 0..t), one
 * (row, head) piece per iteration. */
static void self_attend(struct step_state *st, int l, const float *q, float *out) {
  const int H = st->H, Dh = st->Dh, n = st->t + 1, d = H * Dh, pieces = st->rows * H;
  const float scale = 1.0f / sqrtf((float)Dh);
  const float *K = st->kself + l * self_layer_floats(st);
  const float *V = st->vself + l * self_layer_floats(st);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((long)pieces * n * Dh >= 32768)
#endif
  for (int p = 0; p < pieces; p++) {
    /* Piece p is row p / H, head p % H: at p * Dh in q and out ([rows, H * Dh]) and at
     * p * Tmax * Dh in the cache ([rows][H][Tmax][Dh]). */
    const size_t kv = (size_t)p * st->Tmax * Dh;
    attend(q + (size_t)p * Dh, 1, d, K + kv, V + kv, n, Dh, scale, NULL,
           st->scores + (size_t)p * n, out + (size_t)p * Dh, d);
  }
}

/* Cross-attention: the rows of sentence b share its memory keys and values; one
 * (sentence, head) piece per iteration. */
static void cross_attend(struct step_state *st, int l, const float *q, float *out) {
  const int H = st->H, Dh = st->Dh, S = st->S, d = H * Dh, per = st->per;
  const float scale = 1.0f / sqrtf((float)Dh);
  const size_t per_layer = (size_t)st->B * S * d;
  const int pieces = st->B * H;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((long)st->rows * S * d >= 32768)
#endif
  for (int p = 0; p < pieces; p++) {
    const int b = p / H, h = p % H;
    const size_t kv = l * per_layer + ((size_t)b * H + h) * S * Dh;
    attend(q + (size_t)b * per * d + (size_t)h * Dh, per, d, st->kcross + kv, st->vcross + kv,
           S, Dh, scale, st->mem_mask + (size_t)b * S, st->scores + (size_t)p * per * S,
           out + (size_t)b * per * d + (size_t)h * Dh, d);
  }
}

static void reorder_rows(struct step_state *st, int layers, const int32_t *parents) {
  bool identity = true;
  for (int r = 0; r < st->rows && identity; r++) identity = parents[r] == r;
  if (identity || st->t == 0) return;
  size_t row = (size_t)st->H * st->Tmax * st->Dh, layer = self_layer_floats(st);
  /* The whole cache moves each step (15 MB at batch 32, beam 4, step 20): both
   * threads' memory bandwidth. */
  const int n = layers * st->rows;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n > 1 && (long)n * st->t * st->H * st->Dh >= 32768)
#endif
  for (int lr = 0; lr < n; lr++)
    for (int h = 0, l = lr / st->rows, r = lr % st->rows; h < st->H; h++) {
      size_t dst = l * layer + r * row + (size_t)h * st->Tmax * st->Dh;
      size_t src = l * layer + (size_t)parents[r] * row + (size_t)h * st->Tmax * st->Dh;
      memcpy(st->kswap + dst, st->kself + src, (size_t)st->t * st->Dh * sizeof(float));
      memcpy(st->vswap + dst, st->vself + src, (size_t)st->t * st->Dh * sizeof(float));
    }
  float *k = st->kself, *v = st->vself;
  st->kself = st->kswap;
  st->vself = st->vswap;
  st->kswap = k;
  st->vswap = v;
}

/* Writes a [rows, d] projection into the cache at position t. */
static void cache_store(struct step_state *st, float *cache, const float *x) {
  size_t row = (size_t)st->H * st->Tmax * st->Dh;
  for (int r = 0; r < st->rows; r++)
    for (int h = 0; h < st->H; h++)
      memcpy(cache + r * row + ((size_t)h * st->Tmax + st->t) * st->Dh,
             x + (size_t)r * st->H * st->Dh + (size_t)h * st->Dh, (size_t)st->Dh * sizeof(float));
}

static enum intrus_status dec_step(void *self, void *state, intrus_ctx *ctx,
                                   const int32_t *parents, const int32_t *tokens, float *logp,
                                   struct intrus_error *err) {
  struct decoder *dc = self;
  struct step_state *st = state;
  if (st->t >= st->Tmax)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "decoder: step %d beyond max_steps %d",
                            st->t + 1, st->Tmax);
  for (int r = 0; r < st->rows; r++)
    if (tokens[r] < 0 || tokens[r] >= dc->vocab)
      return intrus_error_set(err, INTRUS_ERR_INVALID, "decoder: token id %d out of range",
                              tokens[r]);
  if (parents) reorder_rows(st, dc->layers, parents);
  bool grad = intrus_ctx_grad_enabled(ctx), training = intrus_ctx_training(ctx);
  intrus_ctx_set_grad(ctx, false);
  intrus_ctx_set_training(ctx, false);
  const struct intrus_weight_packs *packs = intrus_ctx_packs(ctx);
  intrus_ctx_set_packs(ctx, st->packs);
  int rows = st->rows, d = dc->d;
  int shape1[2] = {rows, 1}, shape2[2] = {rows, d};
  intrus_tensor *x = intrus_embedding(ctx, dc->embed, tokens, 2, shape1);
  x = intrus_reshape(ctx, x, 2, shape2);
  x = intrus_scale(ctx, x, sqrtf((float)d));
  intrus_tensor *pos = intrus_positions(ctx, st->t + 1, d);
  int dshape[1] = {d};
  x = intrus_add(ctx, x, intrus_tensor_from(ctx, 1, dshape, pos->data + (size_t)st->t * d));
  size_t layer_floats = self_layer_floats(st);
  for (int l = 0; l < dc->layers; l++) {
    const struct intrus_decoder_layer *L = &dc->layer[l];
    intrus_tensor *h = intrus_norm_forward(ctx, &L->n_self, x);
    intrus_tensor *q = intrus_linear_forward(ctx, &L->self.q, h);
    cache_store(st, st->kself + l * layer_floats, intrus_linear_forward(ctx, &L->self.k, h)->data);
    cache_store(st, st->vself + l * layer_floats, intrus_linear_forward(ctx, &L->self.v, h)->data);
    intrus_tensor *att = intrus_tensor_new(ctx, 2, shape2);
    self_attend(st, l, q->data, att->data);
    x = intrus_add(ctx, x, intrus_linear_forward(ctx, &L->self.o, att));
    h = intrus_norm_forward(ctx, &L->n_cross, x);
    q = intrus_linear_forward(ctx, &L->cross.q, h);
    att = intrus_tensor_new(ctx, 2, shape2);
    cross_attend(st, l, q->data, att->data);
    x = intrus_add(ctx, x, intrus_linear_forward(ctx, &L->cross.o, att));
    x = intrus_add(ctx, x, intrus_ffn_forward(ctx, &L->ffn, intrus_norm_forward(ctx, &L->n_ffn, x), 0.0f));
  }
  x = intrus_norm_forward(ctx, &dc->final_norm, x);
  intrus_linear_log_softmax(rows, x->data, d, st->out_w, logp);
  st->t++;
  intrus_ctx_set_packs(ctx, packs);
  intrus_ctx_set_grad(ctx, grad);
  intrus_ctx_set_training(ctx, training);
  return INTRUS_OK;
}

static const struct intrus_decoder_vtable vtable = {
    .create = dec_create, .destroy = dec_destroy, .loss = dec_loss,
    .start = dec_start, .step = dec_step, .finish = dec_finish};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(decoder_autoregressive) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "autoregressive",
    .version = "1.0.0",
    .kind = INTRUS_KIND_DECODER,
    .summary = "causal pre-norm Transformer decoder (left-to-right / right-to-left baseline)",
    .vtable = &vtable,
};

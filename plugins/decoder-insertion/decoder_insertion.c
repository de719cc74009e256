/* decoder "insertion": the INTRUS decoder (DESIGN.md section 4). It reads a partial
 * output as [NULL, y1..yk, EOS] without a causal mask, with absolute sinusoidal
 * positions recomputed for every state, and ends in one output layer d -> V+1 whose
 * last column is the position logit (kept as two parameters, token and position part,
 * so that the core can compute the V-wide token part only at the slots it needs).
 *
 * Batches are packed: the rows of all states lie back to back ([N, d], no padding);
 * self-attention stays within a state, cross-attention reads the state's sentence
 * rows of the encoder memory. Many states share one sentence, so the memory's keys
 * and values are projected once per sentence, not once per state. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/nn.h"
#include "intrus/plugin.h"

struct decoder {
  int d, layers, heads, ff, vocab;
  float dropout;
  intrus_tensor *embed;   /* [V, d] */
  struct intrus_decoder_layer *layer;
  struct intrus_norm final_norm;
  intrus_tensor *w_token; /* [d, V]; tied: the embedding table [V, d] */
  bool tied;
  intrus_tensor *w_pos;   /* [d, 1] */
  /* slots = "pair": slot i is read from row i plus next . row i+1 (NULL when "token"). */
  struct intrus_linear next;
};

static enum intrus_status dec_create(const struct intrus_model_init *init, void **self,
                                     struct intrus_error *err) {
  const intrus_cfg *g = init->cfg;
  struct intrus_transformer_cfg t;
  int slots = 0;
  bool tie = false;
  static const char *const slot_kinds[] = {"token", "pair", NULL};
  enum intrus_status st;
  if ((st = intrus_transformer_cfg_read(g, init->d_model, &t, err)) ||
      /* Read only when given: a default written into the model group would change the
       * fingerprint of every run trained before the setting existed. */
      (intrus_cfg_has(g, "slots") &&
       (st = intrus_cfg_choice(g, "slots", "token", slot_kinds, &slots, err))) ||
      (intrus_cfg_has(g, "tie_embeddings") &&
       (st = intrus_cfg_bool(g, "tie_embeddings", false, &tie, err))) ||
      (st = intrus_cfg_check_unknown(g, err)) ||
      (st = intrus_transformer_cfg_check(g, &t, err)))
    return st;
  struct decoder *dc = calloc(1, sizeof *dc);
  if (!dc || !(dc->layer = calloc((size_t)t.layers, sizeof *dc->layer))) {
    free(dc);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "decoder insertion: out of memory");
  }
  dc->d = t.d_model;
  dc->layers = t.layers;
  dc->heads = t.heads;
  dc->ff = t.ff;
  dc->vocab = init->tgt_vocab;
  dc->dropout = t.dropout;
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
  int tshape[2] = {dc->d, dc->vocab}, pshape[2] = {dc->d, 1};
  /* Tied: the token logits are h . embed^T, as the baseline's tie_embeddings. */
  dc->tied = tie;
  snprintf(name, sizeof name, "%sout_token", init->prefix);
  dc->w_token = tie ? dc->embed
                    : intrus_params_add(init->params, name, 2, tshape,
                                        INTRUS_INIT_GLOROT_UNIFORM, 1.0f);
  snprintf(name, sizeof name, "%sout_pos", init->prefix);
  dc->w_pos = intrus_params_add(init->params, name, 2, pshape, INTRUS_INIT_GLOROT_UNIFORM, 1.0f);
  if (slots == 1) {
    /* Zero at first: the model starts as the "token" form and learns what the right
     * neighbour adds. */
    int nshape[2] = {dc->d, dc->d};
    snprintf(name, sizeof name, "%sslot_next", init->prefix);
    dc->next.w = intrus_params_add(init->params, name, 2, nshape, INTRUS_INIT_ZEROS, 0.0f);
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

static void dec_output(void *self, intrus_tensor **w_token, intrus_tensor **w_pos) {
  struct decoder *dc = self;
  *w_token = dc->w_token;
  *w_pos = dc->w_pos;
}

static bool dec_output_transposed(void *self) { return ((struct decoder *)self)->tied; }

/* Rows of memory each sentence attends to: its real positions, which encoders put
 * first (a length mask). */
static enum intrus_status memory_lengths(const struct intrus_memory *mem, int *lens,
                                         struct intrus_error *err) {
  for (int b = 0; b < mem->batch; b++) {
    const uint8_t *m = mem->mask ? mem->mask + (size_t)b * mem->len : NULL;
    int n = 0;
    while (n < mem->len && (!m || m[n])) n++;
    for (int j = n; m && j < mem->len; j++)
      if (m[j])
        return intrus_error_set(err, INTRUS_ERR_INVALID,
                                "decoder insertion: memory mask of sentence %d is not a "
                                "prefix (position %d masked, %d not)", b, n, j);
    lens[b] = n;
  }
  return INTRUS_OK;
}

/* The packed layout of a batch of states: input ids, positions and attention segments. */
struct layout {
  int N;                             /* rows: sum of (k_s + 2) */
  int32_t *ids;                      /* [N] */
  int *pos;                          /* [N] position within the state */
  struct intrus_segments self, cross;
};

static enum intrus_status layout_build(intrus_ctx *ctx, const struct decoder *dc,
                                       const struct intrus_ins_states *st, int nsent, int S,
                                       const int *mem_lens, struct layout *L,
                                       struct intrus_error *err) {
  int n = st->count;
  L->N = st->off[n] - st->off[0] + 2 * n;
  L->ids = intrus_ctx_alloc(ctx, (size_t)L->N * sizeof *L->ids);
  L->pos = intrus_ctx_alloc(ctx, (size_t)L->N * sizeof *L->pos);
  int *qb = intrus_ctx_alloc(ctx, 4 * (size_t)n * sizeof(int));
  int *ql = qb + n, *kb = ql + n, *kl = kb + n;
  int row = 0;
  for (int s = 0; s < n; s++) {
    int b = st->sent[s], k = st->off[s + 1] - st->off[s];
    if (b < 0 || b >= nsent || k < 0)
      return intrus_error_set(err, INTRUS_ERR_INVALID,
                              "decoder insertion: state %d refers to sentence %d of %d", s, b,
                              nsent);
    qb[s] = row;
    ql[s] = k + 2;
    kb[s] = b * S;
    kl[s] = mem_lens[b];
    L->ids[row] = INTRUS_BOS; /* the NULL token */
    for (int j = 0; j < k; j++) {
      int32_t t = st->tok[st->off[s] + j];
      if (t < 0 || t >= dc->vocab)
        return intrus_error_set(err, INTRUS_ERR_INVALID,
                                "decoder insertion: token id %d outside the vocabulary of %d",
                                t, dc->vocab);
      L->ids[row + 1 + j] = t;
    }
    L->ids[row + k + 1] = INTRUS_EOS;
    for (int j = 0; j < k + 2; j++) L->pos[row + j] = j;
    row += k + 2;
  }
  L->self = (struct intrus_segments){.count = n, .q_begin = qb, .q_len = ql, .k_begin = qb,
                                     .k_len = ql};
  L->cross = (struct intrus_segments){.count = n, .q_begin = qb, .q_len = ql, .k_begin = kb,
                                      .k_len = kl};
  return INTRUS_OK;
}

/* Token embeddings * sqrt(d) + each row's position, then dropout: [N, d]. */
static intrus_tensor *embed(intrus_ctx *ctx, const struct decoder *dc, const struct layout *L,
                            float dropout) {
  int maxpos = 0;
  for (int i = 0; i < L->N; i++)
    if (L->pos[i] + 1 > maxpos) maxpos = L->pos[i] + 1;
  intrus_tensor *table = intrus_positions(ctx, maxpos, dc->d);
  int shape[2] = {L->N, dc->d};
  intrus_tensor *pe = intrus_tensor_new(ctx, 2, shape);
  for (int i = 0; i < L->N; i++)
    memcpy(pe->data + (size_t)i * dc->d, table->data + (size_t)L->pos[i] * dc->d,
           (size_t)dc->d * sizeof(float));
  intrus_tensor *x = intrus_embedding(ctx, dc->embed, L->ids, 1, &L->N);
  x = intrus_add(ctx, intrus_scale(ctx, x, sqrtf((float)dc->d)), pe);
  return intrus_dropout(ctx, x, dropout);
}

/* Segments of the last layer when only `rows` (ascending) are kept: state s's queries
 * become the kept rows within its own rows; its keys (self) and memory rows (cross) stay. */
static void keep_segments(intrus_ctx *ctx, const struct layout *L, int nrows, const int *rows,
                          struct intrus_segments *self, struct intrus_segments *cross) {
  const int n = L->self.count;
  int *qb = intrus_ctx_alloc(ctx, 2 * (size_t)(n ? n : 1) * sizeof(int)), *ql = qb + n;
  for (int s = 0, j = 0; s < n; s++) {
    qb[s] = j;
    while (j < nrows && rows[j] < L->self.q_begin[s] + L->self.q_len[s]) j++;
    ql[s] = j - qb[s];
  }
  *self = L->self;
  self->q_begin = qb;
  self->q_len = ql;
  *cross = L->cross;
  cross->q_begin = qb;
  cross->q_len = ql;
}

/* The layers over packed rows, cross-attention reading already projected memory keys
 * and values kc[l], vc[l] ([B*S, d] each). With rows (ascending, nrows of them), the
 * last layer's keys and values are taken from every row but everything after them only
 * at those rows: the result is [nrows, d]. */
static intrus_tensor *run_layers(intrus_ctx *ctx, const struct decoder *dc,
                                 const struct layout *L, intrus_tensor *x,
                                 intrus_tensor *const *kc, intrus_tensor *const *vc,
                                 float dropout, int nrows, const int *rows) {
  for (int l = 0; l < dc->layers; l++) {
    const struct intrus_decoder_layer *Ly = &dc->layer[l];
    const struct intrus_segments *self = &L->self, *cross = &L->cross;
    struct intrus_segments kept_self, kept_cross;
    intrus_tensor *h = intrus_norm_forward(ctx, &Ly->n_self, x), *q_in = h;
    if (rows && l == dc->layers - 1) {
      keep_segments(ctx, L, nrows, rows, &kept_self, &kept_cross);
      self = &kept_self;
      cross = &kept_cross;
      q_in = intrus_embedding(ctx, h, rows, 1, &nrows);
      x = intrus_embedding(ctx, x, rows, 1, &nrows);
    }
    h = intrus_attention_forward_packed(ctx, &Ly->self, q_in, h, self, false, dropout);
    x = intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
    h = intrus_norm_forward(ctx, &Ly->n_cross, x);
    intrus_tensor *q = intrus_linear_forward(ctx, &Ly->cross.q, h);
    h = intrus_attention(ctx, q, kc[l], vc[l], Ly->cross.heads, cross, false, dropout);
    h = intrus_linear_forward(ctx, &Ly->cross.o, h);
    x = intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
    h = intrus_ffn_forward(ctx, &Ly->ffn, intrus_norm_forward(ctx, &Ly->n_ffn, x), dropout);
    x = intrus_add(ctx, x, intrus_dropout(ctx, h, dropout));
  }
  return intrus_norm_forward(ctx, &dc->final_norm, x);
}

/* slots = "pair": out[j] = h[self[j]] + h[next[j]] . W_next, [n, d]; self NULL: h's
 * own rows in order. A slot lies between two tokens, and its row alone has to find its
 * right neighbour by attention; this hands the neighbour to it. */
static intrus_tensor *slot_pairs(intrus_ctx *ctx, const struct decoder *dc, intrus_tensor *h,
                                 int n, const int32_t *self, const int32_t *next) {
  intrus_tensor *a = self ? intrus_embedding(ctx, h, self, 1, &n) : h;
  intrus_tensor *b = intrus_embedding(ctx, h, next, 1, &n);
  return intrus_add(ctx, a, intrus_linear_forward(ctx, &dc->next, b));
}

/* Each row's right neighbour within its state; the last row (EOS: finish) its own. */
static int32_t *next_rows(intrus_ctx *ctx, const struct layout *L) {
  int32_t *nx = intrus_ctx_alloc(ctx, (size_t)(L->N ? L->N : 1) * sizeof *nx);
  for (int s = 0; s < L->self.count; s++) {
    int b = L->self.q_begin[s], e = b + L->self.q_len[s];
    for (int r = b; r < e; r++) nx[r] = r + 1 < e ? r + 1 : r;
  }
  return nx;
}

static enum intrus_status dec_hidden(void *self, intrus_ctx *ctx, const struct intrus_memory *mem,
                                     const struct intrus_ins_states *states,
                                     intrus_tensor **hidden, struct intrus_error *err) {
  struct decoder *dc = self;
  int B = mem->batch, S = mem->len;
  int *lens = intrus_ctx_alloc(ctx, (size_t)B * sizeof *lens);
  struct layout L;
  enum intrus_status st;
  if ((st = memory_lengths(mem, lens, err)) ||
      (st = layout_build(ctx, dc, states, B, S, lens, &L, err)))
    return st;
  int flat[2] = {B * S, dc->d};
  intrus_tensor *m = intrus_reshape(ctx, mem->states, 2, flat);
  intrus_tensor **kc = intrus_ctx_alloc(ctx, 2 * (size_t)dc->layers * sizeof *kc), **vc = kc + dc->layers;
  for (int l = 0; l < dc->layers; l++) {
    kc[l] = intrus_linear_forward(ctx, &dc->layer[l].cross.k, m);
    vc[l] = intrus_linear_forward(ctx, &dc->layer[l].cross.v, m);
  }
  float p = intrus_ctx_training(ctx) ? dc->dropout : 0.0f;
  *hidden = run_layers(ctx, dc, &L, embed(ctx, dc, &L, p), kc, vc, p, 0, NULL);
  if (dc->next.w) *hidden = slot_pairs(ctx, dc, *hidden, L.N, NULL, next_rows(ctx, &L));
  return INTRUS_OK;
}

/* ---- cached scoring for search and for the order policies -------------------------- */

struct ins_cache {
  int B, S, layers, d;
  int *lens;     /* [B] */
  float *kv;     /* [layers][2][B*S, d]: cross-attention keys and values */
  struct intrus_weight_packs *packs; /* the layers' weights, packed for the steps */
};

static void dec_finish(void *self, void *state) {
  (void)self;
  struct ins_cache *c = state;
  if (!c) return;
  free(c->lens);
  free(c->kv);
  intrus_weight_packs_free(c->packs);
  free(c);
}

static enum intrus_status dec_ins_start(void *self, intrus_ctx *ctx,
                                        const struct intrus_memory *mem, void **state,
                                        struct intrus_error *err) {
  struct decoder *dc = self;
  struct ins_cache *c = calloc(1, sizeof *c);
  size_t rows = (size_t)mem->batch * mem->len;
  if (!c || !(c->lens = malloc((size_t)(mem->batch ? mem->batch : 1) * sizeof *c->lens)) ||
      !(c->kv = malloc(2 * (size_t)dc->layers * (rows ? rows : 1) * dc->d * sizeof(float)))) {
    dec_finish(self, c);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "decoder insertion: out of memory");
  }
  c->B = mem->batch;
  c->S = mem->len;
  c->layers = dc->layers;
  c->d = dc->d;
  enum intrus_status st = memory_lengths(mem, c->lens, err);
  if (st) {
    dec_finish(self, c);
    return st;
  }
  bool grad = intrus_ctx_grad_enabled(ctx);
  intrus_ctx_set_grad(ctx, false);
  int flat[2] = {(int)rows, dc->d};
  intrus_tensor *m = intrus_reshape(ctx, mem->states, 2, flat);
  for (int l = 0; l < dc->layers; l++) {
    intrus_tensor *k = intrus_linear_forward(ctx, &dc->layer[l].cross.k, m);
    intrus_tensor *v = intrus_linear_forward(ctx, &dc->layer[l].cross.v, m);
    memcpy(c->kv + (2 * (size_t)l) * rows * dc->d, k->data, rows * dc->d * sizeof(float));
    memcpy(c->kv + (2 * (size_t)l + 1) * rows * dc->d, v->data, rows * dc->d * sizeof(float));
  }
  intrus_ctx_set_grad(ctx, grad);
  c->packs = intrus_weight_packs_for_decoder(dc->layer, dc->layers);
  *state = c;
  return INTRUS_OK;
}

/* A constant leaf over memory the cache owns (no copy into the arena). */
static intrus_tensor *cache_view(intrus_ctx *ctx, float *data, int rows, int d) {
  intrus_tensor *t = intrus_ctx_calloc(ctx, sizeof *t);
  t->data = data;
  t->ndim = 2;
  t->shape[0] = rows;
  t->shape[1] = d;
  t->n = (size_t)rows * d;
  t->op = INTRUS_OP_NONE;
  return t;
}

static enum intrus_status ins_run(struct decoder *dc, struct ins_cache *c, intrus_ctx *ctx,
                                  const struct intrus_ins_states *states, int nrows,
                                  const int *rows, intrus_tensor **hidden,
                                  struct intrus_error *err) {
  struct layout L;
  enum intrus_status st = layout_build(ctx, dc, states, c->B, c->S, c->lens, &L, err);
  if (st) return st;
  for (int j = 0; rows && j < nrows; j++)
    if (rows[j] < 0 || rows[j] >= L.N || (j && rows[j] <= rows[j - 1]))
      return intrus_error_set(err, INTRUS_ERR_INVALID,
                              "decoder insertion: row %d of %d asked for is %d (rows must "
                              "ascend within 0..%d)", j, nrows, rows[j], L.N - 1);
  if (rows && nrows == 0) {
    /* No row asked for: the states are checked, nothing runs. */
    *hidden = intrus_tensor_new2(ctx, 0, dc->d);
    return INTRUS_OK;
  }
  bool grad = intrus_ctx_grad_enabled(ctx), training = intrus_ctx_training(ctx);
  intrus_ctx_set_grad(ctx, false);
  intrus_ctx_set_training(ctx, false);
  size_t mrows = (size_t)c->B * c->S;
  intrus_tensor **kc = intrus_ctx_alloc(ctx, 2 * (size_t)dc->layers * sizeof *kc), **vc = kc + dc->layers;
  for (int l = 0; l < dc->layers; l++) {
    kc[l] = cache_view(ctx, c->kv + (2 * (size_t)l) * mrows * dc->d, (int)mrows, dc->d);
    vc[l] = cache_view(ctx, c->kv + (2 * (size_t)l + 1) * mrows * dc->d, (int)mrows, dc->d);
  }
  const struct intrus_weight_packs *packs = intrus_ctx_packs(ctx);
  intrus_ctx_set_packs(ctx, c->packs);
  if (!dc->next.w) {
    *hidden = run_layers(ctx, dc, &L, embed(ctx, dc, &L, 0.0f), kc, vc, 0.0f, nrows, rows);
  } else if (!rows) {
    intrus_tensor *h = run_layers(ctx, dc, &L, embed(ctx, dc, &L, 0.0f), kc, vc, 0.0f, 0, NULL);
    *hidden = slot_pairs(ctx, dc, h, L.N, NULL, next_rows(ctx, &L));
  } else {
    /* The asked rows and their right neighbours, ascending and once each. */
    const int32_t *nx = next_rows(ctx, &L);
    int *both = intrus_ctx_alloc(ctx, 2 * (size_t)nrows * sizeof *both), nb = 0;
    int32_t *self = intrus_ctx_alloc(ctx, 2 * (size_t)nrows * sizeof *self), *next = self + nrows;
    for (int j = 0; j < nrows; j++) {
      /* rows ascend and a neighbour is its row + 1, so both stays ascending: a row that
       * was just added as the previous row's neighbour is not added again. */
      if (!nb || both[nb - 1] != rows[j]) both[nb++] = rows[j];
      self[j] = nb - 1;
      if (nx[rows[j]] != rows[j]) both[nb++] = nx[rows[j]];
      next[j] = nb - 1;
    }
    intrus_tensor *h = run_layers(ctx, dc, &L, embed(ctx, dc, &L, 0.0f), kc, vc, 0.0f, nb, both);
    *hidden = slot_pairs(ctx, dc, h, nrows, self, next);
  }
  intrus_ctx_set_packs(ctx, packs);
  intrus_ctx_set_grad(ctx, grad);
  intrus_ctx_set_training(ctx, training);
  return INTRUS_OK;
}

static enum intrus_status dec_ins_step(void *self, void *state, intrus_ctx *ctx,
                                       const struct intrus_ins_states *states,
                                       intrus_tensor **hidden, struct intrus_error *err) {
  return ins_run(self, state, ctx, states, 0, NULL, hidden, err);
}

static enum intrus_status dec_ins_step_rows(void *self, void *state, intrus_ctx *ctx,
                                            const struct intrus_ins_states *states, int nrows,
                                            const int *rows, intrus_tensor **hidden,
                                            struct intrus_error *err) {
  if (nrows < 0 || (nrows > 0 && !rows))
    return intrus_error_set(err, INTRUS_ERR_INVALID, "decoder insertion: %d rows asked for",
                            nrows);
  /* A non-NULL list marks the restricted form, even when it is empty. */
  static const int none[1] = {0};
  return ins_run(self, state, ctx, states, nrows, nrows ? rows : none, hidden, err);
}

static const struct intrus_decoder_vtable vtable = {
    .create = dec_create, .destroy = dec_destroy, .finish = dec_finish,
    .ins_hidden = dec_hidden, .ins_output = dec_output, .ins_start = dec_ins_start,
    .ins_step = dec_ins_step, .ins_step_rows = dec_ins_step_rows,
    .ins_output_transposed = dec_output_transposed};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(decoder_insertion) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "insertion",
    .version = "1.1.0",
    .kind = INTRUS_KIND_DECODER,
    .summary = "INTRUS insertion decoder: any generation order, position + token softmax",
    .vtable = &vtable,
};

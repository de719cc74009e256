/* encoder "cnn": images to the [B, H'W', d] memory the decoders read (docs/cnn.md).
 *
 * Stages of 3x3 convolution (zero padding 1, bias) -> ELU -> (optional) 2x2 max-pool,
 * as in Deng et al. 2017's im2latex encoder; then the last stage's channels projected
 * to d_model at every position, 2-D sinusoidal positions added (the first d/2 channels
 * encode the row, the rest the column), an optional layer norm and dropout. The memory
 * holds each image's real positions row-major over its own pooled width, then padding
 * (a prefix mask, as both decoders expect).
 *
 * Padding. Pixels are turned into ink (1 - p: white paper is 0) and everything outside
 * an image's own heights[b] x widths[b] is 0. The plane is rounded up to a multiple of
 * 2^pools so that every pool sees an even size, and each stage's ELU output is
 * multiplied by the image's mask at that stage, so the padded region is exactly 0 when
 * the next convolution or pool reads it. A real position therefore sees the same
 * numbers whatever the other images of its batch are. A pool halves a real size
 * rounding up (ceil(h / 2)): a pooled position is real when it covers at least one real
 * position; its window's padded half reads 0, as the convolutions' own zero padding
 * at an image's edge does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/nn.h"
#include "intrus/plugin.h"

#define CNN_MAX_STAGES 16

struct stage {
  int in, out;
  bool pool;
  intrus_tensor *w; /* [out, in, 3, 3] */
  intrus_tensor *b; /* [out] */
};

struct encoder {
  int d, channels, nstages, pools;
  bool layer_norm;
  float dropout;
  struct stage st[CNN_MAX_STAGES];
  struct intrus_linear proj; /* last stage's channels -> d */
  struct intrus_norm norm;
};

static enum intrus_status enc_create(const struct intrus_model_init *init, void **self,
                                     struct intrus_error *err) {
  const intrus_cfg *g = init->cfg;
  /* Deng et al.'s filters; the first three stages pool, which takes a 64 x 320 image
   * to an 8 x 40 map (320 positions), the same overall reduction (8 in both
   * directions) as their 2x2, 2x2, 2x1, 1x2 pools. */
  static const long long def_filters[] = {64, 128, 256, 512, 512};
  long long filters[CNN_MAX_STAGES], channels;
  bool pool[CNN_MAX_STAGES], layer_norm;
  int nfilters, npool;
  double dropout;
  enum intrus_status st;
  if ((st = intrus_cfg_int(g, "channels", 1, &channels, err)) ||
      (st = intrus_cfg_ints(g, "filters", def_filters, 5, 1, 4096, CNN_MAX_STAGES, filters,
                            &nfilters, err)))
    return st;
  if (channels != 1 && channels != 3)
    return intrus_cfg_error(g, "channels", err, "%lld: expected 1 (grey) or 3 (RGB)", channels);
  /* The default pools the first three stages (fewer when there are fewer stages). */
  bool def_pool[CNN_MAX_STAGES];
  for (int i = 0; i < nfilters; i++) def_pool[i] = i < 3;
  if ((st = intrus_cfg_bools(g, "pool", def_pool, nfilters, CNN_MAX_STAGES, pool, &npool,
                             err)) ||
      (st = intrus_cfg_bool(g, "layer_norm", true, &layer_norm, err)) ||
      (st = intrus_cfg_double_range(g, "dropout", 0.0, 0.0, 0.95, &dropout, err)) ||
      (st = intrus_cfg_check_unknown(g, err)))
    return st;
  if (npool != nfilters)
    return intrus_cfg_error(g, "pool", err, "has %d entries but filters has %d (one per stage)",
                            npool, nfilters);
  int pools = 0;
  for (int i = 0; i < nfilters; i++) pools += pool[i];
  /* Each pool doubles the plane's rounding and a 2^13 multiple would already exceed
   * the image limits (docs/limits.md). */
  if (pools > 12)
    return intrus_cfg_error(g, "pool", err, "%d pools: at most 12 stages may pool", pools);

  struct encoder *e = calloc(1, sizeof *e);
  if (!e) return intrus_error_set(err, INTRUS_ERR_NOMEM, "encoder cnn: out of memory");
  e->d = init->d_model;
  e->channels = (int)channels;
  e->nstages = nfilters;
  e->pools = pools;
  e->layer_norm = layer_norm;
  e->dropout = (float)dropout;
  char name[256];
  int in = e->channels;
  for (int i = 0; i < nfilters; i++) {
    struct stage *s = &e->st[i];
    s->in = in;
    s->out = (int)filters[i];
    s->pool = pool[i];
    /* He-uniform, a = sqrt(6 / fan_in): keeps the activations' scale through stages of
     * (nearly) rectifying ELUs without a normalisation inside the stack. */
    int wshape[4] = {s->out, s->in, 3, 3};
    snprintf(name, sizeof name, "%sconv%d.w", init->prefix, i);
    s->w = intrus_params_add(init->params, name, 4, wshape, INTRUS_INIT_UNIFORM,
                             sqrtf(6.0f / (float)(s->in * 9)));
    snprintf(name, sizeof name, "%sconv%d.b", init->prefix, i);
    s->b = intrus_params_add(init->params, name, 1, &s->out, INTRUS_INIT_ZEROS, 0.0f);
    in = s->out;
  }
  snprintf(name, sizeof name, "%sproj", init->prefix);
  intrus_linear_init(&e->proj, init->params, name, in, e->d, true);
  if (e->layer_norm) {
    snprintf(name, sizeof name, "%snorm", init->prefix);
    intrus_norm_init(&e->norm, init->params, name, e->d);
  }
  *self = e;
  return INTRUS_OK;
}

static void enc_destroy(void *self) { free(self); }

/* x * mask where mask is 1 on each image's real h[b] x w[b] corner of the [H, W] plane,
 * broadcast over C channels; x itself when no image is padded at this size. */
static intrus_tensor *mask_planes(intrus_ctx *ctx, intrus_tensor *x, const int *h, const int *w) {
  const int B = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  bool padded = false;
  for (int b = 0; b < B; b++) padded |= h[b] < H || w[b] < W;
  if (!padded) return x;
  intrus_tensor *m = intrus_tensor_new(ctx, 4, x->shape);
  for (int b = 0; b < B; b++) {
    float *plane = m->data + (size_t)b * C * H * W;
    for (int i = 0; i < H; i++)
      for (int j = 0; j < W; j++) plane[(size_t)i * W + j] = (i < h[b] && j < w[b]) ? 1.0f : 0.0f;
    for (int c = 1; c < C; c++)
      memcpy(plane + (size_t)c * H * W, plane, (size_t)H * W * sizeof(float));
  }
  return intrus_mul(ctx, x, m);
}

static enum intrus_status enc_encode(void *self, intrus_ctx *ctx,
                                     const struct intrus_src_batch *src,
                                     struct intrus_memory *out, struct intrus_error *err) {
  struct encoder *e = self;
  if (!src->pixels || src->tokens)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "encoder cnn reads images, got tokens");
  const int B = src->batch, C = src->channels, H = src->height, W = src->width;
  if (C != e->channels)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "encoder cnn: images have %d channel(s), model.encoder.channels "
                            "is %d",
                            C, e->channels);
  if (B < 1 || H < 1 || W < 1)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "encoder cnn: empty batch %d x %d x %d", B,
                            H, W);
  /* Real sizes per image, updated stage by stage (arena: freed with the step). */
  int *h = intrus_ctx_alloc(ctx, 2 * (size_t)B * sizeof(int)), *w = h + B;
  for (int b = 0; b < B; b++) {
    h[b] = src->heights ? src->heights[b] : H;
    w[b] = src->widths ? src->widths[b] : W;
    if (h[b] < 1 || h[b] > H || w[b] < 1 || w[b] > W)
      return intrus_error_set(err, INTRUS_ERR_INVALID,
                              "encoder cnn: image %d is %d x %d, outside its batch's %d x %d",
                              b, h[b], w[b], H, W);
  }
  /* The plane, rounded up so that every pool halves an even size. */
  const int unit = 1 << e->pools;
  const int Hp = (H + unit - 1) / unit * unit, Wp = (W + unit - 1) / unit * unit;
  int xshape[4] = {B, C, Hp, Wp};
  intrus_tensor *x = intrus_tensor_zeros(ctx, 4, xshape);
  for (int b = 0; b < B; b++)
    for (int c = 0; c < C; c++) {
      const float *sp = src->pixels + ((size_t)b * C + c) * H * W;
      float *dp = x->data + ((size_t)b * C + c) * Hp * Wp;
      for (int i = 0; i < h[b]; i++)
        for (int j = 0; j < w[b]; j++) dp[(size_t)i * Wp + j] = 1.0f - sp[(size_t)i * W + j];
    }

  for (int i = 0; i < e->nstages; i++) {
    const struct stage *s = &e->st[i];
    x = intrus_conv2d(ctx, x, s->w, s->b, 1, 1);
    x = intrus_elu(ctx, x);
    x = mask_planes(ctx, x, h, w);
    if (s->pool) {
      x = intrus_maxpool2d(ctx, x, 2, 2);
      for (int b = 0; b < B; b++) {
        h[b] = (h[b] + 1) / 2;
        w[b] = (w[b] + 1) / 2;
      }
    }
  }

  /* Each image's real h x w positions, row-major over its own width, first, then its
   * padding: the memory mask is then a prefix (the insertion decoder packs memories by
   * length and requires one), and an image's memory has the same layout alone and in
   * any batch. A gather (the embedding op, scatter-add backward) reorders the rows. */
  const int Cf = x->shape[1], Hf = x->shape[2], Wf = x->shape[3], N = Hf * Wf;
  static const int to_last[4] = {0, 2, 3, 1};
  x = intrus_permute(ctx, x, to_last); /* [B, Hf, Wf, Cf] */
  int rows_shape[2] = {B * N, Cf};
  x = intrus_reshape(ctx, x, 2, rows_shape);
  int32_t *ids = intrus_ctx_alloc(ctx, (size_t)B * N * sizeof *ids);
  uint8_t *mask = intrus_ctx_alloc(ctx, (size_t)B * N);
  int pshape[3] = {B, N, e->d};
  intrus_tensor *pos = intrus_tensor_zeros(ctx, 3, pshape);
  /* 2-D positions: row i's sinusoid in the first d/2 channels, column j's in the rest
   * (Parmar et al.'s image transformer; Deng et al. encode rows the same way). */
  const int dr = e->d / 2, dc = e->d - dr;
  intrus_tensor *pr = dr > 0 ? intrus_positions(ctx, Hf, dr) : NULL;
  intrus_tensor *pc = intrus_positions(ctx, Wf, dc);
  for (int b = 0; b < B; b++) {
    const int real = h[b] * w[b];
    /* Padding rows read a padded (all-zero) feature position when there is one; their
     * values are masked out downstream either way. */
    const int pad_at = h[b] < Hf ? h[b] * Wf : w[b] < Wf ? w[b] : 0;
    for (int t = 0; t < N; t++) {
      const size_t bt = (size_t)b * N + t;
      mask[bt] = t < real;
      if (t >= real) {
        ids[bt] = (int32_t)((size_t)b * N + pad_at);
        continue;
      }
      const int i = t / w[b], j = t % w[b];
      ids[bt] = (int32_t)((size_t)b * N + (size_t)i * Wf + j);
      float *row = pos->data + bt * e->d;
      if (dr > 0) memcpy(row, pr->data + (size_t)i * dr, (size_t)dr * sizeof(float));
      memcpy(row + dr, pc->data + (size_t)j * dc, (size_t)dc * sizeof(float));
    }
  }
  int gshape[2] = {B, N};
  x = intrus_embedding(ctx, x, ids, 2, gshape);  /* [B, N, Cf] */
  x = intrus_linear_forward(ctx, &e->proj, x);   /* [B, N, d] */
  x = intrus_add(ctx, x, pos);
  if (e->layer_norm) x = intrus_norm_forward(ctx, &e->norm, x);
  x = intrus_dropout(ctx, x, e->dropout);

  out->states = x;
  out->mask = mask;
  out->batch = B;
  out->len = N;
  return INTRUS_OK;
}

static const struct intrus_encoder_vtable vtable = {
    .create = enc_create, .destroy = enc_destroy, .encode = enc_encode};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(encoder_cnn) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "cnn",
    .version = "1.0.0",
    .kind = INTRUS_KIND_ENCODER,
    .summary = "convolutional encoder over images (3x3 conv, ELU, 2x2 max-pool; 2-D positions)",
    .vtable = &vtable,
};

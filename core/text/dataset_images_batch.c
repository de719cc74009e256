/* Batches of data.kind = "images" (dataset_images.c reads the data): a batch pads its
 * images to its largest height and width with white and carries every image's own size
 * (intrus_src_batch.heights / widths). Training batches: the pairs of each epoch
 * shuffled (seed, epoch), sorted by image size within windows of 1000, cut so that count
 * x largest height x largest width stays within data.batch_pixels and count x longest
 * target within train.batch_tokens, the batch order shuffled: a pure function of (seed,
 * step), as for text. Images to decode are batched sorted by size. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "dataset.h"
#include "dataset_images_internal.h"
#include "intrus/image.h"
#include "intrus/rng.h"

/* ---- batches ------------------------------------------------------------------------ */

/* Pairs sort by image height, width, target length, then index: a key per pair, so the
 * comparison needs no pointer to the split (qsort passes none). */
struct pair_key {
  int h, w;
  int64_t len;
  int32_t idx;
};

static int cmp_keys(const void *a, const void *b) {
  const struct pair_key *x = a, *y = b;
  if (x->h != y->h) return x->h < y->h ? -1 : 1;
  if (x->w != y->w) return x->w < y->w ? -1 : 1;
  if (x->len != y->len) return x->len < y->len ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Sorts the pair indices idx[0..n) by their keys; keys has room for n. */
static void sort_pairs(const struct image_split *s, int32_t *idx, size_t n,
                       struct pair_key *keys) {
  for (size_t k = 0; k < n; k++) {
    int32_t x = idx[k];
    int im = s->image[x];
    keys[k] = (struct pair_key){s->h[im], s->w[im], s->off[x + 1] - s->off[x], x};
  }
  qsort(keys, n, sizeof *keys, cmp_keys);
  for (size_t k = 0; k < n; k++) idx[k] = keys[k].idx;
}

/* Cuts order[0..n) (sorted) greedily into batches within the pixel and token budgets;
 * start gets n_batches + 1 entries. */
static size_t cut_batches(const struct image_split *s, const int32_t *order, size_t n,
                          long long max_pixels, long max_tokens, size_t *start) {
  size_t nb = 0;
  size_t k = 0;
  while (k < n) {
    start[nb++] = k;
    long long hmax = 0, wmax = 0, tmax = 0;
    size_t count = 0;
    for (; k < n; k++, count++) {
      int i = s->image[order[k]];
      long long h = s->h[i] > hmax ? s->h[i] : hmax, w = s->w[i] > wmax ? s->w[i] : wmax;
      long long t = s->off[order[k] + 1] - s->off[order[k]];
      if (t < tmax) t = tmax;
      if (count && ((long long)(count + 1) * h * w > max_pixels ||
                    (long long)(count + 1) * t > max_tokens))
        break;
      hmax = h, wmax = w, tmax = t;
    }
  }
  start[nb] = n;
  return nb;
}

static void shuffle(int32_t *a, size_t n, struct intrus_rng *rng) {
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)intrus_rng_below(rng, (uint64_t)i);
    int32_t t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
  }
}

/* The batches of epoch e (cached): see the top of this file. */
static void make_epoch(struct dataset *d, struct image_split *s, uint64_t e) {
  if (s->have_epoch && s->epoch == e) return;
  size_t n = s->n;
  if (!s->order) {
    s->order = malloc(n * sizeof *s->order);
    s->start = malloc((n + 1) * sizeof *s->start);
    INTRUS_CHECK(s->order && s->start, "out of memory for %zu image pairs", n);
  }
  int32_t *perm = malloc(n * sizeof *perm);
  INTRUS_CHECK(perm, "out of memory for %zu image pairs", n);
  for (size_t i = 0; i < n; i++) perm[i] = (int32_t)i;
  struct intrus_rng rng;
  intrus_rng_seed(&rng, intrus_hash64(d->img_seed ^ 0x696d616765ULL, e));
  shuffle(perm, n, &rng);
  struct pair_key *keys = malloc((n < 1000 ? (n ? n : 1) : 1000) * sizeof *keys);
  INTRUS_CHECK(keys, "out of memory for %zu image pairs", n);
  for (size_t w = 0; w < n; w += 1000) sort_pairs(s, perm + w, n - w < 1000 ? n - w : 1000, keys);
  free(keys);
  size_t nb = cut_batches(s, perm, n, d->batch_pixels, d->img_batch_tokens, s->start);
  /* Shuffle the batches, not their contents. */
  int32_t *bo = malloc((nb ? nb : 1) * sizeof *bo);
  size_t *st2 = malloc((nb + 1) * sizeof *st2);
  INTRUS_CHECK(bo && st2, "out of memory");
  for (size_t b = 0; b < nb; b++) bo[b] = (int32_t)b;
  shuffle(bo, nb, &rng);
  size_t k = 0;
  for (size_t b = 0; b < nb; b++) {
    st2[b] = k;
    for (size_t j = s->start[bo[b]]; j < s->start[bo[b] + 1]; j++) s->order[k++] = perm[j];
  }
  st2[nb] = k;
  memcpy(s->start, st2, (nb + 1) * sizeof *st2);
  free(st2);
  free(bo);
  free(perm);
  s->n_batches = nb;
  s->epoch = e;
  s->have_epoch = true;
}

/* Pairs idx[0..count) of s as a batch in ctx's arena: pixels padded with white. */
static void fill_batch(const struct dataset *d, const struct image_split *s, intrus_ctx *ctx,
                       const int32_t *idx, int count, struct intrus_src_batch *src,
                       struct intrus_tgt_batch *tgt) {
  int H = 1, W = 1, T = 0, C = d->channels;
  for (int k = 0; k < count; k++) {
    int i = s->image[idx[k]];
    if (s->h[i] > H) H = s->h[i];
    if (s->w[i] > W) W = s->w[i];
    int t = (int)(s->off[idx[k] + 1] - s->off[idx[k]]);
    if (t > T) T = t;
  }
  size_t plane = (size_t)H * W;
  float *px = intrus_ctx_alloc(ctx, (size_t)count * C * plane * sizeof *px);
  int *hs = intrus_ctx_alloc(ctx, (size_t)count * sizeof *hs);
  int *ws = intrus_ctx_alloc(ctx, (size_t)count * sizeof *ws);
  int *lens = intrus_ctx_alloc(ctx, (size_t)count * sizeof *lens);
  int32_t *y = intrus_ctx_alloc(ctx, (size_t)count * (T ? T : 1) * sizeof *y);
  for (size_t j = 0; j < (size_t)count * C * plane; j++) px[j] = INTRUS_IMAGE_PAD_DEFAULT;
  for (int k = 0; k < count; k++) {
    int i = s->image[idx[k]], h = s->h[i], w = s->w[i];
    hs[k] = h;
    ws[k] = w;
    for (int c = 0; c < C; c++)
      for (int r = 0; r < h; r++) {
        const uint8_t *in = s->pix[i] + ((size_t)c * h + r) * w;
        float *o = px + (((size_t)k * C + c) * H + r) * W;
        for (int x = 0; x < w; x++) o[x] = (float)in[x] * (1.0f / 255.0f);
      }
    int t = (int)(s->off[idx[k] + 1] - s->off[idx[k]]);
    lens[k] = t;
    for (int j = 0; j < T; j++) y[(size_t)k * T + j] = j < t ? s->ids[s->off[idx[k]] + j] : INTRUS_PAD;
  }
  *src = (struct intrus_src_batch){.batch = count, .len = 0, .channels = C, .height = H,
                                   .width = W, .pixels = px, .heights = hs, .widths = ws};
  if (tgt) *tgt = (struct intrus_tgt_batch){.batch = count, .len = T, .tokens = y, .lens = lens};
}

void dataset_images_train_batch(struct dataset *d, intrus_ctx *ctx, long step,
                                struct intrus_src_batch *src, struct intrus_tgt_batch *tgt) {
  struct image_split *s = d->img_train;
  uint64_t e = 0;
  size_t i = (size_t)step;
  for (;; e++) {
    if (e == s->nesize) {
      xgrow((void **)&s->esize, &s->esize_cap, s->nesize + 1, sizeof *s->esize, 16);
      make_epoch(d, s, e);
      s->esize[s->nesize++] = s->n_batches;
    }
    if (i < s->esize[e]) break;
    i -= s->esize[e];
  }
  make_epoch(d, s, e);
  fill_batch(d, s, ctx, s->order + s->start[i], (int)(s->start[i + 1] - s->start[i]), src, tgt);
}

/* Evaluation batches of n images: indices 0..n-1 sorted by size, cut within the
 * budgets. *order and *start are malloc'd. */
static size_t eval_batches(const struct dataset *d, const struct image_split *s, size_t n,
                           int32_t **order, size_t **start) {
  *order = malloc((n ? n : 1) * sizeof **order);
  *start = malloc((n + 1) * sizeof **start);
  INTRUS_CHECK(*order && *start, "out of memory");
  for (size_t i = 0; i < n; i++) (*order)[i] = (int32_t)i;
  struct pair_key *keys = malloc((n ? n : 1) * sizeof *keys);
  INTRUS_CHECK(keys, "out of memory");
  sort_pairs(s, *order, n, keys);
  free(keys);
  return cut_batches(s, *order, n, d->batch_pixels, d->img_batch_tokens > 0 ? d->img_batch_tokens : 1L << 30, *start);
}

enum intrus_status dataset_images_valid_batches(struct dataset *d, intrus_ctx *ctx,
                                                struct dataset_share share, dataset_batch_fn fn,
                                                void *user, struct intrus_error *err) {
  const struct image_split *s = d->img_valid;
  int32_t *order;
  size_t *start;
  size_t nb = eval_batches(d, s, s->n, &order, &start);
  enum intrus_status st = INTRUS_OK;
  for (size_t b = 0; b < nb && !st; b++) {
    if ((long)b % share.every != share.first) continue;
    struct intrus_src_batch src;
    struct intrus_tgt_batch tgt;
    intrus_ctx_reset(ctx);
    fill_batch(d, s, ctx, order + start[b], (int)(start[b + 1] - start[b]), &src, &tgt);
    st = fn(&src, &tgt, (long)b, user, err);
  }
  free(order);
  free(start);
  return st;
}

/* ---- decoding inputs ---------------------------------------------------------------- */

/* Images to decode: an image_split whose pairs are the images themselves with empty
 * targets, owning its images or viewing the validation set's. */
struct dataset_image_input {
  struct image_split s;
  bool owns;
};

static enum intrus_status input_pairs(struct image_split *s, struct intrus_error *err) {
  size_t n = s->n_images;
  s->image = malloc((n ? n : 1) * sizeof *s->image);
  s->off = calloc(n + 1, sizeof *s->off);
  if (!s->image || !s->off) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) s->image[i] = (int32_t)i;
  s->n = n;
  return INTRUS_OK;
}

void dataset_images_input_free(struct dataset_image_input *in) {
  if (!in) return;
  if (in->owns) {
    for (size_t i = 0; i < in->s.n_images; i++) free(in->s.pix[i]);
    free(in->s.pix);
    free(in->s.h);
    free(in->s.w);
  }
  free(in->s.image);
  free(in->s.off);
  free(in);
}

enum intrus_status dataset_images_input_read(const struct dataset *d, const char *list,
                                             struct dataset_image_input **out,
                                             struct intrus_error *err) {
  struct dataset_image_input *in = calloc(1, sizeof *in);
  char *copy = strdup(list);
  if (!in || !copy) {
    free(in);
    free(copy);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  in->owns = true;
  enum intrus_status st = dataset_images_read_list(d, list, dirname(copy), &in->s, err);
  free(copy);
  if (!st) st = input_pairs(&in->s, err);
  if (st) {
    dataset_images_input_free(in);
    return st;
  }
  *out = in;
  return INTRUS_OK;
}

enum intrus_status dataset_images_valid_input(const struct dataset *d, size_t n,
                                              struct dataset_image_input **out,
                                              struct intrus_error *err) {
  struct dataset_image_input *in = calloc(1, sizeof *in);
  if (!in) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  const struct image_split *v = d->img_valid;
  in->s.n_images = n < v->n_images ? n : v->n_images;
  in->s.h = v->h;
  in->s.w = v->w;
  in->s.pix = v->pix;
  enum intrus_status st = input_pairs(&in->s, err);
  if (st) {
    dataset_images_input_free(in);
    return st;
  }
  *out = in;
  return INTRUS_OK;
}

size_t dataset_images_input_count(const struct dataset_image_input *in) { return in->s.n_images; }

float *dataset_images_input_pixels(const struct dataset *d, const struct dataset_image_input *in,
                                   size_t i, int *channels, int *height, int *width) {
  const int h = in->s.h[i], w = in->s.w[i], c = d->channels;
  size_t k = (size_t)c * h * w;
  float *p = malloc((k ? k : 1) * sizeof *p);
  if (!p) return NULL;
  for (size_t j = 0; j < k; j++) p[j] = (float)in->s.pix[i][j] * (1.0f / 255.0f);
  *channels = c;
  *height = h;
  *width = w;
  return p;
}

enum intrus_status dataset_images_input_batches(const struct dataset *d,
                                                struct dataset_image_input *in, intrus_ctx *ctx,
                                                dataset_image_batch_fn fn, void *user,
                                                struct intrus_error *err) {
  int32_t *order;
  size_t *start;
  size_t nb = eval_batches(d, &in->s, in->s.n, &order, &start);
  enum intrus_status st = INTRUS_OK;
  for (size_t b = 0; b < nb && !st; b++) {
    struct intrus_src_batch src;
    int count = (int)(start[b + 1] - start[b]);
    intrus_ctx_reset(ctx);
    fill_batch(d, &in->s, ctx, order + start[b], count, &src, NULL);
    st = fn(&src, order + start[b], count, user, err);
  }
  free(order);
  free(start);
  return st;
}

/* Padded batches of images with a mask, and bucketing of image sizes into batches with
 * little padding (include/intrus/image.h). Plain loops over float arrays. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "intrus/image.h"

/* a * b, or UINT64_MAX when it overflows. */
static uint64_t mul_sat(uint64_t a, uint64_t b) {
  return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

static size_t image_at(const size_t *index, size_t i) { return index ? index[i] : i; }

enum intrus_status intrus_image_batch_make(const struct intrus_image *images, const size_t *index,
                                           size_t n, float pad, struct intrus_image_batch *out,
                                           struct intrus_error *err) {
  if (n == 0 || !images)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "image batch: no images");
  if (n > INT32_MAX)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "image batch: %zu images (at most %d)",
                            n, INT32_MAX);
  const int channels = images[image_at(index, 0)].channels;
  int hmax = 0, wmax = 0;
  for (size_t i = 0; i < n; i++) {
    const struct intrus_image *im = &images[image_at(index, i)];
    if (!im->pixels || im->height < 1 || im->width < 1 || (im->channels != 1 && im->channels != 3))
      return intrus_error_set(err, INTRUS_ERR_INVALID,
                              "image batch: image %zu (#%zu of the batch) has no pixels, a size "
                              "of %d x %d or %d channels", image_at(index, i), i, im->width,
                              im->height, im->channels);
    if (im->channels != channels)
      return intrus_error_set(err, INTRUS_ERR_INVALID,
                              "image batch: image %zu has %d channels, image %zu has %d",
                              image_at(index, i), im->channels, image_at(index, 0), channels);
    if (im->height > hmax) hmax = im->height;
    if (im->width > wmax) wmax = im->width;
  }
  const uint64_t plane = (uint64_t)hmax * (uint64_t)wmax;
  const uint64_t nmask = mul_sat(n, plane), npix = mul_sat(nmask, (uint64_t)channels);
  if (npix > SIZE_MAX / sizeof(float))
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "image batch: %zu images padded to %d x %d do not fit in memory", n,
                            wmax, hmax);
  float *pixels = xmalloc((size_t)npix * sizeof *pixels);
  float *mask = xmalloc((size_t)nmask * sizeof *mask);
  for (size_t i = 0; i < n; i++) {
    const struct intrus_image *im = &images[image_at(index, i)];
    const size_t h = (size_t)im->height, w = (size_t)im->width;
    float *m = mask + i * (size_t)plane;
    for (size_t y = 0; y < (size_t)hmax; y++)
      for (size_t x = 0; x < (size_t)wmax; x++) m[y * (size_t)wmax + x] = y < h && x < w;
    for (int c = 0; c < channels; c++) {
      float *dst = pixels + (i * (size_t)channels + (size_t)c) * (size_t)plane;
      const float *src = im->pixels + (size_t)c * h * w;
      for (size_t y = 0; y < (size_t)hmax; y++) {
        float *row = dst + y * (size_t)wmax;
        size_t x = 0;
        if (y < h) {
          memcpy(row, src + y * w, w * sizeof *row);
          x = w;
        }
        for (; x < (size_t)wmax; x++) row[x] = pad;
      }
    }
  }
  *out = (struct intrus_image_batch){.count = (int)n, .channels = channels, .height = hmax,
                                     .width = wmax, .pixels = pixels, .mask = mask};
  return INTRUS_OK;
}

void intrus_image_batch_free(struct intrus_image_batch *b) {
  if (!b) return;
  free(b->pixels);
  free(b->mask);
  *b = (struct intrus_image_batch){0};
}

enum intrus_status intrus_image_buckets_cut(const struct intrus_image_size *sizes,
                                            const size_t *order, size_t n, uint64_t max_pixels,
                                            size_t max_images, struct intrus_image_buckets *out,
                                            struct intrus_error *err) {
  if (n && !sizes) return intrus_error_set(err, INTRUS_ERR_INVALID, "image buckets: no sizes");
  for (size_t i = 0; i < n; i++) {
    const size_t k = image_at(order, i);
    if (k >= n)
      return intrus_error_set(err, INTRUS_ERR_INVALID,
                              "image buckets: order[%zu] = %zu is out of range (%zu images)", i,
                              k, n);
    if (sizes[k].height < 1 || sizes[k].width < 1)
      return intrus_error_set(err, INTRUS_ERR_INVALID,
                              "image buckets: image %zu has a size of %d x %d", k,
                              sizes[k].width, sizes[k].height);
  }
  size_t *ord = xmalloc(n * sizeof *ord), *start = xmalloc((n + 1) * sizeof *start);
  size_t nb = 0, count = 0;
  uint64_t hmax = 0, wmax = 0, real = 0, padded = 0;
  start[0] = 0;
  for (size_t i = 0; i < n; i++) {
    const size_t k = image_at(order, i);
    ord[i] = k;
    uint64_t h = (uint64_t)sizes[k].height, w = (uint64_t)sizes[k].width;
    uint64_t nh = h > hmax ? h : hmax, nw = w > wmax ? w : wmax;
    if (count > 0 && ((max_images && count + 1 > max_images) ||
                      (max_pixels && mul_sat(mul_sat(count + 1, nh), nw) > max_pixels))) {
      padded += mul_sat(mul_sat(count, hmax), wmax);
      start[++nb] = i;
      count = 0;
      nh = h;
      nw = w;
    }
    count++;
    hmax = nh;
    wmax = nw;
    real += h * w;
  }
  if (count) {
    padded += mul_sat(mul_sat(count, hmax), wmax);
    start[++nb] = n;
  }
  *out = (struct intrus_image_buckets){.n = n, .nbatches = nb, .order = ord, .start = start,
                                       .padded_pixels = padded,
                                       .padding = padded ? 1.0 - (double)real / (double)padded : 0};
  return INTRUS_OK;
}

struct sort_key {
  int height, width;
  size_t index;
};

static int cmp_key(const void *pa, const void *pb) {
  const struct sort_key *a = pa, *b = pb;
  if (a->height != b->height) return a->height < b->height ? -1 : 1;
  if (a->width != b->width) return a->width < b->width ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

enum intrus_status intrus_image_buckets_make(const struct intrus_image_size *sizes, size_t n,
                                             uint64_t max_pixels, size_t max_images,
                                             struct intrus_image_buckets *out,
                                             struct intrus_error *err) {
  if (n && !sizes) return intrus_error_set(err, INTRUS_ERR_INVALID, "image buckets: no sizes");
  struct sort_key *keys = xmalloc(n * sizeof *keys);
  size_t *order = xmalloc(n * sizeof *order);
  for (size_t i = 0; i < n; i++)
    keys[i] = (struct sort_key){.height = sizes[i].height, .width = sizes[i].width, .index = i};
  if (n) qsort(keys, n, sizeof *keys, cmp_key);
  for (size_t i = 0; i < n; i++) order[i] = keys[i].index;
  free(keys);
  enum intrus_status st = intrus_image_buckets_cut(sizes, order, n, max_pixels, max_images, out,
                                                   err);
  free(order);
  return st;
}

void intrus_image_buckets_free(struct intrus_image_buckets *b) {
  if (!b) return;
  free(b->order);
  free(b->start);
  *b = (struct intrus_image_buckets){0};
}

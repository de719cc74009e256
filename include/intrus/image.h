/* Images as float pixels for image-to-text tasks (image-to-LaTeX, captioning): PNG
 * reading with libpng under hard size limits, padded batches with a mask, and
 * bucketing of image sizes into batches with little padding.
 *
 * Pixels: float32 in [0, 1], layout [C, H, W] row-major (channel planes, each H rows of
 * W), C = 1 (grey) or 3 (R, G, B) as the caller asks, whatever the file stores.
 * Every PNG colour type and bit depth is read (grey 1/2/4/8/16-bit, grey + alpha,
 * RGB, RGBA, palette 1/2/4/8-bit, tRNS transparency, Adam7 interlacing):
 *   - a sample s of depth d becomes s / (2^d - 1) (1-, 2- and 4-bit grey is expanded
 *     to 8 bits first, as libpng does: 2-bit 1 -> 85 -> 85/255, the same float as 1/3);
 *     a palette index becomes its entry's 8-bit colour;
 *   - alpha (an alpha channel or tRNS) is composited over white: a colour value c with
 *     alpha a becomes c * a + (1 - a), so transparent pixels read as white paper, which
 *     is what rendered formulas and emoji on a transparent background need;
 *   - grey from colour: Y = 0.2126 R + 0.7152 G + 0.0722 B (ITU-R BT.709, the weights
 *     libpng's png_set_rgb_to_gray uses by default, there in 15-bit fixed point),
 *     computed in float on the composited values;
 *     colour from grey: R = G = B = grey;
 *   - samples are taken as stored: gAMA, cHRM, sRGB and iCCP are ignored (no colour
 *     management); text chunks, sPLT and eXIf are skipped unread.
 * docs/limits.md lists the limits and the errors. */
#ifndef INTRUS_IMAGE_H
#define INTRUS_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "intrus/config.h"
#include "intrus/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits ------------------------------------------------------------------------ */

#define INTRUS_IMAGE_MAX_WIDTH 4096
#define INTRUS_IMAGE_MAX_HEIGHT 4096
#define INTRUS_IMAGE_MAX_PIXELS (16u << 20) /* 16 Mi pixels (64 MB of grey floats) */
/* The largest values the limits may be set to (libpng's own default limit is 10^6). */
#define INTRUS_IMAGE_MAX_SIDE_CAP 1000000
#define INTRUS_IMAGE_MAX_PIXELS_CAP (256u << 20)

/* An image whose width, height or width * height is over these is refused from its
 * IHDR, before libpng is even set up and before any pixel memory is allocated. */
struct intrus_image_limits {
  uint32_t max_width;  /* 1 .. INTRUS_IMAGE_MAX_SIDE_CAP */
  uint32_t max_height; /* 1 .. INTRUS_IMAGE_MAX_SIDE_CAP */
  uint64_t max_pixels; /* 1 .. INTRUS_IMAGE_MAX_PIXELS_CAP */
};

/* The defaults: 4096 x 4096 and 16 Mi pixels. */
struct intrus_image_limits intrus_image_limits_default(void);

/* The limits from settings max_width, max_height and max_pixels of group g (each
 * optional, defaults above, ranges above; a bad value is a config error naming the file
 * and line). g may be NULL: the defaults. Does not check g for unknown settings. */
enum intrus_status intrus_image_limits_read(const intrus_cfg *g, struct intrus_image_limits *lim,
                                            struct intrus_error *err);

/* ---- one image --------------------------------------------------------------------- */

struct intrus_image {
  int channels; /* 1 or 3 */
  int height, width;
  float *pixels; /* channels * height * width floats, [C, H, W]; malloc'd */
};

void intrus_image_free(struct intrus_image *img); /* frees pixels and zeroes *img */

/* Reads the PNG file at path into *out with `channels` channels (1: grey, 3: RGB),
 * under lim (NULL: the defaults). *out is written only on success; on failure nothing
 * is allocated and *out is left as it was. The errors, each message starting with path:
 *   INTRUS_ERR_INVALID  channels is not 1 or 3, or lim is out of its range;
 *   INTRUS_ERR_IO       the file cannot be opened or read (a missing file);
 *   INTRUS_ERR_FORMAT   not a PNG (no PNG signature: e.g. a text file named .png),
 *                       truncated (the file ends early), corrupt (a CRC error, bad zlib
 *                       data, a bad IHDR, too little image data), or a 0 x 0 image
 *                       (width or height 0);
 *   INTRUS_ERR_DATA     a valid image over the limits ("100000 x 1 pixels: over the
 *                       limit of 4096 pixels wide"). */
enum intrus_status intrus_image_read_png(const char *path, int channels,
                                         const struct intrus_image_limits *lim,
                                         struct intrus_image *out, struct intrus_error *err);

/* As intrus_image_read_png, from len bytes at data (an archive member, a test); name
 * stands for the file in messages. */
enum intrus_status intrus_image_decode_png(const void *data, size_t len, const char *name,
                                           int channels, const struct intrus_image_limits *lim,
                                           struct intrus_image *out, struct intrus_error *err);

/* The width and height of the PNG at path from its signature and IHDR alone (33 bytes
 * read: cheap enough to size a whole data set for bucketing), with the same checks and
 * errors as intrus_image_read_png for those bytes (signature, IHDR and its CRC, 0 x 0,
 * the limits). *width and *height are written only on success. */
enum intrus_status intrus_image_png_size(const char *path, const struct intrus_image_limits *lim,
                                         int *width, int *height, struct intrus_error *err);

/* ---- batches ----------------------------------------------------------------------- */

/* Padding white: the same background alpha is composited over, so a padded formula
 * reads as a larger page. */
#define INTRUS_IMAGE_PAD_DEFAULT 1.0f

/* count images of channels channels padded to the largest height and width among them,
 * each in the top-left corner (rows 0 .. h-1, columns 0 .. w-1), padding below and to the
 * right. */
struct intrus_image_batch {
  int count, channels, height, width; /* B, C, Hmax, Wmax */
  float *pixels; /* [B, C, Hmax, Wmax] */
  float *mask;   /* [B, Hmax, Wmax]: 1 for an image's pixel, 0 for padding */
};

/* Makes *out from images[index[0]], ..., images[index[n - 1]] (index NULL: images[0 ..
 * n-1]) with padding value pad (INTRUS_IMAGE_PAD_DEFAULT: white). INTRUS_ERR_INVALID when
 * n is 0, an image has no pixels, a size out of range or channels other than the
 * first's, or the batch would have more than SIZE_MAX bytes; *out is written only on
 * success. */
enum intrus_status intrus_image_batch_make(const struct intrus_image *images, const size_t *index,
                                           size_t n, float pad, struct intrus_image_batch *out,
                                           struct intrus_error *err);
void intrus_image_batch_free(struct intrus_image_batch *b); /* frees and zeroes *b */

/* ---- bucketing --------------------------------------------------------------------- */

struct intrus_image_size {
  int height, width;
};

/* n images cut into batches: batch b is images order[start[b]] .. order[start[b+1] - 1]. */
struct intrus_image_buckets {
  size_t n, nbatches;
  size_t *order; /* [n]: image indices, batch after batch */
  size_t *start; /* [nbatches + 1]; start[0] = 0, start[nbatches] = n */
  /* Padding over all batches: 1 - (sum of the images' pixels) / (sum over batches of
   * count * Hmax * Wmax); 0 when there are no pixels. */
  double padding;
  uint64_t padded_pixels; /* sum over batches of count * Hmax * Wmax */
};

/* Cuts the images in the given order (order NULL: 0 .. n-1) into batches greedily: an
 * image joins the current batch while the batch, padded, stays within max_pixels
 * (count * Hmax * Wmax, 0: no bound) and max_images (0: no bound); an image over
 * max_pixels on its own is a batch of one. The padding of the result is reported.
 * INTRUS_ERR_INVALID for a size under 1 x 1 or an index out of range; *out is written
 * only on success. */
enum intrus_status intrus_image_buckets_cut(const struct intrus_image_size *sizes,
                                            const size_t *order, size_t n, uint64_t max_pixels,
                                            size_t max_images, struct intrus_image_buckets *out,
                                            struct intrus_error *err);

/* intrus_image_buckets_cut of the images sorted by (height, width, index), so each
 * batch holds images of about one size and pads little. The batches come in that
 * order, shortest first; a training loop shuffles the batches, not their contents. */
enum intrus_status intrus_image_buckets_make(const struct intrus_image_size *sizes, size_t n,
                                             uint64_t max_pixels, size_t max_images,
                                             struct intrus_image_buckets *out,
                                             struct intrus_error *err);
void intrus_image_buckets_free(struct intrus_image_buckets *b); /* frees and zeroes *b */

#ifdef __cplusplus
}
#endif
#endif

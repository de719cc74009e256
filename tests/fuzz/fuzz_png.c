/* PNG images (core/image): each input decoded from a file as grey and from memory as
 * RGB under small limits (a hostile IHDR must be refused before anything is allocated
 * for it), its size read from the IHDR alone, and a decoded image batched with itself.
 * Every value must be in [0, 1]. Then the same with every chunk's CRC made right: a
 * mutation almost always breaks a CRC, and the reader would stop there every time. */
#include <zlib.h>

#include "fuzz_util.h"
#include "intrus/image.h"

static void check_pixels(const struct intrus_image *im) {
  const size_t n = (size_t)im->channels * (size_t)im->height * (size_t)im->width;
  for (size_t i = 0; i < n; i++)
    if (!(im->pixels[i] >= 0.0f && im->pixels[i] <= 1.0f)) abort();
}

static void run(const uint8_t *data, size_t size) {
  struct intrus_error err = {0};
  const struct intrus_image_limits lim = {.max_width = 1024, .max_height = 1024,
                                          .max_pixels = 1u << 18};
  const char *path = fuzz_path(".png");
  fuzz_write(path, data, size);
  struct intrus_image grey = {0}, rgb = {0};
  if (!intrus_image_read_png(path, 1, &lim, &grey, &err)) check_pixels(&grey);
  if (!intrus_image_decode_png(data, size, "input", 3, &lim, &rgb, &err)) {
    check_pixels(&rgb);
    /* Both decode or neither; the same size either way. */
    if (!grey.pixels || grey.width != rgb.width || grey.height != rgb.height) abort();
    struct intrus_image_batch b = {0};
    const struct intrus_image two[2] = {rgb, rgb};
    if (intrus_image_batch_make(two, NULL, 2, INTRUS_IMAGE_PAD_DEFAULT, &b, &err)) abort();
    intrus_image_batch_free(&b);
  } else if (grey.pixels) {
    abort();
  }
  int w = 0, h = 0;
  if (!intrus_image_png_size(path, &lim, &w, &h, &err) && grey.pixels &&
      (w != grey.width || h != grey.height))
    abort();
  intrus_image_free(&grey);
  intrus_image_free(&rgb);
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  run(data, size);
  uint8_t *fixed = malloc(size ? size : 1);
  if (!fixed) abort();
  memcpy(fixed, data, size);
  bool changed = false;
  for (size_t at = 8; at + 12 <= size && be32(fixed + at) <= size - at - 12;
       at += 12 + be32(fixed + at)) {
    const uint32_t n = be32(fixed + at);
    const uint32_t c = (uint32_t)crc32(0, fixed + at + 4, n + 4);
    if (be32(fixed + at + 8 + n) != c) {
      const uint8_t b[4] = {(uint8_t)(c >> 24), (uint8_t)(c >> 16), (uint8_t)(c >> 8), (uint8_t)c};
      memcpy(fixed + at + 8 + n, b, 4);
      changed = true;
    }
  }
  if (changed) run(fixed, size);
  free(fixed);
  return 0;
}

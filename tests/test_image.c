/* Images (include/intrus/image.h): PNGs of every colour type, bit depth and interlacing,
 * written here with libpng, decoded to exactly the floats the header's rules give (grey
 * and RGB output, alpha over white); each bad file refused with its own status and a
 * message naming it, the caller's output untouched (truncated in IDAT, a text file named
 * .png, 0 x 0 and 100000 x 1 IHDRs written by hand, bad CRCs, bad zlib data, a missing
 * file); limits from settings; a padded batch and its mask element by element; and
 * bucketing against input order. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "intrus/config.h"
#include "intrus/image.h"
#include "testutil.h"

/* ---- writing PNGs --------------------------------------------------------------------- */

struct spec {
  int w, h, depth, colour; /* colour: PNG_COLOR_TYPE_* */
  bool interlace;
  const png_color *palette;
  int npalette;
  const png_byte *trns; /* palette alpha, ntrns entries */
  int ntrns;
  const png_color_16 *trns_colour; /* grey or RGB colour key */
};

static int colour_channels(int colour) {
  switch (colour) {
  case PNG_COLOR_TYPE_GRAY: case PNG_COLOR_TYPE_PALETTE: return 1;
  case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
  case PNG_COLOR_TYPE_RGB: return 3;
  default: return 4;
  }
}

/* Samples s[(y * w + x) * nch + c] packed into PNG rows (big-endian 16-bit, sub-byte
 * samples from the high bits), malloc'd. */
static unsigned char *pack_rows(const struct spec *sp, const unsigned *s, size_t *rowbytes) {
  const int nch = colour_channels(sp->colour);
  const size_t rb = ((size_t)sp->w * (size_t)nch * (size_t)sp->depth + 7) / 8;
  unsigned char *raw = calloc((size_t)sp->h, rb);
  for (int y = 0; y < sp->h; y++)
    for (int i = 0; i < sp->w * nch; i++) {
      unsigned v = s[(size_t)y * (size_t)(sp->w * nch) + (size_t)i];
      unsigned char *row = raw + (size_t)y * rb;
      if (sp->depth == 16) {
        row[2 * i] = (unsigned char)(v >> 8);
        row[2 * i + 1] = (unsigned char)v;
      } else if (sp->depth == 8) {
        row[i] = (unsigned char)v;
      } else {
        const int bit = i * sp->depth, per = 8 / sp->depth;
        row[bit / 8] |= (unsigned char)(v << (8 - sp->depth * (i % per + 1)));
      }
    }
  *rowbytes = rb;
  return raw;
}

/* libpng's part of write_png (setjmp here, with nothing changed after it). */
static bool write_png_rows(FILE *f, const struct spec *sp, png_bytep *rows) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!info) return false;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)sp->w, (png_uint_32)sp->h, sp->depth, sp->colour,
               sp->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (sp->palette) png_set_PLTE(png, info, sp->palette, sp->npalette);
  if (sp->trns || sp->trns_colour)
    png_set_tRNS(png, info, sp->trns, sp->ntrns, sp->trns_colour);
  /* A text chunk and a gamma the reader must skip or ignore. */
  png_text text = {.compression = PNG_TEXT_COMPRESSION_zTXt, .key = "Comment",
                   .text = "written by tests/test_image.c"};
  png_set_text(png, info, &text, 1);
  png_set_gAMA(png, info, 0.45455);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  return true;
}

/* Writes the PNG of sp and samples s to path; exit 99 if it cannot. */
static const char *write_png(const char *path, const struct spec *sp, const unsigned *s) {
  size_t rb;
  unsigned char *raw = pack_rows(sp, s, &rb);
  png_bytep *rows = malloc((size_t)sp->h * sizeof *rows);
  for (int y = 0; y < sp->h; y++) rows[y] = raw + (size_t)y * rb;
  FILE *f = fopen(path, "wb");
  if (!f || !write_png_rows(f, sp, rows) || fclose(f) != 0) {
    fprintf(stderr, "cannot write test PNG %s\n", path);
    exit(99);
  }
  free(rows);
  free(raw);
  return path;
}

/* ---- hand-written files --------------------------------------------------------------- */

static uint32_t crc_table[256];

static uint32_t crc(const unsigned char *p, size_t n) {
  if (!crc_table[1])
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      crc_table[i] = c;
    }
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 255] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Signature, an 8-bit grey IHDR of w x h, IEND: no IDAT at all, so a reader that gets
 * past the IHDR fails on something else than the size. */
static const char *write_ihdr_only(const char *path, uint32_t w, uint32_t h) {
  unsigned char b[8 + 25 + 12] = {137, 80, 78, 71, 13, 10, 26, 10};
  put32(b + 8, 13);
  memcpy(b + 12, "IHDR", 4);
  put32(b + 16, w);
  put32(b + 20, h);
  b[24] = 8; /* depth; colour, compression, filter, interlace 0 */
  put32(b + 29, crc(b + 12, 17));
  put32(b + 33, 0);
  memcpy(b + 37, "IEND", 4);
  put32(b + 41, crc(b + 37, 4));
  return test_write_bytes(path, b, sizeof b);
}

/* Offset of the first chunk of type t in the PNG buf (at its length field); 0 if none. */
static size_t find_chunk(const unsigned char *buf, size_t len, const char *t) {
  for (size_t at = 8; at + 12 <= len; at += 12 + get32(buf + at))
    if (!memcmp(buf + at + 4, t, 4)) return at;
  return 0;
}

/* ---- expected values ------------------------------------------------------------------ */

/* The header's rules, written out again: sample / max, alpha over white, BT.709 grey. */
static void expect_pixels(const char *what, const struct spec *sp, const unsigned *s,
                          const struct intrus_image *im, int channels) {
  EXPECT(im->channels == channels && im->width == sp->w && im->height == sp->h,
         "%s: %d channels %d x %d", what, im->channels, im->width, im->height);
  if (im->channels != channels || im->width != sp->w || im->height != sp->h) return;
  const int nch = colour_channels(sp->colour);
  const float max = (float)((1u << sp->depth) - 1);
  const size_t plane = (size_t)sp->w * (size_t)sp->h;
  int bad = 0;
  for (int y = 0; y < sp->h; y++)
    for (int x = 0; x < sp->w; x++) {
      const unsigned *p = s + ((size_t)y * (size_t)sp->w + (size_t)x) * (size_t)nch;
      float v[4] = {0, 0, 0, 1}, a = 1;
      bool colour = nch >= 3;
      if (sp->colour == PNG_COLOR_TYPE_PALETTE) {
        const png_color c = sp->palette[p[0]];
        v[0] = (float)c.red / 255.0f, v[1] = (float)c.green / 255.0f, v[2] = (float)c.blue / 255.0f;
        colour = true;
        if ((int)p[0] < sp->ntrns) a = (float)sp->trns[p[0]] / 255.0f;
      } else {
        for (int c = 0; c < nch; c++) v[c] = (float)p[c] / max;
        if (nch == 2) a = v[1];
        if (nch == 4) a = v[3];
        if (sp->trns_colour) {
          const png_color_16 *k = sp->trns_colour;
          if (colour ? p[0] == k->red && p[1] == k->green && p[2] == k->blue : p[0] == k->gray)
            a = 0;
        }
      }
      const int ncol = colour ? 3 : 1;
      if (a != 1 || nch == 2 || nch == 4)
        for (int c = 0; c < ncol; c++) v[c] = v[c] * a + (1.0f - a);
      float want[3];
      if (channels == 1) {
        want[0] = colour ? 0.2126f * v[0] + 0.7152f * v[1] + 0.0722f * v[2] : v[0];
      } else {
        for (int c = 0; c < 3; c++) want[c] = colour ? v[c] : v[0];
      }
      for (int c = 0; c < channels; c++) {
        const float got = im->pixels[(size_t)c * plane + (size_t)y * (size_t)sp->w + (size_t)x];
        if (got != want[c] && bad++ < 3)
          EXPECT(got == want[c], "%s: pixel (x %d, y %d) channel %d: got %.9g, want %.9g", what,
                 x, y, c, (double)got, (double)want[c]);
      }
    }
  EXPECT(bad == 0, "%s: %d pixel values differ", what, bad);
}

/* Writes sp with samples from a fixed pattern (each sample < 2^depth, palette indices
 * < npalette), then reads it as grey and as RGB, from the file and from memory. */
static void check_format(const char *what, const struct spec *sp) {
  const int nch = colour_channels(sp->colour);
  const size_t n = (size_t)sp->w * (size_t)sp->h * (size_t)nch;
  unsigned *s = malloc(n * sizeof *s);
  const unsigned top = sp->colour == PNG_COLOR_TYPE_PALETTE ? (unsigned)sp->npalette
                                                            : 1u << sp->depth;
  for (size_t i = 0; i < n; i++) s[i] = (unsigned)((i * 2654435761u + i / 3) % top);
  if (sp->trns_colour) { /* make sure the key occurs */
    const png_color_16 *k = sp->trns_colour;
    if (nch == 1) s[1] = k->gray;
    else s[3] = k->red, s[4] = k->green, s[5] = k->blue;
  }
  char name[64];
  snprintf(name, sizeof name, "%s.png", what);
  const char *path = write_png(test_tmp_path(name), sp, s);
  size_t len = 0;
  unsigned char *bytes = test_read_bytes(path, &len);
  for (int channels = 1; channels <= 3; channels += 2) {
    struct intrus_error err = {0};
    struct intrus_image im = {0};
    enum intrus_status st = intrus_image_read_png(path, channels, NULL, &im, &err);
    EXPECT(st == INTRUS_OK, "%s as %d channels: %s", what, channels, err.msg);
    if (!st) expect_pixels(what, sp, s, &im, channels);
    intrus_image_free(&im);
    st = intrus_image_decode_png(bytes, len, name, channels, NULL, &im, &err);
    EXPECT(st == INTRUS_OK, "%s from memory: %s", what, err.msg);
    if (!st) expect_pixels(what, sp, s, &im, channels);
    intrus_image_free(&im);
  }
  int w = 0, h = 0;
  struct intrus_error err = {0};
  EXPECT(intrus_image_png_size(path, NULL, &w, &h, &err) == INTRUS_OK && w == sp->w && h == sp->h,
         "%s: size %d x %d: %s", what, w, h, err.msg);
  free(bytes);
  free(s);
}

static void test_formats(void) {
  static const png_color pal[5] = {{0, 0, 0}, {255, 0, 0}, {10, 200, 30}, {255, 255, 255},
                                   {90, 60, 250}};
  static const png_byte pal_alpha[3] = {0, 128, 255};
  static const png_color_16 key_rgb = {.red = 3, .green = 7, .blue = 200};
  static const png_color_16 key_grey = {.gray = 5};
  const struct spec specs[] = {
      {.w = 7, .h = 5, .depth = 8, .colour = PNG_COLOR_TYPE_GRAY},
      {.w = 5, .h = 4, .depth = 16, .colour = PNG_COLOR_TYPE_GRAY},
      {.w = 9, .h = 3, .depth = 1, .colour = PNG_COLOR_TYPE_GRAY},
      {.w = 9, .h = 3, .depth = 2, .colour = PNG_COLOR_TYPE_GRAY},
      {.w = 9, .h = 3, .depth = 4, .colour = PNG_COLOR_TYPE_GRAY},
      {.w = 6, .h = 4, .depth = 8, .colour = PNG_COLOR_TYPE_RGB},
      {.w = 4, .h = 3, .depth = 16, .colour = PNG_COLOR_TYPE_RGB},
      {.w = 5, .h = 3, .depth = 8, .colour = PNG_COLOR_TYPE_RGB_ALPHA},
      {.w = 5, .h = 3, .depth = 16, .colour = PNG_COLOR_TYPE_RGB_ALPHA},
      {.w = 6, .h = 2, .depth = 8, .colour = PNG_COLOR_TYPE_GRAY_ALPHA},
      {.w = 6, .h = 2, .depth = 16, .colour = PNG_COLOR_TYPE_GRAY_ALPHA},
      {.w = 7, .h = 3, .depth = 4, .colour = PNG_COLOR_TYPE_PALETTE, .palette = pal,
       .npalette = 5, .trns = pal_alpha, .ntrns = 3},
      {.w = 11, .h = 2, .depth = 8, .colour = PNG_COLOR_TYPE_PALETTE, .palette = pal,
       .npalette = 5},
      {.w = 6, .h = 3, .depth = 8, .colour = PNG_COLOR_TYPE_RGB, .trns_colour = &key_rgb},
      {.w = 6, .h = 3, .depth = 8, .colour = PNG_COLOR_TYPE_GRAY, .trns_colour = &key_grey},
      {.w = 13, .h = 11, .depth = 8, .colour = PNG_COLOR_TYPE_RGB, .interlace = true},
      {.w = 10, .h = 9, .depth = 16, .colour = PNG_COLOR_TYPE_GRAY, .interlace = true},
      {.w = 9, .h = 7, .depth = 2, .colour = PNG_COLOR_TYPE_PALETTE, .palette = pal,
       .npalette = 4, .trns = pal_alpha, .ntrns = 3, .interlace = true},
  };
  const char *names[] = {"grey8", "grey16", "grey1", "grey2", "grey4", "rgb8", "rgb16",
                         "rgba8", "rgba16", "ga8", "ga16", "palette4-trns", "palette8",
                         "rgb8-key", "grey8-key", "rgb8-adam7", "grey16-adam7",
                         "palette2-adam7"};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) check_format(names[i], &specs[i]);

  /* A few values by hand, so the rules above are not only checked against themselves. */
  const struct spec ga = {.w = 2, .h = 1, .depth = 8, .colour = PNG_COLOR_TYPE_GRAY_ALPHA};
  const unsigned gs[] = {0, 0, 0, 255}; /* transparent black, opaque black */
  const struct spec g2 = {.w = 4, .h = 1, .depth = 2, .colour = PNG_COLOR_TYPE_GRAY};
  const unsigned g2s[] = {0, 1, 2, 3};
  struct intrus_image im = {0};
  struct intrus_error err = {0};
  if (!intrus_image_read_png(write_png(test_tmp_path("ga-hand.png"), &ga, gs), 3, NULL, &im,
                             &err)) {
    EXPECT(im.pixels[0] == 1.0f && im.pixels[2] == 1.0f && im.pixels[4] == 1.0f,
           "transparent black reads as white");
    EXPECT(im.pixels[1] == 0.0f && im.pixels[3] == 0.0f && im.pixels[5] == 0.0f,
           "opaque black reads as black");
  }
  intrus_image_free(&im);
  EXPECT(!intrus_image_read_png(write_png(test_tmp_path("g2-hand.png"), &g2, g2s), 1, NULL, &im,
                                &err), "%s", err.msg);
  EXPECT(im.pixels && im.pixels[0] == 0.0f && im.pixels[1] == 1.0f / 3.0f &&
         im.pixels[2] == 2.0f / 3.0f && im.pixels[3] == 1.0f, "2-bit grey is s / 3");
  intrus_image_free(&im);
  EXPECT(im.pixels == NULL && im.width == 0, "intrus_image_free zeroes the image");
}

/* ---- bad files -------------------------------------------------------------------------- */

/* Reads path (as grey, under lim) and expects status want with a message containing the
 * path and needle, and the output untouched. */
static void expect_bad(const char *path, const struct intrus_image_limits *lim,
                       enum intrus_status want, const char *needle) {
  struct intrus_error err = {0};
  float sentinel = 42;
  struct intrus_image im = {.channels = 7, .height = 8, .width = 9, .pixels = &sentinel};
  enum intrus_status st = intrus_image_read_png(path, 1, lim, &im, &err);
  EXPECT(st == want, "%s: status %s, want %s (%s)", path, intrus_status_name(st),
         intrus_status_name(want), err.msg);
  EXPECT(err.status == want, "%s: err.status %d", path, err.status);
  EXPECT_CONTAINS(err.msg, path);
  EXPECT_CONTAINS(err.msg, needle);
  EXPECT(im.channels == 7 && im.height == 8 && im.width == 9 && im.pixels == &sentinel,
         "%s: the output was written on failure", path);
}

static void test_bad_files(void) {
  /* A valid noisy 40 x 30 grey image: its IDAT is a few hundred bytes. */
  const struct spec sp = {.w = 40, .h = 30, .depth = 8, .colour = PNG_COLOR_TYPE_GRAY};
  unsigned s[40 * 30];
  for (size_t i = 0; i < 1200; i++) s[i] = (unsigned)((i * 2654435761u) >> 7) & 255;
  size_t len = 0;
  unsigned char *good = test_read_bytes(write_png(test_tmp_path("good.png"), &sp, s), &len);
  const size_t idat = find_chunk(good, len, "IDAT");
  const uint32_t idat_len = idat ? get32(good + idat) : 0;
  EXPECT(idat > 0 && idat_len > 100, "the test PNG has an IDAT of %u bytes", idat_len);

  expect_bad(test_tmp_path("missing.png"), NULL, INTRUS_ERR_IO, "No such file");
  expect_bad(test_tmpdir, NULL, INTRUS_ERR_IO, "directory");
  expect_bad(test_write_file(test_tmp_path("x.png"), "\\frac{a}{b}\nnot a picture\n"), NULL,
             INTRUS_ERR_FORMAT, "not a PNG");
  expect_bad(test_write_bytes(test_tmp_path("empty.png"), "", 0), NULL, INTRUS_ERR_FORMAT,
             "empty");
  expect_bad(test_write_bytes(test_tmp_path("sig-only.png"), good, 20), NULL, INTRUS_ERR_FORMAT,
             "truncated");
  /* Cut in the middle of IDAT's data. */
  char cut_msg[64];
  const size_t cut = idat + 8 + idat_len / 2;
  snprintf(cut_msg, sizeof cut_msg, "truncated PNG: the file ends after %zu bytes", cut);
  expect_bad(test_write_bytes(test_tmp_path("cut.png"), good, cut), NULL, INTRUS_ERR_FORMAT,
             cut_msg);
  /* Cut after the image data, before IEND. */
  expect_bad(test_write_bytes(test_tmp_path("no-iend.png"), good, len - 12), NULL,
             INTRUS_ERR_FORMAT, "truncated");
  expect_bad(write_ihdr_only(test_tmp_path("zero.png"), 0, 0), NULL, INTRUS_ERR_FORMAT,
             "empty image (0 x 0 pixels)");
  expect_bad(write_ihdr_only(test_tmp_path("zero-h.png"), 5, 0), NULL, INTRUS_ERR_FORMAT,
             "5 x 0");
  /* Refused from the IHDR: the file has no IDAT, so any message but the limit's would
   * mean libpng had been set up for it. */
  expect_bad(write_ihdr_only(test_tmp_path("wide.png"), 100000, 1), NULL, INTRUS_ERR_DATA,
             "image of 100000 x 1 pixels (width x height) is over the limit max_width = 4096");
  expect_bad(write_ihdr_only(test_tmp_path("tall.png"), 1, 5000), NULL, INTRUS_ERR_DATA,
             "max_height = 4096");
  expect_bad(write_ihdr_only(test_tmp_path("huge.png"), 0x80000000u, 1), NULL,
             INTRUS_ERR_FORMAT, "over 2^31 - 1");
  const struct intrus_image_limits small = {.max_width = 100, .max_height = 100,
                                            .max_pixels = 1000};
  expect_bad(test_tmp_path("good.png"), &small, INTRUS_ERR_DATA,
             "40 x 30 pixels (width x height) is over the limit max_pixels = 1000");
  const struct intrus_image_limits bad_lim = {.max_width = 0, .max_height = 1, .max_pixels = 1};
  expect_bad(test_tmp_path("good.png"), &bad_lim, INTRUS_ERR_INVALID, "limits out of range");
  int w = -1, h = -1;
  struct intrus_error err = {0};
  EXPECT(intrus_image_png_size(test_tmp_path("wide.png"), NULL, &w, &h, &err) == INTRUS_ERR_DATA &&
         w == -1 && h == -1, "png_size of the 100000 x 1 file: %s", err.msg);
  EXPECT_CONTAINS(err.msg, "wide.png");
  EXPECT(intrus_image_png_size(test_tmp_path("zero.png"), NULL, &w, &h, &err) == INTRUS_ERR_FORMAT,
         "png_size of the 0 x 0 file: %s", err.msg);

  /* Bad CRCs: the IHDR's (checked before libpng), IDAT's (by libpng). */
  unsigned char *bad = malloc(len);
  memcpy(bad, good, len);
  bad[32] ^= 1;
  expect_bad(test_write_bytes(test_tmp_path("ihdr-crc.png"), bad, len), NULL, INTRUS_ERR_FORMAT,
             "corrupt PNG: IHDR: CRC error");
  memcpy(bad, good, len);
  bad[idat + 8 + idat_len + 2] ^= 0x55;
  expect_bad(test_write_bytes(test_tmp_path("idat-crc.png"), bad, len), NULL, INTRUS_ERR_FORMAT,
             "CRC");
  /* Bad zlib data with a good CRC: the zlib header's check bits broken. */
  memcpy(bad, good, len);
  bad[idat + 8] ^= 0x0f;
  put32(bad + idat + 8 + idat_len, crc(bad + idat + 4, 4 + idat_len));
  expect_bad(test_write_bytes(test_tmp_path("zlib.png"), bad, len), NULL, INTRUS_ERR_FORMAT,
             "corrupt PNG");
  /* Bad deflate data in the middle (a good zlib header and CRC): whatever zlib says, or
   * an Adler-32 mismatch, or too little image data, each is a corrupt file. */
  memcpy(bad, good, len);
  for (size_t i = idat + 8 + 10; i < idat + 8 + 40; i++) bad[i] = 0xff;
  put32(bad + idat + 8 + idat_len, crc(bad + idat + 4, 4 + idat_len));
  expect_bad(test_write_bytes(test_tmp_path("deflate.png"), bad, len), NULL, INTRUS_ERR_FORMAT,
             "corrupt PNG");
  /* Not 1 or 3 channels. */
  struct intrus_image im = {0};
  EXPECT(intrus_image_read_png(test_tmp_path("good.png"), 2, NULL, &im, &err) ==
             INTRUS_ERR_INVALID &&
         !im.pixels, "2 channels refused: %s", err.msg);
  /* The memory reader names what it is given. */
  EXPECT(intrus_image_decode_png(good, cut, "archive.zip:formula-7.png", 1, NULL, &im, &err) ==
             INTRUS_ERR_FORMAT && !im.pixels, "cut file from memory");
  EXPECT_CONTAINS(err.msg, "archive.zip:formula-7.png: truncated PNG");
  free(bad);
  free(good);
}

static void test_limits_read(void) {
  struct intrus_error err = {0};
  struct intrus_image_limits lim;
  EXPECT(intrus_image_limits_read(NULL, &lim, &err) == INTRUS_OK && lim.max_width == 4096 &&
         lim.max_height == 4096 && lim.max_pixels == 16u << 20, "defaults");
  struct intrus_config *c = intrus_config_load_string(
      "image = { max_width = 2000; max_height = 300; };\nbad = { max_pixels = 0; };\n",
      "img.cfg", &err);
  EXPECT(c != NULL, "%s", err.msg);
  if (!c) return;
  const intrus_cfg *g = NULL;
  intrus_cfg_group_req(intrus_config_root(c), "image", &g, &err);
  EXPECT(intrus_image_limits_read(g, &lim, &err) == INTRUS_OK && lim.max_width == 2000 &&
         lim.max_height == 300 && lim.max_pixels == 16u << 20, "from settings: %s", err.msg);
  intrus_cfg_group_req(intrus_config_root(c), "bad", &g, &err);
  struct intrus_image_limits keep = {1, 2, 3};
  EXPECT(intrus_image_limits_read(g, &keep, &err) == INTRUS_ERR_CONFIG && keep.max_width == 1,
         "max_pixels = 0 refused: %s", err.msg);
  EXPECT_CONTAINS(err.msg, "img.cfg:2");
  intrus_config_free(c);
}

/* ---- batches and buckets ------------------------------------------------------------- */

static void test_batch(void) {
  /* Grey images: A 3 wide x 2 high, B 1 x 3, C 2 x 1, pixel values 1x. */
  float a[] = {11, 12, 13, 14, 15, 16}, b[] = {21, 22, 23}, c[] = {31, 32};
  const struct intrus_image ims[3] = {{1, 2, 3, a}, {1, 3, 1, b}, {1, 1, 2, c}};
  struct intrus_image_batch bt = {0};
  struct intrus_error err = {0};
  EXPECT(intrus_image_batch_make(ims, NULL, 3, INTRUS_IMAGE_PAD_DEFAULT, &bt, &err) == INTRUS_OK,
         "%s", err.msg);
  EXPECT(bt.count == 3 && bt.channels == 1 && bt.height == 3 && bt.width == 3,
         "batch [%d, %d, %d, %d]", bt.count, bt.channels, bt.height, bt.width);
  const float P = 1.0f;
  const float want_px[27] = {11, 12, 13, 14, 15, 16, P, P, P,
                             21, P, P, 22, P, P, 23, P, P,
                             31, 32, P, P, P, P, P, P, P};
  const float want_mask[27] = {1, 1, 1, 1, 1, 1, 0, 0, 0,
                               1, 0, 0, 1, 0, 0, 1, 0, 0,
                               1, 1, 0, 0, 0, 0, 0, 0, 0};
  if (bt.pixels && bt.count == 3 && bt.height == 3 && bt.width == 3)
    for (int i = 0; i < 27; i++) {
      EXPECT(bt.pixels[i] == want_px[i], "pixel %d: %g, want %g", i, (double)bt.pixels[i],
             (double)want_px[i]);
      EXPECT(bt.mask[i] == want_mask[i], "mask %d: %g, want %g", i, (double)bt.mask[i],
             (double)want_mask[i]);
    }
  intrus_image_batch_free(&bt);
  EXPECT(!bt.pixels && !bt.mask && bt.count == 0, "batch_free zeroes");

  /* RGB, a subset in another order, padding 0: B then A; each channel plane in place. */
  float a3[18], b3[9];
  for (int i = 0; i < 18; i++) a3[i] = (float)(100 * (i / 6) + i % 6);
  for (int i = 0; i < 9; i++) b3[i] = (float)(1000 + 100 * (i / 3) + i % 3);
  const struct intrus_image rgb[2] = {{3, 2, 3, a3}, {3, 3, 1, b3}};
  const size_t idx[2] = {1, 0};
  EXPECT(intrus_image_batch_make(rgb, idx, 2, 0.0f, &bt, &err) == INTRUS_OK, "%s", err.msg);
  if (bt.pixels && bt.count == 2 && bt.channels == 3 && bt.height == 3 && bt.width == 3) {
    int bad = 0;
    for (int i = 0; i < 2; i++)
      for (int ch = 0; ch < 3; ch++)
        for (int y = 0; y < 3; y++)
          for (int x = 0; x < 3; x++) {
            const struct intrus_image *im = &rgb[idx[i]];
            const bool in = y < im->height && x < im->width;
            const float want = in ? im->pixels[(ch * im->height + y) * im->width + x] : 0.0f;
            bad += bt.pixels[((i * 3 + ch) * 3 + y) * 3 + x] != want;
            bad += bt.mask[(i * 3 + y) * 3 + x] != (in ? 1.0f : 0.0f);
          }
    EXPECT(bad == 0, "RGB batch: %d values differ", bad);
  } else {
    EXPECT(0, "RGB batch [%d, %d, %d, %d]", bt.count, bt.channels, bt.height, bt.width);
  }
  intrus_image_batch_free(&bt);

  /* Refused: no images, mixed channels; the output untouched. */
  struct intrus_image_batch keep = {.count = 5};
  EXPECT(intrus_image_batch_make(ims, NULL, 0, 1.0f, &keep, &err) == INTRUS_ERR_INVALID &&
         keep.count == 5, "empty batch");
  const struct intrus_image mixed[2] = {{1, 2, 3, a}, {3, 3, 1, b3}};
  EXPECT(intrus_image_batch_make(mixed, NULL, 2, 1.0f, &keep, &err) == INTRUS_ERR_INVALID &&
         keep.count == 5, "mixed channels");
  EXPECT_CONTAINS(err.msg, "channels");
}

static void test_buckets(void) {
  struct intrus_error err = {0};
  struct intrus_image_buckets in = {0}, sorted = {0};
  /* By hand: two sizes alternating, two images a batch. */
  const struct intrus_image_size four[4] = {{10, 10}, {20, 20}, {10, 10}, {20, 20}};
  EXPECT(intrus_image_buckets_cut(four, NULL, 4, 0, 2, &in, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(in.nbatches == 2 && in.padded_pixels == 1600, "%zu batches, %llu padded pixels",
         in.nbatches, (unsigned long long)in.padded_pixels);
  EXPECT_NEAR(in.padding, 0.375, 1e-12);
  EXPECT(intrus_image_buckets_make(four, 4, 0, 2, &sorted, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(sorted.nbatches == 2 && sorted.padded_pixels == 1000 && sorted.padding == 0,
         "sorted: %zu batches, %llu padded pixels, padding %g", sorted.nbatches,
         (unsigned long long)sorted.padded_pixels, sorted.padding);
  const size_t want_order[4] = {0, 2, 1, 3}, want_start[3] = {0, 2, 4};
  for (int i = 0; i < 4 && sorted.order; i++)
    EXPECT(sorted.order[i] == want_order[i], "order[%d] = %zu", i, sorted.order[i]);
  for (int i = 0; i < 3 && sorted.start; i++)
    EXPECT(sorted.start[i] == want_start[i], "start[%d] = %zu", i, sorted.start[i]);
  intrus_image_buckets_free(&in);
  intrus_image_buckets_free(&sorted);

  /* Formula-like sizes in no order, cut by a pixel budget. */
  struct intrus_image_size sz[40];
  for (int i = 0; i < 40; i++)
    sz[i] = (struct intrus_image_size){32 * (1 + (i * 7) % 4), 100 + (i * 37) % 300};
  const uint64_t budget = 200000;
  EXPECT(intrus_image_buckets_cut(sz, NULL, 40, budget, 0, &in, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_image_buckets_make(sz, 40, budget, 0, &sorted, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(sorted.padding < 0.6 * in.padding, "bucketing: padding %.3f, input order %.3f",
         sorted.padding, in.padding);
  /* A permutation; every batch within the budget and sorted by (height, width). */
  bool seen[40] = {false};
  int bad = 0;
  for (size_t i = 0; i < 40; i++) {
    bad += seen[sorted.order[i]];
    seen[sorted.order[i]] = true;
  }
  EXPECT(bad == 0 && sorted.start[0] == 0 && sorted.start[sorted.nbatches] == 40,
         "not a permutation");
  for (size_t b = 0; b < sorted.nbatches; b++) {
    uint64_t hm = 0, wm = 0;
    for (size_t i = sorted.start[b]; i < sorted.start[b + 1]; i++) {
      const struct intrus_image_size s = sz[sorted.order[i]];
      if ((uint64_t)s.height > hm) hm = (uint64_t)s.height;
      if ((uint64_t)s.width > wm) wm = (uint64_t)s.width;
      if (i > sorted.start[b]) {
        const struct intrus_image_size p = sz[sorted.order[i - 1]];
        EXPECT(p.height < s.height || (p.height == s.height && p.width <= s.width),
               "batch %zu not sorted", b);
      }
    }
    EXPECT((sorted.start[b + 1] - sorted.start[b]) * hm * wm <= budget, "batch %zu over budget", b);
  }
  intrus_image_buckets_free(&in);
  intrus_image_buckets_free(&sorted);

  /* One image over the budget is a batch of its own; a bad size and index are refused. */
  const struct intrus_image_size big[3] = {{10, 10}, {1000, 1000}, {10, 10}};
  EXPECT(intrus_image_buckets_cut(big, NULL, 3, 5000, 0, &in, &err) == INTRUS_OK &&
         in.nbatches == 3, "big image alone: %zu batches", in.nbatches);
  intrus_image_buckets_free(&in);
  const struct intrus_image_size zero[2] = {{10, 10}, {0, 5}};
  EXPECT(intrus_image_buckets_make(zero, 2, 0, 0, &in, &err) == INTRUS_ERR_INVALID && !in.order,
         "0 x 5 refused");
  const size_t bad_order[2] = {0, 2};
  EXPECT(intrus_image_buckets_cut(four, bad_order, 2, 0, 0, &in, &err) == INTRUS_ERR_INVALID,
         "index out of range refused");
  EXPECT(intrus_image_buckets_make(four, 0, 0, 0, &in, &err) == INTRUS_OK && in.nbatches == 0 &&
         in.padding == 0, "no images");
  intrus_image_buckets_free(&in);
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-test-image-XXXXXX")) return 99;
  test_formats();
  test_bad_files();
  test_limits_read();
  test_batch();
  test_buckets();
  test_remove_tmpdir();
  return test_finish("test_image");
}

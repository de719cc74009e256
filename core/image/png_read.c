/* PNG reading (include/intrus/image.h): every colour type, bit depth and interlacing to
 * float pixels [C, H, W] in [0, 1], alpha composited over white.
 *
 * The signature and the IHDR (the first 33 bytes) are checked here before libpng is set
 * up: a file that is not a PNG, a cut-off header, an IHDR with a bad CRC, a 0 x 0 image
 * and an image over the limits are refused with their own messages, before anything is
 * allocated for pixels. libpng then reads the rest with its own limits set too (user
 * limits on width and height, at most 1 MiB for one ancillary chunk, 64 of them kept),
 * ancillary chunks the reader does not need skipped unread.
 *
 * libpng reports errors by longjmp. Everything the decoder allocates hangs off one
 * struct png_job that lives in the caller's frame (never a local of the function that
 * calls setjmp, whose non-volatile locals would be indeterminate after the jump), so
 * one cleanup frees it on both paths; the caller's output is assigned after that, on
 * success only. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <png.h>
#include <zlib.h>

#include "intrus/image.h"

/* The PNG signature, then the IHDR chunk: length 13, "IHDR", 13 bytes, CRC. */
#define PNG_HEAD_LEN 33
static const unsigned char png_signature[8] = {137, 80, 78, 71, 13, 10, 26, 10};

/* A cap on one ancillary chunk's memory (libpng's default is 8 MB), and on how many
 * ancillary chunks it keeps (default 1000). */
#define PNG_CHUNK_MALLOC_MAX (1u << 20)
#define PNG_CHUNK_CACHE_MAX 64

/* Where the bytes come from: a file or a memory block; the first PNG_HEAD_LEN bytes are
 * read ahead into head (for the checks) and handed to libpng first. */
struct png_src {
  const char *name;
  int fd; /* -1: memory */
  const unsigned char *data;
  size_t len, pos;
  unsigned char head[PNG_HEAD_LEN];
  size_t head_len, head_pos;
  size_t consumed; /* bytes handed to the reader so far */
  int io_errno;    /* a read error (not the end of the file) */
};

/* Up to n bytes from the file or memory block; fewer only at its end or on an error. */
static size_t src_raw_read(struct png_src *s, unsigned char *buf, size_t n) {
  if (s->fd < 0) {
    size_t k = s->len - s->pos < n ? s->len - s->pos : n;
    memcpy(buf, s->data + s->pos, k);
    s->pos += k;
    return k;
  }
  size_t got = 0;
  while (got < n) {
    ssize_t k = read(s->fd, buf + got, n - got);
    if (k > 0) {
      got += (size_t)k;
    } else if (k == 0) {
      break;
    } else if (errno != EINTR) {
      s->io_errno = errno;
      break;
    }
  }
  return got;
}

/* What the reader asks for: the head first, then the rest. */
static size_t src_read(struct png_src *s, unsigned char *buf, size_t n) {
  size_t got = 0;
  if (s->head_pos < s->head_len) {
    got = s->head_len - s->head_pos < n ? s->head_len - s->head_pos : n;
    memcpy(buf, s->head + s->head_pos, got);
    s->head_pos += got;
  }
  if (got < n) got += src_raw_read(s, buf + got, n - got);
  s->consumed += got;
  return got;
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

struct intrus_image_limits intrus_image_limits_default(void) {
  return (struct intrus_image_limits){.max_width = INTRUS_IMAGE_MAX_WIDTH,
                                      .max_height = INTRUS_IMAGE_MAX_HEIGHT,
                                      .max_pixels = INTRUS_IMAGE_MAX_PIXELS};
}

enum intrus_status intrus_image_limits_read(const intrus_cfg *g, struct intrus_image_limits *lim,
                                            struct intrus_error *err) {
  struct intrus_image_limits l = intrus_image_limits_default();
  if (g) {
    long long w, h, p;
    enum intrus_status st;
    if ((st = intrus_cfg_int_range(g, "max_width", l.max_width, 1, INTRUS_IMAGE_MAX_SIDE_CAP,
                                   &w, err)) ||
        (st = intrus_cfg_int_range(g, "max_height", l.max_height, 1, INTRUS_IMAGE_MAX_SIDE_CAP,
                                   &h, err)) ||
        (st = intrus_cfg_int_range(g, "max_pixels", (long long)l.max_pixels, 1,
                                   INTRUS_IMAGE_MAX_PIXELS_CAP, &p, err)))
      return st;
    l.max_width = (uint32_t)w;
    l.max_height = (uint32_t)h;
    l.max_pixels = (uint64_t)p;
  }
  *lim = l;
  return INTRUS_OK;
}

static enum intrus_status check_limits(const struct intrus_image_limits *lim, const char *name,
                                       struct intrus_error *err) {
  if (lim->max_width < 1 || lim->max_width > INTRUS_IMAGE_MAX_SIDE_CAP || lim->max_height < 1 ||
      lim->max_height > INTRUS_IMAGE_MAX_SIDE_CAP || lim->max_pixels < 1 ||
      lim->max_pixels > INTRUS_IMAGE_MAX_PIXELS_CAP)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "%s: image limits out of range (max_width %u, max_height %u, "
                            "max_pixels %llu; each at least 1, sides at most %d, pixels at "
                            "most %u)", name, lim->max_width, lim->max_height,
                            (unsigned long long)lim->max_pixels, INTRUS_IMAGE_MAX_SIDE_CAP,
                            INTRUS_IMAGE_MAX_PIXELS_CAP);
  return INTRUS_OK;
}

/* Reads the head and checks the signature, the IHDR's length, type and CRC, the size
 * against the PNG rules and against lim. */
static enum intrus_status check_head(struct png_src *s, const struct intrus_image_limits *lim,
                                     uint32_t *width, uint32_t *height,
                                     struct intrus_error *err) {
  s->head_len = src_raw_read(s, s->head, PNG_HEAD_LEN);
  const size_t n = s->head_len;
  const unsigned char *h = s->head;
  if (s->io_errno)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot read: %s", s->name,
                            strerror(s->io_errno));
  if (n == 0)
    return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: not a PNG file (the file is empty)",
                            s->name);
  if (memcmp(h, png_signature, n < 8 ? n : 8) != 0)
    return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: not a PNG file (no PNG signature)",
                            s->name);
  if (n < PNG_HEAD_LEN)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: truncated PNG: the file ends after %zu bytes, inside its "
                            "header", s->name, n);
  if (be32(h + 8) != 13 || memcmp(h + 12, "IHDR", 4) != 0)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: corrupt PNG: the first chunk is not a 13-byte IHDR", s->name);
  if ((uint32_t)crc32(0, h + 12, 17) != be32(h + 29))
    return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: corrupt PNG: IHDR: CRC error",
                            s->name);
  const uint32_t w = be32(h + 16), ht = be32(h + 20);
  if (w == 0 || ht == 0)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: empty image (%u x %u pixels): a PNG is at least 1 x 1",
                            s->name, w, ht);
  if (w > PNG_UINT_31_MAX || ht > PNG_UINT_31_MAX)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: corrupt PNG: IHDR size %u x %u is over 2^31 - 1", s->name, w,
                            ht);
  const char *what = NULL;
  unsigned long long limit = 0;
  if (w > lim->max_width) what = "max_width", limit = lim->max_width;
  else if (ht > lim->max_height) what = "max_height", limit = lim->max_height;
  else if ((uint64_t)w * ht > lim->max_pixels) what = "max_pixels", limit = lim->max_pixels;
  if (what)
    return intrus_error_set(err, INTRUS_ERR_DATA,
                            "%s: image of %u x %u pixels (width x height) is over the limit "
                            "%s = %llu", s->name, w, ht, what, limit);
  *width = w;
  *height = ht;
  return INTRUS_OK;
}

/* ---- decoding ------------------------------------------------------------------------ */

struct png_job {
  struct png_src *src;
  const struct intrus_image_limits *lim;
  int channels;
  uint32_t width, height;
  png_structp png;
  png_infop info;
  unsigned char *raw;  /* one row, or the whole image when interlaced */
  png_bytep *rows;     /* row pointers into raw (interlaced) */
  float *pixels;       /* the result */
  char msg[256];       /* libpng's error message */
  enum intrus_status status; /* set before png_error by the job's own checks */
};

static void PNGCBAPI on_error(png_structp png, png_const_charp msg) {
  struct png_job *j = png_get_error_ptr(png);
  if (!j->msg[0]) snprintf(j->msg, sizeof j->msg, "%s", msg);
  png_longjmp(png, 1);
}

static void PNGCBAPI on_warning(png_structp png, png_const_charp msg) {
  (void)png; /* benign problems (a bad ancillary chunk, skipped): the pixels are good */
  (void)msg;
}

static void PNGCBAPI on_read(png_structp png, png_bytep buf, size_t n) {
  struct png_job *j = png_get_io_ptr(png);
  if (src_read(j->src, buf, n) < n) png_error(png, "(end of input)");
}

/* Chunks skipped unread: text (zTXt and iTXt can be compressed: no decompression for
 * words nobody reads), colour management (samples are taken as stored), and others of
 * no use here. tRNS stays: it is transparency. */
static const png_byte skipped_chunks[] = "tEXt\0zTXt\0iTXt\0iCCP\0sPLT\0eXIf\0hIST\0"
                                          "tIME\0pCAL\0sCAL\0sTER\0";

/* The row's samples (nch interleaved, bit depth 8 or 16) as floats into the output
 * planes at row offset: composited over white, then converted to the output channels. */
static void convert_row(const struct png_job *j, const unsigned char *row, int nch, int depth,
                        const float *lut, size_t offset) {
  const size_t plane = (size_t)j->width * j->height;
  float *out = j->pixels + offset;
  for (uint32_t x = 0; x < j->width; x++) {
    float v[4] = {0, 0, 0, 0};
    for (int c = 0; c < nch; c++) {
      const size_t i = (size_t)x * (size_t)nch + (size_t)c;
      v[c] = depth == 8 ? lut[row[i]] : (float)(row[2 * i] << 8 | row[2 * i + 1]) / 65535.0f;
    }
    const bool colour = nch >= 3;
    if (nch == 2 || nch == 4) { /* alpha last: composite over white */
      const float a = v[nch - 1];
      for (int c = 0; c < nch - 1; c++) v[c] = v[c] * a + (1.0f - a);
    }
    if (j->channels == 1) {
      out[x] = colour ? 0.2126f * v[0] + 0.7152f * v[1] + 0.0722f * v[2] : v[0];
    } else {
      out[x] = v[0];
      out[plane + x] = colour ? v[1] : v[0];
      out[2 * plane + x] = colour ? v[2] : v[0];
    }
  }
}

/* libpng's part, with j->png and j->info created. Returns INTRUS_OK or, after a longjmp
 * from libpng or a check of its own, a status with the reason in j->msg. */
static enum intrus_status png_decode(struct png_job *j) {
  if (setjmp(png_jmpbuf(j->png))) return j->status ? j->status : INTRUS_ERR_FORMAT;
  png_structp png = j->png;
  png_infop info = j->info;
  png_set_read_fn(png, j, on_read);
  png_set_user_limits(png, j->lim->max_width, j->lim->max_height);
  png_set_chunk_malloc_max(png, PNG_CHUNK_MALLOC_MAX);
  png_set_chunk_cache_max(png, PNG_CHUNK_CACHE_MAX);
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, NULL, 0);
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, skipped_chunks,
                              (int)(sizeof skipped_chunks / 5));
  png_read_info(png, info);

  png_uint_32 w, h;
  int depth, colour_type, interlace;
  png_get_IHDR(png, info, &w, &h, &depth, &colour_type, &interlace, NULL, NULL);
  if (w != j->width || h != j->height) { /* cannot happen: libpng read the same IHDR */
    j->status = INTRUS_ERR_FORMAT;
    png_error(png, "IHDR changed between reads");
  }
  if (colour_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (colour_type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int nch = png_get_channels(png, info), out_depth = png_get_bit_depth(png, info);
  const size_t rowbytes = png_get_rowbytes(png, info);
  if (nch < 1 || nch > 4 || (out_depth != 8 && out_depth != 16) ||
      rowbytes != (size_t)w * (size_t)nch * (size_t)(out_depth / 8)) {
    j->status = INTRUS_ERR_FORMAT;
    png_error(png, "unexpected row layout after expansion");
  }

  /* The limits hold (check_head), so these sizes are at most a few GB and do not
   * overflow size_t; allocation failure is reported, not a panic. */
  const size_t npix = (size_t)w * h * (size_t)j->channels;
  const size_t raw_rows = passes > 1 ? h : 1;
  j->pixels = malloc(npix * sizeof *j->pixels);
  j->raw = malloc(rowbytes * raw_rows);
  if (passes > 1) j->rows = malloc(h * sizeof *j->rows);
  if (!j->pixels || !j->raw || (passes > 1 && !j->rows)) {
    j->status = INTRUS_ERR_NOMEM;
    snprintf(j->msg, sizeof j->msg, "cannot allocate memory for %u x %u pixels", w, h);
    png_error(png, j->msg);
  }
  float lut[256];
  for (int i = 0; i < 256; i++) lut[i] = (float)i / 255.0f;
  if (passes > 1) {
    for (png_uint_32 y = 0; y < h; y++) j->rows[y] = j->raw + (size_t)y * rowbytes;
    png_read_image(png, j->rows);
    for (png_uint_32 y = 0; y < h; y++)
      convert_row(j, j->rows[y], nch, out_depth, lut, (size_t)y * w);
  } else {
    for (png_uint_32 y = 0; y < h; y++) {
      png_read_row(png, j->raw, NULL);
      convert_row(j, j->raw, nch, out_depth, lut, (size_t)y * w);
    }
  }
  png_read_end(png, NULL); /* the chunks after the image, up to IEND, and their CRCs */
  return INTRUS_OK;
}

static enum intrus_status decode_source(struct png_src *s, int channels,
                                        const struct intrus_image_limits *lim,
                                        struct intrus_image *out, struct intrus_error *err) {
  struct intrus_image_limits def = intrus_image_limits_default();
  if (!lim) lim = &def;
  enum intrus_status st;
  if (channels != 1 && channels != 3)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "%s: %d image channels asked for: 1 (grey) or 3 (RGB)", s->name,
                            channels);
  if ((st = check_limits(lim, s->name, err))) return st;
  uint32_t w = 0, h = 0;
  if ((st = check_head(s, lim, &w, &h, err))) return st;

  struct png_job j = {.src = s, .lim = lim, .channels = channels, .width = w, .height = h};
  j.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &j, on_error, on_warning);
  if (j.png) j.info = png_create_info_struct(j.png);
  if (!j.png || !j.info) {
    png_destroy_read_struct(j.png ? &j.png : NULL, NULL, NULL);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "%s: cannot set up libpng", s->name);
  }
  st = png_decode(&j);
  png_destroy_read_struct(&j.png, &j.info, NULL);
  free(j.raw);
  free(j.rows);
  if (st) {
    free(j.pixels);
    if (s->io_errno)
      return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot read: %s", s->name,
                              strerror(s->io_errno));
    if (st == INTRUS_ERR_NOMEM) return intrus_error_set(err, st, "%s: %s", s->name, j.msg);
    if (!strcmp(j.msg, "(end of input)"))
      return intrus_error_set(err, INTRUS_ERR_FORMAT,
                              "%s: truncated PNG: the file ends after %zu bytes", s->name,
                              s->consumed);
    return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: corrupt PNG: %s", s->name,
                            j.msg[0] ? j.msg : "libpng error");
  }
  *out = (struct intrus_image){.channels = channels, .height = (int)h, .width = (int)w,
                               .pixels = j.pixels};
  return INTRUS_OK;
}

/* Opens path for reading as a regular file (a FIFO is not waited on). -1 with the error
 * set on failure. */
static int open_regular(const char *path, struct intrus_error *err) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    return -1;
  }
  struct stat st;
  const char *why = fstat(fd, &st) != 0 ? strerror(errno)
                    : S_ISDIR(st.st_mode) ? strerror(EISDIR)
                    : !S_ISREG(st.st_mode) ? "not a regular file" : NULL;
  if (why) {
    intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot read: %s", path, why);
    close(fd);
    return -1;
  }
  return fd;
}

enum intrus_status intrus_image_read_png(const char *path, int channels,
                                         const struct intrus_image_limits *lim,
                                         struct intrus_image *out, struct intrus_error *err) {
  int fd = open_regular(path, err);
  if (fd < 0) return INTRUS_ERR_IO;
  struct png_src s = {.name = path, .fd = fd};
  enum intrus_status st = decode_source(&s, channels, lim, out, err);
  close(fd);
  return st;
}

enum intrus_status intrus_image_decode_png(const void *data, size_t len, const char *name,
                                           int channels, const struct intrus_image_limits *lim,
                                           struct intrus_image *out, struct intrus_error *err) {
  struct png_src s = {.name = name ? name : "(memory)", .fd = -1, .data = data,
                      .len = data ? len : 0};
  return decode_source(&s, channels, lim, out, err);
}

enum intrus_status intrus_image_png_size(const char *path, const struct intrus_image_limits *lim,
                                         int *width, int *height, struct intrus_error *err) {
  struct intrus_image_limits def = intrus_image_limits_default();
  if (!lim) lim = &def;
  enum intrus_status st = check_limits(lim, path, err);
  if (st) return st;
  int fd = open_regular(path, err);
  if (fd < 0) return INTRUS_ERR_IO;
  struct png_src s = {.name = path, .fd = fd};
  uint32_t w = 0, h = 0;
  st = check_head(&s, lim, &w, &h, err);
  close(fd);
  if (!st) {
    *width = (int)w;
    *height = (int)h;
  }
  return st;
}

void intrus_image_free(struct intrus_image *img) {
  if (!img) return;
  free(img->pixels);
  *img = (struct intrus_image){0};
}

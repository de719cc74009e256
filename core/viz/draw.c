#include <string.h>

#include "draw.h"
#include "intrus/fileio.h"
#include "base/xalloc.h"

void draw_set_font(cairo_t *cr, double size, bool bold) {
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

double draw_advance(cairo_t *cr, const char *s) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s, &e);
  return e.x_advance;
}

cairo_status_t draw_buf_write(void *closure, const unsigned char *data, unsigned int n) {
  struct draw_buf *b = closure;
  xgrow((void **)&b->data, &b->cap, b->len + n, 1, 4096);
  memcpy(b->data + b->len, data, n);
  b->len += n;
  return CAIRO_STATUS_SUCCESS;
}

/* Length of the valid UTF-8 sequence at s, 0 when there is none. */
static int utf8_len(const unsigned char *s) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  int n;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) n = 3;
  else if (c >= 0xF0 && c <= 0xF4) n = 4;
  else return 0;
  if (c == 0xE0) lo = 0xA0;      /* overlong */
  else if (c == 0xED) hi = 0x9F; /* surrogates */
  else if (c == 0xF0) lo = 0x90; /* overlong */
  else if (c == 0xF4) hi = 0x8F; /* above U+10FFFF */
  if (s[1] < lo || s[1] > hi) return 0;
  for (int i = 2; i < n; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  return n;
}

char *draw_text(const char *s) {
  size_t n = strlen(s), k = 0;
  char *d = xmalloc(3 * n + 1);
  for (size_t i = 0; i < n;) {
    int m = utf8_len((const unsigned char *)s + i);
    if (m == 0) {
      memcpy(d + k, "\xEF\xBF\xBD", 3);
      k += 3;
      i++;
    } else {
      memcpy(d + k, s + i, (size_t)m);
      k += (size_t)m;
      i += (size_t)m;
    }
  }
  d[k] = '\0';
  return d;
}

/* U+FFED, INTRUS_JOINER of intrus/text.h (the text layer, which viz does not use) */
static const char joiner[] = "\xef\xbf\xad";

char *draw_token_text(const char *s, bool *joined) {
  char *d = draw_text(s);
  const size_t jn = sizeof joiner - 1;
  size_t k = 0;
  *joined = false;
  for (const char *p = d; *p;) {
    if (strncmp(p, joiner, jn) == 0) {
      *joined = true;
      p += jn;
    } else {
      d[k++] = *p++;
    }
  }
  d[k] = '\0';
  return d;
}

/* The glyph U+FFED is a square about a third of an em wide, centred on the x-height. */
#define JOINER_SIDE 0.34
#define JOINER_GAP 0.12

double draw_joiner_width(double size) { return (JOINER_SIDE + JOINER_GAP) * size; }

void draw_joiner_mark(cairo_t *cr, double x, double y, double size) {
  double side = JOINER_SIDE * size;
  cairo_rectangle(cr, x, y - 0.27 * size - side / 2, side, side);
  cairo_fill(cr);
}

enum intrus_status draw_png(const char *path, int w, int h, draw_paint_fn *paint, void *user,
                            const char *what, struct intrus_error *err) {
  struct draw_buf buf = {0};
  cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w, h);
  cairo_t *cr = cairo_create(surface);
  paint(cr, user);
  cairo_status_t cs = cairo_status(cr);
  cairo_destroy(cr);
  if (!cs) {
    cairo_surface_flush(surface);
    cs = cairo_surface_write_to_png_stream(surface, draw_buf_write, &buf);
  }
  cairo_surface_destroy(surface);
  enum intrus_status st =
      cs ? intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot draw %s: %s", path, what,
                            cairo_status_to_string(cs))
         : intrus_file_write_atomic(path, buf.data, buf.len, err);
  free(buf.data);
  return st;
}

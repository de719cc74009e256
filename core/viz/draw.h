/* What the pictures (trace.c, plot.c) share: text cairo can draw, and a memory sink for
 * cairo's PNG and SVG streams, so a picture is written whole, atomically. */
#ifndef INTRUS_DRAW_H
#define INTRUS_DRAW_H

#include <cairo.h>
#include <stdbool.h>
#include <stddef.h>

/* A copy of s with each invalid UTF-8 byte replaced by U+FFFD (cairo refuses a string
 * with one bad byte; a model may well emit a piece of a character). malloc'd. */
char *draw_text(const char *s);

/* A token of the target vocabulary as the pictures draw it: draw_text's copy of s with
 * the tokenizer's joiner mark (U+FFED, INTRUS_JOINER: "no space before this token")
 * removed, *joined set when s had one. The default sans-serif font (DejaVu Sans on
 * Debian) has no glyph for U+FFED and cairo's toy text API does not fall back to another
 * font, so drawn as text the mark is a missing-glyph box; the pictures draw a mark of
 * their own in its place (draw_joiner_mark) and explain it in their legend. The
 * tokenizer puts the mark only at a token's start; one anywhere else is dropped all the
 * same, so that no box is ever drawn. malloc'd. */
char *draw_token_text(const char *s, bool *joined);
/* Width of the mark draw_joiner_mark draws, with the gap after it, at a font size. */
double draw_joiner_width(double size);
/* Draws the joiner's stand-in, a small filled square like the glyph U+FFED, with its
 * left edge at x on the text baseline y, in the current source colour. */
void draw_joiner_mark(cairo_t *cr, double x, double y, double size);

/* Selects the sans-serif face at a size, bold or regular, for what follows. */
void draw_set_font(cairo_t *cr, double size, bool bold);
/* How far drawing s moves the current point along x, in the current font. */
double draw_advance(cairo_t *cr, const char *s);

struct draw_buf {
  unsigned char *data;
  size_t len, cap;
};
/* cairo_write_func_t appending to a struct draw_buf; free data when done. */
cairo_status_t draw_buf_write(void *closure, const unsigned char *data, unsigned int n);

/* Paints a w x h picture with paint(cr, user) and writes it to the PNG path: built in
 * memory, then a temporary file and a rename, so an error leaves no file. what names
 * the picture in errors ("the curves", "the chart"). */
#include "intrus/status.h"
typedef void draw_paint_fn(cairo_t *cr, void *user);
enum intrus_status draw_png(const char *path, int w, int h, draw_paint_fn *paint, void *user,
                            const char *what, struct intrus_error *err);

#endif

/* Decoding-order traces: how an insertion model wrote an output, as text (the paper's
 * Figure 1), as relative generation indices, and as pictures drawn with cairo.
 *
 * Tokens never move relative to each other once inserted, so the partial output after
 * step t is the final output restricted to the tokens of steps <= t: everything here
 * works from one array, the step at which each final column was written. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cairo.h>
#include <cairo-svg.h>

#include "draw.h"
#include "intrus/fileio.h"
#include "intrus/trace.h"
#include "base/xalloc.h"

/* Fills when[j] = the step (0-based) that wrote final column j. Returns -1, or the
 * first step whose slot lies outside the partial output it applies to. */
static int columns(const struct intrus_trace *t, int *when) {
  for (int s = 0; s < t->len; s++) {
    int slot = t->steps[s].slot;
    if (slot < 0 || slot > s) return s;
    memmove(when + slot + 1, when + slot, (size_t)(s - slot) * sizeof *when);
    when[slot] = s;
  }
  return -1;
}

static enum intrus_status check_trace(const struct intrus_trace *t, const char *what,
                                      int *when, struct intrus_error *err) {
  if (t->len < 0 || (t->len > 0 && (!t->steps || !t->words)))
    return intrus_error_set(err, INTRUS_ERR_INVALID, "%s: a trace of %d steps without %s", what,
                            t->len, t->steps ? "words" : "steps");
  for (int s = 0; s < t->len; s++)
    if (!t->words[s])
      return intrus_error_set(err, INTRUS_ERR_INVALID, "%s: step %d has no word", what, s + 1);
  int s = columns(t, when);
  if (s >= 0)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "%s: step %d inserts at slot %d of a %d-token output", what, s + 1,
                            t->steps[s].slot, s);
  return INTRUS_OK;
}

enum intrus_status intrus_trace_write_text(FILE *f, const char *name, int index,
                                           const struct intrus_trace *t,
                                           struct intrus_error *err) {
  const char *what = name ? name : "decoding trace";
  int *when = xmalloc((size_t)(t->len > 0 ? t->len : 1) * sizeof *when);
  enum intrus_status st = check_trace(t, what, when, err);
  if (st) {
    free(when);
    return st;
  }
  int bad = fprintf(f, "# sentence %d\n", index) < 0;
  if (t->len == 0) bad |= fputs("0\t(empty)\n", f) < 0;
  for (int s = 0; s < t->len && !bad; s++) {
    bad |= fprintf(f, "%d\t", s + 1) < 0;
    bool first = true;
    for (int j = 0; j < t->len && !bad; j++) {
      if (when[j] > s) continue;
      const char *w = t->words[when[j]];
      bad |= fprintf(f, when[j] == s ? "%s[%s]" : "%s%s", first ? "" : " ", w) < 0;
      first = false;
    }
    bad |= fputc('\n', f) == EOF;
  }
  bad |= fputc('\n', f) == EOF;
  free(when);
  if (bad || ferror(f))
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot write the trace of sentence %d: %s",
                            what, index, strerror(errno));
  return INTRUS_OK;
}

void intrus_trace_relative_index(const struct intrus_trace *t, double *rel, int *order) {
  if (t->len <= 0) return;
  int *when = order ? order : xmalloc((size_t)t->len * sizeof *when);
  INTRUS_CHECK(columns(t, when) < 0, "trace: a step inserts outside its partial output");
  for (int j = 0; j < t->len; j++) rel[j] = t->len > 1 ? (double)when[j] / (t->len - 1) : 0.0;
  if (!order) free(when);
}

/* ---- pictures ------------------------------------------------------------------- */

#define FONT_SIZE 14.0
#define MARGIN 12.0
#define PAD_X 6.0     /* inside a word's box */
#define PAD_Y 4.0
#define COL_GAP 4.0
#define ROW_GAP 2.0
#define PNG_MAX 32767 /* cairo's limit on an image surface's side */

#define LEGEND_SIZE 11.0
#define LEGEND_GAP 8.0 /* between the last row and the legend */

/* The legend under the rows: what a row is, and what the marks a reader meets in
 * subword output mean (only those the picture has). */
static const char LEGEND_ROWS[] =
    "row n: the output after n insertions, the token inserted at step n boxed";
static const char LEGEND_JOINER[] =
    " before a token: no space between it and the token before it (the tokenizer's "
    "joiner mark, U+FFED)";
static const char LEGEND_BPE[] =
    "@@ at a token's end: a subword piece, continued by the next token without a space";

struct layout {
  int rows;
  double label_w, row_h, ascent, width, height;
  double img_top, img_scale; /* rows start img_top lower when an image is drawn */
  double *col_x, *col_w;  /* [len] */
  const bool *joined;     /* [len, by step]: the word is drawn after a joiner mark */
  int legend_lines;
  const char *legend[3];
  bool legend_mark[3]; /* the line starts with the joiner mark */
  double legend_top, legend_h, legend_ascent;
};

/* How far a word of the rows moves the current point: its joiner mark and its text. */
static double word_advance(cairo_t *cr, const char *w, bool joined) {
  return (joined ? draw_joiner_width(FONT_SIZE) : 0) + draw_advance(cr, w);
}

/* Column widths come from the words' own extents, in both weights, since a column
 * shows its word in bold on one row and plain on the others. Measured unhinted, so
 * the numbers suit vector output as well as pixels. */
static void measure(const struct intrus_trace *t, const int *when, struct layout *L) {
  cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t *cr = cairo_create(s);
  cairo_font_options_t *fo = cairo_font_options_create();
  cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
  cairo_set_font_options(cr, fo);
  cairo_font_options_destroy(fo);
  L->rows = t->len > 0 ? t->len : 1;
  char label[16];
  snprintf(label, sizeof label, "%d", t->len);
  draw_set_font(cr, FONT_SIZE, false);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  L->ascent = fe.ascent;
  L->row_h = fe.ascent + fe.descent + 2 * PAD_Y;
  L->label_w = draw_advance(cr, label);
  double x = MARGIN + L->label_w + 2 * PAD_X;
  for (int j = 0; j < t->len; j++) {
    const char *w = t->words[when[j]];
    bool jn = L->joined[when[j]];
    draw_set_font(cr, FONT_SIZE, false);
    double a = word_advance(cr, w, jn);
    draw_set_font(cr, FONT_SIZE, true);
    double b = word_advance(cr, w, jn);
    L->col_x[j] = x;
    L->col_w[j] = (a > b ? a : b) + 2 * PAD_X;
    x += L->col_w[j] + COL_GAP;
  }
  if (t->len == 0) {
    draw_set_font(cr, FONT_SIZE, false);
    x += draw_advance(cr, "(empty)") + COL_GAP;
  }
  L->width = x - COL_GAP + MARGIN;
  L->height = 2 * MARGIN + L->rows * L->row_h + (L->rows - 1) * ROW_GAP;
  draw_set_font(cr, LEGEND_SIZE, false);
  cairo_font_extents(cr, &fe);
  L->legend_ascent = fe.ascent;
  L->legend_h = fe.ascent + fe.descent + 2;
  L->legend_top = L->height - MARGIN + LEGEND_GAP;
  for (int i = 0; i < L->legend_lines; i++) {
    /* 3% over the unhinted width: a PNG draws with hinted metrics, a little wider. */
    double lw = 2 * MARGIN + 1.03 * (draw_advance(cr, L->legend[i]) +
                                     (L->legend_mark[i] ? draw_joiner_width(LEGEND_SIZE) : 0));
    if (lw > L->width) L->width = lw;
  }
  L->height += LEGEND_GAP + L->legend_lines * L->legend_h;
  L->img_top = 0;
  if (t->image && t->image_height > 0 && t->image_width > 0) {
    /* A whole factor, so pixels stay sharp: small formula images grow to be readable,
     * none grows past 4x. */
    double k = 1;
    while (k < 4 && t->image_height * (k + 1) <= 96 && t->image_height * k < 48) k++;
    L->img_scale = k;
    double iw = t->image_width * k + 2 * MARGIN;
    if (iw > L->width) L->width = iw;
    L->img_top = t->image_height * k + MARGIN;
    L->height += L->img_top;
    L->legend_top += L->img_top;
  }
  cairo_destroy(cr);
  cairo_surface_destroy(s);
}

/* The input image at the top left, each pixel a img_scale-sized square (no smoothing). */
static void draw_image(cairo_t *cr, const struct intrus_trace *t, const struct layout *L) {
  const int C = t->image_channels == 3 ? 3 : 1, H = t->image_height, W = t->image_width;
  cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
  if (cairo_surface_status(img)) {
    cairo_surface_destroy(img);
    return;
  }
  cairo_surface_flush(img);
  unsigned char *data = cairo_image_surface_get_data(img);
  int stride = cairo_image_surface_get_stride(img);
  const size_t plane = (size_t)H * W;
  for (int y = 0; y < H; y++) {
    uint32_t *row = (uint32_t *)(void *)(data + (size_t)y * stride);
    for (int x = 0; x < W; x++) {
      uint32_t v[3];
      for (int c = 0; c < 3; c++) {
        float p = t->image[(C == 3 ? (size_t)c * plane : 0) + (size_t)y * W + x];
        p = p < 0 ? 0 : p > 1 ? 1 : p;
        v[c] = (uint32_t)(p * 255.0f + 0.5f);
      }
      row[x] = v[0] << 16 | v[1] << 8 | v[2];
    }
  }
  cairo_surface_mark_dirty(img);
  cairo_save(cr);
  cairo_translate(cr, MARGIN, MARGIN);
  cairo_scale(cr, L->img_scale, L->img_scale);
  cairo_set_source_surface(cr, img, 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_rectangle(cr, 0, 0, W, H);
  cairo_fill(cr);
  cairo_restore(cr);
  cairo_surface_destroy(img);
}

/* Onto a white surface (painted by the caller: several panels share one). */
static void draw(cairo_t *cr, const struct intrus_trace *t, const int *when,
                 const struct layout *L) {
  if (L->img_top > 0) draw_image(cr, t, L);
  for (int r = 0; r < L->rows; r++) {
    double top = L->img_top + MARGIN + r * (L->row_h + ROW_GAP), base = top + PAD_Y + L->ascent;
    char label[16];
    snprintf(label, sizeof label, "%d", t->len > 0 ? r + 1 : 0);
    draw_set_font(cr, FONT_SIZE, false);
    cairo_set_source_rgb(cr, 0.45, 0.45, 0.45);
    cairo_move_to(cr, MARGIN + L->label_w - draw_advance(cr, label), base);
    cairo_show_text(cr, label);
    if (t->len == 0) {
      cairo_move_to(cr, MARGIN + L->label_w + 2 * PAD_X, base);
      cairo_show_text(cr, "(empty)");
    }
    for (int j = 0; j < t->len; j++) {
      if (when[j] > r) continue; /* not written yet: the column stays empty */
      const char *w = t->words[when[j]];
      bool now = when[j] == r;
      if (now) {
        cairo_rectangle(cr, L->col_x[j] + 0.5, top + 0.5, L->col_w[j] - 1, L->row_h - 1);
        cairo_set_source_rgb(cr, 1.0, 0.84, 0.45);
        cairo_fill_preserve(cr);
        cairo_set_source_rgb(cr, 0.80, 0.45, 0.0);
        cairo_set_line_width(cr, 1.0);
        cairo_stroke(cr);
      }
      draw_set_font(cr, FONT_SIZE, now);
      cairo_set_source_rgb(cr, now ? 0.0 : 0.15, now ? 0.0 : 0.15, now ? 0.0 : 0.15);
      bool jn = L->joined[when[j]];
      double x = L->col_x[j] + (L->col_w[j] - word_advance(cr, w, jn)) / 2;
      if (jn) {
        draw_joiner_mark(cr, x, base, FONT_SIZE);
        x += draw_joiner_width(FONT_SIZE);
      }
      cairo_move_to(cr, x, base);
      cairo_show_text(cr, w);
    }
  }
  draw_set_font(cr, LEGEND_SIZE, false);
  cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
  for (int i = 0; i < L->legend_lines; i++) {
    double x = MARGIN, base = L->legend_top + i * L->legend_h + L->legend_ascent;
    if (L->legend_mark[i]) {
      draw_joiner_mark(cr, x, base, LEGEND_SIZE);
      x += draw_joiner_width(LEGEND_SIZE);
    }
    cairo_move_to(cr, x, base);
    cairo_show_text(cr, L->legend[i]);
  }
}

/* Which legend lines a trace's words call for (bit 0: the joiner mark, bit 1: "@@"). */
static unsigned legend_needs(const struct intrus_trace *t) {
  unsigned need = 0;
  for (int s = 0; s < t->len; s++) {
    bool joined;
    char *w = draw_token_text(t->words[s], &joined);
    size_t k = strlen(w);
    need |= (joined ? 1u : 0u) | (k >= 2 && strcmp(w + k - 2, "@@") == 0 ? 2u : 0u);
    free(w);
  }
  return need;
}

/* One trace, measured and ready to draw: its words as shown, the step of each column. */
struct panel {
  int *when;
  struct layout L;
  char **shown;
  bool *joined;
  size_t n;
  struct intrus_trace tr;
};

static void panel_free(struct panel *p) {
  for (size_t s = 0; p->shown && s < p->n; s++) free(p->shown[s]);
  free(p->shown);
  free(p->joined);
  free(p->when);
  free(p->L.col_x);
  free(p->L.col_w);
}

/* legend: -1 for none, else the bits of legend_needs() whose lines go under the rows
 * (with the rows' own line). */
static enum intrus_status panel_prepare(const char *what, const struct intrus_trace *t,
                                        int legend, struct panel *p, struct intrus_error *err) {
  p->n = (size_t)(t->len > 0 ? t->len : 1);
  p->when = xmalloc(p->n * sizeof *p->when);
  p->L = (struct layout){.col_x = xmalloc(p->n * sizeof *p->L.col_x),
                         .col_w = xmalloc(p->n * sizeof *p->L.col_w)};
  p->shown = xcalloc(p->n, sizeof *p->shown);
  p->joined = xcalloc(p->n, sizeof *p->joined);
  enum intrus_status st = check_trace(t, what, p->when, err);
  if (st) return st;
  for (int s = 0; s < t->len; s++) p->shown[s] = draw_token_text(t->words[s], &p->joined[s]);
  struct layout *L = &p->L;
  L->joined = p->joined;
  if (legend >= 0) {
    L->legend[L->legend_lines++] = LEGEND_ROWS;
    if (legend & 1) {
      L->legend_mark[L->legend_lines] = true;
      L->legend[L->legend_lines++] = LEGEND_JOINER;
    }
    if (legend & 2) L->legend[L->legend_lines++] = LEGEND_BPE;
  }
  p->tr = (struct intrus_trace){t->len, t->steps, (const char *const *)p->shown, t->image,
                                t->image_channels, t->image_height, t->image_width};
  measure(&p->tr, p->when, L);
  if (legend < 0) L->height -= LEGEND_GAP;
  return INTRUS_OK;
}

#define TITLE_SIZE 15.0

enum intrus_status intrus_trace_draw_panels(const char *path, const struct intrus_trace *t,
                                            const char *const *titles, int n,
                                            struct intrus_error *err) {
  const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
  bool png = false, svg = false;
  if (dot && (!slash || dot > slash)) {
    png = strcasecmp(dot, ".png") == 0;
    svg = strcasecmp(dot, ".svg") == 0;
  }
  if (!png && !svg)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "%s: unknown picture format (the name must end in .png or .svg)",
                            path);
  if (n < 1) return intrus_error_set(err, INTRUS_ERR_INVALID, "%s: no trace to draw", path);
  /* One legend, under the last panel, with the lines any panel calls for. */
  unsigned need = 0;
  for (int i = 0; i < n; i++) need |= legend_needs(&t[i]);
  struct panel *pan = xcalloc((size_t)n, sizeof *pan);
  double title_h = 0, title_ascent = 0, width = 0, height = 0;
  struct draw_buf buf = {0};
  enum intrus_status st = INTRUS_OK;
  if (titles) {
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
    cairo_t *cr = cairo_create(s);
    draw_set_font(cr, TITLE_SIZE, true);
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    title_ascent = fe.ascent;
    title_h = fe.ascent + fe.descent + MARGIN / 2;
    for (int i = 0; i < n; i++) {
      double tw = 2 * MARGIN + 1.03 * draw_advance(cr, titles[i] ? titles[i] : "");
      if (tw > width) width = tw;
    }
    cairo_destroy(cr);
    cairo_surface_destroy(s);
  }
  for (int i = 0; i < n && !st; i++) {
    st = panel_prepare(path, &t[i], i == n - 1 ? (int)need : -1, &pan[i], err);
    if (!st && pan[i].L.width > width) width = pan[i].L.width;
    height += pan[i].L.height + (titles ? title_h : 0);
  }
  if (st) goto done;
  int w = (int)(width + 1), h = (int)(height + 1);
  if (png && (w > PNG_MAX || h > PNG_MAX)) {
    st = intrus_error_set(err, INTRUS_ERR_INVALID,
                          "%s: a picture of %d x %d pixels is too large for PNG (write .svg)",
                          path, w, h);
    goto done;
  }
  cairo_surface_t *surface =
      png ? cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w, h)
          : cairo_svg_surface_create_for_stream(draw_buf_write, &buf, w, h);
  cairo_t *cr = cairo_create(surface);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  double y = 0;
  for (int i = 0; i < n; i++) {
    if (titles) {
      if (i > 0) { /* a rule between panels */
        cairo_set_source_rgb(cr, 0.8, 0.8, 0.8);
        cairo_set_line_width(cr, 1.0);
        cairo_move_to(cr, MARGIN, y + 0.5);
        cairo_line_to(cr, width - MARGIN, y + 0.5);
        cairo_stroke(cr);
      }
      draw_set_font(cr, TITLE_SIZE, true);
      cairo_set_source_rgb(cr, 0, 0, 0);
      cairo_move_to(cr, MARGIN, y + MARGIN / 2 + title_ascent);
      cairo_show_text(cr, titles[i] ? titles[i] : "");
      y += title_h;
    }
    cairo_save(cr);
    cairo_translate(cr, 0, y);
    draw(cr, &pan[i].tr, pan[i].when, &pan[i].L);
    cairo_restore(cr);
    y += pan[i].L.height;
  }
  cairo_status_t cs = cairo_status(cr);
  cairo_destroy(cr);
  if (!cs) {
    if (png) {
      cairo_surface_flush(surface);
      cs = cairo_surface_write_to_png_stream(surface, draw_buf_write, &buf);
    } else {
      cairo_surface_finish(surface);
      cs = cairo_surface_status(surface);
    }
  }
  cairo_surface_destroy(surface);
  if (cs)
    st = intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot draw the trace: %s", path,
                          cairo_status_to_string(cs));
  else
    st = intrus_file_write_atomic(path, buf.data, buf.len, err);
done:
  for (int i = 0; i < n; i++) panel_free(&pan[i]);
  free(pan);
  free(buf.data);
  return st;
}

enum intrus_status intrus_trace_draw(const char *path, const struct intrus_trace *t,
                                     struct intrus_error *err) {
  return intrus_trace_draw_panels(path, t, NULL, 1, err);
}

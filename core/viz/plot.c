/* Learning curves of several runs in one PNG (`intrus plot`): each run's train.log is
 * read into one curve, the axes get nice round ticks, and cairo draws (its toy text
 * API, as trace.c does); the PNG is built in memory and written atomically. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cairo.h>

#include "draw.h"
#include "intrus/fileio.h"
#include "plot.h"
#include "base/xalloc.h"

/* ---- reading train.log ------------------------------------------------------------ */

#define MAX_CELLS 64

struct point {
  double x, y;
  long step;
};

struct curve {
  char *label;
  struct point *p;
  size_t n, cap;
};

struct columns {
  int n, step, x, y; /* cells in the header; indices of the columns used */
  char *name[MAX_CELLS];
};

static const char *const y_column[] = {"valid_bleu", "valid_loss", "loss"};

/* Splits line at its tabs, in place; returns the number of cells (only the first
 * MAX_CELLS are stored). */
static int split(char *line, char **cell) {
  int n = 0;
  for (char *s = line;; s++) {
    if (n < MAX_CELLS) cell[n] = s;
    n++;
    s = strchr(s, '\t');
    if (!s) return n;
    *s = '\0';
  }
}

static bool parse_number(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return end != s && !*end && errno != ERANGE && isfinite(*v);
}

static enum intrus_status read_header(const char *path, char *line, const struct plot_options *opt,
                                      struct columns *k, struct intrus_error *err) {
  k->n = split(line, k->name);
  if (k->n > MAX_CELLS)
    return intrus_error_set(err, INTRUS_ERR_DATA, "%s:1: more than %d columns", path, MAX_CELLS);
  k->step = k->x = k->y = -1;
  for (int i = 0; i < k->n; i++) {
    if (!strcmp(k->name[i], "step")) k->step = i;
    if (!strcmp(k->name[i], "train_s")) k->x = i;
    if (!strcmp(k->name[i], y_column[opt->y])) k->y = i;
  }
  if (k->step < 0)
    return intrus_error_set(err, INTRUS_ERR_DATA,
                            "%s:1: not a train.log header (no 'step' column)", path);
  if (k->y < 0)
    return intrus_error_set(err, INTRUS_ERR_DATA, "%s:1: no '%s' column", path, y_column[opt->y]);
  if (opt->x == PLOT_X_TIME && k->x < 0)
    return intrus_error_set(err, INTRUS_ERR_DATA,
                            "%s: no 'train_s' column (a log written before intrus recorded "
                            "training time): plot it with --x step",
                            path);
  if (opt->x == PLOT_X_STEP) k->x = k->step;
  return INTRUS_OK;
}

static enum intrus_status read_row(const char *path, long line_no, char *line,
                                   const struct columns *k, struct curve *c,
                                   struct intrus_error *err) {
  char *cell[MAX_CELLS];
  double v[MAX_CELLS];
  int n = split(line, cell);
  /* Cells beyond the header's are ignored: a run begun before train_s was logged and
   * resumed by a newer intrus appends rows with one cell more than its header. */
  if (n < k->n)
    return intrus_error_set(err, INTRUS_ERR_DATA, "%s:%ld: %d cells, the header has %d", path,
                            line_no, n, k->n);
  for (int i = 0; i < k->n; i++)
    if (cell[i][0] && !parse_number(cell[i], &v[i]))
      return intrus_error_set(err, INTRUS_ERR_DATA, "%s:%ld: %s '%.40s' is not a number", path,
                              line_no, k->name[i], cell[i]);
  double s = cell[k->step][0] ? v[k->step] : -1;
  if (s < 0 || s != floor(s) || s > 1e15)
    return intrus_error_set(err, INTRUS_ERR_DATA, "%s:%ld: step '%s' is not a step number", path,
                            line_no, cell[k->step]);
  /* A run resumed from a checkpoint older than its log's last rows logs those steps
   * again: the later rows replace the earlier ones. */
  while (c->n && c->p[c->n - 1].step >= (long)s) c->n--;
  if (!cell[k->y][0]) return INTRUS_OK; /* not measured at this row */
  if (!cell[k->x][0])
    return intrus_error_set(err, INTRUS_ERR_DATA, "%s:%ld: no %s at this row", path, line_no,
                            k->name[k->x]);
  xgrow((void **)&c->p, &c->cap, c->n + 1, sizeof *c->p, 64);
  c->p[c->n++] = (struct point){k->x == k->step ? s : v[k->x] / 60.0, v[k->y], (long)s};
  return INTRUS_OK;
}

static enum intrus_status read_log(const char *path, const struct plot_options *opt,
                                   struct curve *c, struct intrus_error *err) {
  FILE *f = fopen(path, "r");
  if (!f) return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct columns k;
  char *line = NULL, *header = NULL;
  size_t cap = 0;
  ssize_t len;
  long line_no = 0;
  enum intrus_status st = INTRUS_OK;
  while (!st && (len = getline(&line, &cap, f)) >= 0) {
    line_no++;
    bool whole = len > 0 && line[len - 1] == '\n';
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
    if (!header) {
      header = xstrdup(line);
      st = read_header(path, header, opt, &k, err);
    } else if (len) {
      st = read_row(path, line_no, line, &k, c, err);
      if (st && !whole) { /* the last line of a log being written, not finished yet */
        intrus_error_clear(err);
        st = INTRUS_OK;
        break;
      }
    }
  }
  if (!st && ferror(f))
    st = intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
  else if (!st && !header)
    st = intrus_error_set(err, INTRUS_ERR_DATA, "%s: empty (no header line)", path);
  else if (!st && c->n == 0)
    st = intrus_error_set(err, INTRUS_ERR_DATA, "%s: no row has a %s value", path,
                          y_column[opt->y]);
  fclose(f);
  free(line);
  free(header);
  return st;
}

/* The run directory's base name ("runs/a/" -> "a"; "." -> the directory's own name). */
static char *base_name(const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  const char *b = dir + n;
  while (b > dir && b[-1] != '/') b--;
  char *name = xstrndup(b, (size_t)(dir + n - b));
  if (!strcmp(name, ".") || !strcmp(name, "..")) {
    char *real = realpath(dir, NULL);
    if (real && strcmp(real, "/")) {
      free(name);
      name = base_name(real);
    }
    free(real);
  }
  return name;
}

/* ---- drawing ---------------------------------------------------------------------- */

static const unsigned palette[10] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                     0x8c564b, 0xe377c2, 0xbcbd22, 0x17becf, 0x393b79};

void intrus_plot_colour(int i, double rgb[3]) {
  unsigned c = palette[(unsigned)i % 10];
  for (int k = 0; k < 3; k++) rgb[k] = ((c >> (16 - 8 * k)) & 255) / 255.0;
}

struct ticks {
  double lo, hi, step;
  int n, decimals;
};

/* 1, 2 or 5 times a power of ten, the nearest to x. */
static double nice(double x) {
  double e = pow(10, floor(log10(x))), f = x / e;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * e;
}

/* About `want` ticks at round values, enclosing [min, max]. */
static void nice_ticks(double min, double max, int want, struct ticks *t) {
  if (!(max - min > 1e-9 * fmax(fabs(min), fabs(max)))) { /* one value: give it room */
    double d = min != 0 ? fabs(min) * 0.1 : 1.0;
    min -= d;
    max += d;
  }
  t->step = nice((max - min) / (want - 1));
  t->lo = floor(min / t->step + 1e-9) * t->step;
  t->hi = ceil(max / t->step - 1e-9) * t->step;
  t->n = (int)llround((t->hi - t->lo) / t->step) + 1;
  int d = -(int)floor(log10(t->step) + 1e-9);
  t->decimals = d > 0 ? d : 0;
}

static void tick_label(const struct ticks *t, int i, char *buf, size_t cap) {
  double v = t->lo + i * t->step;
  if (fabs(v) < t->step * 1e-6) v = 0; /* not "-0" */
  snprintf(buf, cap, "%.*f", t->decimals, v);
}

struct frame {
  double x0, y0, x1, y1; /* the plot area, pixels: left, top, right, bottom */
  double s;              /* scale of text and lines: 1 at 900 x 560 */
  struct ticks tx, ty;
};

static double px(const struct frame *F, double x) {
  return F->x0 + (x - F->tx.lo) / (F->tx.hi - F->tx.lo) * (F->x1 - F->x0);
}
static double py(const struct frame *F, double y) {
  return F->y1 - (y - F->ty.lo) / (F->ty.hi - F->ty.lo) * (F->y1 - F->y0);
}

static double text_height(cairo_t *cr) {
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  return fe.ascent + fe.descent;
}

/* Marker shapes cycle too (circle, square, triangle, diamond), so that runs stay apart
 * in grey print and for colour-blind readers. */
static void marker(cairo_t *cr, int shape, double x, double y, double r) {
  switch (shape % 4) {
  case 0: cairo_new_sub_path(cr); cairo_arc(cr, x, y, r, 0, 2 * M_PI); break;
  case 1: cairo_rectangle(cr, x - 0.9 * r, y - 0.9 * r, 1.8 * r, 1.8 * r); break;
  case 2:
    cairo_move_to(cr, x, y - 1.25 * r);
    cairo_line_to(cr, x + 1.15 * r, y + 0.85 * r);
    cairo_line_to(cr, x - 1.15 * r, y + 0.85 * r);
    cairo_close_path(cr);
    break;
  default:
    cairo_move_to(cr, x, y - 1.3 * r);
    cairo_line_to(cr, x + 1.3 * r, y);
    cairo_line_to(cr, x, y + 1.3 * r);
    cairo_line_to(cr, x - 1.3 * r, y);
    cairo_close_path(cr);
  }
  cairo_fill(cr);
}

/* Places the plot area inside the margins that the title, axis titles and tick labels
 * need. */
static void layout(cairo_t *cr, int w, int h, const struct curve *c, int n, struct frame *F) {
  double s = fmin(w / 900.0, h / 560.0);
  F->s = s = s < 0.6 ? 0.6 : s > 3 ? 3 : s;
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (int i = 0; i < n; i++)
    for (size_t j = 0; j < c[i].n; j++) {
      xmin = fmin(xmin, c[i].p[j].x), xmax = fmax(xmax, c[i].p[j].x);
      ymin = fmin(ymin, c[i].p[j].y), ymax = fmax(ymax, c[i].p[j].y);
    }
  /* A little room above and below, so that no point sits on the frame; quantities that
   * cannot be negative (BLEU, a loss, milliseconds) get no axis below 0. */
  double pad = (ymax - ymin) * 0.03;
  ymin = ymin >= 0 ? fmax(ymin - pad, 0.0) : ymin - pad;
  ymax += pad;
  int wx = w / (int)(110 * s), wy = h / (int)(70 * s);
  nice_ticks(xmin, xmax, wx < 3 ? 3 : wx > 12 ? 12 : wx, &F->tx);
  nice_ticks(ymin, ymax, wy < 3 ? 3 : wy > 10 ? 10 : wy, &F->ty);
  char buf[64];
  double margin = 12 * s, gap = 6 * s, tick = 5 * s, ylab = 0, xlab;
  draw_set_font(cr, 12 * s, false);
  double tick_h = text_height(cr);
  for (int i = 0; i < F->ty.n; i++) {
    tick_label(&F->ty, i, buf, sizeof buf);
    ylab = fmax(ylab, draw_advance(cr, buf));
  }
  tick_label(&F->tx, F->tx.n - 1, buf, sizeof buf);
  xlab = draw_advance(cr, buf);
  draw_set_font(cr, 13 * s, false);
  double axis_h = text_height(cr);
  draw_set_font(cr, 16 * s, true);
  double title_h = text_height(cr);
  F->x0 = margin + axis_h + gap + ylab + gap + tick;
  F->x1 = w - margin - xlab / 2;
  F->y0 = margin + title_h + 2 * gap;
  F->y1 = h - margin - axis_h - gap - tick_h - gap - tick;
}

static void draw_axes(cairo_t *cr, const struct frame *F, const char *xtitle,
                      const char *ytitle) {
  char buf[64];
  double s = F->s, gap = 6 * s, tick = 5 * s;
  cairo_set_line_width(cr, 1.0);
  for (int i = 0; i < F->tx.n; i++) { /* grid */
    double x = round(px(F, F->tx.lo + i * F->tx.step)) + 0.5;
    cairo_move_to(cr, x, F->y0);
    cairo_line_to(cr, x, F->y1 + tick);
  }
  for (int i = 0; i < F->ty.n; i++) {
    double y = round(py(F, F->ty.lo + i * F->ty.step)) + 0.5;
    cairo_move_to(cr, F->x0 - tick, y);
    cairo_line_to(cr, F->x1, y);
  }
  cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
  cairo_stroke(cr);
  cairo_rectangle(cr, round(F->x0) + 0.5, round(F->y0) + 0.5, round(F->x1 - F->x0),
                  round(F->y1 - F->y0));
  cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
  cairo_stroke(cr);
  draw_set_font(cr, 12 * s, false);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  double tick_h = fe.ascent + fe.descent;
  cairo_set_source_rgb(cr, 0.25, 0.25, 0.25);
  for (int i = 0; i < F->tx.n; i++) {
    tick_label(&F->tx, i, buf, sizeof buf);
    cairo_move_to(cr, px(F, F->tx.lo + i * F->tx.step) - draw_advance(cr, buf) / 2,
                  F->y1 + tick + gap + fe.ascent);
    cairo_show_text(cr, buf);
  }
  for (int i = 0; i < F->ty.n; i++) {
    tick_label(&F->ty, i, buf, sizeof buf);
    cairo_move_to(cr, F->x0 - tick - gap - draw_advance(cr, buf),
                  py(F, F->ty.lo + i * F->ty.step) + (fe.ascent - fe.descent) / 2);
    cairo_show_text(cr, buf);
  }
  draw_set_font(cr, 13 * s, false);
  cairo_font_extents(cr, &fe);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_move_to(cr, (F->x0 + F->x1 - draw_advance(cr, xtitle)) / 2,
                F->y1 + tick + gap + tick_h + gap + fe.ascent);
  cairo_show_text(cr, xtitle);
  cairo_save(cr);
  cairo_translate(cr, 12 * s + fe.ascent, (F->y0 + F->y1) / 2);
  cairo_rotate(cr, -M_PI / 2);
  cairo_move_to(cr, -draw_advance(cr, ytitle) / 2, 0);
  cairo_show_text(cr, ytitle);
  cairo_restore(cr);
}

static void draw_curves(cairo_t *cr, const struct frame *F, const struct curve *c, int n) {
  double rgb[3];
  for (int i = 0; i < n; i++) {
    intrus_plot_colour(i, rgb);
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
    cairo_set_line_width(cr, 2 * F->s);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_new_path(cr); /* show_text leaves a current point the line must not start at */
    for (size_t j = 0; j < c[i].n; j++)
      cairo_line_to(cr, px(F, c[i].p[j].x), py(F, c[i].p[j].y));
    cairo_stroke(cr);
    /* Markers shrink when the points crowd, so that the line stays visible. */
    double r = fmin(3.5 * F->s, fmax(1.5 * F->s, (F->x1 - F->x0) / (3.0 * (double)c[i].n)));
    for (size_t j = 0; j < c[i].n; j++)
      marker(cr, i, px(F, c[i].p[j].x), py(F, c[i].p[j].y), r);
  }
}

/* How much of the curves a legend box at (x, y, w, h) would hide: the points, and
 * points every 4 pixels along the segments between them (a margin of 4 pixels). */
static long covered(const struct frame *F, const struct curve *c, int n, double x, double y,
                    double w, double h) {
  long hits = 0;
  for (int i = 0; i < n; i++)
    for (size_t j = 0; j < c[i].n; j++) {
      double a = px(F, c[i].p[j].x), b = py(F, c[i].p[j].y), da = 0, db = 0;
      if (j) {
        da = px(F, c[i].p[j - 1].x) - a;
        db = py(F, c[i].p[j - 1].y) - b;
      }
      int steps = (int)ceil(hypot(da, db) / 4);
      for (int k = 0; k < (steps ? steps : 1); k++) {
        double u = a + da * k / (steps ? steps : 1), v = b + db * k / (steps ? steps : 1);
        hits += u >= x - 4 && u <= x + w + 4 && v >= y - 4 && v <= y + h + 4;
      }
    }
  return hits;
}

static void draw_legend(cairo_t *cr, const struct frame *F, const struct curve *c, int n) {
  double s = F->s, pad = 8 * s, sample = 28 * s, rgb[3];
  draw_set_font(cr, 12 * s, false);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  double row = (fe.ascent + fe.descent) * 1.35, wide = 0;
  for (int i = 0; i < n; i++) wide = fmax(wide, draw_advance(cr, c[i].label));
  double w = pad + sample + pad + wide + pad, h = 2 * pad + n * row;
  double inset = 10 * s, l = F->x0 + inset, r = F->x1 - inset - w, t = F->y0 + inset,
         b = F->y1 - inset - h;
  double cx[4] = {r, r, l, l}, cy[4] = {t, b, t, b}; /* top right first on ties */
  int best = 0;
  long best_hits = -1;
  for (int k = 0; k < 4; k++) {
    long hits = covered(F, c, n, cx[k], cy[k], w, h);
    if (best_hits < 0 || hits < best_hits) best = k, best_hits = hits;
  }
  double x = round(cx[best]) + 0.5, y = round(cy[best]) + 0.5;
  cairo_rectangle(cr, x, y, round(w), round(h));
  cairo_set_source_rgba(cr, 1, 1, 1, 0.9);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
  cairo_set_line_width(cr, 1.0);
  cairo_stroke(cr);
  for (int i = 0; i < n; i++) {
    double mid = y + pad + (i + 0.5) * row;
    intrus_plot_colour(i, rgb);
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
    cairo_set_line_width(cr, 2 * s);
    cairo_move_to(cr, x + pad, mid);
    cairo_line_to(cr, x + pad + sample, mid);
    cairo_stroke(cr);
    marker(cr, i, x + pad + sample / 2, mid, 3.5 * s);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_move_to(cr, x + pad + sample + pad, mid + (fe.ascent - fe.descent) / 2);
    cairo_show_text(cr, c[i].label);
  }
}

static const char *const y_title[] = {"validation BLEU", "validation loss", "training loss"};

static void draw(cairo_t *cr, int w, int h, const struct curve *c, int n, const char *xtitle,
                 const char *ytitle, const char *title) {
  struct frame F;
  layout(cr, w, h, c, n, &F);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  draw_axes(cr, &F, xtitle, ytitle);
  draw_curves(cr, &F, c, n);
  draw_legend(cr, &F, c, n);
  draw_set_font(cr, 16 * F.s, true);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_move_to(cr, (w - draw_advance(cr, title)) / 2, 12 * F.s + fe.ascent);
  cairo_show_text(cr, title);
}

static enum intrus_status check_picture(const char *out, int n, int width, int height,
                                        const char *what, struct intrus_error *err) {
  size_t len = strlen(out);
  if (len < 4 || strcasecmp(out + len - 4, ".png"))
    return intrus_error_set(err, INTRUS_ERR_INVALID, "%s: the picture's name must end in .png",
                            out);
  if (n < 1 || width < PLOT_MIN_SIDE || width > PLOT_MAX_SIDE || height < PLOT_MIN_SIDE ||
      height > PLOT_MAX_SIDE)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "%s: %d %s in %d x %d pixels (want one or more, sides %d..%d)", out,
                            n, what, width, height, PLOT_MIN_SIDE, PLOT_MAX_SIDE);
  return INTRUS_OK;
}

struct picture {
  const struct curve *c;
  int n;
  char *xtitle, *ytitle, *title;
  int width, height;
};

static void paint(cairo_t *cr, void *user) {
  const struct picture *p = user;
  draw(cr, p->width, p->height, p->c, p->n, p->xtitle, p->ytitle, p->title);
}

/* Draws the curves into the PNG out, built in memory and written atomically. */
static enum intrus_status render(const char *out, const struct curve *c, int n,
                                 const char *xtitle, const char *ytitle, const char *title_text,
                                 int width, int height, struct intrus_error *err) {
  struct picture pic = {c, n, draw_text(xtitle), draw_text(ytitle), draw_text(title_text),
                        width, height};
  enum intrus_status st = draw_png(out, width, height, paint, &pic, "the curves", err);
  free(pic.xtitle);
  free(pic.ytitle);
  free(pic.title);
  return st;
}

static void free_curves(struct curve *c, int n) {
  for (int i = 0; i < n; i++) {
    free(c[i].label);
    free(c[i].p);
  }
  free(c);
}

enum intrus_status intrus_plot_runs(const char *out, int n, const char *const *run_dirs,
                                    const char *const *labels, const struct plot_options *opt,
                                    struct intrus_error *err) {
  enum intrus_status st = check_picture(out, n, opt->width, opt->height, "runs", err);
  if (st) return st;
  struct curve *c = xcalloc((size_t)n, sizeof *c);
  for (int i = 0; i < n && !st; i++) {
    char *path = xmalloc(strlen(run_dirs[i]) + sizeof "/train.log");
    sprintf(path, "%s/train.log", run_dirs[i]);
    st = read_log(path, opt, &c[i], err);
    free(path);
    char *name = labels && labels[i] ? xstrdup(labels[i]) : base_name(run_dirs[i]);
    c[i].label = draw_text(name);
    free(name);
  }
  if (!st) {
    static const char *const x_word[] = {"step", "training time"};
    char made[128];
    snprintf(made, sizeof made, "%s by %s", y_title[opt->y], x_word[opt->x]);
    made[0] = (char)toupper((unsigned char)made[0]);
    st = render(out, c, n, opt->x == PLOT_X_TIME ? "training time (minutes)" : "step",
                y_title[opt->y], opt->title ? opt->title : made, opt->width, opt->height, err);
  }
  free_curves(c, n);
  return st;
}

enum intrus_status intrus_plot_series(const char *out, int n, const struct plot_series *s,
                                      const char *xtitle, const char *ytitle, const char *title,
                                      int width, int height, struct intrus_error *err) {
  enum intrus_status st = check_picture(out, n, width, height, "series", err);
  if (st) return st;
  for (int i = 0; i < n; i++)
    if (s[i].n == 0)
      return intrus_error_set(err, INTRUS_ERR_INVALID, "%s: series '%s' has no point", out,
                              s[i].label);
  struct curve *c = xcalloc((size_t)n, sizeof *c);
  for (int i = 0; i < n; i++) {
    c[i].label = draw_text(s[i].label);
    c[i].p = xcalloc(s[i].n, sizeof *c[i].p);
    c[i].n = c[i].cap = s[i].n;
    for (size_t j = 0; j < s[i].n; j++) c[i].p[j] = (struct point){s[i].x[j], s[i].y[j], 0};
  }
  st = render(out, c, n, xtitle, ytitle, title, width, height, err);
  free_curves(c, n);
  return st;
}

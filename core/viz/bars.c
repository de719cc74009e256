/* Grouped bar charts (bars.h). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cairo.h>

#include "bars.h"
#include "draw.h"
#include "plot.h"

static double font_height(cairo_t *cr, cairo_font_extents_t *fe) {
  cairo_font_extents(cr, fe);
  return fe->ascent + fe->descent;
}

static void show_centred(cairo_t *cr, const char *text, double x, double baseline) {
  char *t = draw_text(text);
  cairo_move_to(cr, x - draw_advance(cr, t) / 2, baseline);
  cairo_show_text(cr, t);
  free(t);
}

/* Value ticks every 0.1, 0.2, 0.5, ... so that 4 to 10 of them span the axis. */
static double tick_step(double span) {
  double e = pow(10, floor(log10(span))), steps[] = {0.1, 0.2, 0.5, 1, 2, 5, 10};
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
    if (span / (steps[i] * e) <= 10) return steps[i] * e;
  return 10 * e;
}

static void paint(cairo_t *cr, void *user) {
  const struct bar_chart *c = user;
  const double s = fmax(0.6, fmin(3.0, fmin(c->width / 900.0, c->height / 560.0)));
  const double margin = 14 * s, gap = 6 * s;
  cairo_font_extents_t fe;
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  draw_set_font(cr, 16 * s, true);
  double title_h = font_height(cr, &fe);
  cairo_set_source_rgb(cr, 0, 0, 0);
  show_centred(cr, c->title, c->width / 2.0, margin + fe.ascent);
  draw_set_font(cr, 12 * s, false);
  double label_h = font_height(cr, &fe), ylab = 0;
  double step = tick_step(c->ymax - c->ymin);
  int nticks = (int)floor((c->ymax - c->ymin) / step + 1e-9) + 1;
  char buf[64];
  for (int i = 0; i < nticks; i++) {
    snprintf(buf, sizeof buf, "%.*f", step < 1 ? 1 : 0, c->ymin + i * step);
    ylab = fmax(ylab, draw_advance(cr, buf));
  }
  /* Legend row under the title, categories under the plot. */
  double legend_h = label_h * 1.6;
  double x0 = margin + label_h + gap + ylab + gap, x1 = c->width - margin;
  double y0 = margin + title_h + gap + legend_h + gap;
  /* Each group takes an equal share of the width; category names wider than it
   * alternate between two rows. */
  const double group_w = (x1 - x0) / c->ncat;
  bool stagger = false;
  for (int j = 0; j < c->ncat; j++)
    if (draw_advance(cr, c->categories[j]) > group_w - gap) stagger = true;
  double y1 = c->height - margin - (stagger ? 2 : 1) * label_h - gap;
  double sx = 0;
  /* Legend: swatch and name per series, centred. */
  double total = 0, sw = 14 * s;
  for (int k = 0; k < c->nseries; k++) total += sw + gap + draw_advance(cr, c->series[k]) + 3 * gap;
  sx = (c->width - total) / 2;
  double ly = margin + title_h + gap;
  for (int k = 0; k < c->nseries; k++) {
    double rgb[3];
    intrus_plot_colour(k, rgb);
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
    cairo_rectangle(cr, sx, ly + (legend_h - sw) / 2, sw, sw);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    char *t = draw_text(c->series[k]);
    cairo_move_to(cr, sx + sw + gap, ly + legend_h / 2 + (fe.ascent - fe.descent) / 2);
    cairo_show_text(cr, t);
    sx += sw + gap + draw_advance(cr, t) + 3 * gap;
    free(t);
  }
  /* Grid and value ticks. */
  cairo_set_line_width(cr, 1.0);
  for (int i = 0; i < nticks; i++) {
    double v = c->ymin + i * step;
    double y = round(y1 - (v - c->ymin) / (c->ymax - c->ymin) * (y1 - y0)) + 0.5;
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, x0, y);
    cairo_line_to(cr, x1, y);
    cairo_stroke(cr);
    snprintf(buf, sizeof buf, "%.*f", step < 1 ? 1 : 0, v);
    cairo_set_source_rgb(cr, 0.25, 0.25, 0.25);
    cairo_move_to(cr, x0 - gap - draw_advance(cr, buf), y + (fe.ascent - fe.descent) / 2);
    cairo_show_text(cr, buf);
  }
  /* Bars: 70% of each group's width. */
  double bar_w = group_w * 0.7 / c->nseries;
  for (int j = 0; j < c->ncat; j++) {
    double gx = x0 + j * group_w + group_w * 0.15;
    for (int k = 0; k < c->nseries; k++) {
      double v = c->value[k * c->ncat + j];
      if (!isfinite(v)) continue;
      double e = c->error ? c->error[k * c->ncat + j] : 0.0;
      double yv = y1 - (v - c->ymin) / (c->ymax - c->ymin) * (y1 - y0);
      double rgb[3];
      intrus_plot_colour(k, rgb);
      cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
      cairo_rectangle(cr, gx + k * bar_w + 1, yv, bar_w - 2, y1 - yv);
      cairo_fill(cr);
      double ytop = yv;
      if (e > 0) {
        double ya = y1 - (v + e - c->ymin) / (c->ymax - c->ymin) * (y1 - y0);
        double yb = y1 - (v - e - c->ymin) / (c->ymax - c->ymin) * (y1 - y0);
        double cx = gx + (k + 0.5) * bar_w;
        cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
        cairo_set_line_width(cr, 1.5 * s);
        cairo_move_to(cr, cx, ya);
        cairo_line_to(cr, cx, yb);
        cairo_move_to(cr, cx - bar_w * 0.15, ya);
        cairo_line_to(cr, cx + bar_w * 0.15, ya);
        cairo_move_to(cr, cx - bar_w * 0.15, yb);
        cairo_line_to(cr, cx + bar_w * 0.15, yb);
        cairo_stroke(cr);
        ytop = fmin(ytop, ya);
      }
      snprintf(buf, sizeof buf, "%.2f", v);
      cairo_set_source_rgb(cr, 0, 0, 0);
      show_centred(cr, buf, gx + (k + 0.5) * bar_w, ytop - gap);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    show_centred(cr, c->categories[j], x0 + (j + 0.5) * group_w,
                 y1 + gap + fe.ascent + (stagger && j % 2 ? label_h : 0));
  }
  cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
  cairo_set_line_width(cr, 1.0);
  cairo_rectangle(cr, round(x0) + 0.5, round(y0) + 0.5, round(x1 - x0), round(y1 - y0));
  cairo_stroke(cr);
  /* The value axis title, rotated. */
  draw_set_font(cr, 13 * s, false);
  cairo_font_extents(cr, &fe);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_save(cr);
  cairo_translate(cr, margin + fe.ascent, (y0 + y1) / 2);
  cairo_rotate(cr, -M_PI / 2);
  show_centred(cr, c->ytitle, 0, 0);
  cairo_restore(cr);
}

enum intrus_status intrus_bars_draw(const char *path, const struct bar_chart *c,
                                    struct intrus_error *err) {
  size_t len = strlen(path);
  if (len < 4 || strcasecmp(path + len - 4, ".png"))
    return intrus_error_set(err, INTRUS_ERR_INVALID, "%s: the picture's name must end in .png",
                            path);
  if (c->ncat < 1 || c->nseries < 1 || c->width < 200 || c->width > 8000 || c->height < 200 ||
      c->height > 8000 || !(c->ymax > c->ymin))
    return intrus_error_set(err, INTRUS_ERR_INVALID, "%s: %d groups of %d bars in %d x %d",
                            path, c->ncat, c->nseries, c->width, c->height);
  return draw_png(path, c->width, c->height, paint, (void *)c, "the chart", err);
}

/* Grouped bar charts with error bars (cairo, PNG): one group per category, one bar per
 * series inside it, the value printed above each bar. `intrus analyze order` draws the
 * relative generation index of word classes with it. */
#ifndef INTRUS_BARS_H
#define INTRUS_BARS_H

#include "intrus/status.h"

struct bar_chart {
  const char *title, *ytitle;
  int ncat, nseries;
  const char *const *categories; /* ncat names under the groups */
  const char *const *series;     /* nseries names in the legend */
  const double *value;           /* [nseries][ncat]; NAN: no bar */
  const double *error;           /* [nseries][ncat] half-widths, or NULL */
  double ymin, ymax;             /* the value axis */
  int width, height;             /* pixels, 200..8000 */
};

/* Draws the chart into the PNG path (a temporary file, then renamed). */
enum intrus_status intrus_bars_draw(const char *path, const struct bar_chart *c,
                                    struct intrus_error *err);

#endif

/* Learning curves: several runs' train.log drawn into one PNG with cairo (`intrus plot`).
 *
 * train.log is a TSV whose header names the columns (step, loss, lr, tokens_per_s,
 * valid_loss, valid_bleu and, since training time is recorded, train_s); an empty cell
 * means "not measured at this row". */
#ifndef INTRUS_PLOT_H
#define INTRUS_PLOT_H

#include <stddef.h>

#include "intrus/status.h"

enum plot_x { PLOT_X_STEP, PLOT_X_TIME };                     /* step | train_s (minutes) */
enum plot_y { PLOT_Y_BLEU, PLOT_Y_VALID_LOSS, PLOT_Y_LOSS };  /* valid_bleu | valid_loss | loss */

#define PLOT_MIN_SIDE 200
#define PLOT_MAX_SIDE 8000

struct plot_options {
  enum plot_x x;
  enum plot_y y;
  const char *title; /* NULL: one made from the axes */
  int width, height; /* pixels, PLOT_MIN_SIDE..PLOT_MAX_SIDE */
};

/* Reads RUN_DIR/train.log of each of the n runs and draws one coloured curve per run
 * into the PNG out (written to a temporary file beside it, then renamed: an error
 * leaves no file). labels[i] (labels or the entry may be NULL) names run i in the
 * legend; the default is the run directory's base name. Rows whose y cell is empty are
 * skipped; when a resumed run logged a step again, the later rows replace the earlier.
 * Errors: INTRUS_ERR_IO (a log that cannot be read, the PNG that cannot be written),
 * INTRUS_ERR_DATA (a malformed row, as file:line; a run without any value of y; --x time
 * on a log without train_s), INTRUS_ERR_INVALID (bad options). */
enum intrus_status intrus_plot_runs(const char *out, int n, const char *const *run_dirs,
                                    const char *const *labels, const struct plot_options *opt,
                                    struct intrus_error *err);

/* Curves from numbers: series i is the points (x[j], y[j]), j < n, joined in order. */
struct plot_series {
  const char *label;
  size_t n;
  const double *x, *y;
};
/* Draws n series into the PNG out as intrus_plot_runs draws runs (same axes, legend,
 * markers; written to a temporary file, then renamed). */
enum intrus_status intrus_plot_series(const char *out, int n, const struct plot_series *s,
                                      const char *xtitle, const char *ytitle, const char *title,
                                      int width, int height, struct intrus_error *err);

/* The colour of run i's curve (the palette repeats after 10 runs). */
void intrus_plot_colour(int i, double rgb[3]);

#endif

/* Decoding order: how an insertion model wrote each output (the paper's Figure 1),
 * as text, as numbers for order analysis, and as pictures (PNG, SVG; drawn with cairo). */
#ifndef INTRUS_TRACE_H
#define INTRUS_TRACE_H

#include <stdio.h>

#include "intrus/insertion.h"
#include "intrus/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One sentence's trajectory: len insertions; words[t] is the display text of the token
 * inserted at step t (steps[t].token), e.g. a BPE piece. */
struct intrus_trace {
  int len;
  const struct intrus_ins_step *steps;
  const char *const *words;
  /* Optional: the input image the output was read from, drawn above the steps
   * (image-to-text models): [channels, height, width] floats in [0, 1], channels 1 or
   * 3. NULL: none. */
  const float *image;
  int image_channels, image_height, image_width;
};

/* Text, one line per step (Figure 1): "<step>\t<the partial output after the step, the
 * word just inserted in [brackets]>", preceded by a header line "# sentence <index>"
 * and followed by an empty line. An empty output writes the header and one line
 * "0\t(empty)". */
enum intrus_status intrus_trace_write_text(FILE *f, const char *name, int index,
                                           const struct intrus_trace *t,
                                           struct intrus_error *err);

/* Relative generation index of every output token, in output (reading) order:
 * rel[j] = (step at which output token j was inserted) / (len - 1); 0 when len == 1.
 * order[j] receives that step (may be NULL). */
void intrus_trace_relative_index(const struct intrus_trace *t, double *rel, int *order);

/* Draws the steps as a picture: one row per step, each word in its final column, the
 * word inserted at that step highlighted; t->image, when given, above the rows (scaled
 * by a whole factor to at least 48 pixels high, at most the rows' width); a legend
 * under the rows. A word's joiner mark (U+FFED, which common fonts lack) is drawn as a
 * small square of the picture's own; the legend says what it and a piece's "@@" mean
 * when the words have them. The format follows path's extension: ".png" or ".svg"
 * (anything else is an error). Written to a temporary file and renamed. */
enum intrus_status intrus_trace_draw(const char *path, const struct intrus_trace *t,
                                     struct intrus_error *err);

/* Several traces as one picture, one panel under another in the order given (e.g. the
 * same sentence decoded by several systems), each under its title (titles may be NULL:
 * no titles) and one legend at the bottom for all of them. n >= 1. */
enum intrus_status intrus_trace_draw_panels(const char *path, const struct intrus_trace *t,
                                            const char *const *titles, int n,
                                            struct intrus_error *err);

#ifdef __cplusplus
}
#endif
#endif

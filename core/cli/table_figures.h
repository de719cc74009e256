/* A table's order figures (the table file's `figures` group, table_spec.h): how each
 * system of one column writes, drawn from its cells' test decodes. */
#ifndef INTRUS_TABLE_FIGURES_H
#define INTRUS_TABLE_FIGURES_H

#include <stdbool.h>
#include <stdio.h>

#include "intrus/status.h"
#include "table_run.h"

/* Into OUT_DIR/figures/, for the finished cells of the figures column:
 *   order-ROW.png  per insertion row, when each kind of word is written (`intrus analyze
 *                  order` over its test outputs: the paper's Figure 5), its table on stdout
 *   order.png      all insertion rows in one chart
 *   sentence-N.png / .svg  test line N as each row wrote it, one panel per row
 * from each cell's RUN_DIR/test.order.tsv (written by its test decode). A finished cell
 * decoded before runs kept that file has its test set decoded again, unless no_decode
 * (`--no-train`): then it is left out with a note on stderr. */
enum intrus_status table_figures(const struct table_state *s, const char *out_dir,
                                 const char *plugin_path, bool no_decode,
                                 struct intrus_error *err);

#endif

/* A results table file (`intrus table`): rows are systems, columns are tasks, and each
 * cell names the experiment file that measures it.
 *
 *   name = "table2-en-ru";                # default: the file's name without .cfg
 *   title = "Table 2: ablations on En-Ru";
 *   baseline = "l2r";                     # the row each other row is tested against
 *   bootstrap_samples = 1000; bootstrap_seed = 12345; p_level = 0.05;
 *   columns = ( { name = "en-ru"; title = "En-Ru"; metric = "bleu"; } );
 *   rows = (
 *     { name = "l2r"; title = "Left-to-right";
 *       experiments = { en-ru = "en-ru/l2r.cfg"; };   # relative to this file
 *       paper = { en-ru = 27.02; }; },                # the paper's number, optional
 *     ...
 *   );
 *
 * A row may leave a column out (no experiment: the cell stays empty).
 *
 *   figures = { column = "en-de"; lang = "de"; sentences = [3, 11, 27]; };  # optional
 *
 * asks for the order figures of one column's finished cells (table_figures.h). */
#ifndef INTRUS_TABLE_SPEC_H
#define INTRUS_TABLE_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "intrus/config.h"
#include "intrus/status.h"

#define TABLE_MAX_COLUMNS 16
#define TABLE_MAX_ROWS 32
#define TABLE_MAX_FIGURE_SENTENCES 8

struct table_column {
  const char *name, *title, *metric; /* metric: "bleu" or "cider" (an evaluator plugin) */
};

struct table_cell {
  bool present;      /* the row has an experiment for this column */
  char experiment[4200]; /* its path, resolved against the table file's directory */
  bool has_paper;
  double paper;
};

struct table_row {
  const char *name, *title;
  struct table_cell cells[TABLE_MAX_COLUMNS];
};

/* The optional `figures` group. */
struct table_figures {
  bool present;
  int column;       /* its test outputs are drawn */
  const char *lang; /* their language, for the word classes ("": punctuation and words) */
  int nsentences;
  long long sentences[TABLE_MAX_FIGURE_SENTENCES]; /* test lines (1-based) drawn by every row */
};

struct table_spec {
  struct intrus_config *cfg; /* owns the strings above */
  char name[128];
  const char *title;
  int baseline; /* row index, -1 without a baseline */
  int samples;
  uint64_t seed;
  double p_level;
  int ncols, nrows;
  struct table_column cols[TABLE_MAX_COLUMNS];
  struct table_row rows[TABLE_MAX_ROWS];
  struct table_figures figures;
};

/* Reads and checks path strictly (unknown keys, duplicate names, a baseline that is no
 * row, an experiment column that is no column are errors naming file and line).
 * *spec is allocated; free it with table_spec_free. */
enum intrus_status table_spec_load(const char *path, struct table_spec **spec,
                                   struct intrus_error *err);
/* The same for a config already loaded from path, which *spec then owns (freed here on
 * an error). */
enum intrus_status table_spec_read(struct intrus_config *cfg, const char *path,
                                   struct table_spec **spec, struct intrus_error *err);
void table_spec_free(struct table_spec *spec);

#endif

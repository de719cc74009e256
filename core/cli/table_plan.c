/* Which cells of a results table this invocation runs (--row / --column), and the
 * plan printed before it does: each cell's state and estimated time, and the total. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "table_run.h"

/* "a, b, c": the names an unknown --row or --column could have been. */
static void names_text(const char *const *names, int n, char *out, size_t size) {
  size_t at = 0;
  out[0] = '\0';
  for (int i = 0; i < n && at < size; i++) {
    int w = snprintf(out + at, size - at, "%s%s", i ? ", " : "", names[i]);
    if (w < 0) break;
    at += (size_t)w;
  }
}

/* The index of name among names, or -1 with err set (what names there are). */
static int select_find(const char *what, const char *name, const char *const *names, int n,
                       const char *table, struct intrus_error *err) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return i;
  char all[2048];
  names_text(names, n, all, sizeof all);
  intrus_error_set(err, INTRUS_ERR_INVALID, "--%s %s: %s has no %s of that name (%ss: %s)",
                   what, name, table, what, what, all);
  return -1;
}

enum intrus_status table_select(struct table_state *s, const char *const *rows, int nrows,
                                const char *const *cols, int ncols, struct intrus_error *err) {
  const struct table_spec *t = s->t;
  const char *row_names[TABLE_MAX_ROWS], *col_names[TABLE_MAX_COLUMNS];
  bool row_on[TABLE_MAX_ROWS] = {0}, col_on[TABLE_MAX_COLUMNS] = {0};
  for (int r = 0; r < t->nrows; r++) row_names[r] = t->rows[r].name;
  for (int c = 0; c < t->ncols; c++) col_names[c] = t->cols[c].name;
  for (int i = 0; i < nrows; i++) {
    int r = select_find("row", rows[i], row_names, t->nrows, t->name, err);
    if (r < 0) return err->status;
    row_on[r] = true;
  }
  for (int i = 0; i < ncols; i++) {
    int c = select_find("column", cols[i], col_names, t->ncols, t->name, err);
    if (c < 0) return err->status;
    col_on[c] = true;
  }
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++)
      s->cells[r][c].held = (nrows > 0 && !row_on[r]) || (ncols > 0 && !col_on[c]);
  /* A run is one: a cell that shares its run with a selected cell (BLEU and CIDEr-D of
   * the same captions) is trained with it. */
  for (int k = 0; k < t->nrows * t->ncols; k++) {
    struct table_cell_state *cs = &s->cells[k / t->ncols][k % t->ncols];
    for (int o = 0; o < t->nrows * t->ncols && cs->held && cs->state != CELL_EMPTY; o++) {
      const struct table_cell_state *os = &s->cells[o / t->ncols][o % t->ncols];
      if (!os->held && os->state != CELL_EMPTY && strcmp(os->run_dir, cs->run_dir) == 0)
        cs->held = false;
    }
  }
  return INTRUS_OK;
}

void table_duration(double sec, char *out, size_t n) {
  if (!isfinite(sec)) snprintf(out, n, "?");
  else if (sec < 90) snprintf(out, n, "%.0f s", sec);
  else if (sec < 5400) snprintf(out, n, "%.0f min", sec / 60);
  else if (sec < 172800) snprintf(out, n, "%.1f h", sec / 3600);
  else snprintf(out, n, "%.1f days", sec / 86400);
}

void table_print_plan(const struct table_state *s, FILE *f) {
  const struct table_spec *t = s->t;
  double total = 0.0, held_total = 0.0;
  int runs = 0, modelled = 0, held = 0;
  fprintf(f, "%s (%s)\n", t->title, t->name);
  int wr = 4, wc = 6; /* widths of the row and column names */
  for (int r = 0; r < t->nrows; r++)
    if ((int)strlen(t->rows[r].name) > wr) wr = (int)strlen(t->rows[r].name);
  for (int c = 0; c < t->ncols; c++)
    if ((int)strlen(t->cols[c].name) > wc) wc = (int)strlen(t->cols[c].name);
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++) {
      const struct table_cell_state *cs = &s->cells[r][c];
      if (cs->state == CELL_EMPTY) continue;
      char est[32];
      table_duration(cs->estimate_s, est, sizeof est);
      fprintf(f, "  %-*s  %-*s  ", wr, t->rows[r].name, wc, t->cols[c].name);
      switch (cs->state) {
      case CELL_DONE: fprintf(f, "done      %s", cs->run_dir); break;
      case CELL_PARTIAL:
        fprintf(f, "resume    %s at step %ld of %ld, %s%s", cs->run_dir, cs->step,
                cs->total_steps, cs->measured ? "" : "~", est);
        break;
      case CELL_NEW:
        fprintf(f, "train     %s, %ld steps, %s%s", cs->run_dir, cs->total_steps,
                cs->measured ? "" : "~", est);
        break;
      default: fprintf(f, "failed    %s: %s", cs->run_dir, cs->error); break;
      }
      if (cs->held && table_cell_unfinished(cs)) fputs("  (not selected)", f);
      fputc('\n', f);
      /* Cells that share a run (one experiment in two columns: BLEU and CIDEr-D of
       * the same captions) train it once. */
      bool first = true;
      for (int k = 0; k < r * t->ncols + c && first; k++) {
        const struct table_cell_state *o = &s->cells[k / t->ncols][k % t->ncols];
        if (o->state != CELL_EMPTY && strcmp(o->run_dir, cs->run_dir) == 0) first = false;
      }
      if (first && cs->held && table_cell_unfinished(cs)) {
        held++;
        if (isfinite(cs->estimate_s)) held_total += cs->estimate_s;
      } else if (first && table_cell_unfinished(cs)) {
        runs++;
        modelled += !cs->measured;
        if (isfinite(cs->estimate_s)) total += cs->estimate_s;
      }
    }
  char est[32];
  table_duration(total, est, sizeof est);
  if (!runs) fprintf(f, "nothing to train\n");
  else
    fprintf(f, "%d run%s to train, about %s of training%s\n", runs, runs == 1 ? "" : "s", est,
            modelled ? " (~: a phase of a kind no run has timed is timed from the model's "
                       "size, scaled by how far that model was off on the runs that were "
                       "timed; validation and the test decode come on top)"
                     : " (from the runs' own speed; validation and the test decode come on "
                       "top)");
  if (held) {
    table_duration(held_total, est, sizeof est);
    fprintf(f, "%d more run%s not selected by --row / --column (about %s): not run now\n",
            held, held == 1 ? "" : "s", est);
  }
  table_data_notes(s, f, "note: ");
}

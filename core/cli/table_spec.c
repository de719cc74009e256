/* Reading a results table file (table_spec.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/eval.h"
#include "table_spec.h"

static const char name_chars[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-";

static enum intrus_status read_name(const intrus_cfg *g, const char **out,
                                    struct intrus_error *err) {
  enum intrus_status st = intrus_cfg_string_req(g, "name", out, err);
  if (st) return st;
  size_t len = strlen(*out);
  if (len == 0 || len > 64 || strspn(*out, name_chars) != len)
    return intrus_cfg_error(g, "name", err, "wants 1 to 64 of the characters A-Z a-z 0-9 . _ + -");
  return INTRUS_OK;
}

/* dir of path (with its slash), or "" for a bare file name. */
static void dir_of(const char *path, char *out, size_t n) {
  const char *slash = strrchr(path, '/');
  size_t len = slash ? (size_t)(slash - path + 1) : 0;
  snprintf(out, n, "%.*s", (int)len, path);
}

static enum intrus_status read_columns(struct table_spec *t, const intrus_cfg *root,
                                       struct intrus_error *err) {
  enum intrus_status st;
  if ((st = intrus_cfg_list_len(root, "columns", &t->ncols, err))) return st;
  if (t->ncols < 1 || t->ncols > TABLE_MAX_COLUMNS)
    return intrus_cfg_error(root, "columns", err, "wants 1 to %d columns, not %d",
                            TABLE_MAX_COLUMNS, t->ncols);
  static const char *const metrics[] = {"bleu", "cider", NULL};
  for (int c = 0; c < t->ncols; c++) {
    struct table_column *col = &t->cols[c];
    const intrus_cfg *g;
    int metric;
    if ((st = intrus_cfg_list_group(root, "columns", c, &g, err)) ||
        (st = read_name(g, &col->name, err)) ||
        (st = intrus_cfg_string(g, "title", col->name, &col->title, err)) ||
        (st = intrus_cfg_choice(g, "metric", "bleu", metrics, &metric, err)) ||
        (st = intrus_cfg_check_unknown(g, err)))
      return st;
    col->metric = metrics[metric];
    for (int k = 0; k < c; k++)
      if (strcmp(t->cols[k].name, col->name) == 0)
        return intrus_cfg_error(g, "name", err, "column '%s' is named twice", col->name);
  }
  return INTRUS_OK;
}

static enum intrus_status read_row(struct table_spec *t, const intrus_cfg *g, const char *dir,
                                   struct table_row *row, struct intrus_error *err) {
  const intrus_cfg *exps, *paper;
  enum intrus_status st;
  if ((st = read_name(g, &row->name, err)) ||
      (st = intrus_cfg_string(g, "title", row->name, &row->title, err)) ||
      (st = intrus_cfg_group_req(g, "experiments", &exps, err)) ||
      (st = intrus_cfg_group(g, "paper", &paper, err)))
    return st;
  int cells = 0;
  for (int c = 0; c < t->ncols; c++) {
    struct table_cell *cell = &row->cells[c];
    const char *col = t->cols[c].name, *exp;
    if (intrus_cfg_has(exps, col)) {
      if ((st = intrus_cfg_string_req(exps, col, &exp, err))) return st;
      if (!*exp) return intrus_cfg_error(exps, col, err, "wants an experiment file");
      cell->present = true;
      if (exp[0] == '/') snprintf(cell->experiment, sizeof cell->experiment, "%s", exp);
      else snprintf(cell->experiment, sizeof cell->experiment, "%s%s", dir, exp);
      cells++;
    }
    if (paper && intrus_cfg_has(paper, col)) {
      if ((st = intrus_cfg_double_req(paper, col, &cell->paper, err))) return st;
      cell->has_paper = true;
    }
  }
  /* Keys that are no column: a misspelt column name. */
  if ((st = intrus_cfg_check_unknown(exps, err)) ||
      (paper && (st = intrus_cfg_check_unknown(paper, err))) ||
      (st = intrus_cfg_check_unknown(g, err)))
    return st;
  if (!cells) return intrus_cfg_error(exps, NULL, err, "names no experiment");
  return INTRUS_OK;
}

static enum intrus_status read_figures(struct table_spec *t, const intrus_cfg *root,
                                       struct intrus_error *err) {
  const intrus_cfg *g;
  const char *column;
  enum intrus_status st;
  struct table_figures *f = &t->figures;
  static const long long first_three[] = {1, 2, 3};
  if ((st = intrus_cfg_group(root, "figures", &g, err)) || !g) return st;
  f->present = true;
  if ((st = intrus_cfg_string(g, "column", t->cols[0].name, &column, err)) ||
      (st = intrus_cfg_string(g, "lang", "", &f->lang, err)) ||
      (st = intrus_cfg_ints(g, "sentences", first_three, 3, 1, 100000000,
                            TABLE_MAX_FIGURE_SENTENCES, f->sentences, &f->nsentences, err)) ||
      (st = intrus_cfg_check_unknown(g, err)))
    return st;
  f->column = -1;
  for (int c = 0; c < t->ncols; c++)
    if (strcmp(t->cols[c].name, column) == 0) f->column = c;
  if (f->column < 0)
    return intrus_cfg_error(g, "column", err, "'%s' is not the name of a column", column);
  return INTRUS_OK;
}

static enum intrus_status read_spec(struct table_spec *t, const char *path,
                                    struct intrus_error *err) {
  const intrus_cfg *root = intrus_config_root(t->cfg);
  const char *name, *baseline;
  long long samples, seed;
  enum intrus_status st;
  /* Default name: the file's name without its directory and .cfg. */
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  size_t blen = strlen(base);
  if (blen > 4 && strcmp(base + blen - 4, ".cfg") == 0) blen -= 4;
  char defname[128];
  snprintf(defname, sizeof defname, "%.*s", (int)(blen < 64 ? blen : 64), base);
  if ((st = intrus_cfg_string(root, "name", defname, &name, err))) return st;
  size_t len = strlen(name);
  if (len == 0 || len > 64 || name[0] == '.' || strspn(name, name_chars) != len)
    return intrus_cfg_error(root, "name", err,
                            "wants 1 to 64 of the characters A-Z a-z 0-9 . _ + -, not starting "
                            "with '.' (it names the output directory; give name = \"...\")");
  snprintf(t->name, sizeof t->name, "%s", name);
  if ((st = intrus_cfg_string(root, "title", t->name, &t->title, err)) ||
      (st = intrus_cfg_string(root, "baseline", "", &baseline, err)) ||
      (st = intrus_cfg_int_range(root, "bootstrap_samples", INTRUS_BOOTSTRAP_DEFAULT_SAMPLES, 1,
                                 1000000, &samples, err)) ||
      (st = intrus_cfg_int_range(root, "bootstrap_seed", INTRUS_BOOTSTRAP_DEFAULT_SEED, 0,
                                 INT64_MAX, &seed, err)) ||
      (st = intrus_cfg_double_range(root, "p_level", 0.05, 1e-9, 0.5, &t->p_level, err)) ||
      (st = read_columns(t, root, err)))
    return st;
  t->samples = (int)samples;
  t->seed = (uint64_t)seed;
  char dir[4096];
  dir_of(path, dir, sizeof dir);
  if ((st = intrus_cfg_list_len(root, "rows", &t->nrows, err))) return st;
  if (t->nrows < 1 || t->nrows > TABLE_MAX_ROWS)
    return intrus_cfg_error(root, "rows", err, "wants 1 to %d rows, not %d", TABLE_MAX_ROWS,
                            t->nrows);
  for (int r = 0; r < t->nrows; r++) {
    const intrus_cfg *g;
    if ((st = intrus_cfg_list_group(root, "rows", r, &g, err)) ||
        (st = read_row(t, g, dir, &t->rows[r], err)))
      return st;
    for (int k = 0; k < r; k++)
      if (strcmp(t->rows[k].name, t->rows[r].name) == 0)
        return intrus_cfg_error(g, "name", err, "row '%s' is named twice", t->rows[r].name);
  }
  if ((st = read_figures(t, root, err))) return st;
  t->baseline = -1;
  if (*baseline) {
    for (int r = 0; r < t->nrows; r++)
      if (strcmp(t->rows[r].name, baseline) == 0) t->baseline = r;
    if (t->baseline < 0)
      return intrus_cfg_error(root, "baseline", err, "'%s' is not the name of a row", baseline);
  }
  return intrus_cfg_check_unknown(root, err);
}

enum intrus_status table_spec_load(const char *path, struct table_spec **spec,
                                   struct intrus_error *err) {
  *spec = NULL;
  struct intrus_config *cfg = intrus_config_load_file(path, err);
  return cfg ? table_spec_read(cfg, path, spec, err) : err->status;
}

enum intrus_status table_spec_read(struct intrus_config *cfg, const char *path,
                                   struct table_spec **spec, struct intrus_error *err) {
  *spec = NULL;
  struct table_spec *t = calloc(1, sizeof *t);
  if (!t) {
    intrus_config_free(cfg);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  t->cfg = cfg;
  enum intrus_status st = read_spec(t, path, err);
  if (st) {
    table_spec_free(t);
    return st;
  }
  *spec = t;
  return INTRUS_OK;
}

void table_spec_free(struct table_spec *spec) {
  if (!spec) return;
  if (spec->cfg) intrus_config_free(spec->cfg);
  free(spec);
}

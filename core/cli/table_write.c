/* table.md, table.csv and table.json of a results table. A cell shows only what was
 * measured: a cell not run (or failed) is marked so, never filled in. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/fileio.h"
#include "table_run.h"
#include "train/run_dir.h"

static const char *state_name(enum table_cell_kind k) {
  switch (k) {
  case CELL_EMPTY: return "none";
  case CELL_NEW: return "not run";
  case CELL_PARTIAL: return "not finished";
  case CELL_DONE: return "done";
  default: return "failed";
  }
}

/* sacreBLEU's p-value is 1/(samples+1) for two identical outputs (a zero difference is
 * never exceeded), so an equal score is never marked. */
static bool significant(const struct table_state *s, const struct table_cell_state *cs) {
  return cs->tested && cs->p_value < s->t->p_level && cs->score != cs->baseline_score;
}

/* "27.31", "28.10*", or what keeps the cell empty. */
static void cell_text(const struct table_state *s, const struct table_cell_state *cs, char *out,
                      size_t n) {
  if (cs->state == CELL_EMPTY) snprintf(out, n, " ");
  else if (!cs->scored) snprintf(out, n, "(%s)", state_name(cs->state));
  else snprintf(out, n, "%.2f%s", cs->score, significant(s, cs) ? "*" : "");
}

void table_print_markdown(const struct table_state *s, FILE *f) {
  const struct table_spec *t = s->t;
  fprintf(f, "| system |");
  for (int c = 0; c < t->ncols; c++) fprintf(f, " %s | paper |", t->cols[c].title);
  fprintf(f, "\n|---|");
  for (int c = 0; c < t->ncols; c++) fprintf(f, "---:|---:|");
  fputc('\n', f);
  for (int r = 0; r < t->nrows; r++) {
    fprintf(f, "| %s%s |", t->rows[r].title, r == t->baseline ? " (baseline)" : "");
    for (int c = 0; c < t->ncols; c++) {
      char cell[64];
      cell_text(s, &s->cells[r][c], cell, sizeof cell);
      fprintf(f, " %s |", cell);
      const struct table_cell *pc = &t->rows[r].cells[c];
      if (pc->has_paper) fprintf(f, " %.2f |", pc->paper);
      else fprintf(f, "  |");
    }
    fputc('\n', f);
  }
}

static void detail_rows(const struct table_state *s, FILE *f);

static void write_md(const struct table_state *s, FILE *f) {
  const struct table_spec *t = s->t;
  fprintf(f, "# %s\n\n", t->title);
  table_print_markdown(s, f);
  fputc('\n', f);
  if (t->baseline >= 0)
    fprintf(f, "`*`: differs from the baseline row (%s) with p < %g: paired bootstrap "
               "resampling of the test set, %d resamples, seed %llu (sacreBLEU's paired-bs "
               "p-value).\n",
            t->rows[t->baseline].title, t->p_level, t->samples, (unsigned long long)t->seed);
  table_order_markdown(s, f);
  char *notes = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&notes, &len);
  if (m) {
    table_data_notes(s, m, "- ");
    fclose(m);
    if (len) fprintf(f, "\nTraining data (each run's fingerprint of its training split, "
                        "from its tokenizer.txt):\n\n%s", notes);
    free(notes);
  }
  bool mixed = false;
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++) mixed = mixed || s->cells[r][c].setups > 1;
  if (mixed)
    fprintf(f, "\nTraining: seconds of training steps (train.log); \"(N setups)\": trained "
               "by N different CPUs, thread counts or kernels (sessions.tsv), so its time "
               "mixes their speeds and its losses are not those of one uninterrupted run "
               "bit for bit.\n");
  fprintf(f, "\n| row | column | run | steps | training | training data | length ratio | p |\n"
             "|---|---|---|---:|---:|---|---:|---:|\n");
  detail_rows(s, f);
}

/* One line per cell: where it ran, how long, its length ratio and p-value. */
static void detail_rows(const struct table_state *s, FILE *f) {
  const struct table_spec *t = s->t;
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++) {
      const struct table_cell_state *cs = &s->cells[r][c];
      if (cs->state == CELL_EMPTY) continue;
      fprintf(f, "| %s | %s | `%s` | %ld | ", t->rows[r].name, t->cols[c].name, cs->run_dir,
              cs->step > 0 ? cs->step : 0L);
      if (isfinite(cs->train_s)) fprintf(f, "%.0f s", cs->train_s);
      if (cs->setups > 1) fprintf(f, " (%d setups)", cs->setups);
      char data[64];
      table_data_text(cs, data, sizeof data);
      fprintf(f, " | %s | ", cs->state == CELL_NEW ? "" : data);
      if (cs->scored && isfinite(cs->ratio)) fprintf(f, "%.3f", cs->ratio);
      fputs(" | ", f);
      if (cs->tested) fprintf(f, "%.4f", cs->p_value);
      else if (cs->state != CELL_DONE) fputs(state_name(cs->state), f);
      fputs(" |\n", f);
    }
}


static void json_number(FILE *f, bool have, double v, const char *fmt) {
  if (have && isfinite(v)) fprintf(f, fmt, v);
  else fputs("null", f);
}

static void write_json(const struct table_state *s, FILE *f) {
  const struct table_spec *t = s->t;
  fputs("{\n \"name\": ", f);
  cli_json_string(f, t->name);
  fputs(",\n \"title\": ", f);
  cli_json_string(f, t->title);
  fputs(",\n \"baseline\": ", f);
  if (t->baseline >= 0) cli_json_string(f, t->rows[t->baseline].name);
  else fputs("null", f);
  fprintf(f, ",\n \"bootstrap_samples\": %d,\n \"bootstrap_seed\": %llu,\n \"p_level\": %g,\n"
             " \"cells\": [",
          t->samples, (unsigned long long)t->seed, t->p_level);
  bool first = true;
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++) {
      const struct table_cell_state *cs = &s->cells[r][c];
      const struct table_cell *pc = &t->rows[r].cells[c];
      if (cs->state == CELL_EMPTY) continue;
      fputs(first ? "\n  {" : ",\n  {", f);
      first = false;
      fputs("\"row\": ", f);
      cli_json_string(f, t->rows[r].name);
      fputs(", \"column\": ", f);
      cli_json_string(f, t->cols[c].name);
      fputs(", \"metric\": ", f);
      cli_json_string(f, t->cols[c].metric);
      fputs(", \"experiment\": ", f);
      cli_json_string(f, cs->experiment);
      fputs(", \"run_dir\": ", f);
      cli_json_string(f, cs->run_dir);
      fputs(", \"state\": ", f);
      cli_json_string(f, state_name(cs->state));
      fprintf(f, ", \"steps\": %ld, \"train_s\": ", cs->step > 0 ? cs->step : 0L);
      json_number(f, true, cs->train_s, "%.1f");
      fputs(", \"setups\": ", f);
      if (cs->setups > 0) fprintf(f, "%d", cs->setups);
      else fputs("null", f);
      fputs(", \"score\": ", f);
      json_number(f, cs->scored, cs->score, "%.4f");
      fputs(", \"ratio\": ", f);
      json_number(f, cs->scored, cs->ratio, "%.4f");
      fputs(", \"paper\": ", f);
      json_number(f, pc->has_paper, pc->paper, "%.2f");
      fputs(", \"p_value\": ", f);
      json_number(f, cs->tested, cs->p_value, "%.6f");
      fputs(", \"significant\": ", f);
      fputs(cs->tested ? (significant(s, cs) ? "true" : "false") : "null", f);
      fputs(", \"train_data\": ", f);
      if (cs->data_recorded) fprintf(f, "\"%016" PRIx64 "\"", cs->data_trained);
      else fputs("null", f);
      fputs(", \"train_data_now\": ", f);
      if (cs->data_known) fprintf(f, "\"%016" PRIx64 "\"", cs->data_now);
      else fputs("null", f);
      if (cs->scored) {
        fputs(", \"signature\": ", f);
        cli_json_string(f, cs->signature);
      }
      if (cs->state == CELL_FAILED) {
        fputs(", \"error\": ", f);
        cli_json_string(f, cs->error);
      }
      fputc('}', f);
    }
  fputs("\n ],\n \"orderings\": [", f);
  for (int i = 0; i < s->npairs; i++) {
    const struct table_pair *p = &s->pairs[i];
    static const char *const order[] = {"same", "reversed", "tie_ours", "tie_paper"};
    fputs(i ? ",\n  {" : "\n  {", f);
    fputs("\"column\": ", f);
    cli_json_string(f, t->cols[p->col].name);
    fputs(", \"higher_in_paper\": ", f);
    cli_json_string(f, t->rows[p->hi].name);
    fputs(", \"lower_in_paper\": ", f);
    cli_json_string(f, t->rows[p->lo].name);
    fprintf(f, ", \"paper\": [%.2f, %.2f], \"ours\": [%.4f, %.4f], \"order\": \"%s\", "
               "\"p_value\": ",
            t->rows[p->hi].cells[p->col].paper, t->rows[p->lo].cells[p->col].paper,
            s->cells[p->hi][p->col].score, s->cells[p->lo][p->col].score,
            order[table_pair_order(s, p)]);
    json_number(f, p->tested, p->p_value, "%.6f");
    fputs(", \"significant\": ", f);
    fputs(p->tested ? (table_pair_significant(s, p) ? "true" : "false") : "null", f);
    fputc('}', f);
  }
  fputs(s->npairs ? "\n ]\n}\n" : "]\n}\n", f);
}

/* RFC 4180: quotes around a field that needs them, quotes inside doubled. */
static void csv_field(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static void write_csv(const struct table_state *s, FILE *f) {
  const struct table_spec *t = s->t;
  fputs("row,column,metric,score,paper,significant,p_value,ratio,state,steps,train_s,"
        "experiment,run_dir,train_data\n", f);
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++) {
      const struct table_cell_state *cs = &s->cells[r][c];
      const struct table_cell *pc = &t->rows[r].cells[c];
      if (cs->state == CELL_EMPTY) continue;
      csv_field(f, t->rows[r].name);
      fputc(',', f);
      csv_field(f, t->cols[c].name);
      fprintf(f, ",%s,", t->cols[c].metric);
      if (cs->scored) fprintf(f, "%.4f", cs->score);
      fputc(',', f);
      if (pc->has_paper) fprintf(f, "%.2f", pc->paper);
      fputc(',', f);
      if (cs->tested) fputs(significant(s, cs) ? "yes" : "no", f);
      fputc(',', f);
      if (cs->tested) fprintf(f, "%.6f", cs->p_value);
      fputc(',', f);
      if (cs->scored && isfinite(cs->ratio)) fprintf(f, "%.4f", cs->ratio);
      fprintf(f, ",%s,%ld,", state_name(cs->state), cs->step > 0 ? cs->step : 0L);
      if (isfinite(cs->train_s)) fprintf(f, "%.1f", cs->train_s);
      fputc(',', f);
      csv_field(f, cs->experiment);
      fputc(',', f);
      csv_field(f, cs->run_dir);
      fputc(',', f);
      if (cs->data_recorded) fprintf(f, "%016" PRIx64, cs->data_trained);
      fputc('\n', f);
    }
}

typedef void table_writer(const struct table_state *s, FILE *f);

static enum intrus_status write_one(const struct table_state *s, const char *dir,
                                    const char *file, table_writer *fn,
                                    struct intrus_error *err) {
  char *buf = NULL, path[4400];
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  fn(s, f);
  fclose(f);
  snprintf(path, sizeof path, "%s/%s", dir, file);
  enum intrus_status st = intrus_file_write_atomic(path, buf, len, err);
  free(buf);
  return st;
}

enum intrus_status table_write(const struct table_state *s, const char *out_dir,
                               struct intrus_error *err) {
  enum intrus_status st;
  if ((st = run_dir_make(out_dir, err)) ||
      (st = write_one(s, out_dir, "table.md", write_md, err)) ||
      (st = write_one(s, out_dir, "table.csv", write_csv, err)))
    return st;
  return write_one(s, out_dir, "table.json", write_json, err);
}

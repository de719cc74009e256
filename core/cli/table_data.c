/* The data of a results table's cells: the corpus files each cell still to run will
 * read are there, and what each run was trained on against what its corpus holds
 * now. */
#include <inttypes.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "intrus/corpus.h"
#include "intrus/rng.h"
#include "cli_distill.h"
#include "table_run.h"
#include "table_run_internal.h"
#include "text/dataset.h"

/* ---- data -------------------------------------------------------------------------- */

/* The corpus files a cell will read are there (train, valid, test of both sides; the test
 * pair's line counts agree): a table that would run for days learns of a missing corpus
 * before the first run, not after it. A distilled corpus is made when its cell runs: the
 * corpus its teacher reads is checked. */
static enum intrus_status check_data(const char *cell, const char *cell_run,
                                     struct intrus_error *err) {
  struct cli_origin_data o;
  enum intrus_status st = cli_origin_data(cell, cell_run, &o, err);
  struct dataset *d = &o.d;
  const char *experiment = o.experiment;
  if (st) goto done;
  if (d->kind == DATA_PARALLEL) {
    static const char *const splits[] = {"train", "valid", "test"};
    char path[4200];
    for (int i = 0; i < 3 && !st; i++)
      for (int side = 0; side < 2 && !st; side++) {
        dataset_split_path(d, splits[i], side ? d->tgt_lang : d->src_lang, path, sizeof path);
        if (access(path, R_OK) != 0)
          st = intrus_error_set(err, INTRUS_ERR_DATA,
                                "%s: %s (the corpus of %s; docs/guide.md, \"Data\", says how to "
                                "build it)", path, strerror(errno), experiment);
      }
    if (!st) st = intrus_run_check_test(o.cfg, o.run_dir, err);
  } else if (d->kind == DATA_IMAGES) {
    /* The image lists and their references (their line counts); the images themselves
     * are read when the cell trains. */
    static const char *const splits[] = {"train", "valid"};
    char path[4200];
    for (int i = 0; i < 2 && !st; i++) {
      snprintf(path, sizeof path, "%s/%s.img", d->dir, splits[i]);
      if (access(path, R_OK) != 0)
        st = intrus_error_set(err, INTRUS_ERR_DATA,
                              "%s: %s (the image data of %s; docs/guide.md, \"Data\", says how "
                              "to build it)", path, strerror(errno), experiment);
    }
    if (!st) st = intrus_run_check_test(o.cfg, o.run_dir, err);
  }
done:
  cli_origin_data_free(&o);
  return st;
}

enum intrus_status table_check_data(const struct table_state *s, struct intrus_error *err) {
  for (int r = 0; r < s->t->nrows; r++)
    for (int c = 0; c < s->t->ncols; c++) {
      const struct table_cell_state *cs = &s->cells[r][c];
      if (!table_cell_to_run(cs)) continue;
      enum intrus_status st = check_data(cs->experiment, cs->run_dir, err);
      if (st)
        return intrus_error_prefix(err, "row %s, column %s", s->t->rows[r].name,
                                   s->t->cols[c].name);
    }
  return INTRUS_OK;
}

/* ---- the training data ------------------------------------------------------------ */

/* The fingerprint of the experiment's training split as its corpus holds it now (what a
 * run records in tokenizer.txt: dataset_train_fp of the raw pairs); false for other data
 * kinds or an unreadable corpus (table_check_data names it before anything runs). Each
 * pair of files is read once per table. */
bool table_corpus_now(struct table_state *s, const struct intrus_config *cfg,
                      const char *run_dir, uint64_t *fp) {
  const intrus_cfg *data;
  struct dataset d = {0};
  struct intrus_error e = {0};
  bool ok = false;
  if (intrus_cfg_group_req(intrus_config_root(cfg), "data", &data, &e) ||
      dataset_configure(&d, data, intrus_config_filename(cfg), run_dir, &e) ||
      d.kind != DATA_PARALLEL)
    goto done;
  char sp[4200], tp[4200];
  dataset_split_path(&d, "train", d.src_lang, sp, sizeof sp);
  dataset_split_path(&d, "train", d.tgt_lang, tp, sizeof tp);
  const uint64_t key =
      intrus_fnv1a(intrus_fnv1a(INTRUS_FNV_INIT, sp, strlen(sp) + 1), tp, strlen(tp) + 1);
  for (int i = 0; i < s->ncorpora && !ok; i++)
    if (s->corpora[i].paths == key) {
      *fp = s->corpora[i].fp;
      ok = true;
    }
  if (ok) goto done;
  struct intrus_parallel_text train = {0};
  if (intrus_parallel_read(sp, tp, &train, &e)) goto done;
  *fp = dataset_train_fp(&train);
  intrus_parallel_free(&train);
  ok = true;
  if (s->ncorpora < TABLE_MAX_CORPORA) {
    s->corpora[s->ncorpora].paths = key;
    s->corpora[s->ncorpora++].fp = *fp;
  }
done:
  dataset_free(&d);
  return ok;
}

void table_data_text(const struct table_cell_state *cs, char *out, size_t n) {
  if (!cs->data_recorded) snprintf(out, n, "not recorded");
  else if (cs->data_known && cs->data_now != cs->data_trained)
    snprintf(out, n, "0x%08" PRIx64 " (corpus now 0x%08" PRIx64 ")", cs->data_trained >> 32,
             cs->data_now >> 32);
  else snprintf(out, n, "0x%08" PRIx64, cs->data_trained >> 32);
}

int table_data_notes(const struct table_state *s, FILE *f, const char *prefix) {
  const struct table_spec *t = s->t;
  int n = 0;
  for (int c = 0; c < t->ncols; c++) {
    const struct table_cell_state *first = NULL;
    bool differ = false;
    for (int r = 0; r < t->nrows; r++) {
      const struct table_cell_state *cs = &s->cells[r][c];
      if (cs->state == CELL_EMPTY || cs->state == CELL_NEW) continue;
      if (!cs->data_recorded) {
        if (cs->data_known) {
          fprintf(f, "%srow %s, column %s: %s records no training data (no tokenizer.txt): "
                     "not checked against the corpus or the column's other cells\n",
                  prefix, t->rows[r].name, t->cols[c].name, cs->run_dir);
          n++;
        }
        continue;
      }
      if (cs->data_known && cs->data_now != cs->data_trained) {
        fprintf(f, "%srow %s, column %s: %s was trained on other training data (0x%016" PRIx64
                   ") than its corpus holds now (0x%016" PRIx64 ")%s\n",
                prefix, t->rows[r].name, t->cols[c].name, cs->run_dir, cs->data_trained,
                cs->data_now, cs->state == CELL_PARTIAL ? "; resuming it will be refused" : "");
        n++;
      }
      if (cs->distilled) {
        fprintf(f, "%srow %s, column %s: trained on a distilled corpus (data.distill: a "
                   "teacher's outputs for the training sources), tested on the original "
                   "references\n",
                prefix, t->rows[r].name, t->cols[c].name);
        n++;
        continue;
      }
      if (!first) first = cs;
      else if (cs->data_trained != first->data_trained) differ = true;
    }
    if (!differ) continue;
    fprintf(f, "%scolumn %s: its cells were trained on different training data (", prefix,
            t->cols[c].name);
    const char *sep = "";
    for (int r = 0; r < t->nrows; r++) {
      const struct table_cell_state *cs = &s->cells[r][c];
      if (cs->state == CELL_EMPTY || cs->state == CELL_NEW || !cs->data_recorded ||
          cs->distilled)
        continue;
      fprintf(f, "%s%s 0x%08" PRIx64, sep, t->rows[r].name, cs->data_trained >> 32);
      sep = ", ";
    }
    fputs("): their scores do not compare\n", f);
    n++;
  }
  return n;
}

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

/* ---- warm-start sources ------------------------------------------------------------ */

/* path made absolute (against the working directory) and rid of "." and ".." and
 * repeated slashes, by its text alone: a source and a run directory that do not exist
 * yet are compared by it. false if it does not fit. */
static bool path_lexical(const char *path, char *out, size_t n) {
  char buf[8400];
  if (path[0] == '/') {
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return false;
  } else {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd) || snprintf(buf, sizeof buf, "%s/%s", cwd, path) >= (int)sizeof buf)
      return false;
  }
  size_t len = 0;
  out[0] = '\0';
  for (char *save = NULL, *part = strtok_r(buf, "/", &save); part;
       part = strtok_r(NULL, "/", &save)) {
    if (strcmp(part, ".") == 0) continue;
    if (strcmp(part, "..") == 0) {
      while (len > 0 && out[len - 1] != '/') len--;
      if (len > 0) len--;
      out[len] = '\0';
      continue;
    }
    size_t k = strlen(part);
    if (len + 1 + k + 1 > n) return false;
    out[len++] = '/';
    memcpy(out + len, part, k + 1);
    len += k;
  }
  if (len == 0 && n > 1) strcpy(out, "/");
  return true;
}

/* A warm start reads its source when its cell starts, which in a table of days may be a
 * day after the table did: a source that is neither there nor the run of a cell that this
 * invocation trains first (one not warm-started or distilled itself, or an earlier one
 * of those; cmd_table.c's order) is named now, before anything runs. */
enum intrus_status table_check_warm_sources(const struct table_state *s,
                                            struct intrus_error *err) {
  const int nr = s->t->nrows, nc = s->t->ncols;
  for (int r = 0; r < nr; r++)
    for (int c = 0; c < nc; c++) {
      const struct table_cell_state *cs = &s->cells[r][c];
      if (!table_cell_to_run(cs) || cs->state != CELL_NEW || !cs->warm_started ||
          !cs->warm_missing[0])
        continue;
      char src[4096], dir[4096];
      bool found = false;
      if (path_lexical(cs->warm_source, src, sizeof src))
        for (int r2 = 0; r2 < nr && !found; r2++)
          for (int c2 = 0; c2 < nc && !found; c2++) {
            const struct table_cell_state *o = &s->cells[r2][c2];
            /* Trained before this cell: in the first pass, or earlier in the second. */
            bool first = !(o->distilled || o->warm_started) || r2 * nc + c2 < r * nc + c;
            if ((r2 == r && c2 == c) || !table_cell_to_run(o) || !first ||
                !path_lexical(o->run_dir, dir, sizeof dir))
              continue;
            size_t k = strlen(dir);
            found = strncmp(src, dir, k) == 0 && src[k] == '/';
          }
      if (found) continue;
      intrus_error_set(err, INTRUS_ERR_DATA,
                       "%s (the warm start of %s; no cell this table trains first writes it: "
                       "train the source run, or restore it)",
                       cs->warm_missing, cs->experiment);
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

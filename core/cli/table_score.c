/* Scores of a results table's cells and their paired bootstrap against the baseline row:
 * each cell's RUN_DIR/test.hyp against its experiment's test references (every
 * reference of an image), with the column's metric and the experiment's settings for it
 * (eval.bleu, eval.cider). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/corpus.h"
#include "cli_distill.h"
#include "table_run.h"
#include "text/dataset.h"

struct cell_inputs {
  struct intrus_config *cfg;
  const intrus_cfg *settings; /* the experiment's eval.<metric> group, NULL for defaults */
  char ref_path[4200], hyp_path[4300];
  char **hyp;
  char **refs[DATASET_MAX_REFS]; /* refs[r][i]: segment i's r-th reference */
  int nrefs;
  size_t nhyp, nref;
  bool lines_block;              /* refs[0] from intrus_lines_read (one block) */
};

static void inputs_free(struct cell_inputs *in) {
  if (in->hyp) intrus_lines_free(in->hyp, in->nhyp);
  for (int r = 0; r < in->nrefs; r++) {
    if (r == 0 && in->lines_block) intrus_lines_free(in->refs[0], in->nref);
    else dataset_lines_free(in->refs[r], in->nref);
  }
  if (in->cfg) intrus_config_free(in->cfg);
  memset(in, 0, sizeof *in);
}

/* A cell's test output and references: the test split's target file for text, every
 * reference of each test image for image data. */
static enum intrus_status inputs_read(const struct table_cell_state *cs, const char *metric,
                                      struct cell_inputs *in, struct intrus_error *err) {
  memset(in, 0, sizeof *in);
  const intrus_cfg *eval = NULL;
  struct cli_origin_data o;
  enum intrus_status st;
  if (!(in->cfg = intrus_config_load_file(cs->experiment, err))) return err->status;
  const intrus_cfg *root = intrus_config_root(in->cfg);
  /* A distilled cell is tested on its origin's corpus (cli_origin_data). */
  st = cli_origin_data(cs->experiment, cs->run_dir, &o, err);
  struct dataset *d = &o.d;
  if (st) goto fail;
  if (d->kind == DATA_SYNTHETIC) {
    st = intrus_error_set(err, INTRUS_ERR_CONFIG,
                          "%s: a table cell needs text or image data (data.kind = \"parallel\" "
                          "or \"images\")",
                          cs->experiment);
    goto fail;
  }
  if ((st = intrus_cfg_group(root, "eval", &eval, err)) ||
      (eval && (st = intrus_cfg_group(eval, metric, &in->settings, err))))
    goto fail;
  snprintf(in->hyp_path, sizeof in->hyp_path, "%s/test.hyp", cs->run_dir);
  if ((st = intrus_lines_read(in->hyp_path, &in->hyp, &in->nhyp, err))) goto fail;
  if (d->kind == DATA_IMAGES) {
    snprintf(in->ref_path, sizeof in->ref_path, "%s/test.img", d->dir);
    char **list = NULL;
    if ((st = intrus_lines_read(in->ref_path, &list, &in->nref, err))) goto fail;
    intrus_lines_free(list, in->nref);
    if (in->nref == in->nhyp &&
        (st = dataset_images_references(d, "test", in->nref, in->refs, &in->nrefs, err)))
      goto fail;
  } else {
    dataset_split_path(d, "test", d->tgt_lang, in->ref_path, sizeof in->ref_path);
    if ((st = intrus_lines_read(in->ref_path, &in->refs[0], &in->nref, err))) goto fail;
    in->nrefs = 1;
    in->lines_block = true;
  }
  if (in->nhyp != in->nref) {
    st = intrus_error_set(err, INTRUS_ERR_DATA, "%s has %zu lines, its references %s %zu",
                          in->hyp_path, in->nhyp, in->ref_path, in->nref);
    goto fail;
  }
  cli_origin_data_free(&o);
  return INTRUS_OK;
fail:
  cli_origin_data_free(&o);
  inputs_free(in);
  return st;
}

static bool same_lines(const struct cell_inputs *a, const struct cell_inputs *b) {
  if (a->nref != b->nref || a->nrefs != b->nrefs) return false;
  for (int r = 0; r < a->nrefs; r++)
    for (size_t i = 0; i < a->nref; i++)
      if (strcmp(a->refs[r][i], b->refs[r][i]) != 0) return false;
  return true;
}

static double named(const struct score_result *r, const char *name) {
  for (int i = 0; i < r->count; i++)
    if (strcmp(r->names[i], name) == 0) return r->values[i];
  return NAN;
}

/* Column c's scored rows with the paper's number, two by two: the paper's order and a
 * paired bootstrap between the two outputs (when they share their references). */
static enum intrus_status score_pairs(struct table_state *s, int c, struct cell_inputs *in,
                                      const struct intrus_plugin_search *search,
                                      struct intrus_error *err) {
  const struct table_spec *t = s->t;
  for (int r1 = 0; r1 < t->nrows; r1++)
    for (int r2 = r1 + 1; r2 < t->nrows; r2++) {
      const struct table_cell *p1 = &t->rows[r1].cells[c], *p2 = &t->rows[r2].cells[c];
      if (!s->cells[r1][c].scored || !s->cells[r2][c].scored || !p1->has_paper ||
          !p2->has_paper || s->npairs >= TABLE_MAX_PAIRS)
        continue;
      struct table_pair *pr = &s->pairs[s->npairs++];
      memset(pr, 0, sizeof *pr);
      pr->col = c;
      pr->hi = p2->paper > p1->paper ? r2 : r1;
      pr->lo = pr->hi == r1 ? r2 : r1;
      pr->p_value = NAN;
      if (!same_lines(&in[r1], &in[r2])) continue;
      struct score_result sa, sb;
      struct intrus_bootstrap_result bs;
      enum intrus_status st = score_compare_refs(
          search, t->cols[c].metric, in[pr->lo].settings, in[pr->hi].hyp, in[pr->lo].hyp,
          in[pr->lo].refs, in[pr->lo].nrefs, in[pr->lo].nref, t->samples, t->seed, &sa, &sb,
          &bs, err);
      if (st)
        return intrus_error_prefix(err, "comparing %s with %s", in[pr->hi].hyp_path,
                                   in[pr->lo].hyp_path);
      pr->tested = true;
      pr->p_value = bs.p_sacrebleu;
    }
  return INTRUS_OK;
}

enum intrus_status table_score(struct table_state *s, struct intrus_error *err) {
  const struct table_spec *t = s->t;
  struct intrus_plugin_search *search = intrus_cli_search_path(s->plugin_path, NULL);
  /* A column's outputs are all read first: the baseline and the pairs compare them. */
  struct cell_inputs *in = calloc((size_t)t->nrows, sizeof *in);
  if (!in) {
    intrus_plugin_search_free(search);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  enum intrus_status st = INTRUS_OK;
  s->npairs = 0;
  s->unscored = 0;
  for (int c = 0; c < t->ncols && !st; c++) {
    bool read[TABLE_MAX_ROWS] = {false};
    for (int r = 0; r < t->nrows; r++) {
      struct table_cell_state *cs = &s->cells[r][c];
      if (cs->state != CELL_DONE) continue;
      /* A finished cell that cannot be scored here (its corpus not built on this machine,
       * its output cut short) is marked and the others are scored: a run of one column
       * must not lose its table to another column's missing corpus. */
      struct intrus_error e = {0};
      if (inputs_read(cs, t->cols[c].metric, &in[r], &e)) {
        cs->state = CELL_FAILED;
        snprintf(cs->error, sizeof cs->error, "cannot score: %.*s", (int)sizeof cs->error - 16, e.msg);
        fprintf(stderr, "intrus table: row %s, column %s: cannot score: %s\n",
                t->rows[r].name, t->cols[c].name, e.msg);
        s->unscored++;
        continue;
      }
      read[r] = true;
    }
    const int b = t->baseline;
    const bool have_base = !st && b >= 0 && read[b];
    for (int r = 0; r < t->nrows && !st; r++) {
      struct table_cell_state *cs = &s->cells[r][c];
      if (!read[r]) continue;
      /* Against the baseline's output when it has the same references; a row against
       * itself otherwise (its score, no test). */
      bool test = have_base && r != b && same_lines(&in[b], &in[r]);
      struct score_result sa, sb;
      struct intrus_bootstrap_result bs;
      st = score_compare_refs(search, t->cols[c].metric, in[r].settings,
                              test ? in[b].hyp : in[r].hyp, in[r].hyp, in[r].refs, in[r].nrefs,
                              in[r].nref, t->samples, t->seed, &sa, &sb, &bs, err);
      if (!st) {
        cs->scored = true;
        cs->score = sb.values[0];
        cs->ratio = named(&sb, "ratio");
        snprintf(cs->signature, sizeof cs->signature, "%s", sb.signature);
        cs->tested = test;
        cs->p_value = bs.p_sacrebleu;
        cs->baseline_score = sa.values[0];
        cs->b_better = bs.b_better;
        cs->samples = bs.samples;
      } else
        intrus_error_prefix(err, "scoring %s", in[r].hyp_path);
    }
    if (!st) st = score_pairs(s, c, in, search, err);
    for (int r = 0; r < t->nrows; r++)
      if (read[r]) inputs_free(&in[r]);
  }
  free(in);
  intrus_plugin_search_free(search);
  return st;
}

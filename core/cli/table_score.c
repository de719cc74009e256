/* Scores of a results table's cells and their paired bootstrap against the baseline row:
 * each cell's RUN_DIR/test.hyp against its experiment's test references, with its
 * experiment's evaluator settings (eval.bleu). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/corpus.h"
#include "table_run.h"
#include "text/dataset.h"

struct cell_inputs {
  struct intrus_config *cfg;
  const intrus_cfg *bleu; /* the experiment's eval.bleu group, NULL for defaults */
  char ref_path[4200], hyp_path[4300];
  char **hyp, **ref;
  size_t nhyp, nref;
};

static void inputs_free(struct cell_inputs *in) {
  if (in->hyp) intrus_lines_free(in->hyp, in->nhyp);
  if (in->ref) intrus_lines_free(in->ref, in->nref);
  if (in->cfg) intrus_config_free(in->cfg);
  memset(in, 0, sizeof *in);
}

static enum intrus_status inputs_read(const struct table_cell_state *cs, struct cell_inputs *in,
                                      struct intrus_error *err) {
  memset(in, 0, sizeof *in);
  const intrus_cfg *data, *eval = NULL;
  struct dataset d = {0};
  enum intrus_status st;
  if (!(in->cfg = intrus_config_load_file(cs->experiment, err))) return err->status;
  const intrus_cfg *root = intrus_config_root(in->cfg);
  if ((st = intrus_cfg_group_req(root, "data", &data, err)) ||
      (st = dataset_configure(&d, data, intrus_config_filename(in->cfg), err)))
    goto fail;
  if (d.kind != DATA_PARALLEL) {
    st = intrus_error_set(err, INTRUS_ERR_CONFIG,
                          "%s: a table cell needs text data (data.kind = \"parallel\")",
                          cs->experiment);
    goto fail;
  }
  dataset_split_path(&d, "test", d.tgt_lang, in->ref_path, sizeof in->ref_path);
  if ((st = intrus_cfg_group(root, "eval", &eval, err)) ||
      (eval && (st = intrus_cfg_group(eval, "bleu", &in->bleu, err))))
    goto fail;
  snprintf(in->hyp_path, sizeof in->hyp_path, "%s/test.hyp", cs->run_dir);
  if ((st = intrus_lines_read(in->ref_path, &in->ref, &in->nref, err)) ||
      (st = intrus_lines_read(in->hyp_path, &in->hyp, &in->nhyp, err)))
    goto fail;
  if (in->nhyp != in->nref) {
    st = intrus_error_set(err, INTRUS_ERR_DATA, "%s has %zu lines, its references %s %zu",
                          in->hyp_path, in->nhyp, in->ref_path, in->nref);
    goto fail;
  }
  dataset_free(&d);
  return INTRUS_OK;
fail:
  dataset_free(&d);
  inputs_free(in);
  return st;
}

static bool same_lines(const struct cell_inputs *a, const struct cell_inputs *b) {
  if (a->nref != b->nref) return false;
  for (size_t i = 0; i < a->nref; i++)
    if (strcmp(a->ref[i], b->ref[i]) != 0) return false;
  return true;
}

static double named(const struct score_result *r, const char *name) {
  for (int i = 0; i < r->count; i++)
    if (strcmp(r->names[i], name) == 0) return r->values[i];
  return NAN;
}

enum intrus_status table_score(struct table_state *s, struct intrus_error *err) {
  const struct table_spec *t = s->t;
  struct intrus_plugin_search *search = intrus_cli_search_path(s->plugin_path, NULL);
  enum intrus_status st = INTRUS_OK;
  for (int c = 0; c < t->ncols && !st; c++) {
    struct cell_inputs base = {0};
    bool have_base = false;
    if (t->baseline >= 0 && s->cells[t->baseline][c].state == CELL_DONE) {
      if ((st = inputs_read(&s->cells[t->baseline][c], &base, err))) break;
      have_base = true;
    }
    for (int r = 0; r < t->nrows && !st; r++) {
      struct table_cell_state *cs = &s->cells[r][c];
      if (cs->state != CELL_DONE) continue;
      struct cell_inputs in;
      if ((st = inputs_read(cs, &in, err))) break;
      /* Against the baseline's output when it has the same references; a row against
       * itself otherwise (its score, no test). */
      bool test = have_base && r != t->baseline && same_lines(&base, &in);
      struct score_result sa, sb;
      struct intrus_bootstrap_result bs;
      st = score_compare(search, t->cols[c].metric, in.bleu, test ? base.hyp : in.hyp, in.hyp,
                         in.ref, in.nref, t->samples, t->seed, &sa, &sb, &bs, err);
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
        intrus_error_prefix(err, "scoring %s", in.hyp_path);
      inputs_free(&in);
    }
    if (have_base) inputs_free(&base);
  }
  intrus_plugin_search_free(search);
  return st;
}

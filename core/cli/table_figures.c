/* A table's order figures (table_figures.h). Everything is drawn from the cells' own
 * test decodes (RUN_DIR/test.order.tsv): the figures show the outputs the table scored,
 * and drawing them costs no decoding. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "intrus/corpus.h"
#include "intrus/trace.h"
#include "table_figures.h"
#include "table_spec.h"
#include "train/run_dir.h"

/* Whether the cell's experiment decodes by insertion (model.decoder.plugin). */
static bool is_insertion(const char *experiment) {
  struct intrus_error e = {0};
  struct intrus_config *cfg = intrus_config_load_file(experiment, &e);
  const intrus_cfg *model = NULL, *dec = NULL;
  const char *plugin = "";
  if (cfg && !intrus_cfg_group(intrus_config_root(cfg), "model", &model, &e) && model &&
      !intrus_cfg_group(model, "decoder", &dec, &e) && dec)
    intrus_cfg_string(dec, "plugin", "", &plugin, &e);
  bool yes = strcmp(plugin, "insertion") == 0;
  intrus_config_free(cfg);
  return yes;
}

/* Decodes a finished cell's test set again, as its run did, to write its
 * test.order.tsv (test.hyp is rewritten with the same lines). */
static enum intrus_status decode_again(const struct table_cell_state *cs,
                                       const char *plugin_path, struct intrus_error *err) {
  struct intrus_config *cfg = intrus_config_load_file(cs->experiment, err);
  if (!cfg) return err->status;
  struct cli_experiment x;
  struct run_scores rs;
  enum intrus_status st = intrus_cli_experiment(cfg, cs->run_dir, plugin_path, &x, err);
  if (!st) {
    fprintf(stderr, "figures: %s has no test.order.tsv (decoded before runs kept one): "
                    "decoding its test set again\n", cs->run_dir);
    st = intrus_run_test(cfg, cs->run_dir, x.search, stderr, &rs, err);
    intrus_plugin_search_free(x.search);
  }
  intrus_config_free(cfg);
  return st;
}

/* One sentence of an order.tsv: its tokens in reading order and the step of each. */
struct order_sentence {
  int len, cap;
  char **token; /* [len] */
  int *step;    /* [len] */
};

static void order_sentence_free(struct order_sentence *o) {
  for (int j = 0; j < o->len; j++) free(o->token[j]);
  free(o->token);
  free(o->step);
  memset(o, 0, sizeof *o);
}

static bool order_sentence_add(struct order_sentence *o, const char *tok, size_t toklen,
                               int step) {
  if (o->len == o->cap) {
    int cap = o->cap ? 2 * o->cap : 32;
    char **token = realloc(o->token, (size_t)cap * sizeof *token);
    if (token) o->token = token;
    int *steps = token ? realloc(o->step, (size_t)cap * sizeof *steps) : NULL;
    if (!steps) return false;
    o->step = steps;
    o->cap = cap;
  }
  if (!(o->token[o->len] = strndup(tok, toklen))) return false;
  o->step[o->len++] = step;
  return true;
}

/* Reads, in one pass over an order.tsv (sentence, position, token, step,
 * relative_index), the rows of each test line lines[k] into o[k] (zeroed first; an empty
 * output has no rows: len 0). Each sentence read must write each of its positions at
 * exactly one of the steps 0..len-1. */
static enum intrus_status order_sentences_read(const char *path, const long long *lines,
                                               int nlines, struct order_sentence *o,
                                               struct intrus_error *err) {
  char **rows = NULL;
  size_t n = 0;
  enum intrus_status st = intrus_lines_read(path, &rows, &n, err);
  if (st) return st;
  memset(o, 0, (size_t)nlines * sizeof *o);
  for (size_t i = 1; i < n && !st; i++) { /* row 0 is the header */
    long long sent;
    int pos, step, used = 0;
    if (sscanf(rows[i], "%lld\t%d\t%n", &sent, &pos, &used) != 2 || !used) {
      st = intrus_error_set(err, INTRUS_ERR_DATA, "%s:%zu: not a row of an order table", path,
                            i + 1);
      break;
    }
    for (int k = 0; k < nlines && !st; k++) {
      if (sent != lines[k]) continue;
      const char *tok = rows[i] + used, *tab = strchr(tok, '\t');
      if (!tab || sscanf(tab + 1, "%d", &step) != 1 || pos != o[k].len + 1 || step < 0)
        st = intrus_error_set(err, INTRUS_ERR_DATA, "%s:%zu: not a row of an order table", path,
                              i + 1);
      else if (!order_sentence_add(&o[k], tok, (size_t)(tab - tok), step))
        st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    }
  }
  /* Every step 0..len-1 exactly once, or the rows do not describe one output. */
  for (int k = 0; k < nlines && !st; k++)
    for (int s = 0; s < o[k].len && !st; s++) {
      int w = 0;
      for (int j = 0; j < o[k].len; j++) w += o[k].step[j] == s;
      if (w != 1)
        st = intrus_error_set(err, INTRUS_ERR_DATA,
                              "%s: sentence %lld: step %d writes %d tokens, not one", path,
                              lines[k], s, w);
    }
  intrus_lines_free(rows, n);
  if (st)
    for (int k = 0; k < nlines; k++) order_sentence_free(&o[k]);
  return st;
}

/* The insertions that wrote o: step s puts its token at the slot counting the tokens
 * already written to its left. steps and words have o->len entries. */
static void order_sentence_trace(const struct order_sentence *o, struct intrus_ins_step *steps,
                                 const char **words) {
  for (int j = 0; j < o->len; j++) {
    int s = o->step[j], slot = 0;
    for (int k = 0; k < j; k++) slot += o->step[k] < s;
    steps[s] = (struct intrus_ins_step){.slot = slot, .token = 0};
    words[s] = o->token[j];
  }
}

/* sentence-N.png / .svg: one test line as each of n rows wrote it (o[i]: row i's). */
static enum intrus_status draw_sentence(const struct order_sentence *o, const char *const *titles,
                                        int n, long long line, const char *dir,
                                        struct intrus_error *err) {
  struct intrus_trace tr[TABLE_MAX_ROWS];
  struct intrus_ins_step *steps[TABLE_MAX_ROWS] = {0};
  const char **words[TABLE_MAX_ROWS] = {0};
  char path[4400];
  enum intrus_status st = INTRUS_OK;
  for (int i = 0; i < n && !st; i++) {
    size_t len = (size_t)(o[i].len ? o[i].len : 1);
    steps[i] = calloc(len, sizeof *steps[i]);
    words[i] = calloc(len, sizeof *words[i]);
    if (!steps[i] || !words[i]) {
      st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
      break;
    }
    order_sentence_trace(&o[i], steps[i], words[i]);
    tr[i] = (struct intrus_trace){.len = o[i].len, .steps = steps[i], .words = words[i]};
  }
  for (const char *ext = ".png"; !st && ext; ext = strcmp(ext, ".png") == 0 ? ".svg" : NULL) {
    snprintf(path, sizeof path, "%s/sentence-%lld%s", dir, line, ext);
    st = intrus_trace_draw_panels(path, tr, titles, n, err);
  }
  if (!st) printf("figure: %s/sentence-%lld.png (.svg)\n", dir, line);
  for (int i = 0; i < n; i++) {
    free(steps[i]);
    free(words[i]);
  }
  return st;
}

/* The figures.sentences lines as every row in rows[] wrote them, each row's order table
 * read once. Lines past the test set's ntest are named and not drawn. */
static enum intrus_status draw_sentences(const struct table_state *s, const int *rows, int n,
                                         size_t ntest, const char *dir,
                                         struct intrus_error *err) {
  const struct table_spec *t = s->t;
  const struct table_figures *f = &t->figures;
  long long lines[TABLE_MAX_FIGURE_SENTENCES];
  int nlines = 0;
  for (int k = 0; k < f->nsentences; k++) {
    if (f->sentences[k] > (long long)ntest)
      fprintf(stderr, "figures: the test set has %zu lines, no line %lld (figures.sentences): "
                      "not drawn\n", ntest, f->sentences[k]);
    else
      lines[nlines++] = f->sentences[k];
  }
  if (!nlines) return INTRUS_OK;
  /* o[i * nlines + k]: line k as row i wrote it. */
  struct order_sentence *o = calloc((size_t)n * (size_t)nlines, sizeof *o);
  if (!o) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  const char *titles[TABLE_MAX_ROWS];
  char path[4400];
  enum intrus_status st = INTRUS_OK;
  for (int i = 0; i < n && !st; i++) {
    snprintf(path, sizeof path, "%s/test.order.tsv", s->cells[rows[i]][f->column].run_dir);
    titles[i] = t->rows[rows[i]].title;
    st = order_sentences_read(path, lines, nlines, &o[i * nlines], err);
  }
  for (int k = 0; k < nlines && !st; k++) {
    struct order_sentence line[TABLE_MAX_ROWS];
    for (int i = 0; i < n; i++) line[i] = o[i * nlines + k];
    st = draw_sentence(line, titles, n, lines[k], dir, err);
  }
  for (int i = 0; i < n * nlines; i++) order_sentence_free(&o[i]); /* unread ones are zero */
  free(o);
  return st;
}

/* `intrus analyze order` over the given rows' test orders, charted into png. */
static enum intrus_status analyze(const struct table_state *s, const int *rows, int n,
                                  const char *png, const char *title,
                                  struct intrus_error *err) {
  const struct table_spec *t = s->t;
  char files[TABLE_MAX_ROWS][4400];
  char *argv[4 * TABLE_MAX_ROWS + 16];
  int argc = 0;
  argv[argc++] = (char *)"analyze";
  argv[argc++] = (char *)"order";
  for (int i = 0; i < n; i++) {
    snprintf(files[i], sizeof files[i], "%s/test.order.tsv",
             s->cells[rows[i]][t->figures.column].run_dir);
    argv[argc++] = files[i];
  }
  for (int i = 0; i < n; i++) {
    argv[argc++] = (char *)"-L";
    argv[argc++] = (char *)t->rows[rows[i]].name;
  }
  if (*t->figures.lang) {
    argv[argc++] = (char *)"--lang";
    argv[argc++] = (char *)t->figures.lang;
  }
  argv[argc++] = (char *)"-o";
  argv[argc++] = (char *)png;
  argv[argc++] = (char *)"--title";
  argv[argc++] = (char *)title;
  argv[argc] = NULL;
  fflush(stdout);
  int rc = intrus_cmd_analyze(argc, argv);
  fflush(stdout);
  return rc ? intrus_error_set(err, INTRUS_ERR_INVALID, "%s: the order analysis failed (above)",
                               png)
            : INTRUS_OK;
}

enum intrus_status table_figures(const struct table_state *s, const char *out_dir,
                                 const char *plugin_path, bool no_decode,
                                 struct intrus_error *err) {
  const struct table_spec *t = s->t;
  const struct table_figures *f = &t->figures;
  if (!f->present) return INTRUS_OK;
  const int c = f->column;
  int rows[TABLE_MAX_ROWS], ins[TABLE_MAX_ROWS], n = 0, nins = 0;
  char dir[4300], path[4400], title[512];
  enum intrus_status st;
  for (int r = 0; r < t->nrows; r++) {
    const struct table_cell_state *cs = &s->cells[r][c];
    if (cs->state != CELL_DONE) continue;
    snprintf(path, sizeof path, "%s/test.order.tsv", cs->run_dir);
    if (access(path, R_OK) != 0) {
      if (no_decode) {
        fprintf(stderr, "figures: %s has no test.order.tsv (--no-train decodes nothing): %s "
                        "left out\n", cs->run_dir, t->rows[r].name);
        continue;
      }
      if ((st = decode_again(cs, plugin_path, err))) return st;
    }
    rows[n++] = r;
    if (is_insertion(cs->experiment)) ins[nins++] = r;
  }
  if (!n) {
    fprintf(stderr, "figures: no finished cell in column %s yet: none drawn\n", t->cols[c].name);
    return INTRUS_OK;
  }
  snprintf(dir, sizeof dir, "%s/figures", out_dir);
  if ((st = run_dir_make(dir, err))) return st;
  for (int i = 0; i < nins; i++) {
    snprintf(path, sizeof path, "%s/order-%s.png", dir, t->rows[ins[i]].name);
    snprintf(title, sizeof title, "When %s writes each kind of word (%s, test)",
             t->rows[ins[i]].title, t->cols[c].title);
    if ((st = analyze(s, &ins[i], 1, path, title, err))) return st;
  }
  if (nins > 1) {
    snprintf(path, sizeof path, "%s/order.png", dir);
    snprintf(title, sizeof title, "When each kind of word is written (%s, test)",
             t->cols[c].title);
    if ((st = analyze(s, ins, nins, path, title, err))) return st;
  }
  /* The test set's size, from the first row's outputs (a line per test sentence). */
  char **hyp = NULL;
  size_t ntest = 0;
  snprintf(path, sizeof path, "%s/test.hyp", s->cells[rows[0]][c].run_dir);
  if ((st = intrus_lines_read(path, &hyp, &ntest, err))) return st;
  intrus_lines_free(hyp, ntest);
  return draw_sentences(s, rows, n, ntest, dir, err);
}

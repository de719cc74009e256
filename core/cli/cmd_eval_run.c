/* intrus eval: the run both metrics share. Every input file is read as sacreBLEU's
 * command line reads it (see cmd_eval.c), the metric's evaluator plugin scores it, and
 * with resampling the paired bootstrap (core/eval/bootstrap.c) is printed as the
 * metric's output functions lay it out. */
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "cli.h"
#include "cmd_eval.h"
#include "intrus/config.h"
#include "intrus/corpus.h"
#include "intrus/eval.h"
#include "intrus/plugin.h"

/* ---- reading input files --------------------------------------------------------- */

/* The code points Python's str.rstrip() removes (str.isspace()); see eval_bleu.c. */
static bool py_space(int32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

/* A text file split into NUL-terminated lines that point into buf. */
struct text_file {
  const char *path;
  char *buf;
  char **lines;
  size_t n;
};

static void text_file_free(struct text_file *t) {
  free(t->buf);
  free(t->lines);
  t->buf = NULL;
  t->lines = NULL;
  t->n = 0;
}

static enum intrus_status read_lines(const char *path, struct text_file *t,
                                     struct intrus_error *err) {
  size_t len = 0;
  memset(t, 0, sizeof *t);
  t->path = path;
  /* Plain or gzip (sacreBLEU's smart_open), "-" for standard input. */
  enum intrus_status st = intrus_file_read_all(path, &t->buf, &len, err);
  if (st != INTRUS_OK) return st;
  size_t nl = 0;
  for (size_t i = 0; i < len; i++) nl += t->buf[i] == '\n';
  size_t cap = nl + 1;
  t->lines = malloc(cap * sizeof *t->lines);
  if (!t->lines) {
    text_file_free(t);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "%s: out of memory", path);
  }
  size_t start = 0;
  while (start < len) {
    char *nlp = memchr(t->buf + start, '\n', len - start);
    size_t end = nlp ? (size_t)(nlp - t->buf) : len;
    char *line = t->buf + start;
    size_t llen = end - start, lineno = t->n + 1;
    if (memchr(line, '\0', llen)) {
      st = intrus_error_set(err, INTRUS_ERR_DATA,
                            "%s:%zu: the line contains a NUL byte (not text)", path, lineno);
      break;
    }
    size_t i = 0, keep = 0;
    while (i < llen) {
      utf8proc_int32_t c;
      utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)line + i,
                                            (utf8proc_ssize_t)(llen - i), &c);
      if (k < 0) {
        st = intrus_error_set(err, INTRUS_ERR_DATA,
                              "%s:%zu: invalid UTF-8 (byte 0x%02x at column %zu)", path,
                              lineno, (unsigned char)line[i], i + 1);
        break;
      }
      i += (size_t)k;
      if (!py_space(c)) keep = i;
    }
    if (st != INTRUS_OK) break;
    line[keep] = '\0'; /* rstrip; also ends the line where its '\n' was */
    t->lines[t->n++] = line;
    start = end + 1;
  }
  if (st != INTRUS_OK) text_file_free(t);
  return st;
}

/* Adds "bs:N|seed:S|" after the signature's nrefs field, where sacreBLEU's Signature
 * puts them for resampled results. */
static void bootstrap_signature(const char *sig, int samples, uint64_t seed, char *out,
                                size_t size) {
  const char *bar = strchr(sig, '|');
  if (!bar) {
    snprintf(out, size, "%s|bs:%d|seed:%" PRIu64, sig, samples, seed);
    return;
  }
  snprintf(out, size, "%.*s|bs:%d|seed:%" PRIu64 "%s", (int)(bar - sig), sig, samples, seed,
           bar);
}

typedef void (*text_system_fn)(FILE *f, const char *label, const struct intrus_eval_scores *sc,
                               const struct intrus_bootstrap_system *sys);
typedef void (*json_system_fn)(FILE *f, const char *indent, const struct intrus_eval_scores *sc,
                               const char *signature, const struct intrus_bootstrap_system *sys);

/* ---- intrus eval bleu / cider: scoring -------------------------------------------- */

/* Reference r of segment i as the evaluator gets it: for CIDEr-D an empty line is a
 * reference the image does not have (NULL); for BLEU it is a reference of length 0. */
static const char *seg_ref(const struct eval_args *a, const struct text_file *refs, int r,
                           size_t i) {
  const char *line = refs[r].lines[i];
  return a->metric == METRIC_CIDER && !*line ? NULL : line;
}

/* Segment statistics of every line of hyp (nseg rows of ss doubles). */
static enum intrus_status system_stats(const struct intrus_evaluator_vtable *vt, void *self,
                                       const struct eval_args *a, const struct text_file *hyp,
                                       const struct text_file *refs, int ss, double **out,
                                       struct intrus_error *err) {
  const char *seg_refs[MAX_REFS];
  double *stats = calloc(hyp->n * (size_t)ss, sizeof *stats);
  if (!stats) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < hyp->n; i++) {
    for (int r = 0; r < a->nrefs; r++) seg_refs[r] = seg_ref(a, refs, r, i);
    enum intrus_status st = vt->segment_stats(self, hyp->lines[i], seg_refs, a->nrefs,
                                              stats + i * (size_t)ss, err);
    if (st != INTRUS_OK) {
      free(stats);
      return intrus_error_prefix(err, "%s:%zu", hyp->path, i + 1);
    }
  }
  *out = stats;
  return INTRUS_OK;
}

/* The evaluator's prepare() (if it has one) over every segment's references. */
static enum intrus_status prepare_refs(const struct intrus_evaluator_vtable *vt, void *self,
                                       const struct eval_args *a, const struct text_file *refs,
                                       size_t nseg, struct intrus_error *err) {
  if (!vt->prepare) return INTRUS_OK;
  if (nseg > INT_MAX)
    return intrus_error_set(err, INTRUS_ERR_DATA, "%s: too many lines", refs[0].path);
  const char **flat = malloc(nseg * (size_t)a->nrefs * sizeof *flat);
  const char *const **rows = malloc(nseg * sizeof *rows);
  enum intrus_status st = INTRUS_OK;
  if (!flat || !rows) {
    st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  } else {
    for (size_t i = 0; i < nseg; i++) {
      for (int r = 0; r < a->nrefs; r++) flat[i * (size_t)a->nrefs + r] = seg_ref(a, refs, r, i);
      rows[i] = flat + i * (size_t)a->nrefs;
    }
    st = vt->prepare(self, (int)nseg, rows, a->nrefs, err);
  }
  free(flat);
  free(rows);
  return st;
}

static void sum_stats(const double *stats, size_t nseg, int ss, double *sum) {
  memset(sum, 0, (size_t)ss * sizeof *sum);
  for (size_t i = 0; i < nseg; i++)
    for (int k = 0; k < ss; k++) sum[k] += stats[i * (size_t)ss + k];
}

/* Every input file read and checked against the others: same line counts. An empty
 * reference line is a reference of length 0, as in sacreBLEU 2.3.1's command line (only
 * an API's None is an absent reference); for CIDEr-D see seg_ref. */
static enum intrus_status read_inputs(const struct eval_args *a, struct text_file *refs,
                                      struct text_file *hyp, struct text_file *hyp2,
                                      struct intrus_error *err) {
  enum intrus_status st;
  for (int r = 0; r < a->nrefs; r++)
    if ((st = read_lines(a->refs[r], &refs[r], err))) return st;
  if ((st = read_lines(a->hyp, hyp, err))) return st;
  if (a->hyp2 && (st = read_lines(a->hyp2, hyp2, err))) return st;
  if (hyp->n == 0)
    return intrus_error_set(err, INTRUS_ERR_DATA, "%s: no lines to score", hyp->path);
  for (int r = 0; r < a->nrefs; r++)
    if (refs[r].n != hyp->n)
      return intrus_error_set(err, INTRUS_ERR_DATA,
                              "line counts differ: %s has %zu lines, %s has %zu (one line "
                              "per segment in every file)",
                              hyp->path, hyp->n, refs[r].path, refs[r].n);
  if (a->hyp2 && hyp2->n != hyp->n)
    return intrus_error_set(err, INTRUS_ERR_DATA,
                            "line counts differ: %s has %zu lines, %s has %zu (one line per "
                            "segment in every file)",
                            hyp->path, hyp->n, hyp2->path, hyp2->n);
  return INTRUS_OK;
}

/* Scores a.hyp (and with a.hyp2, the paired bootstrap of both) with a.metric's plugin;
 * cmd names the command in error messages. */
int eval_run(const char *cmd, struct eval_args a) {
  int rc;
  struct intrus_error err = {0};
  struct text_file refs[MAX_REFS], hyp = {0}, hyp2 = {0};
  memset(refs, 0, sizeof refs);
  struct intrus_config *cfg = NULL;
  struct intrus_plugin_search *search = NULL;
  struct intrus_plugin *plugin = NULL;
  const struct intrus_evaluator_vtable *vt = NULL;
  void *self = NULL;
  double *stats_a = NULL, *stats_b = NULL, *sum = NULL;
  enum intrus_status st;
  bool cider = a.metric == METRIC_CIDER;
  text_system_fn text_sys = cider ? cider_text_system : text_system;
  json_system_fn json_sys = cider ? cider_json_system : json_system;
  rc = INTRUS_EXIT_OK;

  if ((st = read_inputs(&a, refs, &hyp, &hyp2, &err))) goto fail;

  /* The options become the plugin's settings group, so the CLI goes through the same
   * strict config reading as an experiment's evaluator group. The values were checked
   * against fixed lists (or are numbers) above, so they cannot break out of the quotes. */
  char settings[256];
  if (cider)
    snprintf(settings, sizeof settings, "sigma = %.17e;\n", a.sigma);
  else
    snprintf(settings, sizeof settings,
             "tokenize = \"%s\";\nlowercase = %s;\nsmooth = \"%s\";\n", a.tok,
             a.lc ? "true" : "false", a.smooth);
  cfg = intrus_config_load_string(settings, cider ? "intrus eval cider options"
                                                  : "intrus eval bleu options", &err);
  if (!cfg) goto fail;
  search = intrus_cli_search_path(a.plugin_path, NULL);
  if ((st = intrus_plugin_load(search, INTRUS_KIND_EVALUATOR, cider ? "cider" : "bleu", &plugin,
                               &err)))
    goto fail;
  vt = intrus_plugin_descriptor(plugin)->vtable;
  if ((st = vt->create(intrus_config_root(cfg), &self, &err))) goto fail;
  int ss = vt->stats_size(self);

  if ((st = prepare_refs(vt, self, &a, refs, hyp.n, &err))) goto fail;
  if ((st = system_stats(vt, self, &a, &hyp, refs, ss, &stats_a, &err))) goto fail;
  if (a.hyp2 && (st = system_stats(vt, self, &a, &hyp2, refs, ss, &stats_b, &err))) goto fail;

  struct intrus_eval_scores sc_a, sc_b;
  memset(&sc_a, 0, sizeof sc_a);
  memset(&sc_b, 0, sizeof sc_b);
  sum = malloc((size_t)ss * sizeof *sum);
  if (!sum) {
    intrus_error_set(&err, INTRUS_ERR_NOMEM, "out of memory");
    goto fail;
  }
  sum_stats(stats_a, hyp.n, ss, sum);
  if ((st = vt->score(self, sum, &sc_a, &err))) goto fail;
  if (stats_b) {
    sum_stats(stats_b, hyp.n, ss, sum);
    if ((st = vt->score(self, sum, &sc_b, &err))) goto fail;
  }

  if (a.bootstrap == 0) {
    if (a.json) {
      json_sys(stdout, "", &sc_a, sc_a.signature, NULL);
      fputc('\n', stdout);
    } else {
      text_sys(stdout, NULL, &sc_a, NULL);
      printf("%s\n", sc_a.signature);
    }
    goto done;
  }

  struct intrus_bootstrap_result res;
  if ((st = intrus_paired_bootstrap(vt, self, (int)hyp.n, stats_a, stats_b ? stats_b : stats_a,
                                    (int)a.bootstrap, a.seed, &res, &err)))
    goto fail;
  char sig[sizeof sc_a.signature + 64];
  bootstrap_signature(sc_a.signature, res.samples, a.seed, sig, sizeof sig);
  if (!stats_b) {
    /* One system: its confidence interval only. */
    if (a.json) {
      json_sys(stdout, "", &sc_a, sig, &res.a);
      fputc('\n', stdout);
    } else {
      text_sys(stdout, NULL, &sc_a, &res.a);
      printf("%s\n", sig);
    }
    goto done;
  }
  if (a.json) {
    printf("{\n \"A\": ");
    json_sys(stdout, " ", &sc_a, sig, &res.a);
    printf(",\n \"B\": ");
    json_sys(stdout, " ", &sc_b, sig, &res.b);
    printf(",\n \"file_a\": ");
    cli_json_string(stdout, hyp.path);
    printf(",\n \"file_b\": ");
    cli_json_string(stdout, hyp2.path);
    printf(",\n \"samples\": %d,\n \"seed\": %" PRIu64 ",\n \"b_better\": %d,\n \"p_value\": ",
           res.samples, a.seed, res.b_better);
    json_number(stdout, res.p_value);
    printf(",\n \"p_sacrebleu\": ");
    json_number(stdout, res.p_sacrebleu);
    printf(",\n \"signature\": ");
    cli_json_string(stdout, sig);
    printf("\n}\n");
  } else {
    char label[4200];
    snprintf(label, sizeof label, "A (%s)", hyp.path);
    text_sys(stdout, label, &sc_a, &res.a);
    snprintf(label, sizeof label, "B (%s)", hyp2.path);
    text_sys(stdout, label, &sc_b, &res.b);
    printf("paired bootstrap: B > A in %d of %d resamples; p = %.4f (one-sided: that B is "
           "not better than A); sacreBLEU paired-bs p = %.4f\n",
           res.b_better, res.samples, res.p_value, res.p_sacrebleu);
    printf("%s\n", sig);
  }
  goto done;

fail:
  rc = intrus_cli_fail(cmd, &err);
done:
  free(sum);
  free(stats_a);
  free(stats_b);
  if (self) vt->destroy(self);
  if (plugin) intrus_plugin_close(plugin);
  if (search) intrus_plugin_search_free(search);
  if (cfg) intrus_config_free(cfg);
  for (int r = 0; r < MAX_REFS; r++) text_file_free(&refs[r]);
  text_file_free(&hyp);
  text_file_free(&hyp2);
  return rc;
}

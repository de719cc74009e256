/* intrus eval: scores hypothesis files against reference files with an evaluator plugin.
 *
 * `intrus eval bleu` behaves like the sacreBLEU 2.3.1 command line on plain files: every
 * line is rstrip()ped with Python's whitespace set before scoring (sacreBLEU's CLI does
 * line.rstrip()), so a reference line of spaces is an empty reference (length 0, kept,
 * as sacreBLEU 2.3.1 keeps it); files may be gzip and "-" is standard input; the text
 * output is sacreBLEU's score line and its signature. The BLEU itself
 * comes from the eval_bleu plugin, loaded like any other plugin, so `--plugin-path` and
 * INTRUS_PLUGIN_PATH can swap in another build of it.
 *
 * `intrus eval cider` scores captions with the eval_cider plugin (CIDEr-D as the MSCOCO
 * caption evaluation, coco-caption, computes it). Its files are read the same way, except
 * that an empty reference line is a reference the image does not have (so images may
 * have different numbers of references), and every image's references go to the
 * plugin's prepare() before any scoring (CIDEr-D's document frequencies). Both metrics
 * share the paired bootstrap: --hyp2, and `intrus eval bootstrap --metric bleu|cider`. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "cli.h"
#include "intrus/config.h"
#include "intrus/corpus.h"
#include "intrus/eval.h"
#include "intrus/plugin.h"

static const char eval_usage[] =
    "Usage: intrus eval METRIC [options]\n"
    "\n"
    "Scores hypotheses against references:\n"
    "  bleu        corpus BLEU, identical to sacreBLEU 2.3.1 (see 'intrus eval bleu --help')\n"
    "  cider       corpus CIDEr-D as the MSCOCO caption evaluation (coco-caption) computes\n"
    "              it (see 'intrus eval cider --help')\n"
    "  bootstrap   paired bootstrap of two systems, as sacreBLEU's --paired-bs\n"
    "              ('intrus eval bootstrap --help')\n"
    "\n"
    "Each metric is an evaluator plugin ('intrus plugins --kind eval' lists them).\n"
    "\n"
    "Exit status: 0 success, 1 failure, 2 usage error, 4 plugin error,\n"
    "5 unreadable or invalid input file.\n";

static const char bleu_usage[] =
    "Usage: intrus eval bleu --ref REF [--ref REF2 ...] --hyp HYP [options]\n"
    "\n"
    "Corpus BLEU of HYP against one or more references, computed as sacreBLEU 2.3.1 does\n"
    "(max n-gram order 4, closest reference length). Files are UTF-8 (plain or gzip; '-'\n"
    "is standard input), one segment per line, all with the same number of lines;\n"
    "trailing whitespace is ignored, and an empty reference line is a reference of\n"
    "length 0 (as sacreBLEU's command line keeps it).\n"
    "\n"
    "Options:\n"
    "  -r, --ref FILE         a reference file (repeat for multiple references)\n"
    "  -i, --hyp FILE         the hypotheses (system A)\n"
    "      --hyp2 FILE        a second system B: paired bootstrap test of B against A\n"
    "  -b, --bootstrap N      bootstrap resamples (default 1000 with --hyp2; without\n"
    "                         --hyp2: a 95%% confidence interval for HYP)\n"
    "      --seed S           resampling seed (default %d)\n"
    "  -t, --tok NAME         tokenizer: 13a (default), char or none\n"
    "  -l, --lc               lowercase before tokenizing (case:lc)\n"
    "  -s, --smooth NAME      exp (default), none, floor (0.1) or add-k (1)\n"
    "  -j, --json             print a JSON object instead of text\n"
    "  -p, --plugin-path DIRS colon-separated plugin directories searched first\n"
    "  -h, --help             this help\n"
    "\n"
    "Output (as sacreBLEU's):\n"
    "  BLEU = 27.32 59.4/33.5/20.6/13.1 (BP = 1.000 ratio = 1.012 hyp_len = 1234 "
    "ref_len = 1219)\n"
    "  nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.3.1\n"
    "\n"
    "With --hyp2, both systems' scores with the mean and 95%% interval half-width over\n"
    "the resamples, the number of resamples where B beats A, p (that B is not better\n"
    "than A, one-sided) and sacreBLEU's two-sided paired-bs p.\n"
    "\n"
    "Exit status: 0 success, 1 failure, 2 usage error, 4 plugin error,\n"
    "5 unreadable or invalid input file.\n";

static const char cider_usage[] =
    "Usage: intrus eval cider --ref REF [--ref REF2 ...] --hyp HYP [options]\n"
    "\n"
    "Corpus CIDEr-D of the captions in HYP, computed as the MSCOCO caption evaluation\n"
    "(coco-caption) computes it: PTB tokenization (lowercased, punctuation dropped),\n"
    "n-grams up to 4 weighted by document frequencies over the references of the whole\n"
    "test set, the Gaussian length penalty; reported x 100 (coco-caption's 0.810 is\n"
    "81.0). Files are UTF-8 (plain or gzip; '-' is standard input), one image per line,\n"
    "all with the same number of lines: the n-th REF file holds every image's n-th\n"
    "reference, and an empty line is a reference that image does not have (every image\n"
    "needs at least one).\n"
    "\n"
    "Options:\n"
    "  -r, --ref FILE         a reference file (repeat for more references per image)\n"
    "  -i, --hyp FILE         the captions to score (system A)\n"
    "      --hyp2 FILE        a second system B: paired bootstrap test of B against A\n"
    "  -b, --bootstrap N      bootstrap resamples (default 1000 with --hyp2; without\n"
    "                         --hyp2: a 95%% confidence interval for HYP)\n"
    "      --seed S           resampling seed (default %d)\n"
    "      --sigma S          standard deviation of the length penalty (default 6)\n"
    "  -j, --json             print a JSON object instead of text\n"
    "  -p, --plugin-path DIRS colon-separated plugin directories searched first\n"
    "  -h, --help             this help\n"
    "\n"
    "Output:\n"
    "  CIDEr-D = 81.03 (5000 images)\n"
    "  nrefs:5|tok:ptb|sigma:6|version:coco-caption\n"
    "\n"
    "With --hyp2, as 'intrus eval bleu --hyp2' prints them: both systems' scores with the\n"
    "mean and 95%% interval half-width over the resamples (images are resampled; the\n"
    "document frequencies stay those of the whole test set), the number of resamples\n"
    "where B beats A, p (that B is not better than A, one-sided) and sacreBLEU's\n"
    "two-sided paired-bs p.\n"
    "\n"
    "Exit status: 0 success, 1 failure, 2 usage error, 4 plugin error,\n"
    "5 unreadable or invalid input file.\n";

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

/* ---- output ---------------------------------------------------------------------- */

static double score_value(const struct intrus_eval_scores *sc, const char *name) {
  for (int i = 0; i < sc->count; i++)
    if (!strcmp(sc->names[i], name)) return sc->values[i];
  return NAN;
}

/* sacreBLEU's verbose part: "59.4/33.5/20.6/13.1 (BP = 1.000 ratio = 1.012 hyp_len = 1234
 * ref_len = 1219)". */
static void verbose_score(const struct intrus_eval_scores *sc, char *buf, size_t size) {
  snprintf(buf, size, "%.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %.0f ref_len = %.0f)",
           score_value(sc, "P1"), score_value(sc, "P2"), score_value(sc, "P3"),
           score_value(sc, "P4"), score_value(sc, "BP"), score_value(sc, "ratio"),
           score_value(sc, "hyp_len"), score_value(sc, "ref_len"));
}

/* A double as Python's json module writes a float (repr: the shortest text that reads
 * back to the same value, with a ".0" when it is integral). */
static void json_number(FILE *f, double x) {
  char buf[64];
  if (!isfinite(x)) {
    fputs("null", f);
    return;
  }
  double ax = fabs(x);
  if (ax == 0 || (ax >= 1e-4 && ax < 1e16)) {
    for (int d = 1; d <= 20; d++) {
      snprintf(buf, sizeof buf, "%.*f", d, x);
      if (strtod(buf, NULL) == x) break;
    }
  } else {
    for (int p = 1; p <= 17; p++) {
      snprintf(buf, sizeof buf, "%.*g", p, x);
      if (strtod(buf, NULL) == x) break;
    }
  }
  fputs(buf, f);
}

/* sacreBLEU's "score": float(f'{score:.2f}'). */
static void json_score(FILE *f, double x) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.2f", x);
  json_number(f, strtod(buf, NULL));
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

/* The resampling fields of a system's JSON object (sacreBLEU's names). */
static void json_confidence(FILE *f, const char *indent,
                            const struct intrus_bootstrap_system *sys) {
  char conf[128];
  snprintf(conf, sizeof conf, "\xce\xbc = %.2f \xc2\xb1 %.2f", sys->mean, sys->ci);
  fprintf(f, ",\n%s \"confidence_mean\": ", indent);
  json_score(f, sys->mean);
  fprintf(f, ",\n%s \"confidence_var\": ", indent);
  json_score(f, sys->ci);
  fprintf(f, ",\n%s \"confidence\": ", indent);
  cli_json_string(f, conf);
  fprintf(f, ",\n%s \"ci_lower\": ", indent);
  json_number(f, sys->lower);
  fprintf(f, ",\n%s \"ci_upper\": ", indent);
  json_number(f, sys->upper);
}

/* The signature spelt out as keys (nrefs, case, ..., version), as sacreBLEU does. */
static void json_signature_keys(FILE *f, const char *indent, const char *signature) {
  const char *p = signature;
  while (*p) {
    const char *bar = strchr(p, '|'), *colon = strchr(p, ':');
    size_t flen = bar ? (size_t)(bar - p) : strlen(p);
    if (colon && colon < p + flen) {
      char key[64], value[128];
      snprintf(key, sizeof key, "%.*s", (int)(colon - p), p);
      snprintf(value, sizeof value, "%.*s", (int)(p + flen - colon - 1), colon + 1);
      fprintf(f, ",\n%s ", indent);
      cli_json_string(f, key);
      fputs(": ", f);
      cli_json_string(f, value);
    }
    p += flen + (bar ? 1 : 0);
  }
}

/* One system as sacreBLEU's Score.format(is_json=True) builds it, plus the numbers
 * behind the verbose string. sys may be NULL (no resampling). */
static void json_system(FILE *f, const char *indent, const struct intrus_eval_scores *sc,
                        const char *signature, const struct intrus_bootstrap_system *sys) {
  char verbose[256];
  verbose_score(sc, verbose, sizeof verbose);
  fprintf(f, "{\n%s \"name\": \"BLEU\",\n%s \"score\": ", indent, indent);
  json_score(f, score_value(sc, "BLEU"));
  fprintf(f, ",\n%s \"signature\": ", indent);
  cli_json_string(f, signature);
  if (sys) json_confidence(f, indent, sys);
  fprintf(f, ",\n%s \"verbose_score\": ", indent);
  cli_json_string(f, verbose);
  fprintf(f, ",\n%s \"precisions\": [", indent);
  for (int n = 1; n <= 4; n++) {
    char name[8];
    snprintf(name, sizeof name, "P%d", n);
    if (n > 1) fputs(", ", f);
    json_number(f, score_value(sc, name));
  }
  fprintf(f, "],\n%s \"bp\": ", indent);
  json_number(f, score_value(sc, "BP"));
  fprintf(f, ",\n%s \"ratio\": ", indent);
  json_number(f, score_value(sc, "ratio"));
  fprintf(f, ",\n%s \"hyp_len\": %.0f,\n%s \"ref_len\": %.0f", indent,
          score_value(sc, "hyp_len"), indent, score_value(sc, "ref_len"));
  json_signature_keys(f, indent, signature);
  fprintf(f, "\n%s}", indent);
}

static void text_system(FILE *f, const char *label, const struct intrus_eval_scores *sc,
                        const struct intrus_bootstrap_system *sys) {
  char verbose[256];
  verbose_score(sc, verbose, sizeof verbose);
  if (label) fprintf(f, "%s: ", label);
  fprintf(f, "BLEU = %.2f", score_value(sc, "BLEU"));
  if (sys) fprintf(f, " (\xce\xbc = %.2f \xc2\xb1 %.2f)", sys->mean, sys->ci);
  fprintf(f, " %s\n", verbose);
}

/* CIDEr-D: "CIDEr-D = 81.03 (5000 images)", with the resampled mean and half-width
 * after the score as for BLEU. */
static void cider_text_system(FILE *f, const char *label, const struct intrus_eval_scores *sc,
                              const struct intrus_bootstrap_system *sys) {
  if (label) fprintf(f, "%s: ", label);
  fprintf(f, "CIDEr-D = %.2f", score_value(sc, "CIDEr"));
  if (sys) fprintf(f, " (\xce\xbc = %.2f \xc2\xb1 %.2f)", sys->mean, sys->ci);
  fprintf(f, " (%.0f images)\n", score_value(sc, "images"));
}

/* CIDEr-D as JSON, shaped like BLEU's: name, score (2 decimals), signature, the
 * resampling fields, then the unrounded score (x 100), the number of images and the
 * signature's fields. */
static void cider_json_system(FILE *f, const char *indent, const struct intrus_eval_scores *sc,
                              const char *signature, const struct intrus_bootstrap_system *sys) {
  fprintf(f, "{\n%s \"name\": \"CIDEr-D\",\n%s \"score\": ", indent, indent);
  json_score(f, score_value(sc, "CIDEr"));
  fprintf(f, ",\n%s \"signature\": ", indent);
  cli_json_string(f, signature);
  if (sys) json_confidence(f, indent, sys);
  fprintf(f, ",\n%s \"score_full\": ", indent);
  json_number(f, score_value(sc, "CIDEr"));
  fprintf(f, ",\n%s \"images\": %.0f", indent, score_value(sc, "images"));
  json_signature_keys(f, indent, signature);
  fprintf(f, "\n%s}", indent);
}

typedef void (*text_system_fn)(FILE *f, const char *label, const struct intrus_eval_scores *sc,
                               const struct intrus_bootstrap_system *sys);
typedef void (*json_system_fn)(FILE *f, const char *indent, const struct intrus_eval_scores *sc,
                               const char *signature, const struct intrus_bootstrap_system *sys);

/* ---- intrus eval bleu / cider: options ------------------------------------------------ */

#define MAX_REFS 64

enum metric { METRIC_BLEU, METRIC_CIDER };

struct eval_args {
  enum metric metric;
  const char *refs[MAX_REFS];
  int nrefs;
  const char *hyp, *hyp2, *tok, *smooth, *plugin_path;
  bool lc, json;
  double sigma; /* CIDEr-D */
  long bootstrap;
  uint64_t seed;
};

static bool one_of(const char *v, const char *const *choices) {
  for (; *choices; choices++)
    if (!strcmp(v, *choices)) return true;
  return false;
}

/* "intrus <cmd>: <message>" and where to find help; cmd is "eval bleu", "eval cider" or
 * "eval bootstrap" (the bootstrap hands its shared options to the metric's parser). */
static int usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "intrus %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(try 'intrus %s --help')\n", cmd);
  va_end(ap);
  return INTRUS_EXIT_USAGE;
}

/* getopt codes of the long options without a short form. */
enum { OPT_HYP2 = 1000, OPT_SEED, OPT_SIGMA };

/* The options both metrics have: -r, -i, --hyp2, -b, --seed, -j, -p. Returns -1 when c
 * is not one of them, else -2 to go on or an exit code. own is the metric's own command
 * ("eval bleu", "eval cider"): --bootstrap is called --samples in other commands. */
static int common_option(const char *cmd, const char *own, int c, struct eval_args *a) {
  switch (c) {
  case 'r':
    if (a->nrefs == MAX_REFS) return usage_error(cmd, "at most %d --ref files", MAX_REFS);
    a->refs[a->nrefs++] = optarg;
    return -2;
  case 'i':
    /* Keeping the last of two would score a file the user may not have meant. */
    if (a->hyp) return usage_error(cmd, "--hyp given twice ('%s', '%s'): one system per --hyp, "
                                        "a second one with --hyp2", a->hyp, optarg);
    a->hyp = optarg;
    return -2;
  case OPT_HYP2:
    if (a->hyp2) return usage_error(cmd, "--hyp2 given twice ('%s', '%s')", a->hyp2, optarg);
    a->hyp2 = optarg;
    return -2;
  case 'b': {
    char *end;
    errno = 0;
    a->bootstrap = strtol(optarg, &end, 10);
    if (errno || *end || a->bootstrap <= 0 || a->bootstrap > 1000000)
      return usage_error(cmd, "--%s wants a number of resamples from 1 to 1000000, "
                              "got '%s'", strcmp(cmd, own) ? "samples" : "bootstrap",
                              optarg);
    return -2;
  }
  case OPT_SEED: {
    char *end;
    errno = 0;
    unsigned long long s = strtoull(optarg, &end, 10);
    if (errno || *end || !*optarg || optarg[0] == '-')
      return usage_error(cmd, "--seed wants a non-negative integer, got '%s'", optarg);
    a->seed = s;
    return -2;
  }
  case 'j': a->json = true; return -2;
  case 'p': a->plugin_path = optarg; return -2;
  default: return -1;
  }
}

/* What every metric checks once its options are read. -1 to go on, or an exit code. */
static int finish_args(const char *cmd, int argc, char **argv, struct eval_args *a) {
  if (optind < argc) return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  if (!a->hyp) return usage_error(cmd, "a hypothesis file is needed (--hyp FILE)");
  if (a->nrefs == 0) return usage_error(cmd, "a reference file is needed (--ref FILE)");
  int stdin_uses = !strcmp(a->hyp, "-") + (a->hyp2 && !strcmp(a->hyp2, "-"));
  for (int r = 0; r < a->nrefs; r++) stdin_uses += !strcmp(a->refs[r], "-");
  if (stdin_uses > 1) return usage_error(cmd, "standard input ('-') can be only one of the files");
  if (a->hyp2 && a->bootstrap == 0) a->bootstrap = INTRUS_BOOTSTRAP_DEFAULT_SAMPLES;
  return -1;
}

/* Returns -1 to go on, or an exit code. cmd names the command in usage errors. */
static int parse_bleu_args(const char *cmd, int argc, char **argv, struct eval_args *a) {
  static const struct option longopts[] = {
      {"ref", required_argument, NULL, 'r'},       {"hyp", required_argument, NULL, 'i'},
      {"hyp2", required_argument, NULL, OPT_HYP2}, {"bootstrap", required_argument, NULL, 'b'},
      {"seed", required_argument, NULL, OPT_SEED}, {"tok", required_argument, NULL, 't'},
      {"lc", no_argument, NULL, 'l'},              {"smooth", required_argument, NULL, 's'},
      {"json", no_argument, NULL, 'j'},            {"plugin-path", required_argument, NULL, 'p'},
      {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0}};
  static const char *const toks[] = {"13a", "char", "none", NULL};
  static const char *const smooths[] = {"exp", "none", "floor", "add-k", NULL};
  memset(a, 0, sizeof *a);
  a->metric = METRIC_BLEU;
  a->tok = "13a";
  a->smooth = "exp";
  a->seed = INTRUS_BOOTSTRAP_DEFAULT_SEED;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "r:i:b:t:ls:jp:h", longopts, NULL)) != -1) {
    int rc = common_option(cmd, "eval bleu", c, a);
    if (rc >= 0) return rc;
    if (rc == -2) continue;
    switch (c) {
    case 't':
      if (!one_of(optarg, toks))
        return usage_error(cmd, "--tok wants 13a, char or none, got '%s'", optarg);
      a->tok = optarg;
      break;
    case 'l': a->lc = true; break;
    case 's':
      if (!one_of(optarg, smooths))
        return usage_error(cmd, "--smooth wants exp, none, floor or add-k, got '%s'", optarg);
      a->smooth = optarg;
      break;
    case 'h': printf(bleu_usage, INTRUS_BOOTSTRAP_DEFAULT_SEED); return INTRUS_EXIT_OK;
    default: fprintf(stderr, bleu_usage, INTRUS_BOOTSTRAP_DEFAULT_SEED); return INTRUS_EXIT_USAGE;
    }
  }
  return finish_args(cmd, argc, argv, a);
}

/* The same for CIDEr-D, whose own option is --sigma. */
static int parse_cider_args(const char *cmd, int argc, char **argv, struct eval_args *a) {
  static const struct option longopts[] = {
      {"ref", required_argument, NULL, 'r'},       {"hyp", required_argument, NULL, 'i'},
      {"hyp2", required_argument, NULL, OPT_HYP2}, {"bootstrap", required_argument, NULL, 'b'},
      {"seed", required_argument, NULL, OPT_SEED}, {"sigma", required_argument, NULL, OPT_SIGMA},
      {"json", no_argument, NULL, 'j'},            {"plugin-path", required_argument, NULL, 'p'},
      {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0}};
  memset(a, 0, sizeof *a);
  a->metric = METRIC_CIDER;
  a->sigma = 6.0;
  a->seed = INTRUS_BOOTSTRAP_DEFAULT_SEED;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "r:i:b:jp:h", longopts, NULL)) != -1) {
    int rc = common_option(cmd, "eval cider", c, a);
    if (rc >= 0) return rc;
    if (rc == -2) continue;
    switch (c) {
    case OPT_SIGMA: {
      char *end;
      errno = 0;
      a->sigma = strtod(optarg, &end);
      if (errno || *end || !*optarg || !isfinite(a->sigma) || !(a->sigma > 0))
        return usage_error(cmd, "--sigma wants a positive number, got '%s'", optarg);
      break;
    }
    case 'h': printf(cider_usage, INTRUS_BOOTSTRAP_DEFAULT_SEED); return INTRUS_EXIT_OK;
    default: fprintf(stderr, cider_usage, INTRUS_BOOTSTRAP_DEFAULT_SEED); return INTRUS_EXIT_USAGE;
    }
  }
  return finish_args(cmd, argc, argv, a);
}

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
static int eval_run(const char *cmd, struct eval_args a) {
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
    printf("paired bootstrap: B > A in %d of %d resamples; p = %.4f (B not better than A); "
           "sacreBLEU paired-bs p = %.4f\n",
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

static int cmd_bleu(int argc, char **argv) {
  struct eval_args a;
  int rc = parse_bleu_args("eval bleu", argc, argv, &a);
  return rc >= 0 ? rc : eval_run("eval bleu", a);
}

static int cmd_cider(int argc, char **argv) {
  struct eval_args a;
  int rc = parse_cider_args("eval cider", argc, argv, &a);
  return rc >= 0 ? rc : eval_run("eval cider", a);
}

/* ---- intrus eval bootstrap ------------------------------------------------------- */

static const char bootstrap_usage[] =
    "Usage: intrus eval bootstrap --ref REF --hyp A --hyp B [options]\n"
    "\n"
    "Paired bootstrap resampling of two systems' outputs for the same segments, as\n"
    "sacreBLEU 2.3.1's --paired-bs computes it (its resamples are NumPy's\n"
    "default_rng(seed).choice, drawn the same way here: the same seed and number of\n"
    "samples give sacreBLEU's numbers): each system's score, the mean and\n"
    "95%% interval half-width of its resampled scores, the number of resamples where B\n"
    "beats A, p (that B is not better than A, one-sided) and sacreBLEU's two-sided\n"
    "paired-bs p. The same as 'intrus eval bleu --hyp A --hyp2 B' (or 'intrus eval\n"
    "cider ...' with --metric cider).\n"
    "\n"
    "Options:\n"
    "  -r, --ref FILE         a reference file (repeat for multiple references)\n"
    "  -i, --hyp FILE         system A, then system B (exactly two)\n"
    "  -m, --metric NAME      the metric resampled: bleu (default) or cider (CIDEr-D)\n"
    "  -n, --samples N        resamples (default %d)\n"
    "      --seed S           resampling seed (default %d)\n"
    "  -t, --tok NAME         BLEU tokenizer: 13a (default), char or none\n"
    "  -l, --lc               BLEU: lowercase before tokenizing\n"
    "  -s, --smooth NAME      BLEU: exp (default), none, floor or add-k\n"
    "      --sigma S          CIDEr-D: standard deviation of the length penalty (default 6)\n"
    "  -j, --json             print a JSON object instead of text\n"
    "  -p, --plugin-path DIRS colon-separated plugin directories searched first\n"
    "  -h, --help             this help\n"
    "\n"
    "Exit status: 0 success, 1 failure, 2 usage error, 4 plugin error,\n"
    "5 unreadable or invalid input file.\n";

/* The bootstrap's own options (two --hyp, --metric, --samples) become those of the
 * metric's command (eval bleu or eval cider), whose parser then checks the rest: one
 * parser for the settings both commands share. */
static int cmd_bootstrap(int argc, char **argv) {
  const char *hyps[2] = {NULL, NULL}, *metric = "bleu", *samples = NULL;
  int nhyp = 0;
  char **rest = calloc((size_t)argc + 8, sizeof *rest);
  if (!rest) {
    fputs("intrus eval bootstrap: out of memory\n", stderr);
    return INTRUS_EXIT_FAILURE;
  }
  /* The metric first (the last --metric counts), for the messages below. */
  const char *named = "bleu";
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--metric=", 9)) named = argv[i] + 9;
    else if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "--metric")) && i + 1 < argc)
      named = argv[++i];
    else if (!strcmp(argv[i], "-i") || !strcmp(argv[i], "--hyp") || !strcmp(argv[i], "-n") ||
             !strcmp(argv[i], "--samples"))
      i++;
  }
  int nrest = 0;
  rest[nrest++] = "bootstrap";
  int rc = -1;
  for (int i = 1; i < argc && rc < 0; i++) {
    const char *arg = argv[i], *val = NULL;
    /* --opt=value and -o value */
    const char *eq = !strncmp(arg, "--", 2) ? strchr(arg, '=') : NULL;
    char name[32] = "";
    if (eq && (size_t)(eq - arg) < sizeof name) {
      snprintf(name, sizeof name, "%.*s", (int)(eq - arg), arg);
      val = eq + 1;
    } else {
      snprintf(name, sizeof name, "%s", arg);
    }
    bool is_hyp = !strcmp(name, "-i") || !strcmp(name, "--hyp");
    bool is_metric = !strcmp(name, "-m") || !strcmp(name, "--metric");
    bool is_samples = !strcmp(name, "-n") || !strcmp(name, "--samples");
    if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
      printf(bootstrap_usage, INTRUS_BOOTSTRAP_DEFAULT_SAMPLES, INTRUS_BOOTSTRAP_DEFAULT_SEED);
      rc = INTRUS_EXIT_OK;
    } else if (is_hyp || is_metric || is_samples) {
      if (!val) {
        if (i + 1 >= argc) {
          rc = usage_error("eval bootstrap", "%s wants a value", name);
          break;
        }
        val = argv[++i];
      }
      if (is_hyp) {
        if (nhyp == 2)
          rc = usage_error("eval bootstrap",
                           "--hyp given three times: exactly two systems, A and B");
        else
          hyps[nhyp++] = val;
      } else if (is_metric) {
        metric = val;
      } else {
        samples = val;
      }
    } else if (!strcmp(name, "-b") || !strcmp(name, "--bootstrap") || !strcmp(name, "--hyp2")) {
      rc = usage_error("eval bootstrap", "%s is an option of 'intrus eval %s'; here, --samples N "
                                 "and --hyp twice",
                       name, strcmp(named, "cider") ? "bleu" : "cider");
    } else {
      rest[nrest++] = argv[i];
    }
  }
  if (rc < 0 && strcmp(metric, "bleu") && strcmp(metric, "cider"))
    rc = usage_error("eval bootstrap", "no metric '%s' to resample (available: bleu, cider)",
                     metric);
  if (rc < 0 && nhyp != 2)
    rc = usage_error("eval bootstrap", "two systems are needed: --hyp A --hyp B (got %d)", nhyp);
  if (rc < 0) {
    rest[nrest++] = "--hyp";
    rest[nrest++] = (char *)hyps[0];
    rest[nrest++] = "--hyp2";
    rest[nrest++] = (char *)hyps[1];
    if (samples) { /* checked by the metric's --bootstrap, named as --samples */
      rest[nrest++] = "--bootstrap";
      rest[nrest++] = (char *)samples;
    }
    struct eval_args a;
    if (!strcmp(metric, "cider")) rc = parse_cider_args("eval bootstrap", nrest, rest, &a);
    else rc = parse_bleu_args("eval bootstrap", nrest, rest, &a);
    if (rc < 0) rc = eval_run("eval bootstrap", a);
  }
  free(rest);
  return rc;
}

int intrus_cmd_eval(int argc, char **argv) {
  if (argc < 2) {
    fputs(eval_usage, stderr);
    return INTRUS_EXIT_USAGE;
  }
  const char *metric = argv[1];
  if (!strcmp(metric, "-h") || !strcmp(metric, "--help") || !strcmp(metric, "help")) {
    fputs(eval_usage, stdout);
    return INTRUS_EXIT_OK;
  }
  if (!strcmp(metric, "bleu")) return cmd_bleu(argc - 1, argv + 1);
  if (!strcmp(metric, "cider")) return cmd_cider(argc - 1, argv + 1);
  if (!strcmp(metric, "bootstrap")) return cmd_bootstrap(argc - 1, argv + 1);
  fprintf(stderr, "intrus eval: unknown metric '%s' (available: bleu, cider, bootstrap; try "
                  "'intrus eval --help')\n",
          metric);
  return INTRUS_EXIT_USAGE;
}

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
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_eval.h"

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

/* ---- output ---------------------------------------------------------------------- */

double score_value(const struct intrus_eval_scores *sc, const char *name) {
  for (int i = 0; i < sc->count; i++)
    if (!strcmp(sc->names[i], name)) return sc->values[i];
  return NAN;
}

/* A double as Python's json module writes a float (repr: the shortest text that reads
 * back to the same value, with a ".0" when it is integral). */
void json_number(FILE *f, double x) {
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
void json_score(FILE *f, double x) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.2f", x);
  json_number(f, strtod(buf, NULL));
}

/* The resampling fields of a system's JSON object (sacreBLEU's names). */
void json_confidence(FILE *f, const char *indent,
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
void json_signature_keys(FILE *f, const char *indent, const char *signature) {
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

/* ---- options both metrics share -------------------------------------------------- */

int usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "intrus %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(try 'intrus %s --help')\n", cmd);
  va_end(ap);
  return INTRUS_EXIT_USAGE;
}

/* The options both metrics have: -r, -i, --hyp2, -b, --seed, -j, -p. Returns -1 when c
 * is not one of them, else -2 to go on or an exit code. own is the metric's own command
 * ("eval bleu", "eval cider"): --bootstrap is called --samples in other commands. */
int common_option(const char *cmd, const char *own, int c, struct eval_args *a) {
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
int finish_args(const char *cmd, int argc, char **argv, struct eval_args *a) {
  if (optind < argc) return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  if (!a->hyp) return usage_error(cmd, "a hypothesis file is needed (--hyp FILE)");
  if (a->nrefs == 0) return usage_error(cmd, "a reference file is needed (--ref FILE)");
  int stdin_uses = !strcmp(a->hyp, "-") + (a->hyp2 && !strcmp(a->hyp2, "-"));
  for (int r = 0; r < a->nrefs; r++) stdin_uses += !strcmp(a->refs[r], "-");
  if (stdin_uses > 1) return usage_error(cmd, "standard input ('-') can be only one of the files");
  if (a->hyp2 && a->bootstrap == 0) a->bootstrap = INTRUS_BOOTSTRAP_DEFAULT_SAMPLES;
  return -1;
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

/* intrus eval bleu: its options, its help and its output as sacreBLEU 2.3.1 prints it
 * (text and JSON); the run itself is cmd_eval_run.c's. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmd_eval.h"

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

/* sacreBLEU's verbose part: "59.4/33.5/20.6/13.1 (BP = 1.000 ratio = 1.012 hyp_len = 1234
 * ref_len = 1219)". */
static void verbose_score(const struct intrus_eval_scores *sc, char *buf, size_t size) {
  snprintf(buf, size, "%.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %.0f ref_len = %.0f)",
           score_value(sc, "P1"), score_value(sc, "P2"), score_value(sc, "P3"),
           score_value(sc, "P4"), score_value(sc, "BP"), score_value(sc, "ratio"),
           score_value(sc, "hyp_len"), score_value(sc, "ref_len"));
}

/* One system as sacreBLEU's Score.format(is_json=True) builds it, plus the numbers
 * behind the verbose string. sys may be NULL (no resampling). */
void json_system(FILE *f, const char *indent, const struct intrus_eval_scores *sc,
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

void text_system(FILE *f, const char *label, const struct intrus_eval_scores *sc,
                        const struct intrus_bootstrap_system *sys) {
  char verbose[256];
  verbose_score(sc, verbose, sizeof verbose);
  if (label) fprintf(f, "%s: ", label);
  fprintf(f, "BLEU = %.2f", score_value(sc, "BLEU"));
  if (sys) fprintf(f, " (\xce\xbc = %.2f \xc2\xb1 %.2f)", sys->mean, sys->ci);
  fprintf(f, " %s\n", verbose);
}

static bool one_of(const char *v, const char *const *choices) {
  for (; *choices; choices++)
    if (!strcmp(v, *choices)) return true;
  return false;
}

/* Returns -1 to go on, or an exit code. cmd names the command in usage errors. */
int parse_bleu_args(const char *cmd, int argc, char **argv, struct eval_args *a) {
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

int cmd_bleu(int argc, char **argv) {
  struct eval_args a;
  int rc = parse_bleu_args("eval bleu", argc, argv, &a);
  return rc >= 0 ? rc : eval_run("eval bleu", a);
}

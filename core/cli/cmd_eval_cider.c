/* intrus eval cider: its options, its help and its output (text and JSON, shaped like
 * BLEU's); the run itself is cmd_eval_run.c's. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_eval.h"

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

/* CIDEr-D: "CIDEr-D = 81.03 (5000 images)", with the resampled mean and half-width
 * after the score as for BLEU. */
void cider_text_system(FILE *f, const char *label, const struct intrus_eval_scores *sc,
                              const struct intrus_bootstrap_system *sys) {
  if (label) fprintf(f, "%s: ", label);
  fprintf(f, "CIDEr-D = %.2f", score_value(sc, "CIDEr"));
  if (sys) fprintf(f, " (\xce\xbc = %.2f \xc2\xb1 %.2f)", sys->mean, sys->ci);
  fprintf(f, " (%.0f images)\n", score_value(sc, "images"));
}

/* CIDEr-D as JSON, shaped like BLEU's: name, score (2 decimals), signature, the
 * resampling fields, then the unrounded score (x 100), the number of images and the
 * signature's fields. */
void cider_json_system(FILE *f, const char *indent, const struct intrus_eval_scores *sc,
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

/* As parse_bleu_args (cmd_eval_bleu.c), for CIDEr-D, whose own option is --sigma. */
int parse_cider_args(const char *cmd, int argc, char **argv, struct eval_args *a) {
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

int cmd_cider(int argc, char **argv) {
  struct eval_args a;
  int rc = parse_cider_args("eval cider", argc, argv, &a);
  return rc >= 0 ? rc : eval_run("eval cider", a);
}

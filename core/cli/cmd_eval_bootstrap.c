/* intrus eval bootstrap: the paired bootstrap of two systems under either metric, by
 * handing its options on to the metric's own parser. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_eval.h"

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
int cmd_bootstrap(int argc, char **argv) {
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

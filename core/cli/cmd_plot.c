/* `intrus plot`: learning curves of several runs (their train.log) in one PNG. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "viz/plot.h"

static const char plot_usage[] =
    "Usage: intrus plot RUN_DIR... -o OUT.png [options]\n"
    "\n"
    "Draws the learning curves of the runs (each RUN_DIR's train.log) into one PNG:\n"
    "one coloured line with markers per run, a legend, round ticks. Rows without a\n"
    "value for the y axis are skipped.\n"
    "\n"
    "Options:\n"
    "  -o, --output OUT.png   the picture (written to a temporary file, then renamed)\n"
    "  --x step|time          x axis: the training step (default), or the training\n"
    "                         time in minutes (train_s: wall time without validation)\n"
    "  --y bleu|valid_loss|loss\n"
    "                         y axis: validation BLEU (default), validation loss or\n"
    "                         training loss\n"
    "  --label NAME           legend label of the next run, in order (repeatable;\n"
    "                         default: the run directory's base name)\n"
    "  --title TEXT           title (default: from the axes)\n"
    "  --width W, --height H  size in pixels (default 900 x 560; 200..8000)\n"
    "  -h, --help             show this help\n"
    "\n"
    "Exit status: 0 success, 2 usage error, 5 a log that is missing, malformed or\n"
    "has no value to plot, or a picture that cannot be written.\n";

enum { OPT_X = 256, OPT_Y, OPT_LABEL, OPT_TITLE, OPT_WIDTH, OPT_HEIGHT };

static int usage_error(const char *fmt, const char *arg) {
  fputs("intrus plot: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs(" (try 'intrus plot --help')\n", stderr);
  return INTRUS_EXIT_USAGE;
}

static int parse_side(const char *name, const char *arg, int *v) {
  char *end;
  errno = 0;
  long n = strtol(arg, &end, 10);
  if (errno || end == arg || *end || n < PLOT_MIN_SIDE || n > PLOT_MAX_SIDE) {
    fprintf(stderr, "intrus plot: --%s wants pixels from %d to %d, got '%s'\n", name,
            PLOT_MIN_SIDE, PLOT_MAX_SIDE, arg);
    return INTRUS_EXIT_USAGE;
  }
  *v = (int)n;
  return INTRUS_EXIT_OK;
}

int intrus_cmd_plot(int argc, char **argv) {
  static const struct option longopts[] = {
      {"output", required_argument, NULL, 'o'},    {"x", required_argument, NULL, OPT_X},
      {"y", required_argument, NULL, OPT_Y},       {"label", required_argument, NULL, OPT_LABEL},
      {"title", required_argument, NULL, OPT_TITLE}, {"width", required_argument, NULL, OPT_WIDTH},
      {"height", required_argument, NULL, OPT_HEIGHT}, {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  struct plot_options opt = {PLOT_X_STEP, PLOT_Y_BLEU, NULL, 900, 560};
  const char *out = NULL;
  const char **labels = calloc((size_t)argc, sizeof *labels);
  if (!labels) intrus_panic("out of memory");
  int nlabels = 0, rc = INTRUS_EXIT_OK, c;
  optind = 1;
  while (!rc && (c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case OPT_X:
      if (!strcmp(optarg, "step")) opt.x = PLOT_X_STEP;
      else if (!strcmp(optarg, "time")) opt.x = PLOT_X_TIME;
      else rc = usage_error("--x wants step or time, got '%s'", optarg);
      break;
    case OPT_Y:
      if (!strcmp(optarg, "bleu")) opt.y = PLOT_Y_BLEU;
      else if (!strcmp(optarg, "valid_loss")) opt.y = PLOT_Y_VALID_LOSS;
      else if (!strcmp(optarg, "loss")) opt.y = PLOT_Y_LOSS;
      else rc = usage_error("--y wants bleu, valid_loss or loss, got '%s'", optarg);
      break;
    case OPT_LABEL: labels[nlabels++] = optarg; break;
    case OPT_TITLE: opt.title = optarg; break;
    case OPT_WIDTH: rc = parse_side("width", optarg, &opt.width); break;
    case OPT_HEIGHT: rc = parse_side("height", optarg, &opt.height); break;
    case 'h': printf("%s", plot_usage); free(labels); return INTRUS_EXIT_OK;
    default: fputs(plot_usage, stderr); rc = INTRUS_EXIT_USAGE;
    }
  }
  int nruns = argc - optind;
  size_t olen = out ? strlen(out) : 0;
  if (rc) {
  } else if (nruns < 1) {
    rc = usage_error("expected one or more run directories%s", "");
  } else if (!out) {
    rc = usage_error("expected -o OUT.png%s", "");
  } else if (olen < 4 || strcasecmp(out + olen - 4, ".png")) {
    rc = usage_error("the output must be a .png file, got '%s'", out);
  } else if (nlabels > nruns) {
    fprintf(stderr, "intrus plot: %d --label options for %d run director%s\n", nlabels, nruns,
            nruns == 1 ? "y" : "ies");
    rc = INTRUS_EXIT_USAGE;
  }
  if (!rc) {
    struct intrus_error err = {0};
    if (intrus_plot_runs(out, nruns, (const char *const *)argv + optind, labels, &opt, &err))
      rc = intrus_cli_fail("plot", &err);
    else
      printf("%s: %d run%s\n", out, nruns, nruns == 1 ? "" : "s");
  }
  free(labels);
  return rc;
}

/* intrus train / intrus run, and the commands later work fills in. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_distill.h"
#include "config.h"
#include "intrus/train.h"

static const char train_usage[] =
    "Usage: intrus %s EXPERIMENT.cfg [options]\n"
    "\n"
    "%s"
    "\n"
    "Options:\n"
    "  -o, --run-dir DIR      where effective.cfg, train.log, checkpoint.ckpt%s go\n"
    "                         (default: runs/<experiment name>)\n"
    "  -p, --plugin-path DIRS colon-separated plugin directories searched first\n"
    "  -n, --max-steps N      stop after step N (resume later to go on)\n"
    "  -s, --set PATH=VALUE   change a setting of the experiment for this run, e.g.\n"
    "                         --set name=wide --set model.d_model=256 (repeatable;\n"
    "                         VALUE a number, true/false or a string; written into\n"
    "                         RUN_DIR/effective.cfg, and a model or data setting enters\n"
    "                         the fingerprint a resume is checked against)\n"
    "  -q, --quiet            no progress lines\n"
    "  -h, --help             this help\n";

static const char train_what[] =
    "Trains the model the experiment describes. A run directory that already holds a\n"
    "checkpoint of the same model configuration is resumed from it.\n";
static const char run_what[] =
    "Trains the model the experiment describes (resuming a run directory that already\n"
    "holds a checkpoint of it, and doing nothing more if training is complete), then, for\n"
    "text data, decodes the test split with the experiment's search settings into\n"
    "RUN_DIR/test.hyp, scores it with BLEU (the eval.bleu settings; sacreBLEU 2.3.1's\n"
    "numbers and signature) and writes RUN_DIR/results.json. The test split is checked\n"
    "before training starts.\n";

struct train_args {
  const char *experiment, *run_dir, *plugin_path;
  long max_steps;
  bool quiet, help;
  struct cli_sets sets;
};

/* The one parser of train's and run's command line, on rank 0 (report: it prints what
 * is wrong) and on the other ranks of a data-parallel job (cli_train_file: silent, as
 * rank 0 reports), so that every rank reads options and file in any order alike. */
static int parse_train_args(const char *cmd, int argc, char **argv, bool report,
                            struct train_args *a) {
  static const struct option longopts[] = {
      {"run-dir", required_argument, NULL, 'o'},   {"plugin-path", required_argument, NULL, 'p'},
      {"max-steps", required_argument, NULL, 'n'}, {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},            {"set", required_argument, NULL, 's'},
      {NULL, 0, NULL, 0}};
  const bool run = strcmp(cmd, "run") == 0;
  const char *extra = run ? ", results.json" : "", *what = run ? run_what : train_what;
  memset(a, 0, sizeof *a);
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "o:p:n:s:qh", longopts, NULL)) != -1) {
    switch (c) {
    case 'o': a->run_dir = optarg; break;
    case 'p': a->plugin_path = optarg; break;
    case 'n': {
      char *end;
      errno = 0;
      a->max_steps = strtol(optarg, &end, 10);
      if (errno == ERANGE && a->max_steps > 0) {
        if (report)
          fprintf(stderr, "intrus %s: --max-steps %s is too large (at most %ld)\n", cmd, optarg,
                  LONG_MAX);
        return INTRUS_EXIT_USAGE;
      }
      if (errno || *end || end == optarg || a->max_steps <= 0) {
        if (report)
          fprintf(stderr, "intrus %s: --max-steps wants a positive integer, got '%s'\n", cmd,
                  optarg);
        return INTRUS_EXIT_USAGE;
      }
      break;
    }
    case 's':
      if (!cli_sets_add(&a->sets, cmd, optarg, report)) return INTRUS_EXIT_USAGE;
      break;
    case 'q': a->quiet = true; break;
    case 'h': a->help = true; return INTRUS_EXIT_OK;
    default:
      if (report) fprintf(stderr, train_usage, cmd, what, extra);
      return INTRUS_EXIT_USAGE;
    }
  }
  if (optind != argc - 1) {
    if (report) {
      fprintf(stderr, "intrus %s: expected one experiment file\n", cmd);
      fprintf(stderr, train_usage, cmd, what, extra);
    }
    return INTRUS_EXIT_USAGE;
  }
  a->experiment = argv[optind];
  return INTRUS_EXIT_OK;
}

int cli_train_file(const char *cmd, int argc, char **argv, const char **file,
                   struct cli_sets *sets) {
  struct train_args a;
  opterr = 0; /* getopt's own messages too: rank 0 prints them */
  int rc = parse_train_args(cmd, argc, argv, false, &a);
  opterr = 1;
  *file = rc || a.help ? NULL : a.experiment;
  *sets = a.sets;
  return *file ? INTRUS_EXIT_OK : INTRUS_EXIT_USAGE;
}

static int train_or_run(const char *cmd, int argc, char **argv) {
  struct train_args a;
  int rc = parse_train_args(cmd, argc, argv, true, &a);
  if (rc) return rc;
  const bool run = strcmp(cmd, "run") == 0;
  if (a.help) {
    printf(train_usage, cmd, run ? run_what : train_what, run ? ", results.json" : "");
    return INTRUS_EXIT_OK;
  }
  struct intrus_error err = {0};
  struct intrus_config *cfg = cli_config_load(a.experiment, &a.sets, &err);
  if (!cfg) return intrus_cli_fail(cmd, &err);
  struct cli_experiment x;
  enum intrus_status st = intrus_cli_experiment(cfg, a.run_dir, a.plugin_path, &x, &err);
  if (st) {
    intrus_config_free(cfg);
    return intrus_cli_fail(cmd, &err);
  }
  FILE *progress = a.quiet ? NULL : stderr;
  struct cli_run_result r;
  memset(&r, 0, sizeof r);
  if (run) st = cli_run_experiment(cfg, &x, progress, a.max_steps, &r, &err);
  else if (!(st = cli_distill_for(cfg, x.run_dir, x.search, progress, &err))) {
    struct intrus_train_options opt = {.run_dir = x.run_dir, .search = x.search,
                                       .progress = progress, .max_steps = a.max_steps};
    st = intrus_train(cfg, &opt, &r.train, &err);
  }
  intrus_plugin_search_free(x.search);
  intrus_config_free(cfg);
  if (st) return intrus_cli_fail(cmd, &err);
  const struct intrus_train_result *res = &r.train;
  if (res->steps_done == res->resumed_from)
    printf("%s: already trained to step %ld (%s); valid loss %.4f\n", x.name, res->steps_done,
           x.run_dir, res->valid_loss);
  else {
    printf("%s: %ld steps", x.name, res->steps_done);
    if (res->resumed_from) printf(" (resumed from %ld)", res->resumed_from);
    printf(", last train loss %.4f, valid loss %.4f, %.0f tokens/s, %.1f s", res->last_loss,
           res->valid_loss, res->tokens_per_s, res->seconds);
    if (res->ranks > 1)
      printf(" (%d ranks; summing gradients %.1f s, %.1f%%)", res->ranks, res->sum_seconds,
             100.0 * res->sum_seconds / (res->seconds > 0 ? res->seconds : 1));
    putchar('\n');
  }
  if (!run) return INTRUS_EXIT_OK;
  if (r.text) {
    const struct score_result *b = &r.scores.bleu;
    printf("test: %zu %s decoded with %s -> %s\n", r.scores.sentences,
           r.scores.images ? "images" : "sentences", r.scores.checkpoint, r.scores.hyp_path);
    for (int i = 0; i < b->count; i++) {
      double v = b->values[i];
      /* Lengths (hyp_len, ref_len) are counts; scores and ratios get two decimals. */
      printf(strstr(b->names[i], "len") ? "%s%s = %.0f" : "%s%s = %.2f", i ? "  " : "",
             b->names[i], v);
    }
    printf("\n%s\n", b->signature);
    if (r.scores.has_cider) {
      const struct score_result *c = &r.scores.cider;
      for (int i = 0; i < c->count; i++)
        printf("%s%s = %.4f", i ? "  " : "", c->names[i], c->values[i]);
      printf("\n%s\n", c->signature);
    }
  }
  printf("results: %s\n", r.results_path);
  return INTRUS_EXIT_OK;
}

int intrus_cmd_train(int argc, char **argv) { return train_or_run("train", argc, argv); }
int intrus_cmd_run(int argc, char **argv) { return train_or_run("run", argc, argv); }

/* intrus train / intrus run, and the commands later work fills in. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "intrus/fileio.h"
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
  bool quiet;
};

static int parse_train_args(const char *cmd, int argc, char **argv, struct train_args *a) {
  static const struct option longopts[] = {
      {"run-dir", required_argument, NULL, 'o'},   {"plugin-path", required_argument, NULL, 'p'},
      {"max-steps", required_argument, NULL, 'n'}, {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0}};
  const bool run = strcmp(cmd, "run") == 0;
  const char *extra = run ? ", results.json" : "", *what = run ? run_what : train_what;
  memset(a, 0, sizeof *a);
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "o:p:n:qh", longopts, NULL)) != -1) {
    switch (c) {
    case 'o': a->run_dir = optarg; break;
    case 'p': a->plugin_path = optarg; break;
    case 'n': {
      char *end;
      errno = 0;
      a->max_steps = strtol(optarg, &end, 10);
      if (errno == ERANGE && a->max_steps > 0) {
        fprintf(stderr, "intrus %s: --max-steps %s is too large (at most %ld)\n", cmd, optarg,
                LONG_MAX);
        return INTRUS_EXIT_USAGE;
      }
      if (errno || *end || end == optarg || a->max_steps <= 0) {
        fprintf(stderr, "intrus %s: --max-steps wants a positive integer, got '%s'\n", cmd,
                optarg);
        return INTRUS_EXIT_USAGE;
      }
      break;
    }
    case 'q': a->quiet = true; break;
    case 'h': printf(train_usage, cmd, what, extra); exit(INTRUS_EXIT_OK);
    default: fprintf(stderr, train_usage, cmd, what, extra); return INTRUS_EXIT_USAGE;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "intrus %s: expected one experiment file\n", cmd);
    fprintf(stderr, train_usage, cmd, what, extra);
    return INTRUS_EXIT_USAGE;
  }
  a->experiment = argv[optind];
  return INTRUS_EXIT_OK;
}

static int train_or_run(const char *cmd, int argc, char **argv) {
  struct train_args a;
  int rc = parse_train_args(cmd, argc, argv, &a);
  if (rc) return rc;
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_file(a.experiment, &err);
  if (!cfg) return intrus_cli_fail(cmd, &err);
  struct cli_experiment x;
  enum intrus_status st = intrus_cli_experiment(cfg, a.run_dir, a.plugin_path, &x, &err);
  if (st) {
    intrus_config_free(cfg);
    return intrus_cli_fail(cmd, &err);
  }
  if (strcmp(cmd, "run") == 0 && (st = intrus_run_check_test(cfg, &err))) {
    intrus_plugin_search_free(x.search);
    intrus_config_free(cfg);
    return intrus_cli_fail(cmd, &err);
  }
  const char *exp_name = x.name, *run_dir = x.run_dir;
  struct intrus_plugin_search *search = x.search;
  struct intrus_train_options opt = {.run_dir = run_dir, .search = search,
                                     .progress = a.quiet ? NULL : stderr,
                                     .max_steps = a.max_steps};
  struct intrus_train_result res;
  st = intrus_train(cfg, &opt, &res, &err);
  struct run_scores rs = {0};
  bool text = false;
  if (!st && strcmp(cmd, "run") == 0) {
    const intrus_cfg *data;
    const char *kind = "";
    if (!intrus_cfg_group(intrus_config_root(cfg), "data", &data, NULL) && data)
      intrus_cfg_string(data, "kind", "", &kind, NULL);
    text = strcmp(kind, "parallel") == 0;
    if (text) st = intrus_run_test(cfg, run_dir, search, opt.progress, &rs, &err);
  }
  intrus_plugin_search_free(search);
  intrus_config_free(cfg);
  if (st) return intrus_cli_fail(cmd, &err);
  if (res.steps_done == res.resumed_from)
    printf("%s: already trained to step %ld (%s); valid loss %.4f\n", exp_name, res.steps_done,
           run_dir, res.valid_loss);
  else {
    printf("%s: %ld steps", exp_name, res.steps_done);
    if (res.resumed_from) printf(" (resumed from %ld)", res.resumed_from);
    printf(", last train loss %.4f, valid loss %.4f, %.0f tokens/s, %.1f s\n", res.last_loss,
           res.valid_loss, res.tokens_per_s, res.seconds);
  }
  if (strcmp(cmd, "run") == 0) {
    if (text) {
      const struct score_result *b = &rs.bleu;
      printf("test: %zu sentences -> %s\n", rs.sentences, rs.hyp_path);
      for (int i = 0; i < b->count; i++) {
        double v = b->values[i];
        /* Lengths (hyp_len, ref_len) are counts; scores and ratios get two decimals. */
        printf(strstr(b->names[i], "len") ? "%s%s = %.0f" : "%s%s = %.2f", i ? "  " : "",
               b->names[i], v);
      }
      printf("\n%s\n", b->signature);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/results.json", run_dir);
    char *json = NULL;
    size_t json_len = 0;
    FILE *f = open_memstream(&json, &json_len);
    if (!f) {
      intrus_error_set(&err, INTRUS_ERR_NOMEM, "out of memory");
      return intrus_cli_fail(cmd, &err);
    }
    fputs("{\"experiment\": ", f);
    cli_json_string(f, exp_name);
    fprintf(f, ", \"steps\": %ld, \"train_loss\": %.6f, \"valid_loss\": %.6f", res.steps_done,
            res.last_loss, res.valid_loss);
    if (!isnan(res.valid_bleu)) fprintf(f, ", \"valid_bleu\": %.4f", res.valid_bleu);
    if (text) {
      fprintf(f, ", \"test_sentences\": %zu, \"test\": {", rs.sentences);
      for (int i = 0; i < rs.bleu.count; i++) {
        fprintf(f, "%s", i ? ", " : "");
        cli_json_string(f, rs.bleu.names[i]);
        fprintf(f, ": %.6g", rs.bleu.values[i]);
      }
      fputs("}, \"bleu_signature\": ", f);
      cli_json_string(f, rs.bleu.signature);
    }
    fputs("}\n", f);
    fclose(f);
    st = intrus_file_write_atomic(path, json, json_len, &err);
    free(json);
    if (st) return intrus_cli_fail(cmd, &err);
    printf("results: %s\n", path);
  }
  return INTRUS_EXIT_OK;
}

int intrus_cmd_train(int argc, char **argv) { return train_or_run("train", argc, argv); }
int intrus_cmd_run(int argc, char **argv) { return train_or_run("run", argc, argv); }

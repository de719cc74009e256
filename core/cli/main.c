/* intrus: train, decode, evaluate and inspect insertion-based sequence models. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "dist/dist.h"
#include "intrus/blas.h"
#include "intrus/tensor.h"
#include "tensor/ops_internal.h"

static const char usage[] =
    "Usage: intrus <command> [options]\n"
    "\n"
    "Commands:\n"
    "  plugins   list the plugins found on the search path (name, kind, version, file)\n"
    "  train     train the model an experiment file describes\n"
    "  decode    translate / caption with a trained model\n"
    "  eval      score hypotheses against references\n"
    "  run       train, decode and evaluate an experiment (resumable)\n"
    "  distill   a teacher's translations of its training sources as a corpus\n"
    "  plot      draw the learning curves of runs into one PNG\n"
    "  table     run a results table: every cell an experiment, with significance\n"
    "  analyze   order analysis of decoding traces (when each kind of word is written)\n"
    "  checkpoint what a checkpoint holds; a copy without the optimizer state; the\n"
    "             mean of several checkpoints' parameters\n"
    "  config    the effective settings of an experiment, each with its meaning, type,\n"
    "            default and range (docs/settings.md lists them all)\n"
    "\n"
    "Options:\n"
    "  -h, --help     show this help (also: intrus <command> --help)\n"
    "  -V, --version  show the version and the BLAS in use\n"
    "\n"
    "Under mpirun (built with ./configure --with-mpi), train, run and table train\n"
    "data-parallel: every rank a share of each batch, rank 0 writing (docs/mpi.md).\n"
    "\n"
    "Plugins are searched in --plugin-path, the experiment's plugin_path,\n"
    "$INTRUS_PLUGIN_PATH (colon-separated), then " INTRUS_PKGLIBDIR ".\n"
    "\n"
    "Exit status: 0 success, 1 failure, 2 usage error, 3 experiment config error,\n"
    "4 plugin error, 5 data, file or checkpoint error.\n";

struct command {
  const char *name;
  int (*fn)(int argc, char **argv);
};

static const struct command commands[] = {
    {"plugins", intrus_cmd_plugins}, {"train", intrus_cmd_train}, {"decode", intrus_cmd_decode},
    {"eval", intrus_cmd_eval},       {"run", intrus_cmd_run},       {"plot", intrus_cmd_plot},
    {"table", intrus_cmd_table},     {"analyze", intrus_cmd_analyze},
    {"config", intrus_cmd_config},
    {"distill", intrus_cmd_distill}, {"checkpoint", intrus_cmd_checkpoint},
};

static int run_command(int argc, char **argv);

int main(int argc, char **argv) {
  intrus_malloc_keep_pages();
  intrus_blas_restart_better(argv);
  if (!dist_init(&argc, &argv)) return INTRUS_EXIT_FAILURE;
  int rc = run_command(argc, argv);
  cli_dist_quit(rc);
  dist_finalize();
  return rc;
}

static int run_command(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return INTRUS_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  /* `intrus help CMD` is `intrus CMD --help`. */
  char *help_argv[4] = {argv[0], argv[argc > 2 ? 2 : 1], "--help", NULL};
  if (!strcmp(cmd, "help") && argc > 2) {
    cmd = argv[2];
    argv = help_argv;
    argc = 3;
  } else if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    fputs(usage, stdout);
    return INTRUS_EXIT_OK;
  }
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
    const char *fallback = getenv("INTRUS_BLAS_RESTARTED");
    printf("intrus %s (plugin ABI %d.%d, OpenBLAS core %s%s%s%s, kernels %s, %d threads%s)\n",
           PACKAGE_VERSION, INTRUS_ABI_MAJOR, INTRUS_ABI_MINOR, intrus_blas_corename(),
           fallback ? " set by intrus: OpenBLAS chose " : "", fallback ? fallback : "",
           fallback ? " for this CPU" : "", intrus_x86_level_name(intrus_x86_level()),
           intrus_blas_threads(), dist_built() ? ", MPI" : "");
    return INTRUS_EXIT_OK;
  }
  if (dist_size() > 1 && !cli_dist_data_parallel(cmd)) {
    if (dist_rank() == 0)
      fprintf(stderr, "intrus %s: runs as one process: start it without mpirun (train, run "
                      "and table are the data-parallel commands)\n", cmd);
    return INTRUS_EXIT_USAGE;
  }
  if (dist_size() > 1 && dist_rank() > 0) return cli_dist_follow(cmd, argc - 1, argv + 1);
  cli_dist_lead();
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(cmd, commands[i].name)) {
      /* getopt names the program by argv[0] in its messages: "intrus train: ...". */
      char prog[64];
      snprintf(prog, sizeof prog, "intrus %s", commands[i].name);
      char **sub = argv + 1;
      sub[0] = prog;
      return commands[i].fn(argc - 1, sub);
    }
  fprintf(stderr, "intrus: unknown command '%s' (try 'intrus --help')\n", cmd);
  return INTRUS_EXIT_USAGE;
}

/* The intrus command line: main.c dispatches to one function per subcommand. Each
 * returns a process exit code (see intrus_exit_code). */
#ifndef INTRUS_CLI_H
#define INTRUS_CLI_H

#include <stdio.h>

#include "intrus/plugin.h"
#include "intrus/status.h"

/* Exit codes: 0 success; 1 failure not covered below; 2 usage (bad command line);
 * 3 experiment config; 4 plugin; 5 data, file or checkpoint. */
enum {
  INTRUS_EXIT_OK = 0,
  INTRUS_EXIT_FAILURE = 1,
  INTRUS_EXIT_USAGE = 2,
  INTRUS_EXIT_CONFIG = 3,
  INTRUS_EXIT_PLUGIN = 4,
  INTRUS_EXIT_DATA = 5
};
int intrus_exit_code(enum intrus_status st);

/* Prints "intrus <cmd>: <message>" to stderr and returns the exit code for err. */
int intrus_cli_fail(const char *cmd, const struct intrus_error *err);

/* Builds the plugin search path in priority order: the --plugin-path values given
 * (colon lists, may be NULL), then the experiment's plugin_path (may be NULL), then the
 * defaults (INTRUS_PLUGIN_PATH, pkglibdir, the build tree when run uninstalled). */
struct intrus_plugin_search *intrus_cli_search_path(const char *cli_path,
                                                    const char *experiment_path);

/* What `intrus run` reports after training on text or images: the test set decoded
 * with the experiment's search settings and scored with BLEU (settings: the
 * experiment's eval.bleu group; every reference of an image counts) and, for image
 * captions, CIDEr-D (eval.cider). */
#include "eval/score.h"
struct run_scores {
  struct score_result bleu;
  struct score_result cider; /* image captions (data.targets = "text"): CIDEr-D */
  bool has_cider;
  int references;            /* per test segment (caption sets: several) */
  bool images;               /* the segments are images (data.kind = "images") */
  size_t sentences;
  char hyp_path[4200];
  char checkpoint[32]; /* the checkpoint that decoded it: checkpoint.ckpt or best.ckpt */
  double decode_s;     /* wall seconds of the test decode alone (no loading, no scoring) */
};
/* What intrus run will read after training, checked before it: the test pair exists and
 * its two sides have the same number of lines (text data; nothing for synthetic).
 * run_dir: the experiment's run directory (dataset_configure). */
enum intrus_status intrus_run_check_test(struct intrus_config *cfg, const char *run_dir,
                                         struct intrus_error *err);
/* That path can be written (by intrus_file_write_atomic: a temporary file beside it and
 * a rename) before hours of work produce what goes there. */
enum intrus_status cli_check_writable(const char *path, struct intrus_error *err);
enum intrus_status intrus_run_test(struct intrus_config *cfg, const char *run_dir,
                                   const struct intrus_plugin_search *search, FILE *progress,
                                   struct run_scores *rs, struct intrus_error *err);

/* --set PATH=VALUE on the command lines of decode, train and run: the assignments in
 * the order given, applied by cli_config_load to the experiment as loaded and before
 * anything reads it, so the strict getters check them as any other setting (and a run's
 * fingerprint and effective.cfg include them). */
#include <stdbool.h>
#define CLI_SETS_MAX 64
struct cli_sets {
  const char *v[CLI_SETS_MAX];
  int n;
};
/* Adds arg; false when there are CLI_SETS_MAX already (saying so on stderr if report). */
bool cli_sets_add(struct cli_sets *s, const char *cmd, const char *arg, bool report);
/* The experiment at path with s applied (s may be NULL); NULL with err set. */
struct intrus_config *cli_config_load(const char *path, const struct cli_sets *s,
                                      struct intrus_error *err);

/* What every experiment command derives from the experiment file and its options: the
 * experiment's name (copied into name, which outlives cfg), the run directory
 * (run_dir_arg, or runs/<name>) and the plugin search path (freed by the caller). */
/* The longest experiment name (it is a directory name under runs/). */
#define CLI_NAME_MAX 100
struct cli_experiment {
  char name[CLI_NAME_MAX + 1];
  char run_dir[4096];
  struct intrus_plugin_search *search;
};
enum intrus_status intrus_cli_experiment(struct intrus_config *cfg, const char *run_dir_arg,
                                         const char *plugin_path_arg, struct cli_experiment *x,
                                         struct intrus_error *err);

/* What `intrus run` does with a freshly loaded experiment (`intrus table` too): checks
 * the test split, trains into x->run_dir (resuming; nothing when training is complete),
 * decodes the test split of text data with the experiment's search settings into
 * RUN_DIR/test.hyp, scores it and writes RUN_DIR/results.json, which records
 * intrus_config_results_fingerprint(cfg) of the config as loaded (before training
 * fills in defaults) as "fingerprint". */
#include "intrus/train.h"
struct cli_run_result {
  struct intrus_train_result train;
  bool text; /* parallel text: scores holds the test set's */
  struct run_scores scores;
  char results_path[4200];
  int valid_decodes;     /* validation decodes in train.log (every resume of the run) */
  double valid_decode_s; /* and their seconds */
};
enum intrus_status cli_run_experiment(struct intrus_config *cfg, const struct cli_experiment *x,
                                      FILE *progress, long max_steps,
                                      struct cli_run_result *out, struct intrus_error *err);
/* s as a JSON string literal, quotes included (machine-readable results). */
void cli_json_string(FILE *f, const char *s);

/* Data-parallel jobs (core/cli/dist_follow.c, docs/mpi.md). Whether a command trains
 * data-parallel under mpirun (train, run, table); cli_dist_lead makes rank 0 release
 * the followers however it exits; cli_dist_follow is what the ranks other than 0 run
 * instead of the command (returns rank 0's exit status); cli_dist_quit(rc) releases
 * them with rc (rank 0, once). */
bool cli_dist_data_parallel(const char *cmd);
void cli_dist_lead(void);
int cli_dist_follow(const char *cmd, int argc, char **argv);
void cli_dist_quit(int exit_code);
/* The file a follower's command line names (train and run: the experiment, and its
 * --set assignments in *sets; table: the table), found by the parser rank 0's command
 * runs, without a message: INTRUS_EXIT_OK, or INTRUS_EXIT_USAGE with *file NULL for a
 * command line the command refuses (or --help). argv[0] is the command. */
int cli_train_file(const char *cmd, int argc, char **argv, const char **file,
                   struct cli_sets *sets);
int cli_table_file(int argc, char **argv, const char **file);

int intrus_cmd_plugins(int argc, char **argv);
int intrus_cmd_train(int argc, char **argv);
int intrus_cmd_decode(int argc, char **argv);
int intrus_cmd_eval(int argc, char **argv);
int intrus_cmd_run(int argc, char **argv);
int intrus_cmd_plot(int argc, char **argv);
int intrus_cmd_table(int argc, char **argv);
int intrus_cmd_analyze(int argc, char **argv);
int intrus_cmd_config(int argc, char **argv);
int intrus_cmd_distill(int argc, char **argv); /* cmd_distill.c */
int intrus_cmd_checkpoint(int argc, char **argv); /* cmd_checkpoint.c */

/* intrus analyze states (cmd_analyze_states.c): argv[0] is "states". */
int intrus_analyze_states(int argc, char **argv);
/* intrus analyze time (cmd_analyze_time.c): argv[0] is "time". */
int intrus_analyze_time(int argc, char **argv);

#endif

/* The ranks other than 0 of a data-parallel job (`mpirun -np N intrus train|run|table`):
 * they train every run rank 0 starts, step by step with it, and print nothing; rank 0
 * decodes, scores and writes alone. docs/mpi.md. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dist/dist.h"
#include "intrus/config.h"
#include "intrus/train.h"

/* Rank 0 ran the command; the followers end with its exit status. Sent once, and only
 * when the others follow (a command that is not data-parallel has none listening). */
static bool followed = false, quit_sent = false;

void cli_dist_quit(int exit_code) {
  if (!followed || quit_sent || dist_size() == 1 || dist_rank() != 0) return;
  quit_sent = true;
  struct dist_job job = {.kind = DIST_QUIT, .exit_code = exit_code};
  dist_job_send(&job);
}

/* Rank 0 leaving through exit() (--help, a usage error inside a command) still lets
 * the followers go. */
static void quit_at_exit(void) {
  cli_dist_quit(INTRUS_EXIT_OK);
  dist_finalize();
}

bool cli_dist_data_parallel(const char *cmd) {
  return !strcmp(cmd, "train") || !strcmp(cmd, "run") || !strcmp(cmd, "table");
}

void cli_dist_lead(void) {
  if (dist_size() == 1 || dist_rank() != 0) return;
  followed = true;
  atexit(quit_at_exit);
}

int cli_dist_follow(const char *cmd, int argc, char **argv) {
  /* `train` and `run` load the experiment named on their own command line (with its
   * --set assignments), so that a job started with different files or settings on
   * different ranks is caught by the fingerprint check; `table` trains the experiments of rank 0's table cells. The command line is
   * read by the command's own parser, as on rank 0. One rank 0 refuses is refused there
   * (it says why and releases the others with the usage status); one only this rank's
   * parser refuses (another on each rank) fails the first training run. */
  const bool table = !strcmp(cmd, "table");
  const char *file;
  struct cli_sets sets = {.n = 0};
  const int usage = table ? cli_table_file(argc, argv, &file)
                          : cli_train_file(cmd, argc, argv, &file, &sets);
  const char *own = table ? NULL : file;
  for (;;) {
    struct dist_job job;
    dist_job_recv(&job);
    if (job.kind == DIST_QUIT) return job.exit_code;
    struct intrus_error err = {0};
    struct intrus_config *cfg = NULL;
    if (usage)
      intrus_error_set(&err, INTRUS_ERR_USAGE,
                       "its command line is not one intrus %s takes (intrus %s --help); start "
                       "every rank with rank 0's", cmd, cmd);
    else cfg = own ? cli_config_load(own, &sets, &err)
                   : intrus_config_load_file(job.experiment, &err);
    if (!cfg) {
      /* The first agreement of intrus_train: rank 0 and the others stop there with this
       * rank's message. */
      dist_agree(err.status ? err.status : INTRUS_ERR_CONFIG, &err);
      continue;
    }
    struct intrus_plugin_search *search = intrus_plugin_search_create();
    intrus_plugin_search_add(search, job.plugin_dirs);
    struct intrus_train_options opt = {.run_dir = job.run_dir, .search = search,
                                       .max_steps = job.max_steps};
    struct intrus_train_result res;
    /* A failure is rank 0's to report (with this rank's message when it was this
     * rank's); the next job or the end follows. */
    intrus_train(cfg, &opt, &res, &err);
    intrus_plugin_search_free(search);
    intrus_config_free(cfg);
  }
}

/* The process group of data-parallel training: one rank per process, over MPI when
 * intrus is built with --with-mpi and started by an MPI launcher (mpirun), otherwise a
 * group of one in which every call below is trivial. docs/mpi.md describes the protocol.
 *
 * Rank 0 leads: it runs the command (train, run, table) as a single process would,
 * alone reads and writes files in the run directory and prints. The other ranks
 * ("followers") wait for rank 0 to start a training run (dist_job_send), train it with
 * rank 0 step by step, and exit with rank 0's exit status (dist_job_send of DIST_QUIT).
 *
 * Errors never leave a rank waiting: every rank reaches the same sequence of
 * collectives, and at each point where one rank can fail alone the ranks first agree
 * on the outcome (dist_agree), so a failure anywhere becomes the same error, with the
 * failing rank's message, everywhere. */
#ifndef INTRUS_DIST_H
#define INTRUS_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "intrus/status.h"

/* Whether this build can run over MPI at all (configure --with-mpi). */
bool dist_built(void);

/* Joins the MPI job when the process was started by an MPI launcher (the environment
 * says so: Open MPI's OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, PMI's PMI_SIZE); a plain
 * start stays a group of one without touching MPI (no singleton MPI job). Returns false,
 * with a message on stderr, when the launcher's MPI cannot be initialised, or when it
 * started more than one rank of a build without MPI (every rank would train alone). */
bool dist_init(int *argc, char ***argv);
/* Leaves the MPI job (nothing for a group of one). */
void dist_finalize(void);

int dist_rank(void); /* 0 .. dist_size() - 1 */
int dist_size(void); /* 1 without MPI */

/* Collective: every rank passes its own outcome; all return the same status. When
 * some rank failed, the lowest failing rank's message is copied into every rank's err
 * as "rank K: message" (the failing rank's own err is left as it is) and its status
 * returned. Waits without spinning (rank 0 may be busy alone for minutes: writing a
 * checkpoint, decoding the validation set). */
enum intrus_status dist_agree(enum intrus_status st, struct intrus_error *err);

/* Collective: x summed over the ranks, in place, on every rank. */
void dist_sum_floats(float *x, size_t n);
void dist_sum_doubles(double *x, size_t n);
/* Collective: rank 0's bytes at p copied to every rank. */
void dist_bcast(void *p, size_t bytes);
/* Collective: rank r's value v lands in out[r] on every rank (out has dist_size()). */
void dist_gather_u64(uint64_t v, uint64_t *out);

/* Seconds spent in dist_sum_floats since the process started (the gradient sums). */
double dist_sum_seconds(void);

/* What rank 0 asks the followers to do next. */
enum dist_job_kind { DIST_QUIT = 0, DIST_TRAIN = 1 };
struct dist_job {
  enum dist_job_kind kind;
  int exit_code;       /* DIST_QUIT: the status the followers exit with */
  long max_steps;      /* DIST_TRAIN: intrus_train_options.max_steps */
  char experiment[4096]; /* DIST_TRAIN: the experiment file as rank 0 loaded it */
  char run_dir[4096];    /* DIST_TRAIN: the run directory rank 0 trains in */
  char plugin_dirs[8192]; /* DIST_TRAIN: rank 0's plugin search path, ':'-separated */
};
/* Rank 0: starts a job on every follower (nothing for a group of one). */
void dist_job_send(const struct dist_job *job);
/* A follower: waits (without spinning) for rank 0's next job. */
void dist_job_recv(struct dist_job *job);

#endif

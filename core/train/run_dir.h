/* The run directory (run_dir.c). */
#ifndef INTRUS_RUN_DIR_H
#define INTRUS_RUN_DIR_H

#include "intrus/status.h"

/* mkdir -p. */
enum intrus_status run_dir_make(const char *dir, struct intrus_error *err);
/* An flock on DIR/.lock held by the returned descriptor until it is closed (or the
 * process ends); INTRUS_ERR_IO naming the holder (pid, host, start) when another
 * process holds it. */
enum intrus_status run_dir_lock(const char *dir, int *fd, struct intrus_error *err);
/* Drops the rows of the train.log at path whose step is after `step` (atomically);
 * nothing when there are none or no file. */
enum intrus_status run_log_trim(const char *path, long step, struct intrus_error *err);

/* What trained a stretch of a run: the machine and settings that decide its speed and
 * its float rounding. A run resumed on another machine (or with another thread count)
 * has a train.log whose times mix the two and losses that no longer equal an
 * uninterrupted run's bit for bit; DIR/sessions.tsv says which steps ran where. */
struct run_session {
  long from_step;        /* the step it started from (0: a new run) */
  int threads, ranks;    /* OpenMP threads of the products; data-parallel processes */
  const char *kernels;   /* intrus's kernel ISA ("avx512", "avx2", "generic") */
  const char *blas_core; /* OpenBLAS's core */
  const char *version;   /* intrus's */
};
/* Appends one row to DIR/sessions.tsv (its header first when new): the UTC start time,
 * the session's settings, the host name and the CPU's model (/proc/cpuinfo). */
enum intrus_status run_dir_note_session(const char *dir, const struct run_session *rs,
                                        struct intrus_error *err);
/* How many different setups DIR/sessions.tsv records (0 without the file): rows
 * compared on threads, ranks, kernels, OpenBLAS core and CPU model; not on the host's
 * name, which changes with every container of one kind of machine, nor the version. */
int run_dir_count_setups(const char *dir);

#endif

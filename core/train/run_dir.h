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

#endif

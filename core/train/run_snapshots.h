/* A run's kept snapshots (train.keep_checkpoints; run_snapshots.c): RUN_DIR/snapshots/
 * step-NNNNNNNNNN.ckpt, the parameters without Adam's moments at each of the last
 * train.snapshot_every steps, for eval.checkpoint = "average". */
#ifndef INTRUS_RUN_SNAPSHOTS_H
#define INTRUS_RUN_SNAPSHOTS_H

#include <stddef.h>

#include "intrus/status.h"

/* RUN_DIR/snapshots/step-<step, 10 digits>.ckpt into out. */
void run_snapshot_path(char *out, size_t n, const char *run_dir, long step);
/* The steps of the snapshots in RUN_DIR/snapshots, ascending, into a malloc'd *steps
 * (NULL and 0 without any or without the folder); returns the count, -1 when out of
 * memory. Other files there are ignored. */
long run_snapshots_list(const char *run_dir, long **steps);
/* Removes the snapshots of steps after `step` (left by a run killed between its
 * snapshot and its checkpoint: the resumed run writes them again) and all but the
 * `keep` newest of the others. */
enum intrus_status run_snapshots_prune(const char *run_dir, long step, long keep,
                                       struct intrus_error *err);

#endif

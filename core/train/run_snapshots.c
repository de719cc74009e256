/* The snapshots a run keeps of its last snapshot steps (train.keep_checkpoints), which
 * eval.checkpoint = "average" averages for the test decode (intrus_ckpt_average). They
 * are named by step, so that what is kept is decided by the steps alone: a run killed
 * and resumed keeps the same ones as an uninterrupted run. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_snapshots.h"

void run_snapshot_path(char *out, size_t n, const char *run_dir, long step) {
  snprintf(out, n, "%s/snapshots/step-%010ld.ckpt", run_dir, step);
}

/* The step of a name "step-NNNNNNNNNN.ckpt", -1 for any other name. */
static long snapshot_step(const char *name) {
  if (strncmp(name, "step-", 5) != 0) return -1;
  long v = 0;
  const char *p = name + 5;
  int digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 18; p++, digits++) v = v * 10 + (*p - '0');
  return digits == 10 && strcmp(p, ".ckpt") == 0 ? v : -1;
}

static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

long run_snapshots_list(const char *run_dir, long **steps) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/snapshots", run_dir);
  *steps = NULL;
  DIR *d = opendir(dir);
  if (!d) return 0;
  long n = 0, cap = 0;
  const struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    long s = snapshot_step(e->d_name);
    if (s < 0) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      long *grown = realloc(*steps, (size_t)cap * sizeof **steps);
      if (!grown) {
        closedir(d);
        free(*steps);
        *steps = NULL;
        return -1;
      }
      *steps = grown;
    }
    (*steps)[n++] = s;
  }
  closedir(d);
  if (n > 1) qsort(*steps, (size_t)n, sizeof **steps, cmp_long);
  return n;
}

enum intrus_status run_snapshots_prune(const char *run_dir, long step, long keep,
                                       struct intrus_error *err) {
  long *steps;
  long n = run_snapshots_list(run_dir, &steps);
  if (n < 0) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  long upto = 0; /* snapshots steps[0..upto) are of this run's steps so far */
  while (upto < n && steps[upto] <= step) upto++;
  enum intrus_status st = INTRUS_OK;
  for (long i = 0; i < n && !st; i++) {
    if (i >= upto - keep && i < upto) continue;
    char path[4300];
    run_snapshot_path(path, sizeof path, run_dir, steps[i]);
    if (unlink(path) != 0 && errno != ENOENT)
      st = intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
  }
  free(steps);
  return st;
}

/* Reading train.log's columns by name: a column added to the log goes after the ones
 * before it, and a run begun by an older intrus and resumed by a newer one keeps its old
 * header while its new rows carry the new cells at the end, so a reader must find a
 * column by the header's name, never by its position from the end. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_log.h"
#include "base/xalloc.h"

int run_log_column(const char *header, const char *name) {
  if (strncmp(header, "step\t", 5) != 0) return -1;
  size_t len = strlen(name);
  int col = 0;
  for (const char *p = header;; col++) {
    size_t cell = strcspn(p, "\t\r\n");
    if (cell == len && strncmp(p, name, len) == 0) return col;
    if (p[cell] != '\t') return -1;
    p += cell + 1;
  }
}

/* Cell `col` of a row as a number; false when it is empty, missing or not a number. */
static bool cell_number(const char *row, int col, double *v) {
  const char *p = row;
  for (int i = 0; i < col; i++) {
    p = strchr(p, '\t');
    if (!p) return false;
    p++;
  }
  /* An empty cell: strtod would skip the tab and read the next one. */
  if (*p == '\t' || *p == '\n' || *p == '\r' || *p == '\0') return false;
  char *end;
  *v = strtod(p, &end);
  return end != p && (*end == '\t' || *end == '\n' || *end == '\r' || *end == '\0') &&
         isfinite(*v);
}

enum intrus_status run_log_column_sum(const char *path, const char *name, double *sum,
                                      int *count, struct intrus_error *err) {
  *sum = 0.0;
  *count = 0;
  FILE *f = fopen(path, "r");
  if (!f)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct row {
    long step;
    double v;
  } *rows = NULL;
  size_t n = 0, cap = 0, lcap = 0;
  char *line = NULL;
  int col = -1;
  while (getline(&line, &lcap, f) > 0) {
    if (strncmp(line, "step\t", 5) == 0) {
      col = run_log_column(line, name);
      continue;
    }
    char *end;
    long step = strtol(line, &end, 10);
    if (end == line || *end != '\t') continue;
    /* A log from before resumes trimmed it repeats the steps a killed run logged after
     * its last checkpoint: the later rows replace those. */
    while (n > 0 && rows[n - 1].step >= step) n--;
    double v;
    if (col < 0 || !cell_number(line, col, &v)) continue;
    xgrow((void **)&rows, &cap, n + 1, sizeof *rows, 64);
    rows[n++] = (struct row){step, v};
  }
  free(line);
  bool bad = ferror(f);
  fclose(f);
  for (size_t i = 0; i < n; i++) *sum += rows[i].v;
  *count = (int)n;
  free(rows);
  if (bad) return intrus_error_set(err, INTRUS_ERR_IO, "%s: read error", path);
  return INTRUS_OK;
}

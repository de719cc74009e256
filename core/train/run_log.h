/* train.log's columns by name (run_log.c). */
#ifndef INTRUS_RUN_LOG_H
#define INTRUS_RUN_LOG_H

#include "intrus/status.h"

/* The index of column `name` in train.log's header line (tab-separated, starting with
 * "step"), -1 when it has none. */
int run_log_column(const char *header, const char *name);

/* The sum of column `name` over the rows of the train.log at path that have a number
 * there (empty cells, as on rows without a validation decode, are skipped; a step logged
 * twice counts once, the later row), and how many rows it summed: 0 rows and a sum of 0
 * when the header has no such column. */
enum intrus_status run_log_column_sum(const char *path, const char *name, double *sum,
                                      int *count, struct intrus_error *err);

#endif

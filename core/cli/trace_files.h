/* Decoding orders as files: what `intrus decode --trace` writes, and the test decode's
 * RUN_DIR/test.order.tsv that `intrus run` keeps for order analyses and pictures. */
#ifndef INTRUS_CLI_TRACE_FILES_H
#define INTRUS_CLI_TRACE_FILES_H

#include <stddef.h>

#include "intrus/insertion.h"
#include "intrus/status.h"
#include "text/dataset.h"

/* DIR/trace.txt (every line's states, one row per step), DIR/order.tsv, and pictures
 * DIR/sentence-N.png / .svg of the first `pictures` lines (image-N.* with the input
 * image above the steps when images is given). DIR is created if missing. */
enum intrus_status cli_traces_write(const char *dir, const struct dataset *data,
                                    const struct dataset_image_input *images,
                                    const struct intrus_ins_hyp *traj, size_t n, long pictures,
                                    struct intrus_error *err);

/* Only the order table, to path (atomically): a header
 * "sentence\tposition\ttoken\tstep\trelative_index", then one row per output token of
 * each line in reading order: its 1-based sentence and position, the token, the 0-based
 * step that wrote it and step / (len - 1). */
enum intrus_status cli_order_write(const char *path, const struct dataset *data,
                                   const struct intrus_ins_hyp *traj, size_t n,
                                   struct intrus_error *err);

#endif

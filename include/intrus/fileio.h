/* Durable file writes: write a temporary file, fsync it, rename it over the target, and
 * fsync the directory. */
#ifndef INTRUS_FILEIO_H
#define INTRUS_FILEIO_H

#include <stddef.h>

#include "intrus/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Replaces path by len bytes of data so that a crash leaves either the old file or the
 * new one, never a mix: writes PATH.tmp.PID, fsyncs it, renames it over path and syncs
 * the directory. INTRUS_ERR_IO naming path on failure (the temporary file is removed). */
enum intrus_status intrus_file_write_atomic(const char *path, const void *data, size_t len,
                                            struct intrus_error *err);

/* fsync of the directory holding path, so that a rename into it is durable. Returns 0
 * or an errno value (filesystems that cannot sync directories count as success). */
int intrus_fsync_parent_dir(const char *path);

#ifdef __cplusplus
}
#endif
#endif

/* Checkpoint files: magic, format version, a fingerprint of the config that defines the
 * model, named float tensors and named 64-bit integers, and a trailing checksum.
 *
 * Layout (little-endian): "INTRUSCK" | u32 version | u64 fingerprint | u32 count |
 * count records { u8 type (1 tensor, 2 u64) | u32 name_len | name | tensor: u32 ndim,
 * u32 shape[ndim], f32 data[numel] ; u64: u64 value } | u64 FNV-1a of every byte before.
 *
 * Writers go to "<path>.tmp.<pid>", fsync, and rename over path, so a crash never leaves
 * a half-written checkpoint under the real name. Readers verify everything before
 * handing anything out: a truncated, corrupt or mismatched file is refused with a
 * message naming the file and the problem. */
#ifndef INTRUS_CHECKPOINT_H
#define INTRUS_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "intrus/params.h"
#include "intrus/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define INTRUS_CKPT_VERSION 1

struct intrus_ckpt_writer;
struct intrus_ckpt;

enum intrus_status intrus_ckpt_begin(const char *path, uint64_t fingerprint,
                                     struct intrus_ckpt_writer **out, struct intrus_error *err);
enum intrus_status intrus_ckpt_put_tensor(struct intrus_ckpt_writer *w, const char *name,
                                          int ndim, const int *shape, const float *data,
                                          struct intrus_error *err);
enum intrus_status intrus_ckpt_put_u64(struct intrus_ckpt_writer *w, const char *name,
                                       uint64_t value, struct intrus_error *err);
/* Writes the checksum, fsyncs, renames into place, fsyncs the directory; frees w. */
enum intrus_status intrus_ckpt_commit(struct intrus_ckpt_writer *w, struct intrus_error *err);
/* Removes the temporary file; frees w. */
void intrus_ckpt_abort(struct intrus_ckpt_writer *w);

/* Reads and verifies a whole file. When check_fingerprint is true a different
 * fingerprint is an error ("was written for another model configuration"). */
enum intrus_status intrus_ckpt_read(const char *path, bool check_fingerprint,
                                    uint64_t fingerprint, struct intrus_ckpt **out,
                                    struct intrus_error *err);
void intrus_ckpt_free(struct intrus_ckpt *c);
uint64_t intrus_ckpt_fingerprint(const struct intrus_ckpt *c);
/* The file's trailing checksum (FNV-1a of every byte before it), verified by the read:
 * a fingerprint of the whole content, which any change to the file changes. */
uint64_t intrus_ckpt_checksum(const struct intrus_ckpt *c);
/* The same checksum read from the end of the file at path without reading the rest
 * (nor verifying it): INTRUS_ERR_IO when it cannot be opened, INTRUS_ERR_FORMAT for a
 * file that is not a checkpoint or too short to be one. */
enum intrus_status intrus_ckpt_file_checksum(const char *path, uint64_t *sum,
                                             struct intrus_error *err);

/* Lookups: NULL / false when absent. */
const float *intrus_ckpt_tensor(const struct intrus_ckpt *c, const char *name, int *ndim,
                                int shape[4]);
bool intrus_ckpt_u64(const struct intrus_ckpt *c, const char *name, uint64_t *value);

/* The records in file order: their count, and record i's name (NULL past the end). */
size_t intrus_ckpt_count(const struct intrus_ckpt *c);
const char *intrus_ckpt_name(const struct intrus_ckpt *c, size_t i);

/* Whether a record name is an Adam moment's ("adam_m/..." or "adam_v/..."). */
bool intrus_ckpt_is_moment(const char *name);

/* Copies the checkpoint at in_path to out_path without its optimizer state (the
 * "adam_m/" and "adam_v/" records): the parameters, integers and the fingerprint as they
 * were, so it decodes and warm-starts exactly as the original but cannot resume a run.
 * out_path may be in_path (the file is read whole first, then replaced atomically).
 * *dropped: the records left out (may be NULL). */
enum intrus_status intrus_ckpt_strip_moments(const char *in_path, const char *out_path,
                                             size_t *dropped, struct intrus_error *err);

/* Writes out_path (temporary file, fsync, rename), the element-wise mean of the "param/"
 * tensors of the n checkpoints at paths (summed in double), which must share the model
 * configuration fingerprint and hold the same parameters of the same shapes (else
 * INTRUS_ERR_FORMAT naming the file and the record); the integers and other tensors are
 * the last checkpoint's, Adam's moments are left out, and a record "averaged" = n is
 * added. out_path may be one of paths. */
enum intrus_status intrus_ckpt_average(const char *const *paths, int n, const char *out_path,
                                       struct intrus_error *err);

/* Every parameter as "param/<name>", and with moments also "adam_m/<name>" and
 * "adam_v/<name>". */
enum intrus_status intrus_ckpt_put_params(struct intrus_ckpt_writer *w,
                                          struct intrus_params *p, bool with_moments,
                                          struct intrus_error *err);
/* Copies them back; a parameter that is missing or of another shape is an error that
 * names it and the file. */
enum intrus_status intrus_ckpt_get_params(const struct intrus_ckpt *c, struct intrus_params *p,
                                          bool with_moments, struct intrus_error *err);

/* INTRUS_ERR_FORMAT naming the record when a parameter (or, with moments, an Adam
 * moment) of p holds NaN or Inf in the checkpoint: what a model must not be given,
 * though the format itself stores any float exactly. */
enum intrus_status intrus_ckpt_check_finite(const struct intrus_ckpt *c,
                                            const struct intrus_params *p, bool with_moments,
                                            struct intrus_error *err);

#ifdef __cplusplus
}
#endif
#endif

/* Corpora: reading text files, encoding sentence pairs to token ids, and cutting them
 * into batches.
 *
 * Batches are a pure function of (seed, epoch, batch index): a run resumed from a
 * checkpoint at (epoch e, batch i) sees exactly the batches the interrupted run would
 * have seen, whatever happened before. */
#ifndef INTRUS_CORPUS_H
#define INTRUS_CORPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "intrus/fileio.h"
#include "intrus/plugin.h"
#include "intrus/status.h"
#include "intrus/tensor.h"
#include "intrus/text.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- files ---------------------------------------------------------------------- */

/* Reads a text file, or a gzip-compressed one (recognised by its content, not its
 * name), one segment per line: *lines gets *n NUL-terminated lines without their "\n"
 * or "\r\n". A last line without a newline counts. Errors: a missing or unreadable file
 * (INTRUS_ERR_IO, with strerror), corrupt gzip data (INTRUS_ERR_FORMAT), an empty file
 * ("FILE: empty file"), invalid UTF-8 ("FILE:LINE: invalid UTF-8 at byte N", N counted
 * from 1 within the line) and NUL bytes (all INTRUS_ERR_DATA). Free with
 * intrus_lines_free. */
enum intrus_status intrus_lines_read(const char *path, char ***lines, size_t *n,
                                     struct intrus_error *err);
/* The whole file, decompressed when it is gzip data (whatever its name), "-" being
 * standard input; *buf (malloc'd, one spare byte after *len) holds it. */
enum intrus_status intrus_file_read_all(const char *path, char **buf, size_t *len,
                                        struct intrus_error *err);
/* The same, but an empty file is zero lines (*lines NULL), not an error: for input to
 * decode, where no input means no output. */
enum intrus_status intrus_lines_read_any(const char *path, char ***lines, size_t *n,
                                         struct intrus_error *err);
void intrus_lines_free(char **lines, size_t n);

/* Both sides of a parallel corpus, line i of src translating line i of tgt. */
struct intrus_parallel_text {
  char **src, **tgt;
  size_t n;
};

/* intrus_lines_read of both files, which must have the same number of lines
 * (INTRUS_ERR_DATA: "train.en has 30012 lines but train.de has 30011"). */
enum intrus_status intrus_parallel_read(const char *src_path, const char *tgt_path,
                                        struct intrus_parallel_text *out,
                                        struct intrus_error *err);
void intrus_parallel_free(struct intrus_parallel_text *p);

/* ---- encoded corpus --------------------------------------------------------------- */

/* Token ids of sentence pairs, without BOS/EOS, in two flat arrays with offsets (CSR):
 * sentence i's source is src_ids[src_off[i] .. src_off[i+1]). Read-only for users. */
struct intrus_corpus {
  int32_t n;                 /* sentence pairs kept */
  int32_t *src_ids, *tgt_ids;
  int64_t *src_off, *tgt_off; /* n + 1 entries each */
  size_t *line;              /* line[i]: index in the input arrays of kept pair i */
  bool has_tgt;              /* false for a source-only corpus (all target lengths 0) */
  int32_t max_src_len, max_tgt_len;
  size_t dropped_long;       /* pairs dropped for exceeding max_len on either side */
  size_t dropped_empty;      /* pairs dropped for an empty side (skip_empty) */
};

struct intrus_corpus_opts {
  int max_len;     /* drop pairs longer than this (tokens, either side); 0 = keep all */
  bool skip_empty; /* drop pairs with an empty source or target */
};

static inline int32_t intrus_corpus_src_len(const struct intrus_corpus *c, int32_t i) {
  return (int32_t)(c->src_off[i + 1] - c->src_off[i]);
}
static inline int32_t intrus_corpus_tgt_len(const struct intrus_corpus *c, int32_t i) {
  return (int32_t)(c->tgt_off[i + 1] - c->tgt_off[i]);
}

/* Encodes n tokenized (and BPE-segmented) lines per side with intrus_vocab_encode.
 * tgt and tgt_vocab may both be NULL for a source-only corpus (translation input).
 * opts may be NULL (keep everything). INTRUS_ERR_DATA when no pair is left after
 * filtering or n exceeds INT32_MAX. */
enum intrus_status intrus_corpus_encode(const char *const *src, const char *const *tgt,
                                        size_t n, const struct intrus_vocab *src_vocab,
                                        const struct intrus_vocab *tgt_vocab,
                                        const struct intrus_corpus_opts *opts,
                                        struct intrus_corpus **out, struct intrus_error *err);
void intrus_corpus_free(struct intrus_corpus *c);

/* ---- batches ---------------------------------------------------------------------- */

/* Training batches by token count. For epoch e: the corpus indices are shuffled with a
 * generator seeded from (seed, e), cut into windows of `window` sentences (<= 0: one
 * window), each window sorted by (target length, source length, index) so that batches
 * hold sentences of similar lengths, and cut greedily into batches whose padded size
 * max(B * max source length, B * max target length) (lengths without BOS/EOS) is at
 * most max_tokens; a single sentence larger than max_tokens becomes a batch of its own
 * rather than being lost. The batch order is then shuffled with a generator seeded from
 * (seed, e). The batcher keeps the corpus pointer: the corpus must outlive it. */
struct intrus_batcher;
struct intrus_batcher *intrus_batcher_create(const struct intrus_corpus *c, long max_tokens,
                                             int window, uint64_t seed);
/* Evaluation order: no shuffling, the whole corpus sorted by (source length, target
 * length, index), batches in increasing length; the epoch argument is ignored. Map a
 * batch's corpus indices through c->line to write outputs back in input order. */
struct intrus_batcher *intrus_batcher_create_sorted(const struct intrus_corpus *c,
                                                    long max_tokens);
void intrus_batcher_free(struct intrus_batcher *b);

/* Number of batches of epoch e. */
size_t intrus_batcher_epoch_size(struct intrus_batcher *b, uint64_t epoch);
/* Batch i (< intrus_batcher_epoch_size) of epoch e: sets *idx to its corpus indices and
 * returns their count. *idx points into the batcher and stays valid until it is asked
 * about another epoch or freed. The batcher caches the current epoch's batches, so it is
 * not safe to share between threads. */
int intrus_batcher_get(struct intrus_batcher *b, uint64_t epoch, size_t i,
                       const int32_t **idx);

/* Fills a padded source batch (and target batch when tgt is non-NULL; all lengths 0 for
 * a source-only corpus) for corpus indices idx[0..count) in that order: tokens
 * [count, maxlen] padded with INTRUS_PAD, and lengths, in arena memory of ctx (valid
 * until intrus_ctx_reset). */
void intrus_corpus_fill_batch(const struct intrus_corpus *c, intrus_ctx *ctx,
                              const int32_t *idx, int count, struct intrus_src_batch *src,
                              struct intrus_tgt_batch *tgt);

#ifdef __cplusplus
}
#endif
#endif

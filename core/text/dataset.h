/* The data an experiment trains on, behind one interface for the training loop:
 *  - "synthetic": copy / reverse / sort of random token strings (smoke tests);
 *  - "parallel": a real parallel corpus read from files, tokenized, BPE-segmented and
 *    encoded. BPE codes and the vocabulary are learnt from the training split on the
 *    first run and kept in the run directory, so a resumed run and `intrus decode` use
 *    the very same segmentation. */
#ifndef INTRUS_DATASET_H
#define INTRUS_DATASET_H

#include <stdint.h>

#include "intrus/config.h"
#include "intrus/corpus.h"
#include "intrus/plugin.h"
#include "intrus/text.h"

enum dataset_kind { DATA_SYNTHETIC, DATA_PARALLEL };

struct dataset {
  enum dataset_kind kind;
  int src_vocab_size, tgt_vocab_size;
  uint64_t vocab_fingerprint;   /* of both vocabularies; stored in checkpoints */
  /* synthetic */
  int task, vocab, min_len, max_len, valid_size;
  /* parallel */
  char src_lang[16], tgt_lang[16];
  char dir[4096];               /* the corpus directory, resolved */
  int bpe_merges, max_tokens_len;
  bool joint;
  struct intrus_tokenizer *src_tok, *tgt_tok;
  struct intrus_bpe *src_bpe, *tgt_bpe;      /* equal when joint */
  struct intrus_vocab *src_vocab, *tgt_vocab; /* equal when joint */
  struct intrus_corpus *train, *valid;
  struct intrus_parallel_text valid_text;     /* raw lines: BLEU references */
  struct intrus_batcher *batcher;
};

/* Reads the `data` group (strictly). exp_path: the experiment file, against whose
 * directory relative corpus paths are resolved. */
enum intrus_status dataset_configure(struct dataset *d, const intrus_cfg *data,
                                     const char *exp_path, struct intrus_error *err);

/* Parallel data: learns or loads BPE codes and vocabularies (in run_dir), encodes the
 * train and valid splits, builds the batcher (max_tokens per batch, seed). A no-op for
 * synthetic data apart from the vocabulary size. */
enum intrus_status dataset_prepare(struct dataset *d, const char *run_dir, long max_tokens,
                                   uint64_t seed, FILE *progress, struct intrus_error *err);

/* Loads BPE codes and vocabularies written by an earlier dataset_prepare (for decoding;
 * no corpus is read). */
enum intrus_status dataset_load_pipeline(struct dataset *d, const char *run_dir,
                                         struct intrus_error *err);

void dataset_free(struct dataset *d);

/* RUN_DIR/tokenizer.txt (dataset_manifest.c): what made the run's BPE codes and
 * vocabularies. dataset_prepare writes it when it learns them and checks it when it
 * reuses them; dataset_load_pipeline checks it (without the training data, train_fp
 * NULL). A mismatch is INTRUS_ERR_DATA naming the file or setting. */
uint64_t dataset_train_fp(const struct intrus_parallel_text *train);
bool dataset_manifest_exists(const char *run_dir);
enum intrus_status dataset_manifest_write(const struct dataset *d, const char *run_dir,
                                          uint64_t train_fp, struct intrus_error *err);
enum intrus_status dataset_manifest_check(const struct dataset *d, const char *run_dir,
                                          const uint64_t *train_fp, struct intrus_error *err);

/* Frees an array of n separately malloc'd lines (what dataset_segment and
 * translate_lines return; intrus_lines_read's arrays are one block and have their own
 * intrus_lines_free). */
void dataset_lines_free(char **lines, size_t n);

/* Path of split ("train", "valid", "test") in language lang: DIR/SPLIT.LANG.gz when it
 * exists, else DIR/SPLIT.LANG. */
void dataset_split_path(const struct dataset *d, const char *split, const char *lang,
                        char *buf, size_t n);

/* Raw text lines -> tokenized, BPE-segmented lines of the source (side 0) or target
 * (side 1) pipeline; *out is an array of n malloc'd strings (free with
 * dataset_lines_free). */
enum intrus_status dataset_segment(struct dataset *d, int side, char *const *lines, size_t n,
                                   char ***out, struct intrus_error *err);

/* Token ids of the target side (generation order) -> detokenised text. reverse: the ids
 * are in right-to-left order. */
void dataset_detok(const struct dataset *d, const int32_t *ids, int len, bool reverse,
                   struct intrus_str *out);

#endif

/* The training batch of step `step` (0-based). Synthetic: a pure function of (seed,
 * step), `sentences` pairs. Parallel: batch i of epoch e of the batcher, where step
 * counts batches across epochs (so a resumed run continues the same sequence). */
void dataset_train_batch(struct dataset *d, intrus_ctx *ctx, uint64_t seed, long step,
                         int sentences, struct intrus_src_batch *src,
                         struct intrus_tgt_batch *tgt);

/* Validation batches: calls fn for each batch of the validation set. */
typedef enum intrus_status (*dataset_batch_fn)(const struct intrus_src_batch *src,
                                               const struct intrus_tgt_batch *tgt, void *user,
                                               struct intrus_error *err);
enum intrus_status dataset_valid_batches(struct dataset *d, intrus_ctx *ctx, uint64_t seed,
                                         int sentences, long max_tokens, dataset_batch_fn fn,
                                         void *user, struct intrus_error *err);

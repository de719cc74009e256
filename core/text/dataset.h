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

enum dataset_kind { DATA_SYNTHETIC, DATA_PARALLEL, DATA_IMAGES };

#include "intrus/image.h"
/* The most references per image a caption set may give (SPLIT.TGT.0 ..). */
#define DATASET_MAX_REFS 16
struct image_split;

struct dataset {
  enum dataset_kind kind;
  int src_vocab_size, tgt_vocab_size;
  uint64_t vocab_fingerprint;   /* of both vocabularies; stored in checkpoints */
  /* synthetic */
  int task, vocab, min_len, max_len, valid_size;
  /* parallel */
  char src_lang[16], tgt_lang[16];
  char dir[4096];               /* the corpus directory, resolved */
  char vocab_from[4096];        /* data.vocab_from resolved: the run whose tokenizer files a
                                   new run takes instead of learning its own; "" when unset */
  int bpe_merges, max_tokens_len;
  bool joint;
  struct intrus_tokenizer *src_tok, *tgt_tok;
  struct intrus_bpe *src_bpe, *tgt_bpe;      /* equal when joint */
  struct intrus_vocab *src_vocab, *tgt_vocab; /* equal when joint */
  struct intrus_corpus *train, *valid;
  struct intrus_parallel_text valid_text;     /* raw lines: BLEU references */
  bool valid_cut_warned;        /* a validation line over search.max_src_len was warned
                                   about: once a run, not at every validation */
  struct intrus_batcher *batcher;
  /* images (dataset_images.c): src_lang is "img"; the target pipeline is tgt_* */
  int channels;                 /* 1 grey, 3 RGB */
  bool tgt_text;                /* targets = "text": tokenized and BPE-segmented */
  long long batch_pixels;       /* padded pixels per batch */
  long img_batch_tokens;        /* target tokens per batch (train.batch_tokens) */
  uint64_t img_seed;
  struct intrus_image_limits img_limits;
  struct image_split *img_train, *img_valid;
  size_t valid_n;               /* validation images */
  char **valid_refs[DATASET_MAX_REFS]; /* raw references of the validation images */
  int valid_nrefs;
};

/* d->dir from a data.dir setting: as it is when absolute, else relative to the
 * directory of the experiment file exp_path. */
enum intrus_status dataset_resolve_dir(struct dataset *d, const char *dir, const char *exp_path,
                                       struct intrus_error *err);

/* Reads the `data` group (strictly). exp_path: the experiment file, against whose
 * directory relative corpus paths are resolved; run_dir: the experiment's run directory
 * (NULL: runs/<name>), beside which a data.distill teacher's run is by default
 * (distill.h; a distilled corpus need not exist yet). */
enum intrus_status dataset_configure(struct dataset *d, const intrus_cfg *data,
                                     const char *exp_path, const char *run_dir,
                                     struct intrus_error *err);

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
/* FNV-1a of a file's bytes (INTRUS_ERR_IO naming it when it cannot be read). */
enum intrus_status dataset_file_fp(const char *path, uint64_t *fp, struct intrus_error *err);
bool dataset_manifest_exists(const char *run_dir);
/* Copies from_dir's tokenizer files into run_dir (data.vocab_from), after checking them
 * against from_dir's tokenizer.txt and its settings against d's. */
enum intrus_status dataset_manifest_adopt(const struct dataset *d, const char *from_dir,
                                          const char *run_dir, struct intrus_error *err);
enum intrus_status dataset_manifest_write(const struct dataset *d, const char *run_dir,
                                          uint64_t train_fp, struct intrus_error *err);
/* The training data's fingerprint a run recorded (false: no tokenizer.txt, or none in
 * it): what `intrus table` compares across the cells of a column. */
bool dataset_manifest_train(const char *run_dir, uint64_t *train_fp);
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

/* The training batch of step `step` (0-based). Synthetic: a pure function of (seed,
 * step), `sentences` pairs. Parallel: batch i of epoch e of the batcher, where step
 * counts batches across epochs (so a resumed run continues the same sequence). */
void dataset_train_batch(struct dataset *d, intrus_ctx *ctx, uint64_t seed, long step,
                         int sentences, struct intrus_src_batch *src,
                         struct intrus_tgt_batch *tgt);

/* Validation batches: calls fn for batch i of the validation set (its index in the
 * split's fixed order) when i % every == first, and fills no other batch (ranks of a
 * data-parallel run share the batches: every = ranks, first = rank). */
struct dataset_share {
  int every, first;
};
typedef enum intrus_status (*dataset_batch_fn)(const struct intrus_src_batch *src,
                                               const struct intrus_tgt_batch *tgt, long index,
                                               void *user, struct intrus_error *err);
enum intrus_status dataset_valid_batches(struct dataset *d, intrus_ctx *ctx, uint64_t seed,
                                         int sentences, long max_tokens,
                                         struct dataset_share share, dataset_batch_fn fn,
                                         void *user, struct intrus_error *err);

/* ---- data.kind = "images" (dataset_images.c) -------------------------------------- */

/*   data: { kind = "images"; dir = "../data/im2latex"; tgt = "tex"; channels = 1;
 *           targets = "tokens" (space-separated, as they are) | "text" (tokenized for
 *           the language tgt, BPE with bpe_merges); max_len = 150 (target tokens; longer
 *           training pairs are dropped); batch_pixels = 524288 (padded pixels per
 *           batch); max_width, max_height, max_pixels (image limits, image.h) }; */
enum intrus_status dataset_images_configure(struct dataset *d, const intrus_cfg *g,
                                            const char *exp_path, struct intrus_error *err);
enum intrus_status dataset_images_prepare(struct dataset *d, const char *run_dir, long max_tokens,
                                          uint64_t seed, FILE *progress, struct intrus_error *err);
enum intrus_status dataset_images_load_pipeline(struct dataset *d, const char *run_dir,
                                                struct intrus_error *err);
void dataset_images_free(struct dataset *d);
void dataset_images_train_batch(struct dataset *d, intrus_ctx *ctx, long step,
                                struct intrus_src_batch *src, struct intrus_tgt_batch *tgt);
enum intrus_status dataset_images_valid_batches(struct dataset *d, intrus_ctx *ctx,
                                                struct dataset_share share, dataset_batch_fn fn,
                                                void *user, struct intrus_error *err);
/* The raw references of split's n_images images: refs[0..*nrefs) each an array of
 * n_images malloc'd lines (dataset_lines_free), from SPLIT.TGT or SPLIT.TGT.K. */
enum intrus_status dataset_images_references(const struct dataset *d, const char *split,
                                             size_t n_images, char ***refs, int *nrefs,
                                             struct intrus_error *err);

/* Images to decode: read from a list file (paths relative to the list's directory),
 * or the first n validation images. Batches come sorted by size; fn gets each batch
 * with the input indices of its images. */
struct dataset_image_input;
enum intrus_status dataset_images_input_read(const struct dataset *d, const char *list,
                                             struct dataset_image_input **out,
                                             struct intrus_error *err);
enum intrus_status dataset_images_valid_input(const struct dataset *d, size_t n,
                                              struct dataset_image_input **out,
                                              struct intrus_error *err);
size_t dataset_images_input_count(const struct dataset_image_input *in);
/* Image i of in as floats in [0, 1], [channels, height, width] (malloc'd; NULL when
 * out of memory). */
float *dataset_images_input_pixels(const struct dataset *d, const struct dataset_image_input *in,
                                   size_t i, int *channels, int *height, int *width);
void dataset_images_input_free(struct dataset_image_input *in);
typedef enum intrus_status (*dataset_image_batch_fn)(const struct intrus_src_batch *src,
                                                     const int32_t *idx, int count, void *user,
                                                     struct intrus_error *err);
enum intrus_status dataset_images_input_batches(const struct dataset *d,
                                                struct dataset_image_input *in, intrus_ctx *ctx,
                                                dataset_image_batch_fn fn, void *user,
                                                struct intrus_error *err);

#endif

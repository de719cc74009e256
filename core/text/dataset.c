#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "distill.h"
#include "intrus/rng.h"

enum synth_task { TASK_COPY, TASK_REVERSE, TASK_SORT };

static enum intrus_status configure_synthetic(struct dataset *d, const intrus_cfg *g,
                                              struct intrus_error *err) {
  static const char *const tasks[] = {"copy", "reverse", "sort", NULL};
  long long vocab, lo, hi, valid;
  enum intrus_status st;
  if ((st = intrus_cfg_choice(g, "task", "copy", tasks, &d->task, err)) ||
      (st = intrus_cfg_int_range(g, "vocab", 16, INTRUS_NUM_SPECIAL + 1, 1 << 20, &vocab, err)) ||
      (st = intrus_cfg_int_range(g, "min_len", 1, 1, 1000, &lo, err)) ||
      (st = intrus_cfg_int_range(g, "max_len", 8, 1, 1000, &hi, err)) ||
      (st = intrus_cfg_int_range(g, "valid_size", 256, 1, 1 << 20, &valid, err)) ||
      (st = intrus_cfg_check_unknown(g, err)))
    return st;
  if (hi < lo) return intrus_cfg_error(g, "max_len", err, "%lld is below min_len %lld", hi, lo);
  d->vocab = (int)vocab;
  d->min_len = (int)lo;
  d->max_len = (int)hi;
  d->valid_size = (int)valid;
  d->src_vocab_size = d->tgt_vocab_size = d->vocab;
  d->vocab_fingerprint = (uint64_t)vocab;
  return INTRUS_OK;
}

/* path relative to the experiment file, so experiments run from any directory. */
static void resolve_path(const char *path, const char *exp_path, char *out, size_t n) {
  if (path[0] == '/' || !exp_path) {
    snprintf(out, n, "%s", path);
    return;
  }
  char copy[4096];
  snprintf(copy, sizeof copy, "%s", exp_path);
  snprintf(out, n, "%s/%s", dirname(copy), path);
}

enum intrus_status dataset_resolve_dir(struct dataset *d, const char *dir, const char *exp_path,
                                       struct intrus_error *err) {
  (void)err;
  resolve_path(dir, exp_path, d->dir, sizeof d->dir);
  return INTRUS_OK;
}

static enum intrus_status configure_parallel(struct dataset *d, const intrus_cfg *g,
                                             const char *exp_path, const char *run_dir,
                                             struct intrus_error *err) {
  const char *dir = NULL, *src, *tgt, *vocab_from;
  const intrus_cfg *distill = NULL;
  long long merges, max_len;
  bool joint;
  enum intrus_status st;
  /* The corpus: data.dir, or the one distilled from data.distill's teacher (distill.h). */
  if ((st = intrus_cfg_group(g, "distill", &distill, err))) return st;
  if (distill && intrus_cfg_has(g, "dir"))
    return intrus_cfg_error(g, "dir", err, "give dir or distill, not both");
  if ((!distill && (st = intrus_cfg_string_req(g, "dir", &dir, err))) ||
      (st = intrus_cfg_string_req(g, "src", &src, err)) ||
      (st = intrus_cfg_string_req(g, "tgt", &tgt, err)) ||
      (st = intrus_cfg_int_range(g, "bpe_merges", 8000, 0, 1 << 20, &merges, err)) ||
      (st = intrus_cfg_bool(g, "joint_vocab", true, &joint, err)) ||
      (st = intrus_cfg_int_range(g, "max_len", 100, 1, 1 << 16, &max_len, err)) ||
      (st = intrus_cfg_string(g, "vocab_from", "", &vocab_from, err)) ||
      (st = intrus_cfg_check_unknown(g, err)))
    return st;
  if (strlen(src) >= sizeof d->src_lang || strlen(tgt) >= sizeof d->tgt_lang)
    return intrus_cfg_error(g, "src", err, "language codes are at most 15 characters");
  snprintf(d->src_lang, sizeof d->src_lang, "%s", src);
  snprintf(d->tgt_lang, sizeof d->tgt_lang, "%s", tgt);
  if (distill) {
    struct dataset_distill dd;
    if ((st = dataset_distill_read(distill, exp_path, run_dir, &dd, err))) return st;
    snprintf(d->dir, sizeof d->dir, "%s", dd.dir);
  } else if ((st = dataset_resolve_dir(d, dir, exp_path, err))) {
    return st;
  }
  d->bpe_merges = (int)merges;
  d->joint = joint;
  d->max_tokens_len = (int)max_len;
  if (vocab_from[0]) {
    /* A run directory, relative to the experiment file as dir is. Its files are checked
     * when a fresh run takes them (dataset_prepare); here only that there are some. */
    resolve_path(vocab_from, exp_path, d->vocab_from, sizeof d->vocab_from);
    if (!intrus_cfg_settings_only(g) && !dataset_manifest_exists(d->vocab_from))
      return intrus_cfg_error(g, "vocab_from", err,
                              "%s holds no tokenizer.txt: not the directory of a trained run",
                              d->vocab_from);
  }
  /* A distilled corpus is made before training (intrus run, train and table). */
  if (distill) return INTRUS_OK;
  char path[4200];
  dataset_split_path(d, "train", d->src_lang, path, sizeof path);
  if (!intrus_cfg_settings_only(g) && access(path, R_OK) != 0)
    return intrus_cfg_error(g, "dir", err, "cannot read the training file %s: %s", path,
                            strerror(errno));
  return INTRUS_OK;
}


enum intrus_status dataset_configure(struct dataset *d, const intrus_cfg *data,
                                     const char *exp_path, const char *run_dir,
                                     struct intrus_error *err) {
  static const char *const kinds[] = {"synthetic", "parallel", "images", NULL};
  int kind;
  memset(d, 0, sizeof *d);
  enum intrus_status st = intrus_cfg_choice(data, "kind", NULL, kinds, &kind, err);
  if (st) return st;
  d->kind = kind == 0 ? DATA_SYNTHETIC : kind == 1 ? DATA_PARALLEL : DATA_IMAGES;
  if (d->kind == DATA_IMAGES) return dataset_images_configure(d, data, exp_path, err);
  return d->kind == DATA_SYNTHETIC ? configure_synthetic(d, data, err)
                                   : configure_parallel(d, data, exp_path, run_dir, err);
}

void dataset_split_path(const struct dataset *d, const char *split, const char *lang,
                        char *buf, size_t n) {
  snprintf(buf, n, "%s/%s.%s.gz", d->dir, split, lang);
  if (access(buf, F_OK) != 0) snprintf(buf, n, "%s/%s.%s", d->dir, split, lang);
}

void dataset_free(struct dataset *d) {
  dataset_images_free(d);
  intrus_batcher_free(d->batcher);
  intrus_corpus_free(d->train);
  intrus_corpus_free(d->valid);
  intrus_parallel_free(&d->valid_text);
  if (d->tgt_vocab != d->src_vocab) intrus_vocab_free(d->tgt_vocab);
  intrus_vocab_free(d->src_vocab);
  if (d->tgt_bpe != d->src_bpe) intrus_bpe_free(d->tgt_bpe);
  intrus_bpe_free(d->src_bpe);
  intrus_tokenizer_free(d->src_tok);
  intrus_tokenizer_free(d->tgt_tok);
  memset(d, 0, sizeof *d);
}

void dataset_lines_free(char **lines, size_t n) {
  if (!lines) return;
  for (size_t i = 0; i < n; i++) free(lines[i]);
  free(lines);
}

/* Tokenizes lines (without BPE). */
static enum intrus_status tokenize_all(struct intrus_tokenizer *t, const char *path,
                                       char *const *lines, size_t n, char ***out,
                                       struct intrus_error *err) {
  char **res = calloc(n ? n : 1, sizeof *res);
  if (!res) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  struct intrus_str s = {0};
  for (size_t i = 0; i < n; i++) {
    enum intrus_status st = intrus_tokenize(t, lines[i], strlen(lines[i]), &s, err);
    if (st) {
      intrus_error_prefix(err, "%s:%zu", path, i + 1);
      intrus_str_free(&s);
      dataset_lines_free(res, i);
      return st;
    }
    res[i] = strdup(s.s ? s.s : "");
  }
  intrus_str_free(&s);
  *out = res;
  return INTRUS_OK;
}

static void bpe_all(struct intrus_bpe *b, char **lines, size_t n) {
  struct intrus_str s = {0};
  for (size_t i = 0; i < n; i++) {
    intrus_bpe_apply(b, lines[i], strlen(lines[i]), &s);
    free(lines[i]);
    lines[i] = strdup(s.s ? s.s : "");
  }
  intrus_str_free(&s);
}

static enum intrus_status make_tokenizers(struct dataset *d, struct intrus_error *err) {
  enum intrus_status st;
  if (!d->src_tok && (st = intrus_tokenizer_create(d->src_lang, &d->src_tok, err))) return st;
  if (!d->tgt_tok && (st = intrus_tokenizer_create(d->tgt_lang, &d->tgt_tok, err))) return st;
  return INTRUS_OK;
}

static void pipeline_paths(const char *run_dir, char *codes_src, char *codes_tgt, char *voc_src,
                           char *voc_tgt, size_t n, bool joint) {
  snprintf(codes_src, n, "%s/%s", run_dir, joint ? "bpe.codes" : "bpe.src.codes");
  snprintf(codes_tgt, n, "%s/%s", run_dir, joint ? "bpe.codes" : "bpe.tgt.codes");
  snprintf(voc_src, n, "%s/%s", run_dir, joint ? "vocab.txt" : "vocab.src.txt");
  snprintf(voc_tgt, n, "%s/%s", run_dir, joint ? "vocab.txt" : "vocab.tgt.txt");
}

static void set_vocab_sizes(struct dataset *d) {
  d->src_vocab_size = intrus_vocab_size(d->src_vocab);
  d->tgt_vocab_size = intrus_vocab_size(d->tgt_vocab);
  uint64_t fp[2] = {intrus_vocab_fingerprint(d->src_vocab), intrus_vocab_fingerprint(d->tgt_vocab)};
  d->vocab_fingerprint = intrus_fnv1a(INTRUS_FNV_INIT, fp, sizeof fp);
}

/* The tokenizers, BPE codes and vocabularies of run_dir, read as they are (the callers
 * check tokenizer.txt first). */
static enum intrus_status load_pipeline_files(struct dataset *d, const char *run_dir,
                                              struct intrus_error *err) {
  char cs[4200], ct[4200], vs[4200], vt[4200];
  pipeline_paths(run_dir, cs, ct, vs, vt, sizeof cs, d->joint);
  enum intrus_status st;
  if ((st = make_tokenizers(d, err)) || (st = intrus_bpe_load(cs, &d->src_bpe, err)) ||
      (st = intrus_vocab_load(vs, &d->src_vocab, err)))
    return st;
  if (d->joint) {
    d->tgt_bpe = d->src_bpe;
    d->tgt_vocab = d->src_vocab;
  } else if ((st = intrus_bpe_load(ct, &d->tgt_bpe, err)) ||
             (st = intrus_vocab_load(vt, &d->tgt_vocab, err))) {
    return st;
  }
  set_vocab_sizes(d);
  return INTRUS_OK;
}

enum intrus_status dataset_load_pipeline(struct dataset *d, const char *run_dir,
                                         struct intrus_error *err) {
  if (d->kind == DATA_IMAGES) return dataset_images_load_pipeline(d, run_dir, err);
  if (d->kind != DATA_PARALLEL) return INTRUS_OK;
  enum intrus_status st;
  /* Runs from before tokenizer.txt have none; their vocabulary is still fingerprinted by
   * the checkpoint. */
  if (dataset_manifest_exists(run_dir) && (st = dataset_manifest_check(d, run_dir, NULL, err)))
    return st;
  return load_pipeline_files(d, run_dir, err);
}

enum intrus_status dataset_segment(struct dataset *d, int side, char *const *lines, size_t n,
                                   char ***out, struct intrus_error *err) {
  enum intrus_status st = tokenize_all(side ? d->tgt_tok : d->src_tok, "input", lines, n, out, err);
  if (st) return st;
  bpe_all(side ? d->tgt_bpe : d->src_bpe, *out, n);
  return INTRUS_OK;
}

enum intrus_status dataset_prepare(struct dataset *d, const char *run_dir, long max_tokens,
                                   uint64_t seed, FILE *progress, struct intrus_error *err) {
  if (d->kind == DATA_IMAGES) return dataset_images_prepare(d, run_dir, max_tokens, seed, progress, err);
  if (d->kind != DATA_PARALLEL) return INTRUS_OK;
  enum intrus_status st;
  char sp[4200], tp[4200];
  struct intrus_parallel_text train = {0};
  char **ts = NULL, **tt = NULL, **vs = NULL, **vt = NULL;
  struct intrus_wordcount *wsrc = NULL, *wtgt = NULL;
  if ((st = make_tokenizers(d, err))) return st;
  dataset_split_path(d, "train", d->src_lang, sp, sizeof sp);
  dataset_split_path(d, "train", d->tgt_lang, tp, sizeof tp);
  if ((st = intrus_parallel_read(sp, tp, &train, err))) return st;
  if ((st = tokenize_all(d->src_tok, sp, train.src, train.n, &ts, err)) ||
      (st = tokenize_all(d->tgt_tok, tp, train.tgt, train.n, &tt, err)))
    goto done;
  char cs[4200], ct[4200], vsp[4200], vtp[4200];
  pipeline_paths(run_dir, cs, ct, vsp, vtp, sizeof cs, d->joint);
  const uint64_t train_fp = dataset_train_fp(&train);
  bool record = false; /* write tokenizer.txt once everything below has succeeded */
  bool legacy = false;  /* a run from before tokenizer.txt: its checkpoint checks the vocabulary */
  if (access(cs, F_OK) == 0 && !dataset_manifest_exists(run_dir)) {
    char ck[4200];
    snprintf(ck, sizeof ck, "%s/checkpoint.ckpt", run_dir);
    if (access(ck, F_OK) != 0) {
      /* Left by a first run that failed before its data were ready: never trusted. */
      if (progress)
        fprintf(progress, "%s: tokenizer files of an unfinished first run: learnt again\n",
                run_dir);
      unlink(cs);
      unlink(ct);
      unlink(vsp);
      unlink(vtp);
    } else {
      legacy = true;
    }
  }
  if (access(cs, F_OK) != 0 && d->vocab_from[0]) {
    record = true;
    /* First run with another run's segmentation (data.vocab_from). */
    if (progress) fprintf(progress, "BPE codes and vocabulary of %s\n", d->vocab_from);
    if ((st = dataset_manifest_adopt(d, d->vocab_from, run_dir, err)) ||
        (st = load_pipeline_files(d, run_dir, err)))
      goto done;
    bpe_all(d->src_bpe, ts, train.n);
    bpe_all(d->tgt_bpe, tt, train.n);
  } else if (access(cs, F_OK) != 0) {
    record = true;
    /* First run: learn the segmentation from the training split. */
    wsrc = intrus_wordcount_create();
    wtgt = d->joint ? wsrc : intrus_wordcount_create();
    for (size_t i = 0; i < train.n; i++) {
      intrus_wordcount_add_line(wsrc, ts[i], strlen(ts[i]));
      intrus_wordcount_add_line(wtgt, tt[i], strlen(tt[i]));
    }
    if (progress)
      fprintf(progress, "learning %d BPE merges from %zu sentence pairs\n", d->bpe_merges, train.n);
    if ((st = intrus_bpe_learn(wsrc, d->bpe_merges, cs, err)) ||
        (!d->joint && (st = intrus_bpe_learn(wtgt, d->bpe_merges, ct, err))))
      goto done;
    intrus_wordcount_free(wsrc);
    if (wtgt != wsrc) intrus_wordcount_free(wtgt);
    wsrc = wtgt = NULL;
    if ((st = intrus_bpe_load(cs, &d->src_bpe, err))) goto done;
    if (d->joint) d->tgt_bpe = d->src_bpe;
    else if ((st = intrus_bpe_load(ct, &d->tgt_bpe, err))) goto done;
    bpe_all(d->src_bpe, ts, train.n);
    bpe_all(d->tgt_bpe, tt, train.n);
    wsrc = intrus_wordcount_create();
    wtgt = d->joint ? wsrc : intrus_wordcount_create();
    for (size_t i = 0; i < train.n; i++) {
      intrus_wordcount_add_line(wsrc, ts[i], strlen(ts[i]));
      intrus_wordcount_add_line(wtgt, tt[i], strlen(tt[i]));
    }
    d->src_vocab = intrus_vocab_build(wsrc, 1, 0);
    d->tgt_vocab = d->joint ? d->src_vocab : intrus_vocab_build(wtgt, 1, 0);
    if ((st = intrus_vocab_save(d->src_vocab, vsp, err)) ||
        (!d->joint && (st = intrus_vocab_save(d->tgt_vocab, vtp, err))))
      goto done;
    set_vocab_sizes(d);
  } else {
    if ((!legacy && (st = dataset_manifest_check(d, run_dir, &train_fp, err))) ||
        (st = load_pipeline_files(d, run_dir, err)))
      goto done;
    bpe_all(d->src_bpe, ts, train.n);
    bpe_all(d->tgt_bpe, tt, train.n);
  }
  struct intrus_corpus_opts copts = {.max_len = d->max_tokens_len, .skip_empty = true};
  if ((st = intrus_corpus_encode((const char *const *)ts, (const char *const *)tt, train.n,
                                 d->src_vocab, d->tgt_vocab, &copts, &d->train, err)))
    goto done;
  dataset_split_path(d, "valid", d->src_lang, sp, sizeof sp);
  dataset_split_path(d, "valid", d->tgt_lang, tp, sizeof tp);
  if ((st = intrus_parallel_read(sp, tp, &d->valid_text, err)) ||
      (st = dataset_segment(d, 0, d->valid_text.src, d->valid_text.n, &vs, err)) ||
      (st = dataset_segment(d, 1, d->valid_text.tgt, d->valid_text.n, &vt, err)))
    goto done;
  struct intrus_corpus_opts vopts = {.max_len = 0, .skip_empty = false};
  if ((st = intrus_corpus_encode((const char *const *)vs, (const char *const *)vt,
                                 d->valid_text.n, d->src_vocab, d->tgt_vocab, &vopts,
                                 &d->valid, err)))
    goto done;
  if (record && (st = dataset_manifest_write(d, run_dir, train_fp, err))) goto done;
  d->batcher = intrus_batcher_create(d->train, max_tokens, 1000, seed);
  if (progress)
    fprintf(progress,
            "data: %d training pairs (%zu dropped as longer than %d subwords, %zu with an "
            "empty side), %d valid; vocabulary %d / %d; %zu steps a pass\n",
            d->train->n, d->train->dropped_long, d->max_tokens_len, d->train->dropped_empty,
            d->valid->n, d->src_vocab_size, d->tgt_vocab_size,
            /* how many steps make one pass over the training pairs: what a budget scaled
             * to another corpus's size is counted in (experiments/small/README.md) */
            intrus_batcher_epoch_size(d->batcher, 0));
done:
  if (wtgt != wsrc) intrus_wordcount_free(wtgt);
  intrus_wordcount_free(wsrc);
  dataset_lines_free(ts, train.n);
  dataset_lines_free(tt, train.n);
  dataset_lines_free(vs, d->valid_text.n);
  dataset_lines_free(vt, d->valid_text.n);
  intrus_parallel_free(&train);
  return st;
}

void dataset_detok(const struct dataset *d, const int32_t *ids, int len, bool reverse,
                   struct intrus_str *out) {
  struct intrus_str joined = {0};
  for (int i = 0; i < len; i++) {
    const char *tok = intrus_vocab_token(d->tgt_vocab, ids[reverse ? len - 1 - i : i]);
    if (!tok) continue;
    if (joined.len) intrus_str_append(&joined, " ", 1);
    intrus_str_append(&joined, tok, strlen(tok));
  }
  intrus_str_clear(out);
  if (d->kind == DATA_IMAGES && !d->tgt_text) {
    /* Targets of tokens (LaTeX): written as they were read, one space apart. */
    intrus_str_append(out, joined.s ? joined.s : "", joined.len);
    intrus_str_free(&joined);
    return;
  }
  intrus_detokenize(joined.s ? joined.s : "", joined.len, out);
  intrus_str_free(&joined);
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* A batch of the synthetic task, a pure function of key. */
static void synth_batch(intrus_ctx *ctx, const struct dataset *d, uint64_t key, int B,
                        struct intrus_src_batch *src, struct intrus_tgt_batch *tgt) {
  struct intrus_rng rng;
  intrus_rng_seed(&rng, key);
  int L = d->max_len;
  int32_t *x = intrus_ctx_calloc(ctx, (size_t)B * L * sizeof *x);
  int32_t *y = intrus_ctx_calloc(ctx, (size_t)B * L * sizeof *y);
  int *lens = intrus_ctx_alloc(ctx, (size_t)B * sizeof *lens);
  for (int b = 0; b < B; b++) {
    int n = d->min_len + (int)intrus_rng_below(&rng, (uint64_t)(d->max_len - d->min_len + 1));
    lens[b] = n;
    int32_t *xb = x + (size_t)b * L, *yb = y + (size_t)b * L;
    for (int t = 0; t < n; t++)
      xb[t] = INTRUS_NUM_SPECIAL +
              (int32_t)intrus_rng_below(&rng, (uint64_t)(d->vocab - INTRUS_NUM_SPECIAL));
    for (int t = 0; t < n; t++) yb[t] = d->task == TASK_REVERSE ? xb[n - 1 - t] : xb[t];
    if (d->task == TASK_SORT) qsort(yb, (size_t)n, sizeof *yb, cmp_i32);
  }
  *src = (struct intrus_src_batch){.batch = B, .len = L, .tokens = x, .lens = lens};
  *tgt = (struct intrus_tgt_batch){.batch = B, .len = L, .tokens = y, .lens = lens};
}

void dataset_train_batch(struct dataset *d, intrus_ctx *ctx, uint64_t seed, long step,
                         int sentences, struct intrus_src_batch *src,
                         struct intrus_tgt_batch *tgt) {
  if (d->kind == DATA_SYNTHETIC) {
    synth_batch(ctx, d, intrus_hash64(seed, (uint64_t)step), sentences, src, tgt);
    return;
  }
  if (d->kind == DATA_IMAGES) {
    dataset_images_train_batch(d, ctx, step, src, tgt);
    return;
  }
  /* Walk the epochs to the step's (epoch, index): the batcher remembers each epoch's
   * size, so only an epoch not seen before is computed (once). */
  uint64_t e = 0;
  size_t i = (size_t)step, size;
  while (i >= (size = intrus_batcher_epoch_size(d->batcher, e))) {
    i -= size;
    e++;
  }
  const int32_t *idx;
  int count = intrus_batcher_get(d->batcher, e, i, &idx);
  intrus_corpus_fill_batch(d->train, ctx, idx, count, src, tgt);
}

static const uint64_t VALID_KEY = 0x76616c6964ULL;

enum intrus_status dataset_valid_batches(struct dataset *d, intrus_ctx *ctx, uint64_t seed,
                                         int sentences, long max_tokens,
                                         struct dataset_share share, dataset_batch_fn fn,
                                         void *user, struct intrus_error *err) {
  enum intrus_status st = INTRUS_OK;
  struct intrus_src_batch src;
  struct intrus_tgt_batch tgt;
  if (d->kind == DATA_SYNTHETIC) {
    for (int done = 0, i = 0; done < d->valid_size && !st; done += sentences, i++) {
      if (i % share.every != share.first) continue;
      int B = d->valid_size - done < sentences ? d->valid_size - done : sentences;
      intrus_ctx_reset(ctx);
      synth_batch(ctx, d, intrus_hash64(seed ^ VALID_KEY, (uint64_t)i), B, &src, &tgt);
      st = fn(&src, &tgt, i, user, err);
    }
    return st;
  }
  if (d->kind == DATA_IMAGES) return dataset_images_valid_batches(d, ctx, share, fn, user, err);
  struct intrus_batcher *b = intrus_batcher_create_sorted(d->valid, max_tokens);
  size_t n = intrus_batcher_epoch_size(b, 0);
  for (size_t i = 0; i < n && !st; i++) {
    if ((long)i % share.every != share.first) continue;
    const int32_t *idx;
    int count = intrus_batcher_get(b, 0, i, &idx);
    intrus_ctx_reset(ctx);
    intrus_corpus_fill_batch(d->valid, ctx, idx, count, &src, &tgt);
    st = fn(&src, &tgt, (long)i, user, err);
  }
  intrus_batcher_free(b);
  return st;
}

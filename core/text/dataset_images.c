/* data.kind = "images": image-to-text data (image-to-LaTeX, captioning) in the layout
 * scripts/build-im2latex-data.sh and scripts/build-caption-data.sh write:
 *
 *   DIR/SPLIT.img        one PNG path per line, relative to DIR
 *   DIR/SPLIT.TGT        the target of each line (train; valid and test too when there
 *                        is one reference per image)
 *   DIR/SPLIT.TGT.K      the K-th reference of each image (K = 0, 1, ...; valid and
 *                        test of the caption sets; an empty line: no K-th reference)
 *
 * Images are read once (libpng, under the configured limits) and kept as 8-bit
 * samples. This file reads the data and learns or loads the target vocabulary;
 * dataset_images_batch.c cuts it into batches and batches the images to decode. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "dataset_images_internal.h"
#include "intrus/fileio.h"
#include "intrus/image.h"
#include "intrus/rng.h"

static void split_free(struct image_split *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n_images; i++) free(s->pix[i]);
  free(s->pix);
  free(s->h);
  free(s->w);
  free(s->image);
  free(s->ids);
  free(s->off);
  free(s->order);
  free(s->start);
  free(s->esize);
  free(s);
}

void dataset_images_free(struct dataset *d) {
  split_free(d->img_train);
  split_free(d->img_valid);
  for (int k = 0; k < d->valid_nrefs; k++) dataset_lines_free(d->valid_refs[k], d->valid_n);
  d->img_train = d->img_valid = NULL;
}

enum intrus_status dataset_images_configure(struct dataset *d, const intrus_cfg *g,
                                            const char *exp_path, struct intrus_error *err) {
  static const char *const modes[] = {"tokens", "text", NULL};
  const char *dir, *tgt;
  long long channels, merges, max_len, batch_pixels;
  int mode;
  enum intrus_status st;
  if ((st = intrus_cfg_string_req(g, "dir", &dir, err)) ||
      (st = intrus_cfg_string_req(g, "tgt", &tgt, err)) ||
      (st = intrus_cfg_int_range(g, "channels", 1, 1, 3, &channels, err)) ||
      (st = intrus_cfg_choice(g, "targets", "tokens", modes, &mode, err)) ||
      (st = intrus_cfg_int_range(g, "bpe_merges", 8000, 0, 1 << 20, &merges, err)) ||
      (st = intrus_cfg_int_range(g, "max_len", 150, 1, 1 << 16, &max_len, err)) ||
      (st = intrus_cfg_int_range(g, "batch_pixels", 1 << 19, 1, 1LL << 32, &batch_pixels, err)) ||
      (st = intrus_image_limits_read(g, &d->img_limits, err)) ||
      (st = intrus_cfg_check_unknown(g, err)))
    return st;
  if (channels == 2) return intrus_cfg_error(g, "channels", err, "1 (grey) or 3 (RGB), not 2");
  if (strlen(tgt) >= sizeof d->tgt_lang)
    return intrus_cfg_error(g, "tgt", err, "at most 15 characters");
  snprintf(d->src_lang, sizeof d->src_lang, "img");
  snprintf(d->tgt_lang, sizeof d->tgt_lang, "%s", tgt);
  if ((st = dataset_resolve_dir(d, dir, exp_path, err))) return st;
  d->channels = (int)channels;
  d->tgt_text = mode == 1;
  d->bpe_merges = d->tgt_text ? (int)merges : 0;
  d->max_tokens_len = (int)max_len;
  d->batch_pixels = batch_pixels;
  d->joint = false;
  char path[4200];
  snprintf(path, sizeof path, "%s/train.img", d->dir);
  if (!intrus_cfg_settings_only(g) && access(path, R_OK) != 0)
    return intrus_cfg_error(g, "dir", err, "cannot read the training image list %s: %s", path,
                            strerror(errno));
  return INTRUS_OK;
}

/* ---- reading ------------------------------------------------------------------------ */

/* Reads the PNGs listed in list (paths relative to base) into s's images. */
enum intrus_status dataset_images_read_list(const struct dataset *d, const char *list,
                                            const char *base, struct image_split *s,
                                            struct intrus_error *err) {
  char **lines = NULL;
  size_t n = 0;
  enum intrus_status st = intrus_lines_read(list, &lines, &n, err);
  if (st) return st;
  s->h = calloc(n ? n : 1, sizeof *s->h);
  s->w = calloc(n ? n : 1, sizeof *s->w);
  s->pix = calloc(n ? n : 1, sizeof *s->pix);
  if (!s->h || !s->w || !s->pix) {
    intrus_lines_free(lines, n);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  char path[8400];
  for (size_t i = 0; i < n && !st; i++) {
    const char *p = lines[i];
    if (!*p) {
      st = intrus_error_set(err, INTRUS_ERR_DATA, "%s:%zu: an empty line (an image path was expected)",
                            list, i + 1);
      break;
    }
    if (p[0] == '/') snprintf(path, sizeof path, "%s", p);
    else snprintf(path, sizeof path, "%s/%s", base, p);
    struct intrus_image img;
    st = intrus_image_read_png(path, d->channels, &d->img_limits, &img, err);
    if (st) {
      intrus_error_prefix(err, "%s:%zu", list, i + 1);
      break;
    }
    size_t k = (size_t)img.channels * img.height * img.width;
    s->pix[i] = malloc(k ? k : 1);
    if (!s->pix[i]) {
      intrus_image_free(&img);
      st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
      break;
    }
    for (size_t j = 0; j < k; j++) s->pix[i][j] = (uint8_t)lrintf(img.pixels[j] * 255.0f);
    s->h[i] = img.height;
    s->w[i] = img.width;
    s->n_images = i + 1;
    intrus_image_free(&img);
  }
  intrus_lines_free(lines, n);
  return st;
}

/* The reference files of split: SPLIT.TGT, or SPLIT.TGT.0, SPLIT.TGT.1, ... . */
static int reference_paths(const struct dataset *d, const char *split, char paths[][4200],
                           int max) {
  snprintf(paths[0], sizeof paths[0], "%s/%s.%s", d->dir, split, d->tgt_lang);
  if (access(paths[0], R_OK) == 0) return 1;
  int n = 0;
  for (; n < max; n++) {
    snprintf(paths[n], sizeof paths[n], "%s/%s.%s.%d", d->dir, split, d->tgt_lang, n);
    if (access(paths[n], R_OK) != 0) break;
  }
  return n;
}

enum intrus_status dataset_images_references(const struct dataset *d, const char *split,
                                             size_t n_images, char ***refs, int *nrefs,
                                             struct intrus_error *err) {
  char paths[DATASET_MAX_REFS][4200];
  int n = reference_paths(d, split, paths, DATASET_MAX_REFS);
  if (n == 0)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s/%s.%s: cannot read (nor %s.%s.0): %s", d->dir,
                            split, d->tgt_lang, split, d->tgt_lang, strerror(errno));
  for (int k = 0; k < n; k++) {
    char **l = NULL;
    size_t ln = 0;
    enum intrus_status st = intrus_lines_read(paths[k], &l, &ln, err);
    if (!st && ln != n_images)
      st = intrus_error_set(err, INTRUS_ERR_DATA, "%s has %zu lines but %s/%s.img has %zu",
                            paths[k], ln, d->dir, split, n_images);
    if (!st && !(refs[k] = calloc(n_images ? n_images : 1, sizeof *refs[k])))
      st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < n_images; i++)
      if (!(refs[k][i] = strdup(l[i])))
        st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    if (l) intrus_lines_free(l, ln);
    if (st) {
      for (int j = 0; j <= k; j++) dataset_lines_free(refs[j], refs[j] ? n_images : 0), refs[j] = NULL;
      return st;
    }
  }
  *nrefs = n;
  return INTRUS_OK;
}

/* Target lines as the vocabulary sees them: "tokens" as they are (space-separated),
 * "text" tokenized and BPE-segmented. */
static enum intrus_status segment_targets(struct dataset *d, char *const *lines, size_t n,
                                          char ***out, struct intrus_error *err) {
  if (d->tgt_text) return dataset_segment(d, 1, lines, n, out, err);
  char **res = calloc(n ? n : 1, sizeof *res);
  if (!res) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    /* One space between tokens, none around: what intrus_vocab_encode splits on. */
    const char *p = lines[i];
    size_t len = strlen(p), k = 0;
    char *s = malloc(len + 1);
    if (!s) {
      dataset_lines_free(res, i);
      return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    }
    for (size_t j = 0; j < len; j++) {
      char c = p[j] == '\t' ? ' ' : p[j];
      if (c == ' ' && (k == 0 || s[k - 1] == ' ')) continue;
      s[k++] = c;
    }
    while (k && s[k - 1] == ' ') k--;
    s[k] = '\0';
    res[i] = s;
  }
  *out = res;
  return INTRUS_OK;
}

/* Encodes the pairs (image i, target line i) of s, dropping empty and too long targets. */
static enum intrus_status encode_pairs(struct dataset *d, struct image_split *s, char **seg,
                                       size_t n, int max_len, struct intrus_error *err) {
  int cap = max_len > 0 ? max_len + 1 : 1 << 16;
  int32_t *buf = malloc((size_t)cap * sizeof *buf);
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += strlen(seg[i]) / 2 + 1;
  s->image = malloc((n ? n : 1) * sizeof *s->image);
  s->off = malloc((n + 1) * sizeof *s->off);
  s->ids = malloc((total ? total : 1) * sizeof *s->ids);
  if (!buf || !s->image || !s->off || !s->ids) {
    free(buf);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  s->n = 0;
  s->off[0] = 0;
  for (size_t i = 0; i < n; i++) {
    bool trunc = false;
    int k = intrus_vocab_encode(d->tgt_vocab, seg[i], strlen(seg[i]), buf, cap, &trunc);
    if (k == 0) {
      s->dropped_empty++;
      continue;
    }
    if (max_len > 0 && (trunc || k > max_len)) {
      s->dropped_long++;
      continue;
    }
    memcpy(s->ids + s->off[s->n], buf, (size_t)k * sizeof *buf);
    s->image[s->n] = (int32_t)i;
    s->off[s->n + 1] = s->off[s->n] + k;
    if (k > s->max_tgt) s->max_tgt = k;
    s->n++;
  }
  free(buf);
  if (s->n == 0)
    return intrus_error_set(err, INTRUS_ERR_DATA, "%s: no image has a usable target", d->dir);
  return INTRUS_OK;
}

/* Learns (first run) or loads the target vocabulary (and BPE codes for text). */
static enum intrus_status target_pipeline(struct dataset *d, const char *run_dir, char **train_seg_raw,
                                          size_t n, FILE *progress, struct intrus_error *err) {
  char codes[4200], vocab[4200];
  snprintf(codes, sizeof codes, "%s/bpe.tgt.codes", run_dir);
  snprintf(vocab, sizeof vocab, "%s/vocab.tgt.txt", run_dir);
  enum intrus_status st;
  if (d->tgt_text && !d->tgt_tok &&
      (st = intrus_tokenizer_create(d->tgt_lang, &d->tgt_tok, err)))
    return st;
  if (access(vocab, F_OK) == 0) {
    if (d->tgt_text && (st = intrus_bpe_load(codes, &d->tgt_bpe, err))) return st;
    return intrus_vocab_load(vocab, &d->tgt_vocab, err);
  }
  if (!train_seg_raw)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: missing (the run directory holds no "
                                                "trained vocabulary)", vocab);
  char **seg = NULL;
  struct intrus_wordcount *w = NULL;
  if (d->tgt_text) {
    /* Tokenize, learn the codes, segment. */
    char **tok = NULL;
    struct intrus_str s = {0};
    tok = calloc(n ? n : 1, sizeof *tok);
    if (!tok) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    w = intrus_wordcount_create();
    for (size_t i = 0; i < n; i++) {
      if ((st = intrus_tokenize(d->tgt_tok, train_seg_raw[i], strlen(train_seg_raw[i]), &s, err))) {
        intrus_error_prefix(err, "%s/train.%s:%zu", d->dir, d->tgt_lang, i + 1);
        intrus_str_free(&s);
        dataset_lines_free(tok, i);
        intrus_wordcount_free(w);
        return st;
      }
      tok[i] = strdup(s.s ? s.s : "");
      intrus_wordcount_add_line(w, tok[i], strlen(tok[i]));
    }
    intrus_str_free(&s);
    if (progress)
      fprintf(progress, "learning %d BPE merges from %zu captions\n", d->bpe_merges, n);
    st = intrus_bpe_learn(w, d->bpe_merges, codes, err);
    intrus_wordcount_free(w);
    w = NULL;
    if (!st) st = intrus_bpe_load(codes, &d->tgt_bpe, err);
    if (st) {
      dataset_lines_free(tok, n);
      return st;
    }
    for (size_t i = 0; i < n; i++) {
      intrus_bpe_apply(d->tgt_bpe, tok[i], strlen(tok[i]), &s);
      free(tok[i]);
      tok[i] = strdup(s.s ? s.s : "");
    }
    intrus_str_free(&s);
    seg = tok;
  } else if ((st = segment_targets(d, train_seg_raw, n, &seg, err))) {
    return st;
  }
  w = intrus_wordcount_create();
  for (size_t i = 0; i < n; i++) intrus_wordcount_add_line(w, seg[i], strlen(seg[i]));
  d->tgt_vocab = intrus_vocab_build(w, 1, 0);
  intrus_wordcount_free(w);
  dataset_lines_free(seg, n);
  return intrus_vocab_save(d->tgt_vocab, vocab, err);
}

static void set_sizes(struct dataset *d) {
  /* No source vocabulary: the encoder reads pixels. */
  d->src_vocab_size = 0;
  d->tgt_vocab_size = intrus_vocab_size(d->tgt_vocab);
  uint64_t fp = intrus_vocab_fingerprint(d->tgt_vocab);
  d->vocab_fingerprint = intrus_fnv1a(INTRUS_FNV_INIT ^ 0x696d67ULL, &fp, sizeof fp);
}

enum intrus_status dataset_images_load_pipeline(struct dataset *d, const char *run_dir,
                                                struct intrus_error *err) {
  enum intrus_status st = target_pipeline(d, run_dir, NULL, 0, NULL, err);
  if (!st) set_sizes(d);
  return st;
}

/* Reads split SPLIT: its images and (the first reference of) its targets. */
static enum intrus_status read_split(struct dataset *d, const char *split, struct image_split **out,
                                     char ***raw_tgt, struct intrus_error *err) {
  char list[4200];
  snprintf(list, sizeof list, "%s/%s.img", d->dir, split);
  struct image_split *s = calloc(1, sizeof *s);
  if (!s) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  enum intrus_status st = dataset_images_read_list(d, list, d->dir, s, err);
  char **refs[DATASET_MAX_REFS] = {0};
  int nrefs = 0;
  if (!st) st = dataset_images_references(d, split, s->n_images, refs, &nrefs, err);
  if (st) {
    split_free(s);
    return st;
  }
  for (int k = 1; k < nrefs; k++) dataset_lines_free(refs[k], s->n_images);
  *raw_tgt = refs[0];
  *out = s;
  return INTRUS_OK;
}

enum intrus_status dataset_images_prepare(struct dataset *d, const char *run_dir, long max_tokens,
                                          uint64_t seed, FILE *progress, struct intrus_error *err) {
  char **train_raw = NULL, **seg = NULL, **valid_raw = NULL;
  size_t n_train = 0, n_seg = 0;
  enum intrus_status st;
  d->img_seed = seed;
  d->img_batch_tokens = max_tokens;
  if (progress) fprintf(progress, "reading the images of %s\n", d->dir);
  if ((st = read_split(d, "train", &d->img_train, &train_raw, err))) goto done;
  n_train = d->img_train->n_images;
  if ((st = target_pipeline(d, run_dir, train_raw, n_train, progress, err))) goto done;
  set_sizes(d);
  if ((st = segment_targets(d, train_raw, n_train, &seg, err))) goto done;
  n_seg = n_train;
  if ((st = encode_pairs(d, d->img_train, seg, n_train, d->max_tokens_len, err))) goto done;
  dataset_lines_free(seg, n_seg);
  seg = NULL;
  if ((st = read_split(d, "valid", &d->img_valid, &valid_raw, err))) goto done;
  d->valid_n = d->img_valid->n_images;
  /* Every reference of the validation images (validation BLEU scores the first) ... */
  if ((st = dataset_images_references(d, "valid", d->valid_n, d->valid_refs, &d->valid_nrefs,
                                      err)) ||
      (st = segment_targets(d, d->valid_refs[0], d->valid_n, &seg, err)))
    goto done;
  n_seg = d->valid_n;
  /* ... and the first is the validation loss's target (none dropped). */
  if ((st = encode_pairs(d, d->img_valid, seg, d->valid_n, 0, err))) goto done;
  if (progress) {
    double px = 0;
    for (size_t i = 0; i < n_train; i++) px += (double)d->img_train->h[i] * d->img_train->w[i];
    fprintf(progress,
            "data: %zu training images, %zu pairs (%zu dropped as longer than %d tokens, %zu "
            "empty), mean %.0f pixels; %zu validation images; target vocabulary %d\n",
            n_train, d->img_train->n, d->img_train->dropped_long, d->max_tokens_len,
            d->img_train->dropped_empty, px / (double)(n_train ? n_train : 1), d->valid_n,
            d->tgt_vocab_size);
  }
done:
  dataset_lines_free(seg, n_seg);
  dataset_lines_free(train_raw, n_train);
  dataset_lines_free(valid_raw, d->img_valid ? d->img_valid->n_images : 0);
  return st;
}

/* Corpora: line files (plain or gzip), encoded sentence pairs, batches by token count.
 *
 * Batching is recomputed from scratch for each epoch from (seed, epoch) alone, never
 * carried over from the previous epoch, so resuming at any (epoch, batch) reproduces
 * the batches of an uninterrupted run. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "intrus/corpus.h"
#include "intrus/plugin.h"
#include "intrus/rng.h"
#include "intrus/status.h"
#include "intrus/tensor.h"
#include "intrus/text.h"
#include "text_bpe_internal.h"
#include "base/xalloc.h"

#define READ_CHUNK (1u << 18)

/* Grows *p (of *cap elements of elem bytes) to hold at least need elements. */
static void grow(void **p, size_t *cap, size_t need, size_t elem) {
  xgrow(p, cap, need, elem, 1024);
}

/* ---- line files ------------------------------------------------------------------ */

/* Reads the whole (decompressed) file into *buf, with one spare byte for a final NUL. */
static enum intrus_status read_all(const char *path, char **buf, size_t *len,
                                   struct intrus_error *err) {
  *buf = NULL;
  *len = 0;
  errno = 0;
  /* "-" is standard input (dup'ed: gzclose must not close the process's fd 0). */
  int fd = strcmp(path, "-") ? -1 : dup(0);
  gzFile gz = fd >= 0 ? gzdopen(fd, "rb") : strcmp(path, "-") ? gzopen(path, "rb") : NULL;
  if (!gz && fd >= 0) close(fd);
  if (!gz) {
    /* errno is 0 when zlib itself could not allocate its state. */
    int e = errno ? errno : ENOMEM;
    return intrus_error_set(err, INTRUS_ERR_IO, "cannot open '%s': %s", path, strerror(e));
  }
  gzbuffer(gz, READ_CHUNK);
  char *b = NULL;
  size_t n = 0, cap = 0;
  enum intrus_status st = INTRUS_OK;
  for (;;) {
    grow((void **)&b, &cap, n + READ_CHUNK + 1, 1);
    int got = gzread(gz, b + n, READ_CHUNK);
    if (got > 0) {
      n += (size_t)got;
      continue;
    }
    int zerr;
    const char *msg = gzerror(gz, &zerr);
    if (zerr == Z_ERRNO) {
      int e = errno;
      st = intrus_error_set(err, INTRUS_ERR_IO, "cannot read '%s': %s", path, strerror(e));
    } else if (zerr != Z_OK) {
      /* Corrupt or truncated gzip data (Z_BUF_ERROR: "unexpected end of file"). */
      st = intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: corrupt gzip data: %s", path, msg);
    }
    break;
  }
  gzclose_r(gz);
  if (st != INTRUS_OK) {
    free(b);
    return st;
  }
  *buf = b;
  *len = n;
  return INTRUS_OK;
}

static enum intrus_status lines_read(const char *path, bool allow_empty, char ***lines,
                                     size_t *n, struct intrus_error *err) {
  *lines = NULL;
  *n = 0;
  char *buf;
  size_t len;
  enum intrus_status st = read_all(path, &buf, &len, err);
  if (st != INTRUS_OK) return st;
  if (len == 0) {
    free(buf);
    return allow_empty ? INTRUS_OK : intrus_error_set(err, INTRUS_ERR_DATA, "%s: empty file", path);
  }
  size_t count = 0;
  for (const char *p = buf; (p = memchr(p, '\n', (size_t)(buf + len - p))); p++) count++;
  if (buf[len - 1] != '\n') count++;
  buf[len] = '\0';
  /* One block for the line pointers; the lines themselves stay in buf, which is
   * lines[0] (the first line starts at offset 0), so intrus_lines_free finds it. */
  char **v = xmalloc(count * sizeof *v);
  size_t start = 0;
  for (size_t i = 0; i < count; i++) {
    char *nl = memchr(buf + start, '\n', len - start);
    size_t end = nl ? (size_t)(nl - buf) : len, l = end - start;
    buf[end] = '\0';
    if (l && buf[start + l - 1] == '\r') buf[start + --l] = '\0';
    long bad = intrus_utf8_invalid_at(buf + start, l);
    const char *nul = memchr(buf + start, '\0', l);
    if (bad >= 0 || nul) {
      if (bad >= 0)
        st = intrus_error_set(err, INTRUS_ERR_DATA, "%s:%zu: invalid UTF-8 at byte %ld", path,
                              i + 1, bad + 1);
      else
        st = intrus_error_set(err, INTRUS_ERR_DATA, "%s:%zu: NUL byte at byte %zu", path, i + 1,
                              (size_t)(nul - (buf + start)) + 1);
      free(v);
      free(buf);
      return st;
    }
    v[i] = buf + start;
    start = end + 1;
  }
  *lines = v;
  *n = count;
  return INTRUS_OK;
}

enum intrus_status intrus_file_read_all(const char *path, char **buf, size_t *len,
                                        struct intrus_error *err) {
  return read_all(path, buf, len, err);
}

enum intrus_status intrus_lines_read(const char *path, char ***lines, size_t *n,
                                     struct intrus_error *err) {
  return lines_read(path, false, lines, n, err);
}

enum intrus_status intrus_lines_read_any(const char *path, char ***lines, size_t *n,
                                         struct intrus_error *err) {
  return lines_read(path, true, lines, n, err);
}

void intrus_lines_free(char **lines, size_t n) {
  if (!lines) return;
  if (n) free(lines[0]);
  free(lines);
}

enum intrus_status intrus_parallel_read(const char *src_path, const char *tgt_path,
                                        struct intrus_parallel_text *out,
                                        struct intrus_error *err) {
  memset(out, 0, sizeof *out);
  char **src, **tgt;
  size_t ns, nt;
  enum intrus_status st = intrus_lines_read(src_path, &src, &ns, err);
  if (st != INTRUS_OK) return st;
  st = intrus_lines_read(tgt_path, &tgt, &nt, err);
  if (st != INTRUS_OK) {
    intrus_lines_free(src, ns);
    return st;
  }
  if (ns != nt) {
    intrus_lines_free(src, ns);
    intrus_lines_free(tgt, nt);
    return intrus_error_set(err, INTRUS_ERR_DATA, "%s has %zu lines but %s has %zu", src_path,
                            ns, tgt_path, nt);
  }
  out->src = src;
  out->tgt = tgt;
  out->n = ns;
  return INTRUS_OK;
}

void intrus_parallel_free(struct intrus_parallel_text *p) {
  if (!p) return;
  intrus_lines_free(p->src, p->n);
  intrus_lines_free(p->tgt, p->n);
  memset(p, 0, sizeof *p);
}

/* ---- encoded corpus ---------------------------------------------------------------- */

static size_t count_tokens(const char *s, size_t len) {
  size_t n = 0;
  bool in = false;
  for (size_t i = 0; i < len; i++) {
    bool sep = intrus_text_is_sep(s[i]);
    if (!sep && !in) n++;
    in = !sep;
  }
  return n;
}

/* One side of the corpus being built. */
struct side {
  int32_t *ids;
  size_t nids, capids;
  int64_t *off;
  size_t capoff;
};

static void side_push(struct side *s, size_t k, const int32_t *ids, size_t n) {
  grow((void **)&s->ids, &s->capids, s->nids + n, sizeof *s->ids);
  /* An empty side may come before any id was stored: memcpy must not see NULL. */
  if (n) memcpy(s->ids + s->nids, ids, n * sizeof *ids);
  s->nids += n;
  grow((void **)&s->off, &s->capoff, k + 2, sizeof *s->off);
  s->off[k + 1] = (int64_t)s->nids;
}

enum intrus_status intrus_corpus_encode(const char *const *src, const char *const *tgt,
                                        size_t n, const struct intrus_vocab *src_vocab,
                                        const struct intrus_vocab *tgt_vocab,
                                        const struct intrus_corpus_opts *opts,
                                        struct intrus_corpus **out, struct intrus_error *err) {
  INTRUS_CHECK(!tgt == !tgt_vocab, "intrus_corpus_encode: tgt and tgt_vocab go together");
  *out = NULL;
  if (n > INT32_MAX)
    return intrus_error_set(err, INTRUS_ERR_DATA,
                            "corpus of %zu sentences is larger than the %d supported", n,
                            INT32_MAX);
  int max_len = opts ? opts->max_len : 0;
  bool skip_empty = opts && opts->skip_empty;
  struct intrus_corpus *c = xmalloc(sizeof *c);
  memset(c, 0, sizeof *c);
  c->has_tgt = tgt != NULL;
  struct side s = {0}, t = {0};
  grow((void **)&s.off, &s.capoff, 1, sizeof *s.off);
  grow((void **)&t.off, &t.capoff, 1, sizeof *t.off);
  s.off[0] = t.off[0] = 0;
  size_t kept = 0, capline = 0;
  int32_t *scratch = NULL;
  size_t capscratch = 0;
  for (size_t i = 0; i < n; i++) {
    size_t sl = strlen(src[i]), tl = tgt ? strlen(tgt[i]) : 0;
    size_t sn = count_tokens(src[i], sl), tn = tgt ? count_tokens(tgt[i], tl) : 0;
    if (max_len > 0 && (sn > (size_t)max_len || tn > (size_t)max_len)) {
      c->dropped_long++;
      continue;
    }
    if (skip_empty && (sn == 0 || (tgt && tn == 0))) {
      c->dropped_empty++;
      continue;
    }
    if (sn > INT32_MAX || tn > INT32_MAX) {
      c->dropped_long++; /* cannot be represented as a length at all */
      continue;
    }
    grow((void **)&scratch, &capscratch, sn > tn ? sn : tn, sizeof *scratch);
    int k = intrus_vocab_encode(src_vocab, src[i], sl, scratch, (int)sn, NULL);
    side_push(&s, kept, scratch, (size_t)k);
    if (k > c->max_src_len) c->max_src_len = k;
    k = tgt ? intrus_vocab_encode(tgt_vocab, tgt[i], tl, scratch, (int)tn, NULL) : 0;
    side_push(&t, kept, scratch, (size_t)k);
    if (k > c->max_tgt_len) c->max_tgt_len = k;
    grow((void **)&c->line, &capline, kept + 1, sizeof *c->line);
    c->line[kept++] = i;
  }
  free(scratch);
  c->n = (int32_t)kept;
  c->src_ids = s.ids;
  c->src_off = s.off;
  c->tgt_ids = t.ids;
  c->tgt_off = t.off;
  if (kept == 0) {
    enum intrus_status st = intrus_error_set(
        err, INTRUS_ERR_DATA,
        "no sentence pair left out of %zu (%zu longer than max_len %d, %zu with an empty side)",
        n, c->dropped_long, max_len, c->dropped_empty);
    intrus_corpus_free(c);
    return st;
  }
  *out = c;
  return INTRUS_OK;
}

void intrus_corpus_free(struct intrus_corpus *c) {
  if (!c) return;
  free(c->src_ids);
  free(c->tgt_ids);
  free(c->src_off);
  free(c->tgt_off);
  free(c->line);
  free(c);
}

/* ---- batches ----------------------------------------------------------------------- */

struct sort_key {
  int32_t k1, k2, idx;
};

struct intrus_batcher {
  const struct intrus_corpus *c;
  long max_tokens;
  int32_t window;
  uint64_t seed;
  bool sorted;        /* evaluation order: no shuffling, one window */
  bool have_epoch;    /* order/bstart hold epoch `epoch` */
  uint64_t epoch;
  int32_t *order;     /* corpus indices, batch after batch in the epoch's batch order */
  size_t *bstart;     /* batch i is order[bstart[i] .. bstart[i+1]) */
  size_t nbatch;
  /* batches per epoch, for the epochs computed so far: a caller that walks the epochs
   * from the first every step (dataset_train_batch) must not recompute them all */
  size_t *esize;
  size_t nesize, esize_cap;
  /* scratch */
  struct sort_key *keys;
  size_t *span;       /* 2 per batch: start, end in keys */
  int32_t *perm;
};

static int key_cmp(const void *pa, const void *pb) {
  const struct sort_key *a = pa, *b = pb;
  if (a->k1 != b->k1) return a->k1 < b->k1 ? -1 : 1;
  if (a->k2 != b->k2) return a->k2 < b->k2 ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}

static struct intrus_batcher *batcher_new(const struct intrus_corpus *c, long max_tokens) {
  INTRUS_CHECK(c && c->n > 0, "intrus_batcher_create: empty corpus");
  INTRUS_CHECK(max_tokens > 0, "intrus_batcher_create: max_tokens %ld", max_tokens);
  struct intrus_batcher *b = xmalloc(sizeof *b);
  memset(b, 0, sizeof *b);
  size_t n = (size_t)c->n;
  b->c = c;
  b->max_tokens = max_tokens;
  b->order = xmalloc(n * sizeof *b->order);
  b->bstart = xmalloc((n + 1) * sizeof *b->bstart);
  b->keys = xmalloc(n * sizeof *b->keys);
  b->span = xmalloc(2 * n * sizeof *b->span);
  b->perm = xmalloc(n * sizeof *b->perm);
  return b;
}

struct intrus_batcher *intrus_batcher_create(const struct intrus_corpus *c, long max_tokens,
                                             int window, uint64_t seed) {
  struct intrus_batcher *b = batcher_new(c, max_tokens);
  b->window = window > 0 && window < c->n ? window : c->n;
  b->seed = seed;
  return b;
}

struct intrus_batcher *intrus_batcher_create_sorted(const struct intrus_corpus *c,
                                                    long max_tokens) {
  struct intrus_batcher *b = batcher_new(c, max_tokens);
  b->window = c->n;
  b->sorted = true;
  return b;
}

void intrus_batcher_free(struct intrus_batcher *b) {
  if (!b) return;
  free(b->order);
  free(b->bstart);
  free(b->keys);
  free(b->span);
  free(b->perm);
  free(b->esize);
  free(b);
}

/* Cuts keys[from, to) (sorted by length) greedily into batches whose padded size stays
 * within max_tokens, appending their spans. */
static void cut_batches(struct intrus_batcher *b, size_t from, size_t to) {
  const struct intrus_corpus *c = b->c;
  size_t start = from;
  long ms = 0, mt = 0;
  for (size_t k = from; k < to; k++) {
    int32_t i = b->keys[k].idx;
    long sl = intrus_corpus_src_len(c, i), tl = intrus_corpus_tgt_len(c, i);
    long ns = sl > ms ? sl : ms, nt = tl > mt ? tl : mt;
    long rows = (long)(k - start) + 1, widest = ns > nt ? ns : nt;
    if (k > start && rows * widest > b->max_tokens) {
      b->span[2 * b->nbatch] = start;
      b->span[2 * b->nbatch + 1] = k;
      b->nbatch++;
      start = k;
      ns = sl;
      nt = tl;
    }
    ms = ns;
    mt = nt;
  }
  if (to > start) {
    b->span[2 * b->nbatch] = start;
    b->span[2 * b->nbatch + 1] = to;
    b->nbatch++;
  }
}

/* Fisher-Yates with a generator seeded from (seed, stream): the same for every run. */
static void shuffle_u32(int32_t *a, size_t n, uint64_t seed, uint64_t stream) {
  struct intrus_rng r;
  intrus_rng_seed(&r, intrus_hash64(seed, stream));
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)intrus_rng_below(&r, i);
    int32_t t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
  }
}

static void batcher_compute(struct intrus_batcher *b, uint64_t epoch) {
  if (b->have_epoch && (b->sorted || b->epoch == epoch)) return;
  const struct intrus_corpus *c = b->c;
  size_t n = (size_t)c->n;
  for (size_t i = 0; i < n; i++) b->perm[i] = (int32_t)i;
  /* Streams 2e and 2e+1 keep the sentence and batch shuffles of all epochs apart. */
  if (!b->sorted) shuffle_u32(b->perm, n, b->seed, 2 * epoch);
  for (size_t i = 0; i < n; i++) {
    int32_t k = b->perm[i], sl = intrus_corpus_src_len(c, k), tl = intrus_corpus_tgt_len(c, k);
    /* Training groups by target length (the decoder's cost dominates); evaluation by
     * source length, the only one known at translation time. */
    b->keys[i] = b->sorted ? (struct sort_key){sl, tl, k} : (struct sort_key){tl, sl, k};
  }
  b->nbatch = 0;
  for (size_t w = 0; w < n; w += (size_t)b->window) {
    size_t end = w + (size_t)b->window < n ? w + (size_t)b->window : n;
    qsort(b->keys + w, end - w, sizeof *b->keys, key_cmp);
    cut_batches(b, w, end);
  }
  for (size_t i = 0; i < b->nbatch; i++) b->perm[i] = (int32_t)i;
  if (!b->sorted) shuffle_u32(b->perm, b->nbatch, b->seed, 2 * epoch + 1);
  size_t pos = 0;
  for (size_t i = 0; i < b->nbatch; i++) {
    size_t s = b->span[2 * (size_t)b->perm[i]], e = b->span[2 * (size_t)b->perm[i] + 1];
    b->bstart[i] = pos;
    for (size_t k = s; k < e; k++) b->order[pos++] = b->keys[k].idx;
  }
  b->bstart[b->nbatch] = pos;
  b->epoch = epoch;
  b->have_epoch = true;
}

size_t intrus_batcher_epoch_size(struct intrus_batcher *b, uint64_t epoch) {
  if (b->sorted) epoch = 0; /* one order for every epoch */
  while (b->nesize <= epoch) {
    xgrow((void **)&b->esize, &b->esize_cap, b->nesize + 1, sizeof *b->esize, 16);
    batcher_compute(b, b->nesize);
    b->esize[b->nesize++] = b->nbatch;
  }
  return b->esize[epoch];
}

int intrus_batcher_get(struct intrus_batcher *b, uint64_t epoch, size_t i,
                       const int32_t **idx) {
  batcher_compute(b, epoch);
  INTRUS_CHECK(i < b->nbatch, "intrus_batcher_get: batch %zu of %zu", i, b->nbatch);
  *idx = b->order + b->bstart[i];
  return (int)(b->bstart[i + 1] - b->bstart[i]);
}

_Static_assert(INTRUS_PAD == 0, "padding by memset needs INTRUS_PAD == 0");

void intrus_corpus_fill_batch(const struct intrus_corpus *c, intrus_ctx *ctx,
                              const int32_t *idx, int count, struct intrus_src_batch *src,
                              struct intrus_tgt_batch *tgt) {
  INTRUS_CHECK(count > 0, "intrus_corpus_fill_batch: %d sentences", count);
  int ms = 0, mt = 0;
  for (int k = 0; k < count; k++) {
    INTRUS_CHECK(idx[k] >= 0 && idx[k] < c->n, "intrus_corpus_fill_batch: index %d of %d",
                 idx[k], c->n);
    int sl = intrus_corpus_src_len(c, idx[k]), tl = intrus_corpus_tgt_len(c, idx[k]);
    if (sl > ms) ms = sl;
    if (tl > mt) mt = tl;
  }
  int32_t *st = intrus_ctx_calloc(ctx, (size_t)count * (size_t)ms * sizeof *st);
  int *sls = intrus_ctx_alloc(ctx, (size_t)count * sizeof *sls);
  for (int k = 0; k < count; k++) {
    sls[k] = intrus_corpus_src_len(c, idx[k]);
    if (sls[k]) /* the id array is NULL when every sentence is empty */
      memcpy(st + (size_t)k * (size_t)ms, c->src_ids + c->src_off[idx[k]],
             (size_t)sls[k] * sizeof *st);
  }
  memset(src, 0, sizeof *src);
  src->batch = count;
  src->len = ms;
  src->tokens = st;
  src->lens = sls;
  if (!tgt) return;
  int32_t *tt = intrus_ctx_calloc(ctx, (size_t)count * (size_t)mt * sizeof *tt);
  int *tls = intrus_ctx_alloc(ctx, (size_t)count * sizeof *tls);
  for (int k = 0; k < count; k++) {
    tls[k] = intrus_corpus_tgt_len(c, idx[k]);
    if (tls[k]) /* the id array is NULL when every sentence is empty */
      memcpy(tt + (size_t)k * (size_t)mt, c->tgt_ids + c->tgt_off[idx[k]],
             (size_t)tls[k] * sizeof *tt);
  }
  tgt->batch = count;
  tgt->len = mt;
  tgt->tokens = tt;
  tgt->lens = tls;
}

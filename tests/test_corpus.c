/* Line files (plain and gzip), parallel files, encoded corpora and the batcher. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "intrus/corpus.h"
#include "intrus/plugin.h"
#include "intrus/rng.h"
#include "intrus/tensor.h"
#include "intrus/text.h"
#include "testutil.h"

static void write_gz(const char *path, const char *text) {
  gzFile g = gzopen(path, "wb");
  if (!g || gzwrite(g, text, (unsigned)strlen(text)) != (int)strlen(text) ||
      gzclose(g) != Z_OK) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(2);
  }
}

/* ---- line files ------------------------------------------------------------------- */

static const char *const text3 = "Guten Tag\r\n\nsch\xc3\xb6n \xe2\x82\xac";

static void expect_text3(char **lines, size_t n, const char *what) {
  EXPECT(n == 3, "%s: %zu lines", what, n);
  if (n != 3) return;
  EXPECT(strcmp(lines[0], "Guten Tag") == 0, "%s: CRLF stripped: '%s'", what, lines[0]);
  EXPECT(strcmp(lines[1], "") == 0, "%s: empty line kept", what);
  EXPECT(strcmp(lines[2], "sch\xc3\xb6n \xe2\x82\xac") == 0, "%s: last line: '%s'", what,
         lines[2]);
}

static void test_lines(void) {
  struct intrus_error err = {0};
  char **lines;
  size_t n;
  const char *plain = test_tmp_path("plain.txt"), *gz = test_tmp_path("text.gz");
  test_write_file(plain, text3);
  EXPECT(intrus_lines_read(plain, &lines, &n, &err) == INTRUS_OK, "%s", err.msg);
  expect_text3(lines, n, "plain");
  intrus_lines_free(lines, n);
  write_gz(gz, text3);
  EXPECT(intrus_lines_read(gz, &lines, &n, &err) == INTRUS_OK, "%s", err.msg);
  expect_text3(lines, n, "gzip");
  intrus_lines_free(lines, n);

  /* A large gzip file crosses read chunks. */
  enum { BIG = 50000 };
  char *big = malloc((size_t)BIG * 12 + 1), *p = big;
  for (int i = 0; i < BIG; i++) p += sprintf(p, "line %d\n", i);
  write_gz(test_tmp_path("big.gz"), big);
  free(big);
  EXPECT(intrus_lines_read(test_tmp_path("big.gz"), &lines, &n, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(n == BIG, "big: %zu lines", n);
  if (n == BIG) {
    EXPECT(strcmp(lines[0], "line 0") == 0 && strcmp(lines[BIG - 1], "line 49999") == 0 &&
               strcmp(lines[12345], "line 12345") == 0,
           "big: contents");
  }
  intrus_lines_free(lines, n);

  test_write_file(plain, "a\n\n");
  EXPECT(intrus_lines_read(plain, &lines, &n, &err) == INTRUS_OK && n == 2, "two lines");
  intrus_lines_free(lines, n);
  test_write_file(plain, "\n");
  EXPECT(intrus_lines_read(plain, &lines, &n, &err) == INTRUS_OK && n == 1, "one empty line");
  intrus_lines_free(lines, n);
}

static void expect_read_error(const char *path, enum intrus_status want, const char *msg) {
  struct intrus_error err = {0};
  char **lines = (char **)1;
  size_t n = 99;
  enum intrus_status st = intrus_lines_read(path, &lines, &n, &err);
  EXPECT(st == want, "%s: status %s, want %s (%s)", path, intrus_status_name(st),
         intrus_status_name(want), err.msg);
  EXPECT(lines == NULL && n == 0, "%s: outputs cleared on error", path);
  EXPECT_CONTAINS(err.msg, msg);
}

static void test_lines_errors(void) {
  test_write_file(test_tmp_path("empty.txt"), "");
  expect_read_error(test_tmp_path("empty.txt"), INTRUS_ERR_DATA, "empty.txt: empty file");
  write_gz(test_tmp_path("empty.gz"), "");
  expect_read_error(test_tmp_path("empty.gz"), INTRUS_ERR_DATA, "empty.gz: empty file");
  expect_read_error(test_tmp_path("missing.txt"), INTRUS_ERR_IO, "No such file");
  test_write_file(test_tmp_path("bad.txt"), "ok\nfine\nab\xc3(\nok\n");
  expect_read_error(test_tmp_path("bad.txt"), INTRUS_ERR_DATA,
                    "bad.txt:3: invalid UTF-8 at byte 3");
  write_gz(test_tmp_path("bad.gz"), "ok\n\xff\n");
  expect_read_error(test_tmp_path("bad.gz"), INTRUS_ERR_DATA, "bad.gz:2: invalid UTF-8 at byte 1");
  test_write_bytes(test_tmp_path("nul.txt"), "ok\nx\0y\n", 7);
  expect_read_error(test_tmp_path("nul.txt"), INTRUS_ERR_DATA, "nul.txt:2: NUL byte at byte 2");

  /* A gzip file cut short is corrupt, not silently shorter. */
  char text[4000];
  for (int i = 0; i < 3999; i++) text[i] = (char)('a' + (i * 7919) % 26);
  text[3999] = '\0';
  write_gz(test_tmp_path("whole.gz"), text);
  FILE *f = fopen(test_tmp_path("whole.gz"), "rb");
  char buf[8192];
  size_t got = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  test_write_bytes(test_tmp_path("cut.gz"), buf, got / 2);
  expect_read_error(test_tmp_path("cut.gz"), INTRUS_ERR_FORMAT, "cut.gz: corrupt gzip data");
}

static void test_parallel(void) {
  struct intrus_error err = {0};
  struct intrus_parallel_text p;
  test_write_file(test_tmp_path("train.en"), "a\nb\nc\n");
  write_gz(test_tmp_path("train.de.gz"), "x\ny\nz\n");
  EXPECT(intrus_parallel_read(test_tmp_path("train.en"), test_tmp_path("train.de.gz"), &p, &err) ==
             INTRUS_OK,
         "%s", err.msg);
  EXPECT(p.n == 3 && strcmp(p.src[2], "c") == 0 && strcmp(p.tgt[0], "x") == 0, "parallel");
  intrus_parallel_free(&p);
  test_write_file(test_tmp_path("train.de"), "x\ny\n");
  EXPECT(intrus_parallel_read(test_tmp_path("train.en"), test_tmp_path("train.de"), &p, &err) ==
             INTRUS_ERR_DATA,
         "unequal line counts");
  EXPECT_CONTAINS(err.msg, "train.en has 3 lines but ");
  EXPECT_CONTAINS(err.msg, "train.de has 2");
  EXPECT(p.n == 0 && p.src == NULL, "cleared on error");
  EXPECT(intrus_parallel_read(test_tmp_path("train.en"), test_tmp_path("none.de"), &p, &err) ==
             INTRUS_ERR_IO,
         "missing target");
  EXPECT_CONTAINS(err.msg, "none.de");
}

static void test_write_atomic(void) {
  struct intrus_error err = {0};
  const char *path = test_tmp_path("atomic.txt");
  test_write_file(path, "old");
  EXPECT(intrus_file_write_atomic(path, "new\n", 4, &err) == INTRUS_OK, "%s", err.msg);
  char **lines;
  size_t n;
  EXPECT(intrus_lines_read(path, &lines, &n, &err) == INTRUS_OK && n == 1 &&
             strcmp(lines[0], "new") == 0,
         "replaced");
  intrus_lines_free(lines, n);
  EXPECT(intrus_file_write_atomic("/nonexistent-dir/f", "x", 1, &err) == INTRUS_ERR_IO,
         "unwritable");
  EXPECT_CONTAINS(err.msg, "/nonexistent-dir/f");
}

/* ---- encoded corpus and batches ------------------------------------------------------ */

/* A vocabulary of the tokens w0..w49. */
static struct intrus_vocab *word_vocab(void) {
  struct intrus_wordcount *w = intrus_wordcount_create();
  char line[1024] = "";
  for (int i = 0; i < 50; i++) {
    char t[16];
    snprintf(t, sizeof t, "w%d ", i);
    strcat(line, t);
  }
  intrus_wordcount_add_line(w, line, strlen(line));
  struct intrus_vocab *v = intrus_vocab_build(w, 1, 0);
  intrus_wordcount_free(w);
  return v;
}

/* Random sentences of 0..maxlen tokens w0..w49 (caller frees each line and the array). */
static char **random_lines(size_t n, int maxlen, uint64_t seed) {
  struct intrus_rng r;
  intrus_rng_seed(&r, seed);
  char **lines = malloc(n * sizeof *lines);
  for (size_t i = 0; i < n; i++) {
    int len = (int)intrus_rng_below(&r, (uint64_t)maxlen + 1);
    char *s = malloc((size_t)len * 5 + 1);
    s[0] = '\0';
    for (int k = 0; k < len; k++)
      sprintf(s + strlen(s), "%sw%d", k ? " " : "", (int)intrus_rng_below(&r, 50));
    lines[i] = s;
  }
  return lines;
}

static void free_lines(char **lines, size_t n) {
  for (size_t i = 0; i < n; i++) free(lines[i]);
  free(lines);
}

static void test_encode(void) {
  struct intrus_vocab *v = word_vocab();
  const char *src[] = {"w1 w2", "w3 zz w4 w5", "", "w7", "w1 w1 w1 w1 w1 w1"};
  const char *tgt[] = {"w9", "w8 w7", "w6", "", "w2"};
  struct intrus_error err = {0};
  struct intrus_corpus *c = NULL;
  EXPECT(intrus_corpus_encode(src, tgt, 5, v, v, NULL, &c, &err) == INTRUS_OK, "%s", err.msg);
  if (c) {
    EXPECT(c->n == 5 && c->has_tgt && c->max_src_len == 6 && c->max_tgt_len == 2,
           "n %d max %d %d", c->n, c->max_src_len, c->max_tgt_len);
    int32_t w3 = intrus_vocab_id(v, "w3", 2), w5 = intrus_vocab_id(v, "w5", 2);
    EXPECT(intrus_corpus_src_len(c, 1) == 4 && c->src_ids[c->src_off[1]] == w3 &&
               c->src_ids[c->src_off[1] + 1] == INTRUS_UNK &&
               c->src_ids[c->src_off[1] + 3] == w5,
           "sentence 1");
    EXPECT(intrus_corpus_src_len(c, 2) == 0 && intrus_corpus_tgt_len(c, 3) == 0, "empties");
    intrus_corpus_free(c);
  }
  struct intrus_corpus_opts opts = {.max_len = 3, .skip_empty = true};
  c = NULL;
  EXPECT(intrus_corpus_encode(src, tgt, 5, v, v, &opts, &c, &err) == INTRUS_OK, "%s", err.msg);
  if (c) {
    EXPECT(c->n == 1 && c->line[0] == 0, "filtered: n %d", c->n);
    EXPECT(c->dropped_long == 2 && c->dropped_empty == 2, "dropped %zu long, %zu empty",
           c->dropped_long, c->dropped_empty);
    intrus_corpus_free(c);
  }
  /* Source only: translation input. */
  c = NULL;
  EXPECT(intrus_corpus_encode(src, NULL, 5, v, NULL, NULL, &c, &err) == INTRUS_OK, "%s",
         err.msg);
  if (c) {
    EXPECT(!c->has_tgt && c->n == 5 && c->max_tgt_len == 0, "source only");
    intrus_corpus_free(c);
  }
  opts.max_len = 0;
  const char *empty[] = {"", ""};
  c = NULL;
  EXPECT(intrus_corpus_encode(empty, empty, 2, v, v, &opts, &c, &err) == INTRUS_ERR_DATA,
         "nothing left");
  EXPECT_CONTAINS(err.msg, "no sentence pair left out of 2");
  EXPECT(c == NULL, "no corpus on error");
  intrus_vocab_free(v);
}

static long padded(const struct intrus_corpus *c, const int32_t *idx, int n) {
  long ms = 0, mt = 0;
  for (int k = 0; k < n; k++) {
    if (intrus_corpus_src_len(c, idx[k]) > ms) ms = intrus_corpus_src_len(c, idx[k]);
    if (intrus_corpus_tgt_len(c, idx[k]) > mt) mt = intrus_corpus_tgt_len(c, idx[k]);
  }
  return n * (ms > mt ? ms : mt);
}

/* Every sentence once per epoch; padded size within max_tokens except for a sentence
 * that alone exceeds it; returns a hash of the epoch's batches. */
static uint64_t check_epoch(const struct intrus_corpus *c, struct intrus_batcher *b,
                            uint64_t e, long max_tokens) {
  size_t nb = intrus_batcher_epoch_size(b, e);
  int *seen = calloc((size_t)c->n, sizeof *seen);
  uint64_t h = INTRUS_FNV_INIT;
  int oversize = 0;
  for (size_t i = 0; i < nb; i++) {
    const int32_t *idx;
    int n = intrus_batcher_get(b, e, i, &idx);
    EXPECT(n > 0, "epoch %llu batch %zu empty", (unsigned long long)e, i);
    long p = padded(c, idx, n);
    if (p > max_tokens) {
      oversize++;
      EXPECT(n == 1, "epoch %llu batch %zu: %d sentences, padded %ld > %ld",
             (unsigned long long)e, i, n, p, max_tokens);
    }
    for (int k = 0; k < n; k++) {
      if (idx[k] >= 0 && idx[k] < c->n) seen[idx[k]]++;
    }
    h = intrus_fnv1a(h, idx, (size_t)n * sizeof *idx);
    h = intrus_fnv1a(h, &n, sizeof n);
  }
  int bad = 0;
  for (int32_t i = 0; i < c->n; i++) bad += seen[i] != 1;
  EXPECT(bad == 0, "epoch %llu: %d sentences not seen exactly once", (unsigned long long)e,
         bad);
  free(seen);
  return h;
}

static void test_batcher(void) {
  enum { N = 2000 };
  char **src = random_lines(N, 40, 1), **tgt = random_lines(N, 40, 2);
  /* One long sentence (60 tokens) that alone exceeds max_tokens 50. */
  free(src[17]);
  src[17] = malloc(60 * 4 + 1);
  src[17][0] = '\0';
  for (int k = 0; k < 60; k++) strcat(src[17], k ? " w1" : "w1");
  struct intrus_vocab *v = word_vocab();
  struct intrus_error err = {0};
  struct intrus_corpus *c = NULL;
  EXPECT(intrus_corpus_encode((const char *const *)src, (const char *const *)tgt, N, v, v,
                              NULL, &c, &err) == INTRUS_OK,
         "%s", err.msg);
  if (!c) return;
  const long max_tokens = 50;
  struct intrus_batcher *b = intrus_batcher_create(c, max_tokens, 300, 42);
  uint64_t h0 = check_epoch(c, b, 0, max_tokens), h1 = check_epoch(c, b, 1, max_tokens);
  EXPECT(h0 != h1, "epochs 0 and 1 have the same batches");
  /* Resuming: a fresh batcher asked directly for (epoch 1, batch i) agrees, even after
   * the first one moved on; the same seed gives the same epoch. */
  struct intrus_batcher *b2 = intrus_batcher_create(c, max_tokens, 300, 42);
  size_t nb = intrus_batcher_epoch_size(b, 1);
  for (size_t i = nb; i-- > 0;) {
    const int32_t *x, *y;
    int nx = intrus_batcher_get(b2, 1, i, &x);
    int ny = intrus_batcher_get(b, 1, i, &y);
    EXPECT(nx == ny && memcmp(x, y, (size_t)nx * sizeof *x) == 0, "batch 1/%zu differs", i);
    if (nx != ny) break;
  }
  EXPECT(check_epoch(c, b2, 0, max_tokens) == h0, "epoch 0 again");
  struct intrus_batcher *b3 = intrus_batcher_create(c, max_tokens, 300, 43);
  EXPECT(check_epoch(c, b3, 0, max_tokens) != h0, "seed 43 == seed 42");
  intrus_batcher_free(b3);
  /* Epoch sizes are remembered: asked out of order, and walked from epoch 0 as
   * dataset_train_batch does, they and the batches agree with a fresh batcher's. */
  struct intrus_batcher *b4 = intrus_batcher_create(c, max_tokens, 300, 42);
  size_t size4 = intrus_batcher_epoch_size(b4, 4);
  for (uint64_t e = 0; e < 6; e++) {
    struct intrus_batcher *fresh = intrus_batcher_create(c, max_tokens, 300, 42);
    size_t want = intrus_batcher_epoch_size(fresh, e);
    for (uint64_t w = 0; w <= e; w++) intrus_batcher_epoch_size(b4, w);
    EXPECT(intrus_batcher_epoch_size(b4, e) == want, "epoch %llu: %zu batches, fresh %zu",
           (unsigned long long)e, intrus_batcher_epoch_size(b4, e), want);
    if (e == 4) EXPECT(size4 == want, "epoch 4 asked first: %zu batches, fresh %zu", size4, want);
    for (size_t i = 0; i < want; i += 7) {
      const int32_t *x, *y;
      int nx = intrus_batcher_get(fresh, e, i, &x);
      intrus_batcher_epoch_size(b4, 0); /* the walk's first question, between batches */
      int ny = intrus_batcher_get(b4, e, i, &y);
      EXPECT(nx == ny && memcmp(x, y, (size_t)nx * sizeof *x) == 0,
             "epoch %llu batch %zu differs", (unsigned long long)e, i);
    }
    intrus_batcher_free(fresh);
  }
  intrus_batcher_free(b4);
  /* Window 0 (the whole corpus) and window 1 (no length grouping) still cover all. */
  b3 = intrus_batcher_create(c, max_tokens, 0, 42);
  check_epoch(c, b3, 3, max_tokens);
  intrus_batcher_free(b3);
  b3 = intrus_batcher_create(c, max_tokens, 1, 42);
  check_epoch(c, b3, 3, max_tokens);
  intrus_batcher_free(b3);

  /* Evaluation order: by source length, nondecreasing across batches. */
  struct intrus_batcher *ev = intrus_batcher_create_sorted(c, 400);
  check_epoch(c, ev, 0, 400);
  int32_t last = -1;
  bool sorted = true;
  for (size_t i = 0; i < intrus_batcher_epoch_size(ev, 0); i++) {
    const int32_t *idx;
    int n = intrus_batcher_get(ev, 0, i, &idx);
    for (int k = 0; k < n; k++) {
      int32_t l = intrus_corpus_src_len(c, idx[k]);
      if (l < last) sorted = false;
      last = l;
    }
  }
  EXPECT(sorted, "evaluation batches are not sorted by source length");
  intrus_batcher_free(ev);

  /* Filling padded batches. */
  intrus_ctx *ctx = intrus_ctx_create(0);
  const int32_t *idx;
  int n = intrus_batcher_get(b, 0, 0, &idx);
  struct intrus_src_batch sb;
  struct intrus_tgt_batch tb;
  intrus_corpus_fill_batch(c, ctx, idx, n, &sb, &tb);
  EXPECT(sb.batch == n && tb.batch == n && sb.pixels == NULL, "batch size");
  bool ok = true;
  for (int k = 0; k < n; k++) {
    int32_t i = idx[k];
    ok &= sb.lens[k] == intrus_corpus_src_len(c, i) && tb.lens[k] == intrus_corpus_tgt_len(c, i);
    for (int t = 0; t < sb.len; t++)
      ok &= sb.tokens[k * sb.len + t] ==
            (t < sb.lens[k] ? c->src_ids[c->src_off[i] + t] : INTRUS_PAD);
    for (int t = 0; t < tb.len; t++)
      ok &= tb.tokens[k * tb.len + t] ==
            (t < tb.lens[k] ? c->tgt_ids[c->tgt_off[i] + t] : INTRUS_PAD);
  }
  EXPECT(ok, "filled batch does not match the corpus");
  intrus_ctx_destroy(ctx);

  intrus_batcher_free(b);
  intrus_batcher_free(b2);
  intrus_corpus_free(c);
  intrus_vocab_free(v);
  free_lines(src, N);
  free_lines(tgt, N);
}

int main(void) {
  char template[4096];
  snprintf(template, sizeof template, "%s/tests/tmp_corpus_XXXXXX", test_builddir());
  if (!test_make_tmpdir(template)) return 2;
  test_lines();
  test_lines_errors();
  test_parallel();
  test_write_atomic();
  test_encode();
  test_batcher();
  test_remove_tmpdir();
  return test_finish("test_corpus");
}

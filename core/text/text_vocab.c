/* Vocabularies: token strings <-> ids, with the four special tokens first.
 *
 * The file format is one token per line in id order, so a vocabulary is readable and
 * diffable; the fingerprint hashes exactly that list, so a checkpoint trained with one
 * vocabulary refuses to run with a reordered or edited one. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/corpus.h"
#include "intrus/plugin.h"
#include "intrus/rng.h"
#include "intrus/status.h"
#include "intrus/text.h"
#include "text_bpe_internal.h"
#include "base/xalloc.h"

static const char *const specials[INTRUS_NUM_SPECIAL] = {"<pad>", "<unk>", "<s>", "</s>"};

struct intrus_vocab {
  char **tok;
  size_t *len;
  int32_t n, cap;
  int32_t *slot; /* open addressing: 1 + id, 0 = empty; power-of-two size */
  size_t nslot;
  uint64_t fingerprint;
};

static size_t token_slot(const char *s, size_t len, size_t nslot) {
  return (size_t)intrus_fnv1a(INTRUS_FNV_INIT, s, len) & (nslot - 1);
}

static struct intrus_vocab *vocab_new(void) {
  struct intrus_vocab *v = xmalloc(sizeof *v);
  memset(v, 0, sizeof *v);
  return v;
}

static void vocab_rehash(struct intrus_vocab *v, size_t nslot) {
  free(v->slot);
  v->slot = xmalloc(nslot * sizeof *v->slot);
  memset(v->slot, 0, nslot * sizeof *v->slot);
  v->nslot = nslot;
  for (int32_t i = 0; i < v->n; i++) {
    size_t s = token_slot(v->tok[i], v->len[i], nslot);
    while (v->slot[s]) s = (s + 1) & (nslot - 1);
    v->slot[s] = i + 1;
  }
}

/* Id of the token, or -1. */
static int32_t vocab_find(const struct intrus_vocab *v, const char *s, size_t len) {
  if (!v->nslot) return -1;
  for (size_t i = token_slot(s, len, v->nslot); v->slot[i]; i = (i + 1) & (v->nslot - 1)) {
    int32_t id = v->slot[i] - 1;
    if (v->len[id] == len && memcmp(v->tok[id], s, len) == 0) return id;
  }
  return -1;
}

/* Appends a token the caller has checked is new. */
static void vocab_push(struct intrus_vocab *v, const char *s, size_t len) {
  INTRUS_CHECK(v->n < INT32_MAX - 1, "vocabulary too large");
  if (2 * ((size_t)v->n + 1) > v->nslot) vocab_rehash(v, v->nslot ? 2 * v->nslot : 256);
  if (v->n == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 256;
    v->tok = xrealloc(v->tok, (size_t)v->cap * sizeof *v->tok);
    v->len = xrealloc(v->len, (size_t)v->cap * sizeof *v->len);
  }
  int32_t id = v->n++;
  v->tok[id] = xmalloc(len + 1);
  memcpy(v->tok[id], s, len);
  v->tok[id][len] = '\0';
  v->len[id] = len;
  size_t i = token_slot(s, len, v->nslot);
  while (v->slot[i]) i = (i + 1) & (v->nslot - 1);
  v->slot[i] = id + 1;
}

/* FNV-1a over the tokens, each followed by a newline, so that ("ab", "c") and ("a",
 * "bc") differ: it is the hash of the file intrus_vocab_save writes. */
static void vocab_finish(struct intrus_vocab *v) {
  uint64_t h = INTRUS_FNV_INIT;
  for (int32_t i = 0; i < v->n; i++) {
    h = intrus_fnv1a(h, v->tok[i], v->len[i]);
    h = intrus_fnv1a(h, "\n", 1);
  }
  v->fingerprint = h;
}

void intrus_vocab_free(struct intrus_vocab *v) {
  if (!v) return;
  for (int32_t i = 0; i < v->n; i++) free(v->tok[i]);
  free(v->tok);
  free(v->len);
  free(v->slot);
  free(v);
}

/* ---- building ------------------------------------------------------------------- */

struct cand {
  const char *tok;
  size_t len;
  int64_t count;
};

static int cand_cmp(const void *pa, const void *pb) {
  const struct cand *a = pa, *b = pb;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  int c = memcmp(a->tok, b->tok, a->len < b->len ? a->len : b->len);
  if (c) return c;
  return a->len < b->len ? -1 : a->len > b->len;
}

struct intrus_vocab *intrus_vocab_build(const struct intrus_wordcount *w, int min_count,
                                        int max_size) {
  INTRUS_CHECK(max_size == 0 || max_size >= INTRUS_NUM_SPECIAL,
               "intrus_vocab_build: max_size %d leaves no room for the %d special tokens",
               max_size, INTRUS_NUM_SPECIAL);
  struct intrus_vocab *v = vocab_new();
  for (int i = 0; i < INTRUS_NUM_SPECIAL; i++) vocab_push(v, specials[i], strlen(specials[i]));
  size_t n = intrus_wordcount_size(w), nc = 0;
  struct cand *c = xmalloc(n * sizeof *c);
  for (size_t i = 0; i < n; i++) {
    struct cand k;
    k.tok = intrus_wordcount_entry(w, i, &k.len, &k.count);
    /* A special token spelled out in the text cannot get a second id. */
    if (k.count >= min_count && vocab_find(v, k.tok, k.len) < 0) c[nc++] = k;
  }
  qsort(c, nc, sizeof *c, cand_cmp);
  size_t room = max_size ? (size_t)max_size - INTRUS_NUM_SPECIAL : nc;
  for (size_t i = 0; i < nc && i < room; i++) vocab_push(v, c[i].tok, c[i].len);
  free(c);
  vocab_finish(v);
  return v;
}

/* ---- files ---------------------------------------------------------------------- */

enum intrus_status intrus_vocab_load(const char *path, struct intrus_vocab **out,
                                     struct intrus_error *err) {
  *out = NULL;
  FILE *f = fopen(path, "r");
  if (!f) {
    int e = errno;
    return intrus_error_set(err, INTRUS_ERR_IO, "cannot open vocabulary '%s': %s", path,
                            strerror(e));
  }
  struct intrus_vocab *v = vocab_new();
  enum intrus_status st = INTRUS_OK;
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  long lineno = 0;
  while ((got = getline(&line, &cap, f)) >= 0) {
    lineno++;
    size_t len = (size_t)got;
    if (len && line[len - 1] == '\n') len--;
    if (len && line[len - 1] == '\r') len--;
    long bad;
    if (len == 0) {
      st = intrus_error_set(err, INTRUS_ERR_FORMAT, "%s:%ld: empty token", path, lineno);
    } else if ((bad = intrus_utf8_invalid_at(line, len)) >= 0) {
      st = intrus_error_set(err, INTRUS_ERR_DATA, "%s:%ld: invalid UTF-8 at byte %ld", path,
                            lineno, bad + 1);
    } else if (memchr(line, '\0', len) || memchr(line, ' ', len) || memchr(line, '\t', len) ||
               memchr(line, '\r', len)) {
      /* Encoding splits lines at these, so such a token could never be looked up. */
      st = intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s:%ld: token contains a space, tab, CR or NUL byte", path, lineno);
    } else if (lineno <= INTRUS_NUM_SPECIAL &&
               (len != strlen(specials[lineno - 1]) ||
                memcmp(line, specials[lineno - 1], len) != 0)) {
      st = intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s:%ld: expected the special token '%s' (the first four lines "
                            "must be <pad> <unk> <s> </s>)",
                            path, lineno, specials[lineno - 1]);
    } else {
      int32_t dup = vocab_find(v, line, len);
      if (dup >= 0)
        st = intrus_error_set(err, INTRUS_ERR_FORMAT,
                              "%s:%ld: duplicate token '%.*s' (first on line %d)", path, lineno,
                              (int)(len > 200 ? 200 : len), line, dup + 1);
    }
    if (st != INTRUS_OK) break;
    vocab_push(v, line, len);
  }
  if (st == INTRUS_OK && ferror(f)) {
    int e = errno;
    st = intrus_error_set(err, INTRUS_ERR_IO, "cannot read vocabulary '%s': %s", path,
                          strerror(e));
  }
  if (st == INTRUS_OK && lineno < INTRUS_NUM_SPECIAL)
    st = intrus_error_set(err, INTRUS_ERR_FORMAT,
                          "%s: %ld lines: a vocabulary starts with the four special tokens "
                          "<pad> <unk> <s> </s>",
                          path, lineno);
  free(line);
  fclose(f);
  if (st != INTRUS_OK) {
    intrus_vocab_free(v);
    return st;
  }
  vocab_finish(v);
  *out = v;
  return INTRUS_OK;
}

enum intrus_status intrus_vocab_save(const struct intrus_vocab *v, const char *path,
                                     struct intrus_error *err) {
  size_t total = 0;
  for (int32_t i = 0; i < v->n; i++) total += v->len[i] + 1;
  char *buf = xmalloc(total), *p = buf;
  for (int32_t i = 0; i < v->n; i++) {
    memcpy(p, v->tok[i], v->len[i]);
    p += v->len[i];
    *p++ = '\n';
  }
  enum intrus_status st = intrus_file_write_atomic(path, buf, total, err);
  free(buf);
  return st;
}

/* ---- look-ups ------------------------------------------------------------------- */

int intrus_vocab_size(const struct intrus_vocab *v) { return v->n; }

int32_t intrus_vocab_id(const struct intrus_vocab *v, const char *token, size_t len) {
  int32_t id = vocab_find(v, token, len);
  return id < 0 ? INTRUS_UNK : id;
}

const char *intrus_vocab_token(const struct intrus_vocab *v, int32_t id) {
  return id >= 0 && id < v->n ? v->tok[id] : NULL;
}

uint64_t intrus_vocab_fingerprint(const struct intrus_vocab *v) { return v->fingerprint; }

int intrus_vocab_encode(const struct intrus_vocab *v, const char *tokens, size_t len,
                        int32_t *ids, int cap, bool *truncated) {
  int n = 0;
  bool cut = false;
  size_t i = 0;
  while (i < len) {
    while (i < len && intrus_text_is_sep(tokens[i])) i++;
    size_t start = i;
    while (i < len && !intrus_text_is_sep(tokens[i])) i++;
    if (i == start) continue;
    if (n == cap) {
      cut = true;
      break;
    }
    ids[n++] = intrus_vocab_id(v, tokens + start, i - start);
  }
  if (truncated) *truncated = cut;
  return n;
}

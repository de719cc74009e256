/* BPE application, segmenting as subword-nmt's apply_bpe.py does, and the reading of
 * the codes file it needs (text_bpe.c says how the BPE files divide the work).
 *
 * Application follows apply_bpe.py's encode(): split the word into characters (the last
 * with "</w>"), then repeatedly merge, left to right and without overlap, every
 * occurrence of the adjacent pair with the lowest rank (earliest line in the codes
 * file; a repeated pair keeps its first rank), until no pair of the codes is left. All
 * pieces but the last get "@@". */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/status.h"
#include "intrus/text.h"
#include "text_bpe_internal.h"
#include "base/xalloc.h"

/* The application cache is dropped wholesale when it reaches this many words, which
 * bounds its memory on huge corpora while keeping the hit rate of Zipfian text. */
#define CACHE_MAX_WORDS (1u << 20)

/* ---- application ----------------------------------------------------------------- */

struct merge {
  uint64_t key; /* bpe_pair_key(a, b) */
  int32_t rank; /* -1 = empty slot */
  int32_t result;
};

struct cache_ent {
  char *word;   /* word, then NUL, then its segmentation */
  size_t wlen, olen;
  uint64_t hash;
};

struct intrus_bpe {
  int version;         /* 1: "</w>" is a symbol of its own; 2: glued to the last char */
  struct bpe_symtab sym;
  struct merge *merges;
  size_t nmerges, nslot;
  struct cache_ent *cache;
  size_t ncache, ncslot;
  /* scratch for one word */
  int32_t *ws;
  size_t *wstart;
  size_t wcap;
};

static const struct merge *merge_find(const struct intrus_bpe *b, int32_t x, int32_t y) {
  uint64_t key = bpe_pair_key(x, y);
  for (size_t s = (size_t)bpe_mix64(key) & (b->nslot - 1); b->merges[s].rank >= 0;
       s = (s + 1) & (b->nslot - 1))
    if (b->merges[s].key == key) return &b->merges[s];
  return NULL;
}

static void merges_rehash(struct intrus_bpe *b, size_t nslot) {
  struct merge *old = b->merges;
  size_t oldn = b->nslot;
  b->merges = xmalloc(nslot * sizeof *b->merges);
  for (size_t i = 0; i < nslot; i++) b->merges[i].rank = -1;
  b->nslot = nslot;
  for (size_t i = 0; i < oldn; i++) {
    if (old[i].rank < 0) continue;
    size_t s = (size_t)bpe_mix64(old[i].key) & (nslot - 1);
    while (b->merges[s].rank >= 0) s = (s + 1) & (nslot - 1);
    b->merges[s] = old[i];
  }
  free(old);
}

/* Adds merge (x, y) with the given rank unless the pair is already there: like
 * apply_bpe.py, the first occurrence of a repeated pair decides its rank. */
static void merge_add(struct intrus_bpe *b, int32_t x, int32_t y, int32_t rank, int32_t res) {
  if (2 * (b->nmerges + 1) > b->nslot) merges_rehash(b, b->nslot ? 2 * b->nslot : 1024);
  if (merge_find(b, x, y)) return;
  uint64_t key = bpe_pair_key(x, y);
  size_t s = (size_t)bpe_mix64(key) & (b->nslot - 1);
  while (b->merges[s].rank >= 0) s = (s + 1) & (b->nslot - 1);
  b->merges[s] = (struct merge){key, rank, res};
  b->nmerges++;
}

static void cache_clear(struct intrus_bpe *b) {
  for (size_t i = 0; i < b->ncslot; i++) free(b->cache[i].word);
  free(b->cache);
  b->cache = NULL;
  b->ncache = b->ncslot = 0;
}

void intrus_bpe_free(struct intrus_bpe *b) {
  if (!b) return;
  bpe_symtab_free(&b->sym);
  free(b->merges);
  cache_clear(b);
  free(b->ws);
  free(b->wstart);
  free(b);
}

/* Splits line (without its newline) into fields at single spaces, after stripping
 * spaces, CR and LF from both ends as apply_bpe.py does. Returns the number of fields
 * (at most max) and sets lens; fields[i] points into line. */
static int split_codes_line(char *line, size_t len, char **fields, size_t *lens, int max) {
  size_t a = 0;
  while (a < len && (line[a] == ' ' || line[a] == '\r' || line[a] == '\n')) a++;
  while (len > a && (line[len - 1] == ' ' || line[len - 1] == '\r' || line[len - 1] == '\n'))
    len--;
  if (a == len) return 0;
  int n = 0;
  size_t start = a;
  for (size_t i = a; i <= len; i++) {
    if (i < len && line[i] != ' ') continue;
    if (n < max) {
      fields[n] = line + start;
      lens[n] = i - start;
    }
    n++;
    start = i + 1;
  }
  return n;
}

enum intrus_status intrus_bpe_load(const char *path, struct intrus_bpe **out,
                                   struct intrus_error *err) {
  *out = NULL;
  FILE *f = fopen(path, "r");
  if (!f) {
    int e = errno;
    return intrus_error_set(err, INTRUS_ERR_IO, "cannot open BPE codes '%s': %s", path,
                            strerror(e));
  }
  struct intrus_bpe *b = xcalloc(1, sizeof *b);
  b->version = 1; /* no header: subword-nmt's original format */
  merges_rehash(b, 1024);
  enum intrus_status st = INTRUS_OK;
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  long lineno = 0, blank = 0;
  int32_t rank = 0;
  while ((got = getline(&line, &cap, f)) >= 0) {
    lineno++;
    size_t len = (size_t)got;
    if (lineno == 1 && strncmp(line, "#version:", 9) == 0) {
      char *fields[3];
      size_t lens[3];
      int nf = split_codes_line(line + 9, len - 9, fields, lens, 3);
      if (nf == 1 && lens[0] == 3 && memcmp(fields[0], "0.2", 3) == 0) {
        b->version = 2;
      } else if (nf == 1 && lens[0] == 3 && memcmp(fields[0], "0.1", 3) == 0) {
        b->version = 1;
      } else {
        char *v = line + 9 + strspn(line + 9, " ");
        v[strcspn(v, "\r\n")] = '\0';
        st = intrus_error_set(err, INTRUS_ERR_FORMAT,
                              "%s:1: unsupported BPE codes version '%s' (expected 0.1 or 0.2)",
                              path, v);
        break;
      }
      continue;
    }
    long bad = intrus_utf8_invalid_at(line, len);
    if (bad >= 0) {
      st = intrus_error_set(err, INTRUS_ERR_DATA, "%s:%ld: invalid UTF-8 at byte %ld", path,
                            lineno, bad + 1);
      break;
    }
    if (memchr(line, '\0', len)) {
      st = intrus_error_set(err, INTRUS_ERR_DATA, "%s:%ld: NUL byte in BPE codes", path,
                            lineno);
      break;
    }
    char *fields[2];
    size_t lens[2];
    int nf = split_codes_line(line, len, fields, lens, 2);
    if (nf == 0) {
      /* Blank lines may end the file (an editor's extra newline), not interrupt it. */
      if (!blank) blank = lineno;
      continue;
    }
    if (blank) {
      st = intrus_error_set(err, INTRUS_ERR_FORMAT, "%s:%ld: expected two symbols, got a blank line",
                            path, blank);
      break;
    }
    if (nf != 2) {
      st = intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s:%ld: expected two symbols separated by one space, got %d", path,
                            lineno, nf);
      break;
    }
    if (rank == INT32_MAX - 1) {
      st = intrus_error_set(err, INTRUS_ERR_FORMAT, "%s:%ld: too many merges", path, lineno);
      break;
    }
    int32_t x = bpe_symtab_intern(&b->sym, fields[0], lens[0]);
    int32_t y = bpe_symtab_intern(&b->sym, fields[1], lens[1]);
    /* fields point into line, which bpe_symtab_intern copied from: concatenate now. */
    char *cat = xmalloc(lens[0] + lens[1]);
    memcpy(cat, fields[0], lens[0]);
    memcpy(cat + lens[0], fields[1], lens[1]);
    int32_t z = bpe_symtab_intern(&b->sym, cat, lens[0] + lens[1]);
    free(cat);
    merge_add(b, x, y, rank++, z);
  }
  if (st == INTRUS_OK && ferror(f)) {
    int e = errno;
    st = intrus_error_set(err, INTRUS_ERR_IO, "cannot read BPE codes '%s': %s", path,
                          strerror(e));
  }
  free(line);
  fclose(f);
  if (st != INTRUS_OK) {
    intrus_bpe_free(b);
    return st;
  }
  *out = b;
  return INTRUS_OK;
}

/* Segments one word into out (appended): pieces joined by "@@ ". */
static void bpe_word(struct intrus_bpe *b, const char *word, size_t len, struct intrus_str *out) {
  /* At most len characters, plus the separate "</w>" symbol of version 0.1, plus the
   * end offset of the last symbol. */
  if (len + 2 > b->wcap) {
    b->wcap = 2 * (len + 2);
    b->ws = xrealloc(b->ws, b->wcap * sizeof *b->ws);
    b->wstart = xrealloc(b->wstart, b->wcap * sizeof *b->wstart);
  }
  int32_t *s = b->ws;
  size_t *start = b->wstart, n = 0;
  for (size_t k = 0; k < len;) {
    size_t cl = bpe_utf8_char_len((const unsigned char *)word + k, len - k);
    bool last = k + cl == len;
    start[n] = k;
    s[n++] = last && b->version == 2 ? bpe_symtab_final(&b->sym, word + k, cl, false)
                                     : bpe_symtab_find(&b->sym, word + k, cl);
    k += cl;
  }
  if (b->version == 1) { /* "</w>" covers no bytes of the word */
    start[n] = len;
    s[n++] = bpe_symtab_find(&b->sym, BPE_EOW, BPE_EOW_LEN);
  }
  start[n] = len; /* end of the last symbol's bytes */

  while (n > 1) {
    const struct merge *best = NULL;
    for (size_t i = 0; i + 1 < n; i++) {
      if (s[i] < 0 || s[i + 1] < 0) continue; /* a character the codes never saw */
      const struct merge *m = merge_find(b, s[i], s[i + 1]);
      if (m && (!best || m->rank < best->rank)) best = m;
    }
    if (!best) break;
    int32_t x = (int32_t)(best->key >> 32), y = (int32_t)(uint32_t)best->key;
    size_t j = 0;
    for (size_t i = 0; i < n; j++) {
      start[j] = start[i];
      if (i + 1 < n && s[i] == x && s[i + 1] == y) {
        s[j] = best->result;
        i += 2;
      } else {
        s[j] = s[i];
        i++;
      }
    }
    n = j;
    start[n] = len;
  }
  bool first = true;
  for (size_t i = 0; i < n; i++) {
    if (start[i + 1] == start[i]) continue; /* a lone "</w>" (version 0.1) */
    if (!first) intrus_str_append(out, "@@ ", 3);
    intrus_str_append(out, word + start[i], start[i + 1] - start[i]);
    first = false;
  }
}

static void cache_rehash(struct intrus_bpe *b, size_t nslot) {
  struct cache_ent *old = b->cache;
  size_t oldn = b->ncslot;
  b->cache = xcalloc(nslot, sizeof *b->cache);
  b->ncslot = nslot;
  for (size_t i = 0; i < oldn; i++) {
    if (!old[i].word) continue;
    size_t s = (size_t)old[i].hash & (nslot - 1);
    while (b->cache[s].word) s = (s + 1) & (nslot - 1);
    b->cache[s] = old[i];
  }
  free(old);
}

/* Appends the segmentation of word to out, from the cache when it has been seen. */
static void bpe_word_cached(struct intrus_bpe *b, const char *word, size_t len,
                            struct intrus_str *out) {
  if (b->ncache >= CACHE_MAX_WORDS) cache_clear(b);
  if (2 * (b->ncache + 1) > b->ncslot) cache_rehash(b, b->ncslot ? 2 * b->ncslot : 4096);
  uint64_t h = bpe_hash_bytes(word, len);
  size_t s = (size_t)h & (b->ncslot - 1);
  for (; b->cache[s].word; s = (s + 1) & (b->ncslot - 1)) {
    const struct cache_ent *c = &b->cache[s];
    if (c->hash == h && c->wlen == len && memcmp(c->word, word, len) == 0) {
      intrus_str_append(out, c->word + len + 1, c->olen);
      return;
    }
  }
  size_t at = out->len;
  bpe_word(b, word, len, out);
  struct cache_ent *c = &b->cache[s];
  c->wlen = len;
  c->olen = out->len - at;
  c->hash = h;
  c->word = xmalloc(len + 1 + c->olen + 1);
  memcpy(c->word, word, len);
  c->word[len] = '\0';
  memcpy(c->word + len + 1, out->s + at, c->olen);
  c->word[len + 1 + c->olen] = '\0';
  b->ncache++;
}

void intrus_bpe_apply(struct intrus_bpe *b, const char *tokens, size_t len,
                      struct intrus_str *out) {
  intrus_str_clear(out);
  intrus_str_append(out, "", 0); /* out->s is a valid string even for an empty line */
  size_t i = 0;
  bool first = true;
  while (i < len) {
    while (i < len && intrus_text_is_sep(tokens[i])) i++;
    size_t start = i;
    while (i < len && !intrus_text_is_sep(tokens[i])) i++;
    if (i == start) continue;
    if (!first) intrus_str_append(out, " ", 1);
    first = false;
    bpe_word_cached(b, tokens + start, i - start, out);
  }
}

/* Byte-pair encoding with subword-nmt's semantics (learn_bpe.py and apply_bpe.py, codes
 * format version 0.2), and the word counts it learns from.
 *
 * Learning. Each word type starts as its characters (Unicode code points), the last one
 * carrying the end-of-word mark: "low" is `l o w</w>`. Each step merges the adjacent
 * symbol pair with the highest frequency summed over all word types (weighted by word
 * count), and learning stops early once no pair occurs at least twice. Ties go to the
 * lexicographically largest pair (first symbol, then second, by code point, which is
 * UTF-8 byte order): learn_bpe.py picks max(stats, key=lambda x: (stats[x], x)), so
 * both write the same codes for the same word counts (checked byte for byte on 16,000
 * merges of a 40,000-sentence corpus). learn_bpe.py also prunes its statistics with a
 * heuristic threshold to make max() cheap, meant to change only its speed; this file
 * keeps exact statistics and a heap instead, so it never depends on that heuristic.
 *
 * The statistics are incremental, as in learn_bpe.py: an index from each pair to the
 * word types that contain it means a merge only touches those words. For each touched
 * word the counts of all its old pairs are withdrawn and those of its new pairs added,
 * which is exact even for overlapping occurrences ("a a a") at the cost of a few more
 * hash look-ups than learn_bpe.py's local updates. The best pair comes from a max-heap
 * with lazy deletion: every count change pushes a new entry, and an entry whose count
 * no longer matches its pair's is discarded when it reaches the top.
 *
 * Application follows apply_bpe.py's encode(): split the word into characters (the last
 * with "</w>"), then repeatedly merge, left to right and without overlap, every
 * occurrence of the adjacent pair with the lowest rank (earliest line in the codes
 * file; a repeated pair keeps its first rank), until no pair of the codes is left. All
 * pieces but the last get "@@". Tokens are split on spaces; a token that carries the
 * joiner mark (INTRUS_JOINER) simply has the joiner as its first character, both when
 * learning and when applying, so frequent joined tokens learn merges like "￭ ,</w>" and
 * detokenization only has to remove "@@ " before it glues joined tokens. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/corpus.h"
#include "intrus/rng.h"
#include "intrus/status.h"
#include "intrus/text.h"
#include "text_bpe_internal.h"
#include "base/xalloc.h"

#define EOW "</w>"
#define EOW_LEN 4
#define MIN_PAIR_FREQ 2
/* The application cache is dropped wholesale when it reaches this many words, which
 * bounds its memory on huge corpora while keeping the hit rate of Zipfian text. */
#define CACHE_MAX_WORDS (1u << 20)

/* ---- small helpers ------------------------------------------------------------- */

/* Grows *p (of *cap elements of elem bytes) to hold at least need elements. */
static void grow(void **p, size_t *cap, size_t need, size_t elem) {
  xgrow(p, cap, need, elem, 8);
}

static uint64_t hash_bytes(const char *s, size_t n) {
  return intrus_fnv1a(INTRUS_FNV_INIT, s, n);
}

/* splitmix64's finaliser: spreads a pair key over all bits for power-of-two tables. */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t pair_key(int32_t a, int32_t b) {
  return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
}

/* Byte length of the UTF-8 character starting at s[0] (n > 0 bytes left). A malformed
 * sequence counts as one byte so that any input splits into characters. */
static size_t utf8_char_len(const unsigned char *s, size_t n) {
  size_t k = s[0] < 0x80 ? 1 : s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 1;
  if (k > n) return 1;
  for (size_t i = 1; i < k; i++)
    if ((s[i] & 0xC0) != 0x80) return 1;
  return k;
}

static int cmp_bytes(const char *a, size_t la, const char *b, size_t lb) {
  int c = memcmp(a, b, la < lb ? la : lb);
  if (c) return c;
  return la < lb ? -1 : la > lb;
}

/* ---- word counts ---------------------------------------------------------------- */

struct wc_entry {
  char *word;
  size_t len;
  int64_t count;
  uint64_t hash;
};

struct intrus_wordcount {
  struct wc_entry *e; /* in first-seen order, which makes iteration deterministic */
  size_t n, cap;
  size_t *slot;       /* open addressing: 1 + entry index, 0 = empty; power-of-two size */
  size_t nslot;
};

struct intrus_wordcount *intrus_wordcount_create(void) {
  return xcalloc(1, sizeof(struct intrus_wordcount));
}

void intrus_wordcount_free(struct intrus_wordcount *w) {
  if (!w) return;
  for (size_t i = 0; i < w->n; i++) free(w->e[i].word);
  free(w->e);
  free(w->slot);
  free(w);
}

static void wc_rehash(struct intrus_wordcount *w, size_t nslot) {
  free(w->slot);
  w->slot = xcalloc(nslot, sizeof *w->slot);
  w->nslot = nslot;
  for (size_t i = 0; i < w->n; i++) {
    size_t s = (size_t)w->e[i].hash & (nslot - 1);
    while (w->slot[s]) s = (s + 1) & (nslot - 1);
    w->slot[s] = i + 1;
  }
}

static void wc_add(struct intrus_wordcount *w, const char *tok, size_t len) {
  if (2 * (w->n + 1) > w->nslot) wc_rehash(w, w->nslot ? 2 * w->nslot : 1024);
  uint64_t h = hash_bytes(tok, len);
  size_t s = (size_t)h & (w->nslot - 1);
  for (; w->slot[s]; s = (s + 1) & (w->nslot - 1)) {
    struct wc_entry *e = &w->e[w->slot[s] - 1];
    if (e->hash == h && e->len == len && memcmp(e->word, tok, len) == 0) {
      e->count++;
      return;
    }
  }
  grow((void **)&w->e, &w->cap, w->n + 1, sizeof *w->e);
  struct wc_entry *e = &w->e[w->n];
  e->word = xmalloc(len + 1);
  memcpy(e->word, tok, len);
  e->word[len] = '\0';
  e->len = len;
  e->count = 1;
  e->hash = h;
  w->slot[s] = ++w->n;
}

void intrus_wordcount_add_line(struct intrus_wordcount *w, const char *tokens, size_t len) {
  size_t i = 0;
  while (i < len) {
    while (i < len && intrus_text_is_sep(tokens[i])) i++;
    size_t start = i;
    while (i < len && !intrus_text_is_sep(tokens[i])) i++;
    if (i > start) wc_add(w, tokens + start, i - start);
  }
}

size_t intrus_wordcount_size(const struct intrus_wordcount *w) { return w->n; }

const char *intrus_wordcount_entry(const struct intrus_wordcount *w, size_t i, size_t *len,
                                   int64_t *count) {
  INTRUS_CHECK(i < w->n, "intrus_wordcount_entry: index %zu of %zu", i, w->n);
  if (len) *len = w->e[i].len;
  if (count) *count = w->e[i].count;
  return w->e[i].word;
}

/* ---- symbol table: strings <-> dense ids ------------------------------------------ */

struct symtab {
  char **str;
  size_t *len;
  uint64_t *hash;
  size_t n, cap;
  int32_t *slot; /* 1 + id, 0 = empty */
  size_t nslot;
};

static void symtab_free(struct symtab *t) {
  for (size_t i = 0; i < t->n; i++) free(t->str[i]);
  free(t->str);
  free(t->len);
  free(t->hash);
  free(t->slot);
  memset(t, 0, sizeof *t);
}

static void symtab_rehash(struct symtab *t, size_t nslot) {
  free(t->slot);
  t->slot = xcalloc(nslot, sizeof *t->slot);
  t->nslot = nslot;
  for (size_t i = 0; i < t->n; i++) {
    size_t s = (size_t)t->hash[i] & (nslot - 1);
    while (t->slot[s]) s = (s + 1) & (nslot - 1);
    t->slot[s] = (int32_t)i + 1;
  }
}

/* Id of s, or -1. */
static int32_t symtab_find(const struct symtab *t, const char *s, size_t len) {
  if (!t->nslot) return -1;
  uint64_t h = hash_bytes(s, len);
  for (size_t i = (size_t)h & (t->nslot - 1); t->slot[i]; i = (i + 1) & (t->nslot - 1)) {
    int32_t id = t->slot[i] - 1;
    if (t->hash[id] == h && t->len[id] == len && memcmp(t->str[id], s, len) == 0) return id;
  }
  return -1;
}

static int32_t symtab_intern(struct symtab *t, const char *s, size_t len) {
  int32_t id = symtab_find(t, s, len);
  if (id >= 0) return id;
  INTRUS_CHECK(t->n < INT32_MAX - 1, "BPE: too many symbols");
  if (2 * (t->n + 1) > t->nslot) symtab_rehash(t, t->nslot ? 2 * t->nslot : 256);
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 256;
    t->str = xrealloc(t->str, t->cap * sizeof *t->str);
    t->len = xrealloc(t->len, t->cap * sizeof *t->len);
    t->hash = xrealloc(t->hash, t->cap * sizeof *t->hash);
  }
  id = (int32_t)t->n++;
  t->str[id] = xmalloc(len + 1);
  memcpy(t->str[id], s, len);
  t->str[id][len] = '\0';
  t->len[id] = len;
  t->hash[id] = hash_bytes(s, len);
  size_t i = (size_t)t->hash[id] & (t->nslot - 1);
  while (t->slot[i]) i = (i + 1) & (t->nslot - 1);
  t->slot[i] = id + 1;
  return id;
}

/* Id of s + "</w>" (the word-final form of a character), interning it when asked. */
static int32_t symtab_final(struct symtab *t, const char *s, size_t len, bool intern) {
  char buf[4 + EOW_LEN];
  memcpy(buf, s, len); /* len <= 4: one UTF-8 character */
  memcpy(buf + len, EOW, EOW_LEN);
  return intern ? symtab_intern(t, buf, len + EOW_LEN) : symtab_find(t, buf, len + EOW_LEN);
}

/* ---- learning -------------------------------------------------------------------- */

struct pair {
  int32_t a, b;
  int64_t count;
  int32_t *words;    /* word types that contain (or once contained) the pair */
  size_t nwords, capwords;
  int32_t last_word; /* the word last appended, to skip repeats within one word */
  uint32_t stamp;    /* merge step that last changed count, with count before it */
  int64_t before;
};

struct heap_ent {
  int64_t count;
  int32_t pair;
};

struct learner {
  struct symtab sym;
  /* Word types: symbols of word w are sym_of[off[w] .. off[w] + len[w]); merges shrink
   * len in place. */
  int32_t *sym_of;
  size_t *off;
  int32_t *len;
  int64_t *freq;
  uint32_t *stamp;   /* merge step that last visited the word */
  size_t nwords;
  int32_t max_len;
  struct pair *pairs;
  size_t npairs, cappairs;
  int32_t *pslot;    /* pair map: 1 + pair id, 0 = empty */
  size_t npslot;
  struct heap_ent *heap;
  size_t nheap, capheap;
  int32_t *changed;  /* pairs whose count changed during the current merge */
  size_t nchanged, capchanged;
  uint32_t step;     /* 1 + index of the current merge */
};

static void pairmap_rehash(struct learner *L, size_t nslot) {
  free(L->pslot);
  L->pslot = xcalloc(nslot, sizeof *L->pslot);
  L->npslot = nslot;
  for (size_t p = 0; p < L->npairs; p++) {
    size_t s = (size_t)mix64(pair_key(L->pairs[p].a, L->pairs[p].b)) & (nslot - 1);
    while (L->pslot[s]) s = (s + 1) & (nslot - 1);
    L->pslot[s] = (int32_t)p + 1;
  }
}

static int32_t pair_get(struct learner *L, int32_t a, int32_t b) {
  if (2 * (L->npairs + 1) > L->npslot) pairmap_rehash(L, L->npslot ? 2 * L->npslot : 4096);
  size_t s = (size_t)mix64(pair_key(a, b)) & (L->npslot - 1);
  for (; L->pslot[s]; s = (s + 1) & (L->npslot - 1)) {
    int32_t p = L->pslot[s] - 1;
    if (L->pairs[p].a == a && L->pairs[p].b == b) return p;
  }
  INTRUS_CHECK(L->npairs < INT32_MAX - 1, "BPE: too many symbol pairs");
  grow((void **)&L->pairs, &L->cappairs, L->npairs + 1, sizeof *L->pairs);
  struct pair *q = &L->pairs[L->npairs];
  memset(q, 0, sizeof *q);
  q->a = a;
  q->b = b;
  q->last_word = -1;
  L->pslot[s] = (int32_t)++L->npairs;
  return (int32_t)L->npairs - 1;
}

static void pair_add_word(struct learner *L, int32_t p, int32_t w) {
  struct pair *q = &L->pairs[p];
  if (q->last_word == w) return;
  q->last_word = w;
  grow((void **)&q->words, &q->capwords, q->nwords + 1, sizeof *q->words);
  q->words[q->nwords++] = w;
}

static void pair_delta(struct learner *L, int32_t p, int64_t d) {
  struct pair *q = &L->pairs[p];
  if (q->stamp != L->step) {
    q->stamp = L->step;
    q->before = q->count;
    grow((void **)&L->changed, &L->capchanged, L->nchanged + 1, sizeof *L->changed);
    L->changed[L->nchanged++] = p;
  }
  q->count += d;
}

/* Whether heap entry x belongs above y: higher count, then larger pair (see the top of
 * the file). */
static bool heap_above(const struct learner *L, struct heap_ent x, struct heap_ent y) {
  if (x.count != y.count) return x.count > y.count;
  const struct pair *px = &L->pairs[x.pair], *py = &L->pairs[y.pair];
  const struct symtab *t = &L->sym;
  int c = cmp_bytes(t->str[px->a], t->len[px->a], t->str[py->a], t->len[py->a]);
  if (!c) c = cmp_bytes(t->str[px->b], t->len[px->b], t->str[py->b], t->len[py->b]);
  return c > 0;
}

static void heap_sift_down(struct learner *L, size_t i) {
  struct heap_ent *h = L->heap;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < L->nheap && heap_above(L, h[l], h[m])) m = l;
    if (r < L->nheap && heap_above(L, h[r], h[m])) m = r;
    if (m == i) return;
    struct heap_ent tmp = h[i];
    h[i] = h[m];
    h[m] = tmp;
    i = m;
  }
}

static void heap_push(struct learner *L, int32_t p) {
  grow((void **)&L->heap, &L->capheap, L->nheap + 1, sizeof *L->heap);
  struct heap_ent e = {L->pairs[p].count, p};
  size_t i = L->nheap++;
  while (i > 0 && heap_above(L, e, L->heap[(i - 1) / 2])) {
    L->heap[i] = L->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  L->heap[i] = e;
}

/* The best pair with a current count, or -1 when none is left. */
static int32_t heap_best(struct learner *L) {
  while (L->nheap) {
    struct heap_ent top = L->heap[0];
    if (top.count == L->pairs[top.pair].count) return top.pair;
    L->heap[0] = L->heap[--L->nheap];
    heap_sift_down(L, 0);
  }
  return -1;
}

static void learner_init(struct learner *L, const struct intrus_wordcount *w) {
  memset(L, 0, sizeof *L);
  size_t total = 0;
  for (size_t i = 0; i < w->n; i++) total += w->e[i].len; /* >= characters */
  INTRUS_CHECK(w->n < INT32_MAX, "BPE: too many word types");
  L->nwords = w->n;
  L->sym_of = xmalloc(total * sizeof *L->sym_of);
  L->off = xmalloc(w->n * sizeof *L->off);
  L->len = xmalloc(w->n * sizeof *L->len);
  L->freq = xmalloc(w->n * sizeof *L->freq);
  L->stamp = xcalloc(w->n, sizeof *L->stamp);
  size_t pos = 0;
  for (size_t i = 0; i < w->n; i++) {
    const unsigned char *s = (const unsigned char *)w->e[i].word;
    size_t n = w->e[i].len, k = 0;
    L->off[i] = pos;
    L->freq[i] = w->e[i].count;
    while (k < n) {
      size_t cl = utf8_char_len(s + k, n - k);
      L->sym_of[pos++] = k + cl == n ? symtab_final(&L->sym, (const char *)s + k, cl, true)
                                     : symtab_intern(&L->sym, (const char *)s + k, cl);
      k += cl;
    }
    L->len[i] = (int32_t)(pos - L->off[i]);
    if (L->len[i] > L->max_len) L->max_len = L->len[i];
    for (int32_t j = 0; j + 1 < L->len[i]; j++) {
      int32_t p = pair_get(L, L->sym_of[L->off[i] + j], L->sym_of[L->off[i] + j + 1]);
      L->pairs[p].count += L->freq[i];
      pair_add_word(L, p, (int32_t)i);
    }
  }
  for (size_t p = 0; p < L->npairs; p++) heap_push(L, (int32_t)p);
}

static void learner_free(struct learner *L) {
  symtab_free(&L->sym);
  for (size_t p = 0; p < L->npairs; p++) free(L->pairs[p].words);
  free(L->pairs);
  free(L->pslot);
  free(L->heap);
  free(L->changed);
  free(L->sym_of);
  free(L->off);
  free(L->len);
  free(L->freq);
  free(L->stamp);
}

/* Merges pair p (A B -> AB) in every word type that has it and updates the counts. */
static void learner_merge(struct learner *L, int32_t p, bool *merged) {
  int32_t A = L->pairs[p].a, B = L->pairs[p].b;
  size_t la = L->sym.len[A], lb = L->sym.len[B];
  char *cat = xmalloc(la + lb);
  memcpy(cat, L->sym.str[A], la);
  memcpy(cat + la, L->sym.str[B], lb);
  int32_t C = symtab_intern(&L->sym, cat, la + lb);
  free(cat);

  /* Take the word list: this pair's occurrences all disappear now, and the list of a
   * pair that later re-forms (another merge can produce A again) starts afresh. */
  int32_t *words = L->pairs[p].words;
  size_t nwords = L->pairs[p].nwords;
  L->pairs[p].words = NULL;
  L->pairs[p].nwords = L->pairs[p].capwords = 0;
  L->pairs[p].last_word = -1;
  L->nchanged = 0;

  for (size_t k = 0; k < nwords; k++) {
    int32_t w = words[k];
    if (L->stamp[w] == L->step) continue;
    L->stamp[w] = L->step;
    int32_t *s = L->sym_of + L->off[w];
    int32_t n = L->len[w], j = 0;
    int64_t f = L->freq[w];
    bool found = false;
    for (int32_t i = 0; i + 1 < n && !found; i++) found = s[i] == A && s[i + 1] == B;
    if (!found) continue; /* a stale index entry: an earlier merge took the pair away */
    for (int32_t i = 0; i + 1 < n; i++) pair_delta(L, pair_get(L, s[i], s[i + 1]), -f);
    for (int32_t i = 0; i < n; j++) {
      merged[j] = i + 1 < n && s[i] == A && s[i + 1] == B;
      s[j] = merged[j] ? C : s[i];
      i += merged[j] ? 2 : 1;
    }
    L->len[w] = n = j;
    for (int32_t i = 0; i + 1 < n; i++) {
      int32_t q = pair_get(L, s[i], s[i + 1]);
      pair_delta(L, q, f);
      /* Only pairs next to a merged symbol are new to this word; the others were
       * already indexed. */
      if (merged[i] || merged[i + 1]) pair_add_word(L, q, w);
    }
  }
  free(words);
  INTRUS_CHECK(L->pairs[p].count == 0, "BPE: pair index lost %lld occurrences",
               (long long)L->pairs[p].count);
  for (size_t k = 0; k < L->nchanged; k++) {
    const struct pair *q = &L->pairs[L->changed[k]];
    if (q->count != q->before && q->count > 0) heap_push(L, L->changed[k]);
  }
}

enum intrus_status intrus_bpe_learn(const struct intrus_wordcount *w, int merges,
                                    const char *path, struct intrus_error *err) {
  if (merges < 0)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "%s: negative number of BPE merges (%d)",
                            path, merges);
  struct learner L;
  learner_init(&L, w);
  bool *merged = xmalloc((size_t)L.max_len * sizeof *merged);
  struct intrus_str out = {0};
  intrus_str_append(&out, "#version: 0.2\n", 14);
  for (int m = 0; m < merges; m++) {
    int32_t p = heap_best(&L);
    if (p < 0 || L.pairs[p].count < MIN_PAIR_FREQ) break;
    const struct symtab *t = &L.sym;
    intrus_str_append(&out, t->str[L.pairs[p].a], t->len[L.pairs[p].a]);
    intrus_str_append(&out, " ", 1);
    intrus_str_append(&out, t->str[L.pairs[p].b], t->len[L.pairs[p].b]);
    intrus_str_append(&out, "\n", 1);
    L.step = (uint32_t)m + 1;
    learner_merge(&L, p, merged);
  }
  free(merged);
  learner_free(&L);
  enum intrus_status st = intrus_file_write_atomic(path, out.s, out.len, err);
  intrus_str_free(&out);
  return st;
}

/* ---- application ----------------------------------------------------------------- */

struct merge {
  uint64_t key; /* pair_key(a, b) */
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
  struct symtab sym;
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
  uint64_t key = pair_key(x, y);
  for (size_t s = (size_t)mix64(key) & (b->nslot - 1); b->merges[s].rank >= 0;
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
    size_t s = (size_t)mix64(old[i].key) & (nslot - 1);
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
  uint64_t key = pair_key(x, y);
  size_t s = (size_t)mix64(key) & (b->nslot - 1);
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
  symtab_free(&b->sym);
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
    int32_t x = symtab_intern(&b->sym, fields[0], lens[0]);
    int32_t y = symtab_intern(&b->sym, fields[1], lens[1]);
    /* fields point into line, which symtab_intern copied from: concatenate now. */
    char *cat = xmalloc(lens[0] + lens[1]);
    memcpy(cat, fields[0], lens[0]);
    memcpy(cat + lens[0], fields[1], lens[1]);
    int32_t z = symtab_intern(&b->sym, cat, lens[0] + lens[1]);
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
    size_t cl = utf8_char_len((const unsigned char *)word + k, len - k);
    bool last = k + cl == len;
    start[n] = k;
    s[n++] = last && b->version == 2 ? symtab_final(&b->sym, word + k, cl, false)
                                     : symtab_find(&b->sym, word + k, cl);
    k += cl;
  }
  if (b->version == 1) { /* "</w>" covers no bytes of the word */
    start[n] = len;
    s[n++] = symtab_find(&b->sym, EOW, EOW_LEN);
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
  uint64_t h = hash_bytes(word, len);
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

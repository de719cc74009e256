/* The corpus of kept pairs, deduplicated by English source across all catalogs, and its
 * train/valid/test split, chosen by a hash of a normalised source so that the parts
 * depend only on the set of sources and never share a sentence. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "mo.h"
#include "mo_internal.h"

/* ---------------------------------------------------------------- corpus */

uint64_t mo_hash64(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, then a splitmix64 finaliser so that the
                                         low and high bits are both well mixed */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

void mo_corpus_init(struct mo_corpus *c) { memset(c, 0, sizeof *c); }

void mo_corpus_free(struct mo_corpus *c) {
  for (size_t i = 0; i < c->count; i++) {
    free(c->pairs[i].src);
    free(c->pairs[i].tgt);
  }
  free(c->pairs);
  free(c->slots);
  memset(c, 0, sizeof *c);
}

static size_t *find_slot(size_t *slots, size_t nslots, const struct mo_pair *pairs,
                         const char *src) {
  size_t i = (size_t)mo_hash64(src) & (nslots - 1);
  while (slots[i] && strcmp(pairs[slots[i] - 1].src, src)) i = (i + 1) & (nslots - 1);
  return &slots[i];
}

/* Keeps the table at most half full so probes stay short. */
static int grow_slots(struct mo_corpus *c) {
  size_t n = c->nslots ? 2 * c->nslots : 1024;
  size_t *slots = calloc(n, sizeof *slots);
  if (!slots) return -1;
  for (size_t i = 0; i < c->count; i++) *find_slot(slots, n, c->pairs, c->pairs[i].src) = i + 1;
  free(c->slots);
  c->slots = slots;
  c->nslots = n;
  return 0;
}

int mo_corpus_add(struct mo_corpus *c, char *src, char *tgt) {
  if (2 * (c->count + 1) > c->nslots && grow_slots(c)) return -1;
  size_t *slot = find_slot(c->slots, c->nslots, c->pairs, src);
  if (*slot) {
    free(src);
    free(tgt);
    return MO_DROP_DUPLICATE;
  }
  if (c->count == c->cap) {
    size_t ncap = c->cap ? 2 * c->cap : 1024;
    struct mo_pair *np = realloc(c->pairs, ncap * sizeof *np);
    if (!np) return -1;
    c->pairs = np;
    c->cap = ncap;
  }
  c->pairs[c->count].src = src;
  c->pairs[c->count].tgt = tgt;
  *slot = ++c->count;
  return MO_KEEP;
}

enum intrus_status mo_corpus_add_catalog(struct mo_corpus *c, const struct mo_catalog *cat,
                                         const struct mo_filter *f, size_t *kept,
                                         struct intrus_error *err) {
  *kept = 0;
  for (uint32_t i = 0; i < cat->count; i++) {
    struct mo_entry e;
    mo_get(cat, i, &e);
    char *s, *t;
    enum mo_verdict v;
    if (mo_clean_entry(f, &e, &s, &t, &v))
      return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    if (v == MO_KEEP) {
      int r = mo_corpus_add(c, s, t);
      if (r < 0) {
        free(s);
        free(t);
        return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
      }
      v = (enum mo_verdict)r;
      if (v == MO_KEEP) ++*kept;
    }
    c->verdicts[v]++;
  }
  return INTRUS_OK;
}

/* ---------------------------------------------------------------- split */

char *mo_split_key(const char *src) {
  /* Lower-casing can lengthen a code point's encoding (rarely); 4 bytes per input byte
   * bounds any result. */
  size_t cap = 4 * strlen(src) + 1;
  char *k = malloc(cap);
  if (!k) return NULL;
  size_t n = 0;
  int gap = 0;
  while (*src) {
    utf8proc_int32_t cp;
    src += mo_cp_at(src, &cp);
    if (!mo_is_alnum_cp(cp)) {
      gap = n > 0;
      continue;
    }
    if (gap) k[n++] = ' ';
    gap = 0;
    n += (size_t)utf8proc_encode_char(utf8proc_tolower(cp), (utf8proc_uint8_t *)k + n);
  }
  k[n] = '\0';
  return k;
}

struct keyed {
  uint64_t hash;
  const char *key;
  size_t index;
};

static int cmp_keyed(const void *a, const void *b) {
  const struct keyed *x = a, *y = b;
  if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
  return strcmp(x->key, y->key);
}

int mo_split(const struct mo_pair *pairs, size_t n, size_t nvalid, size_t ntest,
             unsigned char *part) {
  struct keyed *ks = malloc((n ? n : 1) * sizeof *ks);
  char **keys = calloc(n ? n : 1, sizeof *keys);
  int rc = 0;
  if (!ks || !keys) {
    rc = -1;
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    keys[i] = mo_split_key(pairs[i].src);
    if (!keys[i]) {
      rc = -1;
      goto out;
    }
    ks[i] = (struct keyed){mo_hash64(keys[i]), keys[i], i};
  }
  /* Ties on (hash, key) keep no particular order, but they form one group and the whole
   * group gets one part, so the outcome is still determined by the set of sources. */
  qsort(ks, n, sizeof *ks, cmp_keyed);
  size_t filled[3] = {0, 0, 0};
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && ks[j].hash == ks[i].hash && !strcmp(ks[j].key, ks[i].key)) j++;
    unsigned char p = filled[MO_VALID] < nvalid  ? MO_VALID
                      : filled[MO_TEST] < ntest ? MO_TEST
                                                : MO_TRAIN;
    for (size_t g = i; g < j; g++) part[ks[g].index] = p;
    filled[p] += j - i;
    i = j;
  }
out:
  if (keys)
    for (size_t i = 0; i < n; i++) free(keys[i]);
  free(keys);
  free(ks);
  return rc;
}

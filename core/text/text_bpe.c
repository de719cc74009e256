/* Byte-pair encoding with subword-nmt's semantics (learn_bpe.py and apply_bpe.py, codes
 * format version 0.2), in three files: text_bpe_learn.c learns codes from word counts,
 * text_bpe_apply.c reads codes and segments text with them, and this file holds the one
 * structure both need, the symbol table that gives every symbol ("lo", "w</w>") a dense
 * id so that a pair of symbols is a pair of integers. The smaller shared helpers are
 * inline in text_bpe_internal.h.
 *
 * Tokens are split on spaces; a token that carries the joiner mark (INTRUS_JOINER)
 * simply has the joiner as its first character, both when learning and when applying,
 * so frequent joined tokens learn merges like "￭ ,</w>" and detokenization only has to
 * remove "@@ " before it glues joined tokens. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/status.h"
#include "text_bpe_internal.h"
#include "base/xalloc.h"

void bpe_symtab_free(struct bpe_symtab *t) {
  for (size_t i = 0; i < t->n; i++) free(t->str[i]);
  free(t->str);
  free(t->len);
  free(t->hash);
  free(t->slot);
  memset(t, 0, sizeof *t);
}

static void symtab_rehash(struct bpe_symtab *t, size_t nslot) {
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
int32_t bpe_symtab_find(const struct bpe_symtab *t, const char *s, size_t len) {
  if (!t->nslot) return -1;
  uint64_t h = bpe_hash_bytes(s, len);
  for (size_t i = (size_t)h & (t->nslot - 1); t->slot[i]; i = (i + 1) & (t->nslot - 1)) {
    int32_t id = t->slot[i] - 1;
    if (t->hash[id] == h && t->len[id] == len && memcmp(t->str[id], s, len) == 0) return id;
  }
  return -1;
}

int32_t bpe_symtab_intern(struct bpe_symtab *t, const char *s, size_t len) {
  int32_t id = bpe_symtab_find(t, s, len);
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
  t->hash[id] = bpe_hash_bytes(s, len);
  size_t i = (size_t)t->hash[id] & (t->nslot - 1);
  while (t->slot[i]) i = (i + 1) & (t->nslot - 1);
  t->slot[i] = id + 1;
  return id;
}

/* Id of s + "</w>" (the word-final form of a character), interning it when asked. */
int32_t bpe_symtab_final(struct bpe_symtab *t, const char *s, size_t len, bool intern) {
  char buf[4 + BPE_EOW_LEN];
  memcpy(buf, s, len); /* len <= 4: one UTF-8 character */
  memcpy(buf + len, BPE_EOW, BPE_EOW_LEN);
  return intern ? bpe_symtab_intern(t, buf, len + BPE_EOW_LEN)
                : bpe_symtab_find(t, buf, len + BPE_EOW_LEN);
}

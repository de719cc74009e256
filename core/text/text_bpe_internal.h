/* Internal to the text pipeline. First, what text_vocab.c and corpus.c need from the
 * word counts that text_bpe_learn.c owns (text.h keeps struct intrus_wordcount opaque
 * to users). Then what the BPE files share among themselves (text_bpe.c describes how
 * learning and application divide the work): the symbol table, and small helpers that
 * sit in both hot loops, kept inline so that splitting the files costs no calls. */
#ifndef INTRUS_TEXT_BPE_INTERNAL_H
#define INTRUS_TEXT_BPE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "intrus/rng.h"
#include "intrus/text.h"

/* Entry i (0 <= i < intrus_wordcount_size(w)) in first-seen order: the word's bytes
 * (not NUL-terminated inside the token stream, but stored NUL-terminated), its length
 * and its count. */
const char *intrus_wordcount_entry(const struct intrus_wordcount *w, size_t i, size_t *len,
                                   int64_t *count);

/* Token separators shared by word counting, BPE application and vocabulary encoding, so
 * that all three see the same tokens: the space of the tokenized format, plus tab, CR
 * and LF, which can only come from a caller passing a raw line with its newline. */
static inline int intrus_text_is_sep(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* ---- shared by text_bpe.c, text_bpe_learn.c and text_bpe_apply.c ------------------ */

/* The end-of-word mark of subword-nmt's symbols: "low" is `l o w</w>`. */
#define BPE_EOW "</w>"
#define BPE_EOW_LEN 4

static inline uint64_t bpe_hash_bytes(const char *s, size_t n) {
  return intrus_fnv1a(INTRUS_FNV_INIT, s, n);
}

/* splitmix64's finaliser: spreads a pair key over all bits for power-of-two tables. */
static inline uint64_t bpe_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static inline uint64_t bpe_pair_key(int32_t a, int32_t b) {
  return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
}

/* Byte length of the UTF-8 character starting at s[0] (n > 0 bytes left). A malformed
 * sequence counts as one byte so that any input splits into characters. */
static inline size_t bpe_utf8_char_len(const unsigned char *s, size_t n) {
  size_t k = s[0] < 0x80 ? 1 : s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 1;
  if (k > n) return 1;
  for (size_t i = 1; i < k; i++)
    if ((s[i] & 0xC0) != 0x80) return 1;
  return k;
}

/* Symbol table: strings <-> dense ids (0, 1, ...), so that a pair of symbols is a pair
 * of integers. */
struct bpe_symtab {
  char **str;
  size_t *len;
  uint64_t *hash;
  size_t n, cap;
  int32_t *slot; /* 1 + id, 0 = empty */
  size_t nslot;
};

void bpe_symtab_free(struct bpe_symtab *t);
/* Id of s, or -1. */
int32_t bpe_symtab_find(const struct bpe_symtab *t, const char *s, size_t len);
int32_t bpe_symtab_intern(struct bpe_symtab *t, const char *s, size_t len);
/* Id of s + "</w>" (the word-final form of a character), interning it when asked. */
int32_t bpe_symtab_final(struct bpe_symtab *t, const char *s, size_t len, bool intern);

#endif

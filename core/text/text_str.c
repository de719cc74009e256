/* Growable byte strings and strict UTF-8 validation for the text pipeline. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/status.h"
#include "intrus/text.h"

void intrus_str_clear(struct intrus_str *b) {
  b->len = 0;
  if (b->s) b->s[0] = '\0';
}

void intrus_str_append(struct intrus_str *b, const char *s, size_t n) {
  INTRUS_CHECK(n < SIZE_MAX / 2 - b->len, "intrus_str_append: string too long");
  /* Allocate even for n == 0 so that b->s is a valid (empty) string after any append:
   * callers print out->s of an empty tokenized line without a NULL check. */
  if (!b->s || b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->s, cap);
    INTRUS_CHECK(p, "intrus_str_append: out of memory (%zu bytes)", cap);
    b->s = p;
    b->cap = cap;
  }
  if (n) memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

void intrus_str_free(struct intrus_str *b) {
  free(b->s);
  b->s = NULL;
  b->len = b->cap = 0;
}

long intrus_utf8_invalid_at(const char *str, size_t len) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < len) {
    /* Corpora are mostly ASCII: skip 8 bytes at a time while no high bit is set. */
    while (i + 8 <= len) {
      uint64_t w;
      memcpy(&w, s + i, 8);
      if (w & UINT64_C(0x8080808080808080)) break;
      i += 8;
    }
    if (i >= len) break;
    unsigned c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    /* The valid ranges of the second byte follow RFC 3629 / Unicode Table 3-7, which
     * rules out overlong forms (C0, C1, E0 80..9F, F0 80..8F), UTF-16 surrogates
     * (ED A0..BF) and code points above U+10FFFF (F4 90.., F5..FF). */
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return (long)i; /* stray continuation byte or a byte that never starts UTF-8 */
    }
    if (len - i <= need) return (long)i; /* truncated at the end of the line */
    if (s[i + 1] < lo || s[i + 1] > hi) return (long)i;
    for (size_t k = 2; k <= need; k++)
      if ((s[i + k] & 0xC0) != 0x80) return (long)i;
    i += need + 1;
  }
  return -1;
}

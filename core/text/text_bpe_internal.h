/* Internal to the text pipeline: what text_vocab.c needs from the word counts that
 * text_bpe.c owns (text.h keeps struct intrus_wordcount opaque to users). */
#ifndef INTRUS_TEXT_BPE_INTERNAL_H
#define INTRUS_TEXT_BPE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

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

#endif

/* Text pipeline: tokenization (Unicode-aware, via utf8proc; Japanese word segmentation
 * via MeCab), detokenization, byte-pair encoding (subword-nmt semantics) and
 * vocabularies.
 *
 * Token strings are UTF-8. A tokenized line is tokens separated by single spaces.
 * Tokenization is reversible: a token that was glued to the previous one in the raw
 * text (no space between them) starts with the joiner mark INTRUS_JOINER (U+FFED,
 * "￭" — chosen because it does not occur in ordinary text), so
 * intrus_detokenize(intrus_tokenize(s)) == s for any s in NFC whose whitespace is single
 * ASCII spaces without leading/trailing space (other whitespace is normalised to one
 * space; control characters, U+FEFF and U+FFED itself count as whitespace). */
#ifndef INTRUS_TEXT_H
#define INTRUS_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "intrus/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define INTRUS_JOINER "\xef\xbf\xad" /* U+FFED */

/* A growable byte string. */
struct intrus_str {
  char *s;      /* NUL-terminated; NULL until the first append */
  size_t len, cap;
};
void intrus_str_clear(struct intrus_str *b);
void intrus_str_append(struct intrus_str *b, const char *s, size_t n);
void intrus_str_free(struct intrus_str *b);

/* Returns the byte offset of the first invalid UTF-8 sequence, or -1 if s is valid. */
long intrus_utf8_invalid_at(const char *s, size_t len);

/* ---- tokenizer ------------------------------------------------------------------ */

struct intrus_tokenizer;

/* lang: ISO 639-1 code ("en", "de", "ru", "ar", "ja", ...). "ja" segments words with
 * MeCab (libmecab + mecab-ipadic-utf8); an error says which package is missing.
 * A tokenizer keeps scratch buffers (and, for "ja", a MeCab tagger): use one per thread. */
enum intrus_status intrus_tokenizer_create(const char *lang, struct intrus_tokenizer **out,
                                           struct intrus_error *err);
void intrus_tokenizer_free(struct intrus_tokenizer *t);

/* Tokenizes one line (no newline) into out (cleared first): tokens separated by one
 * space, joiner-marked as described above. Splits on whitespace, splits punctuation
 * and symbols (Unicode categories P* and S*) from letters/digits, keeps runs of
 * letters/digits/marks together; NFC-normalises first. Never splits a grapheme cluster;
 * each punctuation or symbol cluster is a token, except that a run of one punctuation
 * character ("...", "--") stays together ('@' excepted: "@@" is the BPE mark). The
 * rules in full are at the top of core/text/text_tokenize.c. The line must be valid UTF-8
 * (INTRUS_ERR_DATA otherwise, with the byte offset in the message). */
enum intrus_status intrus_tokenize(struct intrus_tokenizer *t, const char *line, size_t len,
                                   struct intrus_str *out, struct intrus_error *err);

/* Inverse of intrus_tokenize: joins tokens, gluing joiner-marked ones to their left
 * neighbour. Also removes BPE continuation marks ("@@ ") if present. */
void intrus_detokenize(const char *tokens, size_t len, struct intrus_str *out);

/* ---- byte-pair encoding (subword-nmt) ------------------------------------------ */

struct intrus_bpe;

/* Word frequencies for learning: add every token of a tokenized corpus. */
struct intrus_wordcount;
struct intrus_wordcount *intrus_wordcount_create(void);
void intrus_wordcount_free(struct intrus_wordcount *w);
void intrus_wordcount_add_line(struct intrus_wordcount *w, const char *tokens, size_t len);
size_t intrus_wordcount_size(const struct intrus_wordcount *w);

/* Learns up to `merges` merge operations as subword-nmt's learn_bpe.py does (end-of-word
 * symbol "</w>", ties broken deterministically, min_freq 2) and writes them to path in
 * subword-nmt's codes format ("#version: 0.2" header, "a b" per line), via a temporary
 * file and rename. */
enum intrus_status intrus_bpe_learn(const struct intrus_wordcount *w, int merges,
                                    const char *path, struct intrus_error *err);
enum intrus_status intrus_bpe_load(const char *path, struct intrus_bpe **out,
                                   struct intrus_error *err);
void intrus_bpe_free(struct intrus_bpe *b);
/* Applies BPE to a tokenized line like subword-nmt's apply_bpe.py: non-final pieces of
 * a word get the "@@" suffix. out is cleared first. */
void intrus_bpe_apply(struct intrus_bpe *b, const char *tokens, size_t len,
                      struct intrus_str *out);

/* ---- vocabulary ---------------------------------------------------------------- */

/* Ids 0..3 are <pad> <unk> <s> </s> (INTRUS_PAD, INTRUS_UNK, INTRUS_BOS, INTRUS_EOS in
 * plugin.h); the file lists one token per line in id order, specials included. */
struct intrus_vocab;

/* Builds from word counts: tokens with count >= min_count, most frequent first (ties by
 * byte order), at most max_size entries in all (0 = no limit). */
struct intrus_vocab *intrus_vocab_build(const struct intrus_wordcount *w, int min_count,
                                        int max_size);
enum intrus_status intrus_vocab_load(const char *path, struct intrus_vocab **out,
                                     struct intrus_error *err);
enum intrus_status intrus_vocab_save(const struct intrus_vocab *v, const char *path,
                                     struct intrus_error *err);
void intrus_vocab_free(struct intrus_vocab *v);
int intrus_vocab_size(const struct intrus_vocab *v);
/* INTRUS_UNK for unknown tokens. */
int32_t intrus_vocab_id(const struct intrus_vocab *v, const char *token, size_t len);
/* NULL for an id out of range. */
const char *intrus_vocab_token(const struct intrus_vocab *v, int32_t id);
/* 64-bit hash of the token list, stored in checkpoints to catch a vocabulary mismatch. */
uint64_t intrus_vocab_fingerprint(const struct intrus_vocab *v);
/* Splits a tokenized line on spaces and maps each token; returns the count written
 * (at most cap; the rest is dropped and *truncated set). */
int intrus_vocab_encode(const struct intrus_vocab *v, const char *tokens, size_t len,
                        int32_t *ids, int cap, bool *truncated);

#ifdef __cplusplus
}
#endif
#endif

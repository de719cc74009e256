/* Order analysis (`intrus analyze order`, the paper's Figure 4): when, relative to the
 * length of its output, an insertion model writes each kind of word.
 *
 * Input: order.tsv files of `intrus decode --trace` (sentence, position, token, step,
 * relative_index; one row per output token, tokens being BPE pieces). Pieces are joined
 * into words (a piece ending in "@@" continues into the next; a piece starting with the
 * joiner U+FFED is glued to the one before it). A word's generation index is the step of
 * its first-written piece over (pieces - 1) of its sentence: 0 = written first, 1 =
 * last. Sentences of fewer than 2 pieces have no order and are skipped.
 *
 * Classes, by a documented word-list rule (no part-of-speech tagger: Debian packages
 * none usable from C): punctuation (every character a Unicode punctuation or symbol),
 * function words (a closed list of articles, pronouns, prepositions, conjunctions,
 * auxiliaries and particles for the target language: en, de, ru), content words (the
 * rest, numbers included). For other languages the classes are punctuation and words. */
#ifndef INTRUS_ORDER_STATS_H
#define INTRUS_ORDER_STATS_H

#include <stdbool.h>

#include "intrus/status.h"

enum word_class { WORD_PUNCT, WORD_FUNCTION, WORD_CONTENT, WORD_CLASSES };

struct order_stats {
  long n[WORD_CLASSES];
  double sum[WORD_CLASSES], sumsq[WORD_CLASSES];
  long sentences, words, skipped; /* sentences read, words counted, sentences skipped */
};

/* "punctuation", "function words", "content words" ("words" without a list). */
const char *word_class_name(enum word_class c, bool have_list);
/* Whether there is a function-word list for lang (NULL: none). */
bool word_list_known(const char *lang);
/* The class of a word (UTF-8, joiner marks and "@@" removed). */
enum word_class word_classify(const char *word, const char *lang);

/* Reads path and adds its words to s (zero it first). A malformed row is
 * INTRUS_ERR_DATA naming path:line. */
enum intrus_status order_stats_read(const char *path, const char *lang, struct order_stats *s,
                                    struct intrus_error *err);

/* Mean and the half-width of its 95% interval (1.96 standard errors; 0 for n < 2). */
double order_stats_mean(const struct order_stats *s, enum word_class c, double *ci95);

#endif

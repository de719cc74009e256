/* Order analysis (`intrus analyze order`, the paper's Figure 5): when, relative to the
 * length of its output, an insertion model writes each kind of word.
 *
 * Input: order.tsv files of `intrus decode --trace` (sentence, position, token, step,
 * relative_index; one row per output token, tokens being BPE pieces). Pieces are joined
 * into words (a piece ending in "@@" continues into the next; a piece starting with the
 * joiner U+FFED is glued to the one before it). A word's generation index is the step of
 * its first-written piece over (pieces - 1) of its sentence: 0 = written first, 1 =
 * last. Sentences of fewer than 2 pieces have no order and are skipped.
 *
 * Classes, by a documented word-list rule: punctuation (every character a Unicode
 * punctuation or symbol), function words (a closed list of articles, pronouns,
 * prepositions, conjunctions, auxiliaries and particles for the target language: en, de,
 * ru), content words (the rest, numbers included). For other languages the classes are
 * punctuation and words. Or by part of speech where Debian has a tagger for the language
 * (pos_tag.h: English and Russian). */
#ifndef INTRUS_ORDER_STATS_H
#define INTRUS_ORDER_STATS_H

#include <stdbool.h>

#include "intrus/status.h"

enum word_class { WORD_PUNCT, WORD_FUNCTION, WORD_CONTENT, WORD_CLASSES };

enum { ORDER_MAX_CLASSES = 12 }; /* the word-list classes, or pos_tag.h's */

struct order_stats {
  long n[ORDER_MAX_CLASSES];
  double sum[ORDER_MAX_CLASSES], sumsq[ORDER_MAX_CLASSES];
  long sentences, words, skipped; /* sentences read, words counted, sentences skipped */
  /* How left-to-right the orders are, over sentences of 2 or more words: Kendall's tau
   * between the words' positions and the order in which they were begun (1: every
   * word begun after the words to its left; -1: after those to its right; no ties, one
   * piece being written a step), its sum of squares, the sentences, and how many were
   * begun strictly left to right and right to left. */
  double tau_sum, tau_sumsq;
  long tau_n, l2r, r2l;
};

/* The words of order.tsv files, before they are classed: word i of sentence k is
 * word[sent_start[k] + i], written at relative index rel[...]. */
struct order_words {
  char **word;
  double *rel;
  long *sent_start; /* nsent + 1 entries */
  long nwords, nsent;
  long sentences, skipped; /* sentences read; of them, fewer than 2 tokens (not kept) */
  size_t word_cap, sent_cap; /* word's capacity is rel's too */
};

/* "punctuation", "function words", "content words" ("words" without a list). */
const char *word_class_name(enum word_class c, bool have_list);
/* Whether there is a function-word list for lang (NULL: none). */
bool word_list_known(const char *lang);
/* The class of a word (UTF-8, joiner marks and "@@" removed). */
enum word_class word_classify(const char *word, const char *lang);

/* Reads path and adds its words to w (zero it first). A malformed row is
 * INTRUS_ERR_DATA naming path:line. */
enum intrus_status order_words_read(const char *path, struct order_words *w,
                                    struct intrus_error *err);
void order_words_free(struct order_words *w);
/* cls[i] = word_classify(word i, lang). */
void order_words_classify(const struct order_words *w, const char *lang, int *cls);
/* Adds w's words, word i in class cls[i], and its sentence counts to s. */
void order_stats_add(struct order_stats *s, const struct order_words *w, const int *cls);

/* order_words_read, order_words_classify and order_stats_add in one (zero s first). */
enum intrus_status order_stats_read(const char *path, const char *lang, struct order_stats *s,
                                    struct intrus_error *err);

/* Mean and the half-width of its 95% interval (1.96 standard errors; 0 for n < 2). */
double order_stats_mean(const struct order_stats *s, int c, double *ci95);
/* Kendall's tau of word position against writing order (see tau_sum), the mean over
 * sentences with the half-width of its 95% interval; NAN without a sentence of 2 words. */
double order_stats_tau(const struct order_stats *s, double *ci95);
/* Kendall's tau of the sentence's words [a, b) of w (b - a >= 2): concordant pairs (the
 * left word begun first) minus discordant, over all pairs. */
double order_words_tau(const struct order_words *w, long a, long b);

#endif

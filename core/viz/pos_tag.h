/* Coarse parts of speech for the order analysis (`intrus analyze order --pos`), from an
 * Apertium language pair that Debian packages: its morphological analyser, its
 * constraint grammar where the pair has one, and its HMM tagger where that runs (the
 * first remaining reading otherwise).
 *
 * Debian 12 has no part-of-speech tagger for German; for English and Russian the
 * analysers of apertium-eng-spa and apertium-bel-rus are there. The words are fed to the
 * pair's pipeline as they are (one sentence a line), and each lexical unit of its output
 * is matched back to the words by its surface form. */
#ifndef INTRUS_POS_TAG_H
#define INTRUS_POS_TAG_H

#include <stdbool.h>

#include "intrus/status.h"

enum pos_class {
  POS_NOUN,
  POS_VERB,
  POS_ADJ,
  POS_ADV,
  POS_PRON,
  POS_ADP,
  POS_CONJ,
  POS_DET,
  POS_NUM,
  POS_PUNCT,
  POS_OTHER, /* interjections, abbreviations, words the analyser does not know */
  POS_CLASSES
};

/* "nouns", "verbs", ... */
const char *pos_class_name(enum pos_class c);

/* The class of an Apertium analysis ("lemma<tag><tag>...", "*unknown"): its first tag. */
enum pos_class pos_class_of_analysis(const char *analysis);

/* The mode file of the pair whose analyser reads lang ("en": eng-spa, "ru": rus-bel)
 * under Debian's /usr/share/apertium/modes; NULL for other languages. */
const char *pos_default_mode(const char *lang);

struct pos_tag_info {
  long hmm_sentences;   /* sentences whose readings the pair's HMM tagger chose */
  long first_sentences; /* the first readings (the tagger crashed, or the pair has none) */
  long unknown;         /* words the analyser did not know (class POS_OTHER) */
};

/* Classes the words: words[sent_start[i] .. sent_start[i + 1]) is sentence i (nsent
 * sentences, no word holding whitespace). Runs the pipeline of mode_file (an Apertium
 * .mode file) up to its tagger on the whole input; where the tagger crashes, every word
 * takes the first reading the analyser (and constraint grammar) leaves. INTRUS_ERR_IO
 * when the analyser cannot run, INTRUS_ERR_DATA when the output does not match the
 * words. */
enum intrus_status pos_tag_apertium(const char *mode_file, char *const *words,
                                    const long *sent_start, long nsent, int *cls,
                                    struct pos_tag_info *info, struct intrus_error *err);

#endif

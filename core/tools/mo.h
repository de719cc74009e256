/* Reading gettext .mo catalogs and turning them into clean sentence pairs for machine
 * translation: the parser, the filters, the corpus that deduplicates by English source,
 * and the deterministic train/valid/test split. Shared by intrus-mocorpus and its test;
 * not part of the installed API. */
#ifndef INTRUS_TOOLS_MO_H
#define INTRUS_TOOLS_MO_H

#include <stddef.h>
#include <stdint.h>

#include "intrus/status.h"

#define MO_MAGIC 0x950412deu

/* A parsed catalog. Every (length, offset) of both tables has been checked against the
 * file size by mo_parse, so the accessors below cannot read out of bounds. */
struct mo_catalog {
  unsigned char *data; /* the whole file, owned */
  size_t size;
  int big_endian;
  uint32_t count;     /* number of strings (the header entry included) */
  uint32_t orig_off;  /* offset of the table of original strings */
  uint32_t trans_off; /* offset of the table of translations */
};

/* One raw entry: pointers into the catalog, lengths without the terminating NUL. The
 * msgid may hold "context\x04" before the text and "\0plural" after it; the msgstr
 * holds the plural forms separated by NULs. */
struct mo_entry {
  const char *id;
  size_t id_len;
  const char *str;
  size_t str_len;
};

/* Parses size bytes (copied; the caller keeps data). name is used only in messages. */
enum intrus_status mo_parse(struct mo_catalog *cat, const void *data, size_t size,
                            const char *name, struct intrus_error *err);
/* Reads and parses a file; messages name the path. */
enum intrus_status mo_open(struct mo_catalog *cat, const char *path, struct intrus_error *err);
void mo_close(struct mo_catalog *cat);
void mo_get(const struct mo_catalog *cat, uint32_t i, struct mo_entry *e);

/* The charset named by the header entry's Content-Type (into out, NUL-terminated);
 * returns 0 when the catalog has no header or the header names no charset. */
int mo_charset(const struct mo_catalog *cat, char *out, size_t cap);
/* UTF-8, or plain ASCII (a subset): the only encodings the extractor accepts. */
int mo_charset_is_utf8(const char *charset);

/* Scripts a target side must contain (so untranslated English copies are dropped). */
enum mo_script { MO_SCRIPT_ANY, MO_SCRIPT_CYRILLIC, MO_SCRIPT_JAPANESE, MO_SCRIPT_ARABIC };
/* The script required for a language code: ru Cyrillic, ja kana/CJK, ar Arabic, else any. */
enum mo_script mo_script_for_lang(const char *lang);

struct mo_filter {
  enum mo_script script;
  int min_words, max_words; /* bounds on the English side's word count */
  int caret_context;        /* strip "context^" prefixes (Wesnoth's catalogs only: a caret
                               elsewhere, as in "x^2", is text) */
};
/* 1 for Wesnoth's catalogs (file names wesnoth*.mo), whose msgids carry "context^". */
int mo_is_wesnoth_catalog(const char *path);

/* Why a pair was kept or dropped; the counts per reason go to the tool's summary. */
enum mo_verdict {
  MO_KEEP,
  MO_DROP_HEADER,      /* the header entry (empty msgid) */
  MO_DROP_ENCODING,    /* not valid UTF-8, or control characters other than whitespace */
  MO_DROP_CREDITS,     /* translator-credit entries */
  MO_DROP_EMPTY,       /* empty after cleaning (untranslated entries have empty msgstr) */
  MO_DROP_FORMAT_ONLY, /* nothing but placeholders, tags, digits and punctuation */
  MO_DROP_IDENTICAL,   /* target equals source */
  MO_DROP_SCRIPT,      /* target lacks the language's script */
  MO_DROP_LENGTH,      /* English word count outside [min_words, max_words] */
  MO_DROP_DUPLICATE,   /* English source seen before (set by mo_corpus_add) */
  MO_NVERDICTS
};
const char *mo_verdict_name(enum mo_verdict v);

/* Cleans one raw entry: strips context, plural forms, "context^" prefixes (if asked) and UI
 * accelerators, collapses whitespace, then applies the filters. On MO_KEEP, *src and
 * *tgt receive malloc'ed strings (caller frees); otherwise they are set to NULL.
 * Returns -1 (and sets nothing) only when memory runs out. */
int mo_clean_entry(const struct mo_filter *f, const struct mo_entry *e, char **src, char **tgt,
                   enum mo_verdict *verdict);

/* The single steps, exposed for tests. Each works in place on a NUL-terminated string
 * (the result is never longer than the input). */
void mo_strip_accelerators(char *s);
void mo_collapse_space(char *s);
/* Drops everything up to the last '^'. */
void mo_strip_context_prefix(char *s);
/* Whitespace-separated tokens of s that contain a letter or digit ("-" is no word). */
int mo_count_words(const char *s);
/* 1 when s has no letter outside placeholders (%s, %1$d, {0}, $1, <tags>, &entities;). */
int mo_is_format_only(const char *s);
int mo_has_script(const char *s, enum mo_script script);
/* 1 when s is well-formed UTF-8 with no control characters except tab, CR and LF. */
int mo_valid_text(const char *s, size_t len);

/* Pairs in first-seen order, deduplicated by English source. */
struct mo_pair {
  char *src, *tgt;
};
struct mo_corpus {
  struct mo_pair *pairs;
  size_t count, cap;
  size_t *slots; /* open-addressing hash of the sources: index + 1, 0 = empty */
  size_t nslots;
  size_t verdicts[MO_NVERDICTS];
};
void mo_corpus_init(struct mo_corpus *c);
void mo_corpus_free(struct mo_corpus *c);
/* Adds a cleaned pair (ownership of src and tgt passes to the corpus, which frees them
 * when the source is a duplicate). Returns MO_KEEP or MO_DROP_DUPLICATE, -1 on no memory. */
int mo_corpus_add(struct mo_corpus *c, char *src, char *tgt);
/* Cleans, filters and adds every entry of a catalog; *kept counts the new pairs. */
enum intrus_status mo_corpus_add_catalog(struct mo_corpus *c, const struct mo_catalog *cat,
                                         const struct mo_filter *f, size_t *kept,
                                         struct intrus_error *err);

/* The split key of an English source: case-folded letters and digits, one space between
 * words, so "Open File..." and "open file" land in the same split. malloc'ed. */
char *mo_split_key(const char *src);
uint64_t mo_hash64(const char *s);

enum mo_part { MO_TRAIN = 0, MO_VALID = 1, MO_TEST = 2 };
/* Assigns each of n sources to a part: sources are ordered by the hash of their split key
 * and whole key groups are taken for valid until it holds at least nvalid pairs, then for
 * test, the rest for train. The choice depends only on the set of sources, and no split
 * key is shared between two parts. Returns -1 on no memory. */
int mo_split(const struct mo_pair *pairs, size_t n, size_t nvalid, size_t ntest,
             unsigned char *part);

#endif

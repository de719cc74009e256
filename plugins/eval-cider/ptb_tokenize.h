/* The tokenisation step of the MSCOCO caption evaluation (coco-caption's PTBTokenizer:
 * Stanford CoreNLP 3.4.1's PTBTokenizer with -preserveLines -lowerCase, then the tokens
 * in its PUNCTUATIONS list dropped), re-implemented in C; see ptb_tokenize.c for what is
 * reproduced and where it can differ. Internal to the CIDEr plugin (tests/test_cider
 * compiles it too); only eval_cider.c's descriptor is exported from the module. */
#ifndef INTRUS_PTB_TOKENIZE_H
#define INTRUS_PTB_TOKENIZE_H

#include <stdbool.h>
#include <stddef.h>

/* The compiled rules of the lexer and its scratch memory: one per thread. */
struct ptb_lexer;

/* Tokens as NUL-terminated UTF-8 strings in one buffer: token i at buf + off[i]. */
struct ptb_tokens {
  char *buf;
  size_t len, cap;
  size_t *off;
  size_t n, ncap;
};

enum { PTB_OK = 0, PTB_NOMEM = -1, PTB_BAD_UTF8 = -2 };

/* NULL if out of memory. */
struct ptb_lexer *ptb_lexer_create(void);
void ptb_lexer_free(struct ptb_lexer *lx);

void ptb_tokens_free(struct ptb_tokens *t);
static inline const char *ptb_token(const struct ptb_tokens *t, size_t i) {
  return t->buf + t->off[i];
}

/* The tokens coco-caption's CIDEr scores for one caption (text[0..len), UTF-8): newlines
 * become spaces (as coco-caption does before it joins the captions), PTBLexer's tokens
 * of the caption followed by a newline, lowercased as Java's
 * String.toLowerCase(Locale.ENGLISH) does, those in PUNCTUATIONS dropped, the rest split
 * at ASCII whitespace (Python 2's str.split()). out is replaced. PTB_OK, PTB_NOMEM or
 * PTB_BAD_UTF8 (*bad_at, if not NULL, then gets the byte offset). */
int ptb_coco_tokens(struct ptb_lexer *lx, const char *text, size_t len, struct ptb_tokens *out,
                    size_t *bad_at);

/* PTBLexer's own tokens of text, normalised (-LRB-, ``, ...) but not lowercased or
 * filtered; newlines in text are line ends (skipped). With eof_after the input ends with
 * text (as in CoreNLP's unit tests), else a newline follows it (as a caption in
 * coco-caption's input). */
int ptb_lex(struct ptb_lexer *lx, const char *text, size_t len, bool eof_after,
            struct ptb_tokens *out, size_t *bad_at);

#endif

/* The text side of the BLEU plugin: code point buffers, the Python string semantics
 * sacreBLEU's preprocessing relies on, and the 13a tokenizer (bleu_text.c). Internal to
 * the plugin: only eval_bleu.c's descriptor is exported from the module. */
#ifndef INTRUS_BLEU_TEXT_H
#define INTRUS_BLEU_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growable array of code points. An allocation failure is remembered in oom and
 * turns later pushes into no-ops, so the text passes below need no error plumbing; the
 * caller checks oom once per string. */
struct cps {
  uint32_t *v;
  size_t n, cap;
  bool oom;
};

void cps_push(struct cps *b, uint32_t c);
void cps_free(struct cps *b);
/* Swaps the contents of two buffers (a pass writes into a scratch buffer that then
 * becomes the current text). */
void cps_swap(struct cps *a, struct cps *b);

/* str.isspace(), as str.split() and str.rstrip() use it. */
bool py_space(uint32_t c);
/* out = str.lower() of in, with Python's context rules (U+0130, final sigma). */
void py_lower(const struct cps *in, struct cps *out);
/* sacreBLEU's tokenizer_13a on s in place; tmp is scratch. */
void tokenize_13a(struct cps *s, struct cps *tmp);

#endif

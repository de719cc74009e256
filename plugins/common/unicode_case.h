/* Unicode case rules the text plugins (eval-bleu's Python str.lower, eval-cider's
 * PTBTokenizer lowercasing) share; compiled into each plugin that uses it. */
#ifndef INTRUS_UNICODE_CASE_H
#define INTRUS_UNICODE_CASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* s[i] (U+03A3) is in the Final_Sigma context: a cased letter before it and none after
 * it, skipping case-ignorable code points both ways (Python's handle_capital_sigma). */
bool unicase_final_sigma(const uint32_t *s, size_t n, size_t i);

#endif

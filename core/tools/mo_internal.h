/* Internal to the .mo reader: the code-point helpers that mo_clean.c defines and
 * mo_corpus.c's split key reuses, so that both read text the same way. */
#ifndef INTRUS_TOOLS_MO_INTERNAL_H
#define INTRUS_TOOLS_MO_INTERNAL_H

#include <utf8proc.h>

/* Decodes the code point at s (valid UTF-8 assumed, NUL-terminated); returns its length. */
int mo_cp_at(const char *s, utf8proc_int32_t *cp);
/* A letter or a number, in any script (Unicode categories L* and N*). */
int mo_is_alnum_cp(utf8proc_int32_t cp);

#endif

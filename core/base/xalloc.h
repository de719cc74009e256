/* Allocation for the core's own bookkeeping. Running out of memory is not an input
 * error a caller could report better, so these panic instead of returning NULL and
 * threading checks through every caller. Header-only: each file gets static copies. */
#ifndef INTRUS_XALLOC_H
#define INTRUS_XALLOC_H

#include <stdlib.h>
#include <string.h>

#include "intrus/status.h"

static inline void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) intrus_panic("out of memory (%zu bytes)", n);
  return p;
}

static inline void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) intrus_panic("out of memory (%zu x %zu bytes)", n, size);
  return p;
}

static inline void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) intrus_panic("out of memory (%zu bytes)", n);
  return p;
}

static inline char *xstrndup(const char *s, size_t n) {
  char *d = strndup(s, n);
  if (!d) intrus_panic("out of memory (%zu bytes)", n + 1);
  return d;
}

static inline char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

/* Grows *p (*cap elements of elem bytes) to hold at least need elements, doubling from
 * `first`. */
static inline void xgrow(void **p, size_t *cap, size_t need, size_t elem, size_t first) {
  if (need <= *cap) return;
  size_t c = *cap ? *cap : first;
  while (c < need) c *= 2;
  *p = xrealloc(*p, c * elem);
  *cap = c;
}

#endif

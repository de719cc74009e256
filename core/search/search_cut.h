/* Shared by the two beam searches: skipping most of a vocabulary-wide row of float
 * log-probabilities with one comparison per token, without changing which candidates
 * win. */
#ifndef INTRUS_SEARCH_CUT_H
#define INTRUS_SEARCH_CUT_H

#include <math.h>

/* A float below which a token's log-probability x cannot bring base + x (in double) up
 * to thr. Lowered by a margin that covers the double rounding of base + x and of the
 * conversion to float. */
static inline float intrus_search_cut(double thr, double base) {
  double d = thr - base, margin = 1e-12 * (1.0 + fabs(thr));
  float cut = (float)d;
  while ((double)cut > d - margin) cut = nextafterf(cut, -INFINITY);
  return cut;
}

#endif

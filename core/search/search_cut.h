/* Shared by the two beam searches: skipping most of a vocabulary-wide row of float
 * log-probabilities with one comparison per token, without changing which candidates
 * win. */
#ifndef INTRUS_SEARCH_CUT_H
#define INTRUS_SEARCH_CUT_H

#include <math.h>

/* A float below which a token's log-probability x cannot bring base + x (in double) up
 * to thr: the largest float at most thr - base - margin, the margin covering the double
 * rounding of base + x and of the conversion to float. Rounded once and stepped down at
 * most one float: stepping down from (float)(thr - base) one float at a time, as this
 * did before 2026-12-06, took up to ~10^9 steps when thr - base was 0 or nearly (a
 * token of probability 1 in float, common in a distilled model's rows), since floats
 * are dense near 0; the result is the same float. */
static inline float intrus_search_cut(double thr, double base) {
  double y = (thr - base) - 1e-12 * (1.0 + fabs(thr));
  float cut = (float)y;
  if ((double)cut > y) cut = nextafterf(cut, -INFINITY);
  return cut;
}

#endif

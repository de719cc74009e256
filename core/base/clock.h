/* A monotonic clock for the core's timings (progress lines, ETA, benchmarks' counters).
 * Header-only like xalloc.h: each file gets a static copy, nothing is exported. */
#ifndef INTRUS_CLOCK_H
#define INTRUS_CLOCK_H

#include <time.h>

static inline long long mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static inline double mono_s(void) { return 1e-9 * (double)mono_ns(); }

#endif

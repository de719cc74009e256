/* intrus_search_cut (core/search/search_cut.h), the float below which a token's
 * log-probability cannot bring base + x up to a threshold, used by both beam searches to
 * skip most of a vocabulary row: it must be the largest float at most
 * thr - base - margin, and equal to the old one-float-at-a-time descent from
 * (float)(thr - base) wherever that descent is short enough to run; near thr == base
 * (a token of probability 1) the descent took ~10^9 steps, which is what the closed form
 * removes, so there only the definition is checked. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "search/search_cut.h"
#include "testutil.h"

/* The descent as it was before 2026-12-06, with a step limit. */
static int descent(double thr, double base, long limit, float *out) {
  double d = thr - base, margin = 1e-12 * (1.0 + fabs(thr));
  float cut = (float)d;
  long n = 0;
  while ((double)cut > d - margin) {
    if (++n > limit) return 0;
    cut = nextafterf(cut, -INFINITY);
  }
  *out = cut;
  return 1;
}

/* The largest float at most thr - base - margin. */
static int is_largest_below(float cut, double thr, double base) {
  double y = (thr - base) - 1e-12 * (1.0 + fabs(thr));
  return (double)cut <= y && (double)nextafterf(cut, INFINITY) > y;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}

int main(void) {
  long compared = 0, checked = 0;
  int bad_cmp = 0, bad_def = 0;
  for (int i = 0; i < 200000; i++) {
    /* Scores as the searches have them: base a hypothesis's log p (0 to -200), thr the
     * K-th best candidate's score, thr - base from -30 to 0 and a little above, with a
     * share of exact and near ties. */
    double base = -200.0 * uniform();
    double d;
    switch (i % 5) {
    case 0: d = 0.0; break;
    case 1: d = -pow(10.0, -20.0 * uniform()); break;
    case 2: d = ldexp(uniform() - 0.5, -(int)(140 * uniform())); break;
    default: d = 2.0 - 32.0 * uniform(); break;
    }
    double thr = base + d;
    float cut = intrus_search_cut(thr, base), old;
    checked++;
    if (!is_largest_below(cut, thr, base) && bad_def++ < 5)
      fprintf(stderr, "not the largest float below: thr %.17g base %.17g cut %.9g\n", thr, base,
              (double)cut);
    if (descent(thr, base, 100000, &old)) {
      compared++;
      if (old != cut && bad_cmp++ < 5)
        fprintf(stderr, "thr %.17g base %.17g: %.9g, the descent %.9g\n", thr, base,
                (double)cut, (double)old);
    }
  }
  EXPECT(bad_def == 0, "%d of %ld cuts are not the largest float below the threshold",
         bad_def, checked);
  EXPECT(bad_cmp == 0, "%d of %ld cuts differ from the descent's", bad_cmp, compared);
  EXPECT(compared > 100000, "the descent ran on only %ld of %ld cases", compared, checked);
  /* Ties: thr == base exactly, at scales where a descent would take ~10^9 floats. */
  float c0 = intrus_search_cut(-3.0, -3.0);
  EXPECT(is_largest_below(c0, -3.0, -3.0) && c0 < 0.0f && c0 > -1e-11f, "tie: %.9g",
         (double)c0);
  /* Non-finite and out-of-range thresholds keep their meaning. */
  EXPECT(intrus_search_cut(-INFINITY, -1.0) == -INFINITY, "thr -inf");
  EXPECT(intrus_search_cut(-1e300, 0.0) == -INFINITY, "below float range");
  EXPECT(isnan(intrus_search_cut(NAN, 0.0)), "NaN stays NaN (no token passes a NaN cut)");
  printf("compared with the descent on %ld of %ld cases\n", compared, checked);
  return test_finish("test_search_cut");
}

/* NumPy's default generator, reproduced so that a paired bootstrap draws the resamples
 * sacreBLEU draws: `np.random.default_rng(seed)` (PCG64 seeded through SeedSequence)
 * followed by `Generator.choice(n, size=(samples, n), replace=True)`, which is
 * `Generator.integers(0, n, dtype=np.int64)` filled in row-major order (Lemire's bounded
 * method on the generator's buffered 32-bit outputs when n - 1 fits in 32 bits).
 *
 * Checked against NumPy 1.24 (tests/test_numpy_rng.c holds its outputs). NumPy promises no
 * stream compatibility across versions for Generator, but this stream has been unchanged
 * from 1.17 on. */
#ifndef INTRUS_EVAL_NUMPY_RNG_H
#define INTRUS_EVAL_NUMPY_RNG_H

#include <stdint.h>

/* 128-bit LCG state and increment as (hi, lo) halves, plus PCG64's spare 32-bit half. */
struct intrus_np_rng {
  uint64_t state_hi, state_lo, inc_hi, inc_lo;
  uint32_t spare;
  int has_spare;
};

/* `np.random.default_rng(seed)` for a non-negative integer seed. */
void intrus_np_rng_seed(struct intrus_np_rng *r, uint64_t seed);
/* PCG64's next 64-bit output (XSL-RR of the stepped state). */
uint64_t intrus_np_rng_next64(struct intrus_np_rng *r);
/* PCG64's next 32-bit output: the low half of a 64-bit output, then its high half. */
uint32_t intrus_np_rng_next32(struct intrus_np_rng *r);
/* One element of `integers(0, n, dtype=np.int64)` for 1 <= n <= 2^32. */
uint32_t intrus_np_rng_below(struct intrus_np_rng *r, uint64_t n);

#endif

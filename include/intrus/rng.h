/* Deterministic random numbers. Everything random in intrus (init, dropout, sampling,
 * shuffling) derives from a user seed through these functions, so a run is repeatable
 * for a given seed and thread count. */
#ifndef INTRUS_RNG_H
#define INTRUS_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sequential generator (xoshiro256**), seeded through splitmix64. */
struct intrus_rng {
  uint64_t s[4];
};

void intrus_rng_seed(struct intrus_rng *r, uint64_t seed);
uint64_t intrus_rng_next(struct intrus_rng *r);
/* Uniform in [0, 1) with 24 random bits. */
float intrus_rng_uniform(struct intrus_rng *r);
/* Standard normal (Box-Muller). */
float intrus_rng_normal(struct intrus_rng *r);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t intrus_rng_below(struct intrus_rng *r, uint64_t n);

/* Counter-based: a pure function of (key, counter), so element i of a parallel loop
 * gets the same number whichever thread computes it. */
uint64_t intrus_hash64(uint64_t key, uint64_t counter);
static inline float intrus_hash_uniform(uint64_t key, uint64_t counter) {
  return (float)(intrus_hash64(key, counter) >> 40) * (1.0f / 16777216.0f);
}
/* The same contract for loops that must vectorise (dropout): 32-bit multiplies and
 * shifts only, inline, no branches. Two rounds of the "lowbias32" xorshift-multiply
 * mixer (constants from Wellons' hash-prospector), keyed by the low half of key before
 * the first and the high half before the second; for a fixed key it is a bijection of
 * the counter. */
static inline uint32_t intrus_hash32(uint64_t key, uint32_t counter) {
  uint32_t x = counter ^ (uint32_t)key;
  x ^= x >> 16;
  x *= 0x21f0aaadU;
  x ^= x >> 15;
  x *= 0xd35a2d97U;
  x ^= x >> 15;
  x ^= (uint32_t)(key >> 32);
  x ^= x >> 16;
  x *= 0x21f0aaadU;
  x ^= x >> 15;
  x *= 0xd35a2d97U;
  x ^= x >> 15;
  return x;
}

/* 64-bit FNV-1a of a byte string, chainable through h (start with INTRUS_FNV_INIT). */
#define INTRUS_FNV_INIT 0xcbf29ce484222325ULL
uint64_t intrus_fnv1a(uint64_t h, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif

#include <math.h>

#include "intrus/rng.h"

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void intrus_rng_seed(struct intrus_rng *r, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t intrus_rng_next(struct intrus_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

float intrus_rng_uniform(struct intrus_rng *r) {
  return (float)(intrus_rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

float intrus_rng_normal(struct intrus_rng *r) {
  /* u1 in (0, 1] so the log is finite. */
  double u1 = ((double)(intrus_rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  double u2 = (double)(intrus_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
  return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint64_t intrus_rng_below(struct intrus_rng *r, uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = intrus_rng_next(r);
  while (x >= limit);
  return x % n;
}

uint64_t intrus_hash64(uint64_t key, uint64_t counter) {
  uint64_t x = key ^ (counter * 0xd6e8feb86659fd93ULL);
  uint64_t s = x;
  (void)splitmix64(&s);
  return splitmix64(&s);
}

uint64_t intrus_fnv1a(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

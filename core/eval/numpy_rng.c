/* NumPy's PCG64 + SeedSequence + bounded integers (see numpy_rng.h). 128-bit arithmetic
 * is done on 64-bit halves so that the file stays plain C11. */
#include "eval/numpy_rng.h"

/* SeedSequence's hash constants (numpy/random/bit_generator.pyx). */
#define SS_INIT_A 0x43b0d7e5U
#define SS_MULT_A 0x931e8875U
#define SS_INIT_B 0x8b51f9ddU
#define SS_MULT_B 0x58f38dedU
#define SS_MIX_MULT_L 0xca01f9ddU
#define SS_MIX_MULT_R 0x4973f715U
#define SS_POOL 4

/* PCG64's default 128-bit multiplier. */
#define PCG_MULT_HI 0x2360ed051fc65da4ULL
#define PCG_MULT_LO 0x4385df649fccf645ULL

static uint32_t ss_hashmix(uint32_t value, uint32_t *hash_const) {
  value ^= *hash_const;
  *hash_const *= SS_MULT_A;
  value *= *hash_const;
  value ^= value >> 16;
  return value;
}

static uint32_t ss_mix(uint32_t x, uint32_t y) {
  uint32_t result = SS_MIX_MULT_L * x - SS_MIX_MULT_R * y;
  result ^= result >> 16;
  return result;
}

/* SeedSequence(seed).generate_state(4, np.uint64), as 8 little-endian 32-bit words. */
static void seed_sequence_state(uint64_t seed, uint32_t out[8]) {
  /* The entropy as NumPy coerces an int: 32-bit words, least significant first, and at
   * least one word (so 0 is [0]). */
  uint32_t entropy[2];
  int n_entropy = 0;
  do {
    entropy[n_entropy++] = (uint32_t)seed;
    seed >>= 32;
  } while (seed && n_entropy < 2);

  uint32_t pool[SS_POOL], hash_const = SS_INIT_A;
  for (int i = 0; i < SS_POOL; i++)
    pool[i] = ss_hashmix(i < n_entropy ? entropy[i] : 0, &hash_const);
  for (int src = 0; src < SS_POOL; src++)
    for (int dst = 0; dst < SS_POOL; dst++)
      if (src != dst) pool[dst] = ss_mix(pool[dst], ss_hashmix(pool[src], &hash_const));
  /* Entropy beyond the pool size would be mixed in here; a uint64_t never has any. */

  uint32_t gen_const = SS_INIT_B;
  for (int i = 0; i < 8; i++) {
    uint32_t v = pool[i % SS_POOL];
    v ^= gen_const;
    gen_const *= SS_MULT_B;
    v *= gen_const;
    v ^= v >> 16;
    out[i] = v;
  }
}

/* (hi, lo) = (hi, lo) * (mhi, mlo) + (ahi, alo) mod 2^128. */
static void mul_add_128(uint64_t *hi, uint64_t *lo, uint64_t mhi, uint64_t mlo, uint64_t ahi,
                        uint64_t alo) {
  uint64_t a = *lo, b = *hi;
  /* Full 64x64 -> 128 product of the low halves. */
  uint64_t a0 = a & 0xffffffffU, a1 = a >> 32, m0 = mlo & 0xffffffffU, m1 = mlo >> 32;
  uint64_t p00 = a0 * m0, p01 = a0 * m1, p10 = a1 * m0, p11 = a1 * m1;
  uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffU) + (p10 & 0xffffffffU);
  uint64_t plo = (mid << 32) | (p00 & 0xffffffffU);
  uint64_t phi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
  phi += a * mhi + b * mlo; /* the cross terms, mod 2^64 */
  uint64_t rlo = plo + alo;
  *hi = phi + ahi + (rlo < plo);
  *lo = rlo;
}

static void pcg_step(struct intrus_np_rng *r) {
  mul_add_128(&r->state_hi, &r->state_lo, PCG_MULT_HI, PCG_MULT_LO, r->inc_hi, r->inc_lo);
}

void intrus_np_rng_seed(struct intrus_np_rng *r, uint64_t seed) {
  uint32_t w[8];
  seed_sequence_state(seed, w);
  /* generate_state(4, np.uint64): four words, each two 32-bit words little-endian; PCG64
   * takes words 0-1 as the 128-bit seed and words 2-3 as the stream, high word first. */
  uint64_t s_hi = (uint64_t)w[0] | (uint64_t)w[1] << 32, s_lo = (uint64_t)w[2] | (uint64_t)w[3] << 32;
  uint64_t i_hi = (uint64_t)w[4] | (uint64_t)w[5] << 32, i_lo = (uint64_t)w[6] | (uint64_t)w[7] << 32;
  /* pcg_setseq_128_srandom_r: inc = (initseq << 1) | 1; step; state += initstate; step. */
  r->inc_hi = (i_hi << 1) | (i_lo >> 63);
  r->inc_lo = (i_lo << 1) | 1U;
  r->state_hi = 0;
  r->state_lo = 0;
  pcg_step(r);
  uint64_t lo = r->state_lo + s_lo;
  r->state_hi += s_hi + (lo < s_lo);
  r->state_lo = lo;
  pcg_step(r);
  r->has_spare = 0;
  r->spare = 0;
}

uint64_t intrus_np_rng_next64(struct intrus_np_rng *r) {
  pcg_step(r);
  uint64_t x = r->state_hi ^ r->state_lo;
  unsigned rot = (unsigned)(r->state_hi >> 58);
  return (x >> rot) | (x << ((64 - rot) & 63));
}

uint32_t intrus_np_rng_next32(struct intrus_np_rng *r) {
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  uint64_t next = intrus_np_rng_next64(r);
  r->has_spare = 1;
  r->spare = (uint32_t)(next >> 32);
  return (uint32_t)next;
}

uint32_t intrus_np_rng_below(struct intrus_np_rng *r, uint64_t n) {
  if (n <= 1) return 0; /* NumPy draws nothing for a range of one value */
  if (n == 0x100000000ULL) return intrus_np_rng_next32(r);
  uint64_t rng_excl = n;
  uint64_t m = (uint64_t)intrus_np_rng_next32(r) * rng_excl;
  uint32_t leftover = (uint32_t)m;
  if (leftover < rng_excl) {
    uint32_t threshold = (uint32_t)((0xffffffffULL - (n - 1)) % rng_excl);
    while (leftover < threshold) {
      m = (uint64_t)intrus_np_rng_next32(r) * rng_excl;
      leftover = (uint32_t)m;
    }
  }
  return (uint32_t)(m >> 32);
}

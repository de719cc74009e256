/* The NumPy-compatible generator (core/eval/numpy_rng.c) against NumPy 1.24's own outputs,
 * printed by /usr/bin/python3 with python3-numpy (commands beside each case). Every
 * value here came from NumPy, none from this code. */
#include "eval/numpy_rng.h"
#include "testutil.h"

int main(void) {
  struct intrus_np_rng r;

  /* np.random.default_rng(seed).bit_generator.random_raw(3): SeedSequence + PCG64 for a
   * one-word seed, seed 0 (still one word) and a two-word seed. */
  static const struct {
    uint64_t seed, raw[3];
  } raw[] = {
      {12345, {4193609425186963869ULL, 5843160025838961886ULL, 14708796524633321433ULL}},
      {0, {11749869230777074271ULL, 4976686463289251617ULL, 755828109848996024ULL}},
      {7, {11530976094092348043ULL, 16550673365885938325ULL, 14308875409591826786ULL}},
      {(1ULL << 40) + 5, {87427594128977387ULL, 6872972437549564694ULL, 10832470946844950135ULL}},
  };
  for (size_t c = 0; c < sizeof raw / sizeof raw[0]; c++) {
    intrus_np_rng_seed(&r, raw[c].seed);
    for (int i = 0; i < 3; i++) {
      uint64_t got = intrus_np_rng_next64(&r);
      EXPECT(got == raw[c].raw[i], "seed %llu output %d: %llu, NumPy %llu",
             (unsigned long long)raw[c].seed, i, (unsigned long long)got,
             (unsigned long long)raw[c].raw[i]);
    }
  }

  /* np.random.default_rng(12345).choice(7, size=(2, 7), replace=True): the 32-bit
   * halves, low then high, through Lemire's method, row-major. */
  static const uint32_t choice7[14] = {4, 1, 5, 2, 1, 5, 4, 4, 6, 2, 5, 2, 3, 4};
  intrus_np_rng_seed(&r, 12345);
  for (int i = 0; i < 14; i++) {
    uint32_t got = intrus_np_rng_below(&r, 7);
    EXPECT(got == choice7[i], "choice(7) element %d: %u, NumPy %u", i, got, choice7[i]);
  }

  /* a = np.random.default_rng(12345).choice(2000, size=(1000, 2000)): a sacreBLEU-sized
   * draw of 2 million; a[0][:6], a[999][-4:] and a.sum() = 1997782535. */
  static const uint32_t head[6] = {1398, 454, 1577, 633, 408, 1594};
  static const uint32_t tail[4] = {554, 1996, 1445, 1222};
  intrus_np_rng_seed(&r, 12345);
  uint64_t sum = 0;
  for (int i = 0; i < 2000000; i++) {
    uint32_t v = intrus_np_rng_below(&r, 2000);
    sum += v;
    if (i < 6) EXPECT(v == head[i], "choice(2000) element %d: %u, NumPy %u", i, v, head[i]);
    if (i >= 2000000 - 4)
      EXPECT(v == tail[i - (2000000 - 4)], "choice(2000) element %d: %u, NumPy %u", i, v,
             tail[i - (2000000 - 4)]);
  }
  EXPECT(sum == 1997782535ULL, "choice(2000) sum %llu, NumPy 1997782535",
         (unsigned long long)sum);

  /* default_rng(12345).integers(0, 3000000000, size=12, dtype=np.int64): 2^32 mod 3e9 is
   * 30% of the range, so Lemire's rejection loop runs (a short cut would shift the
   * stream). */
  static const uint32_t big[12] = {2097645094, 682008066,  2365940964, 950275018,
                                   2392096371, 2028764011, 2518275128, 1794926260,
                                   639429039,  560202556,  687406213,  2018268131};
  intrus_np_rng_seed(&r, 12345);
  for (int i = 0; i < 12; i++) {
    uint32_t got = intrus_np_rng_below(&r, 3000000000ULL);
    EXPECT(got == big[i], "integers(0, 3e9) element %d: %u, NumPy %u", i, got, big[i]);
  }

  /* default_rng(2**40 + 5): choice(1, size=3) draws nothing, so choice(5, size=6) after
   * it is [0, 0, 2, 1, 4, 2]. */
  static const uint32_t five[6] = {0, 0, 2, 1, 4, 2};
  intrus_np_rng_seed(&r, (1ULL << 40) + 5);
  for (int i = 0; i < 3; i++) EXPECT(intrus_np_rng_below(&r, 1) == 0, "choice(1)");
  for (int i = 0; i < 6; i++) {
    uint32_t got = intrus_np_rng_below(&r, 5);
    EXPECT(got == five[i], "choice(5) element %d: %u, NumPy %u", i, got, five[i]);
  }

  /* default_rng(42).integers(0, 2**32, size=4, dtype=np.int64): the full 32-bit range
   * takes the raw halves. */
  static const uint32_t full[4] = {383329928U, 3324115917U, 2811363265U, 1884968545U};
  intrus_np_rng_seed(&r, 42);
  for (int i = 0; i < 4; i++) {
    uint32_t got = intrus_np_rng_below(&r, 1ULL << 32);
    EXPECT(got == full[i], "integers(0, 2**32) element %d: %u, NumPy %u", i, got, full[i]);
  }
  return test_finish("test_numpy_rng");
}

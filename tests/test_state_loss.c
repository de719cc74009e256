/* ins_state_losses (intrus analyze states) against brute force: every state of each
 * sentence's random order is rebuilt here from ins_uniform_order, scored with the full
 * token distribution at every slot, and its loss summed over the brute-force correct set
 * (canonical pairs only for a canonical model). Also: the orders are permutations and
 * uniform, the states come in sentence and k order, a sentence scores the same alone as
 * in a batch, and batches over the per-call row limit are split. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/rng.h"
#include "toy_insertion.h"

#define VOCAB 12
#define B 7
#define MAXN 40
#define SEED 5

/* -log sum of p(i, c) over the brute-force correct pairs of part (k tokens of y), or
 * -log p(finish) when part is y; *logp_finish gets log p(finish). */
static double brute_loss(struct intrus_model *m, const struct intrus_src_batch *sb, int sent,
                         const int32_t *y, int n, const int32_t *part, int k,
                         double *logp_finish) {
  int cslot[(MAXN + 1) * MAXN];
  int32_t ctok[(MAXN + 1) * MAXN];
  float pos[MAXN + 2], *tok = malloc(sizeof(float) * (MAXN + 1) * VOCAB);
  bool e = !toy_state_scores(m, sb, sent, part, k, pos, tok);
  double loss = NAN;
  *logp_finish = pos[k + 1];
  if (k == n) {
    loss = -pos[k + 1];
  } else if (!e) {
    int np = intrus_ins_correct_brute(y, n, part, k, cslot, ctok, (MAXN + 1) * MAXN);
    if (intrus_model_canonical(m)) np = intrus_ins_canonical(part, k, cslot, ctok, np);
    double sum = 0;
    for (int j = 0; j < np; j++)
      sum += exp((double)pos[cslot[j]] + tok[(size_t)cslot[j] * VOCAB + (size_t)ctok[j]]);
    loss = -log(sum);
  }
  free(tok);
  return loss;
}

static void check_model(struct intrus_model *m, const char *name) {
  /* Sources; targets of lengths 0 to 40 over 8 tokens (many repeats: the set semantics
   * and the canonical rule matter). Five of 40 pass the 4096-row call limit together. */
  static const int lens[B] = {3, 0, 40, 6, 40, 40, 40};
  int32_t src[B * 5], tgt[B * MAXN];
  int src_lens[B];
  struct intrus_rng r;
  intrus_rng_seed(&r, 17);
  for (int b = 0; b < B; b++) {
    src_lens[b] = 2 + b % 4;
    for (int i = 0; i < 5; i++)
      src[b * 5 + i] =
          i < src_lens[b] ? INTRUS_NUM_SPECIAL + (int)intrus_rng_below(&r, VOCAB - 4) : 0;
    for (int i = 0; i < MAXN; i++)
      tgt[b * MAXN + i] =
          i < lens[b] ? INTRUS_NUM_SPECIAL + (int)intrus_rng_below(&r, VOCAB - 4) : 0;
  }
  struct intrus_src_batch sb = {.batch = B, .len = 5, .tokens = src, .lens = src_lens};
  struct intrus_tgt_batch tb = {.batch = B, .len = MAXN, .tokens = tgt, .lens = lens};
  uint64_t keys[B];
  size_t total = 0;
  for (int b = 0; b < B; b++) keys[b] = 1000 + 7 * (uint64_t)b, total += (size_t)lens[b] + 1;
  struct ins_state_loss *out = calloc(total, sizeof *out);
  intrus_ctx *scratch = intrus_ctx_create(0);
  intrus_ctx_set_training(scratch, false);
  intrus_ctx_set_grad(scratch, false);
  struct intrus_error err = {0};
  enum intrus_status e = ins_state_losses(m, scratch, &sb, &tb, SEED, keys, out, &err);
  EXPECT(e == INTRUS_OK, "%s: ins_state_losses: %s", name, err.msg);

  double worst = 0, worst_finish = 0;
  size_t s = 0;
  for (int b = 0; b < B && !e; b++) {
    int n = lens[b], perm[MAXN];
    const int32_t *y = tgt + b * MAXN;
    ins_uniform_order(SEED, keys[b], n, perm);
    for (int k = 0; k <= n; k++, s++) {
      EXPECT(out[s].sent == b && out[s].k == k && out[s].n == n,
             "%s: state %zu is (%d, %d, %d), expected (%d, %d, %d)", name, s, out[s].sent,
             out[s].k, out[s].n, b, k, n);
      int32_t part[MAXN];
      unsigned char chosen[MAXN] = {0};
      for (int j = 0; j < k; j++) chosen[perm[j]] = 1;
      for (int i = 0, w = 0; i < n; i++)
        if (chosen[i]) part[w++] = y[i];
      double lf, want = brute_loss(m, &sb, b, y, n, part, k, &lf);
      worst = fmax(worst, fabs(out[s].loss - want) / fmax(1.0, fabs(want)));
      worst_finish = fmax(worst_finish, fabs(out[s].logp_finish - lf) / fmax(1.0, fabs(lf)));
    }
  }
  EXPECT(worst < 1e-4, "%s: state losses differ from brute force by %g (relative)", name,
         worst);
  EXPECT(worst_finish < 1e-4, "%s: log p(finish) differs from brute force by %g", name,
         worst_finish);

  /* Sentences 3 and 4 alone, with their keys: the same states and losses. */
  struct intrus_src_batch sb2 = {.batch = 2, .len = 5, .tokens = src + 3 * 5,
                                 .lens = src_lens + 3};
  struct intrus_tgt_batch tb2 = {.batch = 2, .len = MAXN, .tokens = tgt + 3 * MAXN,
                                 .lens = lens + 3};
  struct ins_state_loss out2[6 + 1 + 40 + 1];
  e = ins_state_losses(m, scratch, &sb2, &tb2, SEED, keys + 3, out2, &err);
  EXPECT(e == INTRUS_OK, "%s: sub-batch: %s", name, err.msg);
  size_t at = 0;
  for (int b = 0; b < 3; b++) at += (size_t)lens[b] + 1;
  double diff = 0;
  for (size_t j = 0; j < 6 + 1 + 40 + 1 && !e; j++)
    diff = fmax(diff, fabs(out2[j].loss - out[at + j].loss));
  EXPECT(diff < 1e-4, "%s: a sentence scores %g differently in another batch", name, diff);
  free(out);
  intrus_ctx_destroy(scratch);
}

/* Orders are permutations, and uniform: over 24000 orders of 4 positions each of the 24
 * permutations comes 1000 +- 5 standard deviations (31.2) times. */
static void test_orders(void) {
  int counts[256] = {0};
  for (uint64_t key = 0; key < 24000; key++) {
    int p[4], seen = 0;
    ins_uniform_order(3, key, 4, p);
    for (int i = 0; i < 4; i++) seen |= 1 << p[i];
    EXPECT(seen == 15, "order %llu is not a permutation", (unsigned long long)key);
    counts[p[0] * 64 + p[1] * 16 + p[2] * 4 + p[3]]++;
  }
  int perms = 0, worst = 0;
  for (int i = 0; i < 256; i++)
    if (counts[i]) perms++, worst = abs(counts[i] - 1000) > worst ? abs(counts[i] - 1000) : worst;
  EXPECT(perms == 24 && worst < 156, "%d permutations, the furthest %d from 1000", perms, worst);
  int a[6], b[6];
  ins_uniform_order(3, 9, 6, a);
  ins_uniform_order(3, 9, 6, b);
  EXPECT(memcmp(a, b, sizeof a) == 0, "the same (seed, key) gave two orders");
}

int main(void) {
  char *cfg = test_read_srcfile("experiments/toy-intrus.cfg");
  if (!cfg) return 1;
  test_orders();
  struct intrus_model *m = toy_load_model(cfg, VOCAB);
  if (m) check_model(m, "toy-intrus");
  intrus_model_destroy(m);
  /* canonical, with the "pair" slots the real experiments use */
  char *pair = toy_canonical_pair(cfg);
  if (pair && (m = toy_load_model(pair, VOCAB))) {
    EXPECT(intrus_model_canonical(m), "the canonical model is not canonical");
    check_model(m, "canonical, pair slots");
    intrus_model_destroy(m);
  }
  free(pair);
  free(cfg);
  return test_finish("test_state_loss");
}

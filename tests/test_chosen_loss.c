/* loss = "chosen" (the order's own insertion only) against brute force: under the l2r
 * and r2l order policies, every state of every target (many repeated tokens) is rebuilt
 * here, the insertion the order makes from it found by trying every slot (the leftmost
 * slot that gives the same string, for a canonical model: the canonical rule), and scored
 * with the model's own position and token distributions. The sum over the states must
 * equal ins_train_loss's, for a plain and a canonical model with "pair" slots; and it
 * must differ from the main loss (which counts every correct insertion). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/rng.h"
#include "toy_insertion.h"

#define VOCAB 12
#define B 5
#define MAXN 12

/* -log p of inserting c into part (k tokens) so that the result is want (k + 1 tokens),
 * at the first slot that gives want (a canonical model's slot; the order's own slot
 * otherwise); -log p(finish) when want is NULL. */
static double brute_chosen(struct intrus_model *m, const struct intrus_src_batch *sb, int sent,
                           const int32_t *part, int k, const int32_t *want, int32_t c,
                           int order_slot) {
  float pos[MAXN + 2], tok[(MAXN + 1) * VOCAB];
  bool e = !toy_state_scores(m, sb, sent, part, k, pos, tok);
  double loss = NAN;
  if (!e && !want) {
    loss = -pos[k + 1];
  } else if (!e) {
    int slot = intrus_model_canonical(m) ? -1 : order_slot;
    for (int i = 0; i <= k && slot < 0; i++) {
      int32_t s[MAXN + 1];
      memcpy(s, part, (size_t)i * sizeof *s);
      s[i] = c;
      memcpy(s + i + 1, part + i, (size_t)(k - i) * sizeof *s);
      if (memcmp(s, want, (size_t)(k + 1) * sizeof *s) == 0) slot = i;
    }
    EXPECT(slot >= 0, "brute force: no slot gives the order's string");
    if (slot >= 0) loss = -((double)pos[slot] + tok[(size_t)slot * VOCAB + (size_t)c]);
  }
  return loss;
}

static void check_model(struct intrus_model *m, const char *name,
                        const struct intrus_plugin_search *search) {
  /* Targets over 3 tokens: long runs of one token, where the canonical rule moves an
   * appended token to the left of its run. */
  static const int lens[B] = {6, 1, 12, 0, 9};
  int32_t src[B * 4], tgt[B * MAXN];
  int src_lens[B];
  struct intrus_rng r;
  intrus_rng_seed(&r, 23);
  for (int b = 0; b < B; b++) {
    src_lens[b] = 2 + b % 3;
    for (int i = 0; i < 4; i++)
      src[b * 4 + i] =
          i < src_lens[b] ? INTRUS_NUM_SPECIAL + (int)intrus_rng_below(&r, VOCAB - 4) : 0;
    for (int i = 0; i < MAXN; i++)
      tgt[b * MAXN + i] = i < lens[b] ? INTRUS_NUM_SPECIAL + (int)intrus_rng_below(&r, 3) : 0;
  }
  struct intrus_src_batch sb = {.batch = B, .len = 4, .tokens = src, .lens = src_lens};
  struct intrus_tgt_batch tb = {.batch = B, .len = MAXN, .tokens = tgt, .lens = lens};
  static const char *const orders[2] = {"l2r", "r2l"};
  intrus_ctx *ctx = intrus_ctx_create(0), *scratch = intrus_ctx_create(0);
  for (int o = 0; o < 2; o++) {
    /* Brute force: the states of the order's trajectory, prefixes or suffixes. */
    double want = 0.0;
    int nstates = 0;
    for (int b = 0; b < B; b++) {
      const int32_t *y = tgt + b * MAXN;
      int n = lens[b];
      for (int k = 0; k <= n; k++, nstates++) {
        const int32_t *part = o == 0 ? y : y + (n - k);
        if (k == n) {
          want += brute_chosen(m, &sb, b, part, k, NULL, 0, 0);
          continue;
        }
        int32_t c = o == 0 ? y[k] : y[n - k - 1];
        const int32_t *next = o == 0 ? y : y + (n - k - 1);
        want += brute_chosen(m, &sb, b, part, k, next, c, o == 0 ? k : 0);
      }
    }
    struct intrus_error err = {0};
    struct toy_order ord;
    enum intrus_status st = toy_order_open(search, orders[o], &ord, &err);
    double got[2] = {NAN, NAN}; /* chosen, main */
    for (int kind = 0; !st && kind < 2; kind++) {
      struct ins_train_spec spec = {.order = ord.vt, .order_self = ord.self,
                                    .loss = INTRUS_INS_LOSS_MAIN, .chosen = kind == 0,
                                    .all_states = true};
      struct intrus_loss_out out;
      intrus_ctx_reset(ctx);
      intrus_ctx_set_training(ctx, false);
      st = ins_train_loss(m, ctx, scratch, &sb, &tb, &spec, 1, &out, &err);
      if (!st) got[kind] = out.nll_sum;
    }
    EXPECT(st == INTRUS_OK, "%s, order %s: %s", name, orders[o], err.msg);
    EXPECT(fabs(got[0] - want) <= 1e-4 * fabs(want),
           "%s, order %s: the chosen loss sums to %.6f over %d states, brute force %.6f", name,
           orders[o], got[0], nstates, want);
    /* The main loss counts every correct insertion: lower wherever a state has more. */
    EXPECT(got[1] < got[0] - 1e-3, "%s, order %s: main loss %.6f not below the chosen %.6f",
           name, orders[o], got[1], got[0]);
    printf("%s, order %s: chosen loss %.6f over %d states (brute force %.6f), main %.6f\n",
           name, orders[o], got[0], nstates, want, got[1]);
    toy_order_close(&ord);
  }
  intrus_ctx_destroy(ctx);
  intrus_ctx_destroy(scratch);
}

int main(void) {
  char *cfg = test_read_srcfile("experiments/toy-intrus.cfg");
  if (!cfg) return 1;
  struct intrus_plugin_search *search = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(search);
  struct intrus_model *m = toy_load_model(cfg, VOCAB);
  if (m) check_model(m, "toy-intrus", search);
  intrus_model_destroy(m);
  char *pair = toy_canonical_pair(cfg);
  if (pair && (m = toy_load_model(pair, VOCAB))) {
    EXPECT(intrus_model_canonical(m), "the canonical model is not canonical");
    check_model(m, "canonical, pair slots", search);
    intrus_model_destroy(m);
  }
  intrus_plugin_search_free(search);
  free(pair);
  free(cfg);
  return test_finish("test_chosen_loss");
}

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

#include "intrus/plugin.h"
#include "intrus/rng.h"
#include "model/insertion_model.h"
#include "testutil.h"

#define VOCAB 12
#define B 5
#define MAXN 12

static struct intrus_model *load_model(const char *cfg_text) {
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_string(cfg_text, "toy.cfg", &err);
  struct intrus_model *m = NULL;
  enum intrus_status st =
      cfg ? test_model_create(cfg, VOCAB, VOCAB, 7, NULL, &m, &err) : err.status;
  EXPECT(st == INTRUS_OK, "loading the model: %s", err.msg);
  intrus_config_free(cfg);
  return m;
}

/* -log p of inserting c into part (k tokens) so that the result is want (k + 1 tokens),
 * at the first slot that gives want (a canonical model's slot; the order's own slot
 * otherwise); -log p(finish) when want is NULL. */
static double brute_chosen(struct intrus_model *m, const struct intrus_src_batch *sb, int sent,
                           const int32_t *part, int k, const int32_t *want, int32_t c,
                           int order_slot) {
  intrus_ctx *ctx = intrus_ctx_create(0);
  intrus_ctx_set_training(ctx, false);
  intrus_ctx_set_grad(ctx, false);
  struct ins_model_scorer sc;
  struct intrus_error err = {0};
  int off[2] = {0, k}, slots[MAXN + 1], states[MAXN + 1];
  float pos[MAXN + 2], tok[(MAXN + 1) * VOCAB];
  struct intrus_ins_states st = {.count = 1, .sent = &sent, .off = off, .tok = part};
  for (int i = 0; i <= k; i++) slots[i] = i, states[i] = 0;
  enum intrus_status e = ins_scorer_open(&sc, m, ctx, sb, &err);
  if (!e) e = sc.sc.positions(sc.sc.user, &st, pos, &err);
  if (!e) e = sc.sc.tokens(sc.sc.user, k + 1, states, slots, tok, &err);
  EXPECT(e == INTRUS_OK, "brute force: %s", err.msg);
  double loss = NAN;
  if (!e && !want) {
    loss = -pos[k + 1];
  } else if (!e) {
    int slot = -1;
    for (int i = 0; i <= k && slot < 0; i++) {
      int32_t s[MAXN + 1];
      memcpy(s, part, (size_t)i * sizeof *s);
      s[i] = c;
      memcpy(s + i + 1, part + i, (size_t)(k - i) * sizeof *s);
      if (memcmp(s, want, (size_t)(k + 1) * sizeof *s) == 0) slot = i;
    }
    if (!intrus_model_canonical(m)) slot = order_slot;
    EXPECT(slot >= 0, "brute force: no slot gives the order's string");
    if (slot >= 0) loss = -((double)pos[slot] + tok[(size_t)slot * VOCAB + (size_t)c]);
  }
  ins_scorer_close(&sc);
  intrus_ctx_destroy(ctx);
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
    struct intrus_plugin *plugin = NULL;
    void *self = NULL;
    enum intrus_status st = intrus_plugin_load(search, INTRUS_KIND_ORDER, orders[o], &plugin, &err);
    const struct intrus_order_vtable *vt =
        st ? NULL : intrus_plugin_descriptor(plugin)->vtable;
    if (!st) st = vt->create(NULL, &self, &err);
    double got[2] = {NAN, NAN}; /* chosen, main */
    for (int kind = 0; !st && kind < 2; kind++) {
      struct ins_train_spec spec = {.order = vt, .order_self = self,
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
    if (self) vt->destroy(self);
    if (plugin) intrus_plugin_close(plugin);
  }
  intrus_ctx_destroy(ctx);
  intrus_ctx_destroy(scratch);
}

int main(void) {
  char *cfg = test_read_srcfile("experiments/toy-intrus.cfg");
  if (!cfg) return 1;
  struct intrus_plugin_search *search = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(search);
  struct intrus_model *m = load_model(cfg);
  if (m) check_model(m, "toy-intrus", search);
  intrus_model_destroy(m);
  char *canon = test_replace(cfg, "model: {\n  d_model = 32;",
                             "model: {\n  d_model = 32;\n  canonical = true;");
  char *pair = canon ? test_replace(canon, "plugin = \"insertion\"; layers = 1;",
                                    "plugin = \"insertion\"; layers = 1; slots = \"pair\";")
                     : NULL;
  EXPECT(pair != NULL, "toy-intrus.cfg's model group changed: update the replacements here");
  if (pair && (m = load_model(pair))) {
    EXPECT(intrus_model_canonical(m), "the canonical model is not canonical");
    check_model(m, "canonical, pair slots", search);
    intrus_model_destroy(m);
  }
  intrus_plugin_search_free(search);
  free(canon);
  free(pair);
  free(cfg);
  return test_finish("test_chosen_loss");
}

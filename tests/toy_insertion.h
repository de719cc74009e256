/* Helpers of the tests that score states of a small insertion model against brute force
 * (test_state_loss, test_chosen_loss) or open order policies by name (test_reference). */
#ifndef INTRUS_TESTS_TOY_INSERTION_H
#define INTRUS_TESTS_TOY_INSERTION_H

#include "intrus/insertion.h"
#include "intrus/plugin.h"
#include "model/insertion_model.h"
#include "testutil.h"

/* A model of cfg_text (a whole experiment file's text), vocab tokens on both sides, seed
 * 7; NULL (a failed check) when it does not load. */
static inline struct intrus_model *toy_load_model(const char *cfg_text, int vocab) {
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_string(cfg_text, "toy.cfg", &err);
  struct intrus_model *m = NULL;
  enum intrus_status st =
      cfg ? test_model_create(cfg, vocab, vocab, 7, NULL, &m, &err) : err.status;
  EXPECT(st == INTRUS_OK, "loading the model: %s", err.msg);
  intrus_config_free(cfg);
  return m;
}

/* experiments/toy-intrus.cfg's text made canonical with "pair" slots (what the real
 * experiments use); malloc'd, NULL (a failed check) when its model group changed. */
static inline char *toy_canonical_pair(const char *cfg) {
  char *canon = test_replace(cfg, "model: {\n  d_model = 32;",
                             "model: {\n  d_model = 32;\n  canonical = true;");
  char *pair = canon ? test_replace(canon, "plugin = \"insertion\"; layers = 1;",
                                    "plugin = \"insertion\"; layers = 1; slots = \"pair\";")
                     : NULL;
  free(canon);
  EXPECT(pair != NULL, "toy-intrus.cfg's model group changed: update the replacements here");
  return pair;
}

/* The model's log p(position) of state part (k tokens of sentence sent), pos[0..k+1]
 * (k+1: finish), and log p(token | slot) of every slot, tok[slot * V + c]. */
static inline bool toy_state_scores(struct intrus_model *m, const struct intrus_src_batch *sb,
                                    int sent, const int32_t *part, int k, float *pos,
                                    float *tok) {
  intrus_ctx *ctx = intrus_ctx_create(0);
  intrus_ctx_set_training(ctx, false);
  intrus_ctx_set_grad(ctx, false);
  struct ins_model_scorer sc;
  struct intrus_error err = {0};
  int off[2] = {0, k};
  int *slots = malloc(sizeof(int) * (size_t)(k + 1)), *states = calloc((size_t)k + 1, sizeof(int));
  for (int i = 0; i <= k; i++) slots[i] = i;
  struct intrus_ins_states st = {.count = 1, .sent = &sent, .off = off, .tok = part};
  enum intrus_status e = ins_scorer_open(&sc, m, ctx, sb, &err);
  if (!e) e = sc.sc.positions(sc.sc.user, &st, pos, &err);
  if (!e) e = sc.sc.tokens(sc.sc.user, k + 1, states, slots, tok, &err);
  EXPECT(e == INTRUS_OK, "scoring a state: %s", err.msg);
  ins_scorer_close(&sc);
  intrus_ctx_destroy(ctx);
  free(slots);
  free(states);
  return e == INTRUS_OK;
}

/* An order policy by plugin name, created with default settings. */
struct toy_order {
  struct intrus_plugin *plugin;
  const struct intrus_order_vtable *vt;
  void *self;
};
static inline enum intrus_status toy_order_open(const struct intrus_plugin_search *search,
                                                const char *name, struct toy_order *o,
                                                struct intrus_error *err) {
  memset(o, 0, sizeof *o);
  enum intrus_status st = intrus_plugin_load(search, INTRUS_KIND_ORDER, name, &o->plugin, err);
  if (!st) o->vt = intrus_plugin_descriptor(o->plugin)->vtable;
  if (!st) st = o->vt->create(NULL, &o->self, err);
  return st;
}
static inline void toy_order_close(struct toy_order *o) {
  if (o->self) o->vt->destroy(o->self);
  if (o->plugin) intrus_plugin_close(o->plugin);
}

#endif

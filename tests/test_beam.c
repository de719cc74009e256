/* Beam search against brute force on a tiny random model: with a beam as wide as the
 * space, the search must find the sequence that exhaustive enumeration scores best,
 * for every sentence of a batch; the decoder's incremental steps must give the same
 * log-probabilities as its teacher-forced training pass; beam 1 is greedy; a finish
 * penalty (search.finish_penalty) scores as brute force with the penalty says and
 * lengthens outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/model.h"
#include "intrus/search.h"
#include "testutil.h"

#define V 6 /* 4 specials + tokens 4 and 5 */

static const char *model_cfg =
    "model: { d_model = 8;"
    " encoder: { plugin = \"transformer\"; layers = 1; heads = 2; ff = 16; dropout = 0.0; };"
    " decoder: { plugin = \"autoregressive\"; layers = 2; heads = 2; ff = 16; dropout = 0.0; };"
    "};";

static struct intrus_model *make_model(struct intrus_config **cfg_out) {
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_string(model_cfg, "tiny.cfg", &err);
  if (!cfg) {
    fprintf(stderr, "%s\n", err.msg);
    exit(1);
  }
  struct intrus_model *m = NULL;
  if (test_model_create(cfg, 9, V, 7, NULL, &m, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    exit(1);
  }
  *cfg_out = cfg;
  return m;
}

/* log p(y, EOS | src) by teacher forcing. */
static double forced_logp(struct intrus_model *m, intrus_ctx *ctx, const int32_t *src, int slen,
                          const int32_t *y, int n) {
  intrus_ctx_reset(ctx);
  int32_t ybuf[8] = {0};
  memcpy(ybuf, y, (size_t)n * sizeof *y);
  struct intrus_src_batch sb = {.batch = 1, .len = slen, .tokens = src, .lens = &slen};
  int len = n;
  struct intrus_tgt_batch tb = {.batch = 1, .len = n > 0 ? n : 1, .tokens = ybuf, .lens = &len};
  struct intrus_train_opts o = {.direction = 1};
  struct intrus_loss_out out;
  struct intrus_error err = {0};
  if (intrus_model_loss(m, ctx, &sb, &tb, &o, &out, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    exit(1);
  }
  return -out.nll_sum;
}

static void test_steps_match_training_pass(struct intrus_model *m, intrus_ctx *ctx) {
  int32_t src[3] = {5, 7, 8}, y[4] = {4, 5, 5, 4};
  int slen = 3;
  double want = forced_logp(m, ctx, src, slen, y, 4);
  void *self;
  const struct intrus_decoder_vtable *dec = intrus_model_decoder(m, &self);
  struct intrus_error err = {0};
  intrus_ctx_reset(ctx);
  intrus_ctx_set_grad(ctx, false);
  struct intrus_src_batch sb = {.batch = 1, .len = slen, .tokens = src, .lens = &slen};
  struct intrus_memory mem;
  void *state;
  EXPECT(intrus_model_encode(m, ctx, &sb, &mem, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(dec->start(self, ctx, &mem, 1, 8, &state, &err) == INTRUS_OK, "%s", err.msg);
  double got = 0.0;
  int32_t tok = INTRUS_BOS;
  float logp[V];
  for (int t = 0; t <= 4; t++) {
    intrus_ctx_reset(ctx);
    EXPECT(dec->step(self, state, ctx, NULL, &tok, logp, &err) == INTRUS_OK, "%s", err.msg);
    int32_t next = t < 4 ? y[t] : INTRUS_EOS;
    got += logp[next];
    tok = next;
  }
  dec->finish(self, state);
  intrus_ctx_set_grad(ctx, true);
  EXPECT_NEAR(got, want, 1e-4);
}

struct best {
  double score, logp;
  int n;
  int32_t y[8];
};

/* Every token string of length 0..max_len over {4, 5}, scored (log p - beta) / (n + 1)^alpha
 * (beta: the finish penalty). */
static void exhaustive(struct intrus_model *m, intrus_ctx *ctx, const int32_t *src, int slen,
                       int max_len, float alpha, double beta, struct best *b) {
  b->score = -INFINITY;
  for (int n = 0; n <= max_len; n++)
    for (int code = 0; code < (1 << n); code++) {
      int32_t y[8];
      for (int i = 0; i < n; i++) y[i] = 4 + ((code >> i) & 1);
      double lp = forced_logp(m, ctx, src, slen, y, n);
      double s = (lp - beta) / pow(n + 1.0, alpha);
      if (s > b->score) {
        b->score = s;
        b->logp = lp;
        b->n = n;
        memcpy(b->y, y, sizeof y);
      }
    }
}

static int beta_longer; /* sentences a finish penalty made longer than without */

static void test_beam_equals_exhaustive(struct intrus_model *m, intrus_ctx *ctx, float alpha,
                                        double beta) {
  /* Three sentences of different lengths searched together; with a = 1, b = 0 their
   * length limits are 1, 2 and 3 tokens. */
  enum { B = 3, S = 3 };
  int32_t src[B * S] = {5, 0, 0, 6, 7, 0, 8, 4, 6};
  int lens[B] = {1, 2, 3};
  struct intrus_src_batch sb = {.batch = B, .len = S, .tokens = src, .lens = lens};
  struct intrus_beam_opts o = {.beam = 16, .alpha = alpha, .max_len_a = 1.0f, .max_len_b = 0,
                               .finish_penalty = beta};
  struct intrus_beam_result res[B];
  struct intrus_error err = {0};
  EXPECT(intrus_beam_search(m, ctx, &sb, &o, res, &err) == INTRUS_OK, "%s", err.msg);
  for (int b = 0; b < B; b++) {
    struct best want;
    exhaustive(m, ctx, src + b * S, lens[b], lens[b], alpha, beta, &want);
    struct best plain;
    exhaustive(m, ctx, src + b * S, lens[b], lens[b], alpha, 0.0, &plain);
    beta_longer += want.n > plain.n;
    EXPECT(want.n >= plain.n, "sentence %d: a finish penalty shortened the best output", b);
    EXPECT(res[b].len == want.n, "sentence %d: length %d, exhaustive %d", b, res[b].len, want.n);
    EXPECT(res[b].len == want.n &&
               memcmp(res[b].tokens, want.y, (size_t)want.n * sizeof(int32_t)) == 0,
           "sentence %d: beam and exhaustive disagree on the tokens", b);
    EXPECT_NEAR(res[b].score, want.score, 1e-4);
    if (beta >= 50.0)
      EXPECT(res[b].len == lens[b], "sentence %d: a large finish penalty gives %d tokens of %d",
             b, res[b].len, lens[b]);
    EXPECT_NEAR(res[b].logp, want.logp, 1e-4);
    free(res[b].tokens);
  }
}

static void test_greedy(struct intrus_model *m, intrus_ctx *ctx) {
  int32_t src[2] = {6, 7};
  int slen = 2;
  struct intrus_src_batch sb = {.batch = 1, .len = 2, .tokens = src, .lens = &slen};
  struct intrus_beam_opts o = {.beam = 1, .alpha = 1.0f, .max_len_a = 2.0f, .max_len_b = 3};
  struct intrus_beam_result res;
  struct intrus_error err = {0};
  EXPECT(intrus_beam_search(m, ctx, &sb, &o, &res, &err) == INTRUS_OK, "%s", err.msg);
  /* Greedy by hand through the step API: the best of {4, 5, EOS} at every step, EOS
   * forced at the limit of 2 * 2 + 3 tokens. */
  void *self;
  const struct intrus_decoder_vtable *dec = intrus_model_decoder(m, &self);
  intrus_ctx_reset(ctx);
  intrus_ctx_set_grad(ctx, false);
  struct intrus_memory mem;
  void *state;
  EXPECT(intrus_model_encode(m, ctx, &sb, &mem, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(dec->start(self, ctx, &mem, 1, 8, &state, &err) == INTRUS_OK, "%s", err.msg);
  int32_t tok = INTRUS_BOS, y[8];
  int n = 0;
  double lp = 0.0;
  float logp[V];
  for (;;) {
    intrus_ctx_reset(ctx);
    dec->step(self, state, ctx, NULL, &tok, logp, &err);
    int32_t arg = INTRUS_EOS;
    if (n < 7)
      for (int32_t v = 4; v <= 5; v++)
        if (logp[v] > logp[arg]) arg = v;
    lp += logp[arg];
    if (arg == INTRUS_EOS) break;
    y[n++] = tok = arg;
  }
  dec->finish(self, state);
  intrus_ctx_set_grad(ctx, true);
  EXPECT(res.len == n && memcmp(res.tokens, y, (size_t)n * sizeof *y) == 0,
         "beam 1 (%d tokens) differs from greedy (%d tokens)", res.len, n);
  EXPECT_NEAR(res.logp, lp, 1e-5);
  free(res.tokens);
}

int main(void) {
  struct intrus_config *cfg;
  struct intrus_model *m = make_model(&cfg);
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  test_steps_match_training_pass(m, ctx);
  test_beam_equals_exhaustive(m, ctx, 1.0f, 0.0);
  test_beam_equals_exhaustive(m, ctx, 0.0f, 0.0);
  /* search.finish_penalty: the scores change, the reported log p stays the model's. */
  test_beam_equals_exhaustive(m, ctx, 0.5f, 0.0);
  test_beam_equals_exhaustive(m, ctx, 0.5f, 0.7);
  test_beam_equals_exhaustive(m, ctx, 0.5f, 2.0);
  test_beam_equals_exhaustive(m, ctx, 0.5f, 50.0);
  EXPECT(beta_longer > 0, "the finish penalty lengthened no output");
  test_greedy(m, ctx);
  intrus_ctx_destroy(ctx);
  intrus_model_destroy(m);
  intrus_config_free(cfg);
  return test_finish("test_beam");
}

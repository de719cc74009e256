/* The `cnn` encoder (plugins/encoder-cnn, docs/cnn.md): its settings are read strictly
 * (errors name file:line); an image's memory at its real positions does not depend on
 * the other images of its batch; the memory mask follows the pools' ceil(h / 2) rule on
 * hand-worked sizes; the whole encoder's parameter gradients match central finite
 * differences; and a tiny model with the cnn encoder and either decoder, unchanged,
 * learns to read synthetic glyph images. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/model.h"
#include "intrus/nn.h"
#include "intrus/optim.h"
#include "intrus/rng.h"
#include "intrus/search.h"
#include "model/insertion_model.h"
#include "testutil.h"

/* A model whose encoder group is enc (the inside of `encoder: { ... }`) and decoder
 * dec; NULL and the error in err when it cannot be made. */
static struct intrus_model *make_model(const char *enc, const char *dec, int d, int vocab,
                                       struct intrus_config **cfg_out,
                                       struct intrus_error *err) {
  char text[2048];
  snprintf(text, sizeof text,
           "model: {\n"
           "  d_model = %d;\n"
           "  encoder: {\n"
           "    plugin = \"cnn\";\n"
           "    %s\n"
           "  };\n"
           "  decoder: { %s };\n"
           "};\n",
           d, enc, dec);
  struct intrus_config *cfg = intrus_config_load_string(text, "cnn.cfg", err);
  if (!cfg) return NULL;
  struct intrus_model *m = NULL;
  if (test_model_create(cfg, vocab, vocab, 7, NULL, &m, err)) {
    intrus_config_free(cfg);
    return NULL;
  }
  *cfg_out = cfg;
  return m;
}

static const char *ar_dec =
    "plugin = \"autoregressive\"; layers = 1; heads = 2; ff = 64; dropout = 0.0;";

/* ---- (a) settings ----------------------------------------------------------------- */

static void expect_config_error(const char *enc, const char *want) {
  struct intrus_config *cfg = NULL;
  struct intrus_error err = {0};
  struct intrus_model *m = make_model(enc, ar_dec, 16, 8, &cfg, &err);
  EXPECT(m == NULL, "encoder { %s } was accepted", enc);
  /* The encoder's settings are on line 5 of the text make_model writes. */
  EXPECT_CONTAINS(err.msg, "cnn.cfg:5:");
  EXPECT_CONTAINS(err.msg, want);
  intrus_model_destroy(m);
  intrus_config_free(cfg);
}

static void test_config(void) {
  expect_config_error("filtres = [4, 8];", "unknown setting 'filtres'");
  expect_config_error("filters = (4, \"8\");", "filters[1]: expected an integer");
  expect_config_error("filters = [4, 0];", "filters[1]: 0 is out of range");
  expect_config_error("filters = 4;", "expected an array of integers");
  expect_config_error("filters = [4, 8]; pool = [true];", "pool: has 1 entries but filters has 2");
  expect_config_error("pool = (true, 1, true, false, false);", "pool[1]: expected a boolean");
  expect_config_error("channels = 2;", "expected 1 (grey) or 3 (RGB)");
  expect_config_error("dropout = 1.5;", "out of range");
  expect_config_error("layer_norm = 1;", "expected a boolean");

  /* Defaults: Deng et al.'s filters, the first three stages pooling, layer norm. */
  struct intrus_config *cfg = NULL;
  struct intrus_error err = {0};
  struct intrus_model *m = make_model("", ar_dec, 16, 8, &cfg, &err);
  EXPECT(m != NULL, "defaults: %s", err.msg);
  if (m) {
    static const int filt[5] = {64, 128, 256, 512, 512};
    for (int i = 0; i < 5; i++) {
      char name[64];
      snprintf(name, sizeof name, "encoder.conv%d.w", i);
      intrus_tensor *w = intrus_params_find(intrus_model_params(m), name);
      EXPECT(w && w->shape[0] == filt[i] && w->shape[1] == (i ? filt[i - 1] : 1) &&
                 w->shape[2] == 3,
             "%s has the wrong shape", name);
    }
    EXPECT(intrus_params_find(intrus_model_params(m), "encoder.norm.gain") != NULL,
           "layer norm is on by default");
    /* A 64 x 320 image: three pools -> an 8 x 40 map. */
    intrus_ctx *ctx = intrus_ctx_create(0);
    intrus_ctx_set_grad(ctx, false);
    float *px = malloc(64 * 320 * sizeof *px);
    for (int i = 0; i < 64 * 320; i++) px[i] = (float)(i % 7) / 7.0f;
    struct intrus_src_batch sb = {.batch = 1, .channels = 1, .height = 64, .width = 320,
                                  .pixels = px};
    struct intrus_memory mem;
    EXPECT(intrus_model_encode(m, ctx, &sb, &mem, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT(mem.len == 320 && mem.states->shape[2] == 16, "64x320 -> %d positions", mem.len);
    free(px);
    intrus_ctx_destroy(ctx);
  }
  intrus_model_destroy(m);
  intrus_config_free(cfg);
}

/* ---- (b) batch independence, (c) the mask through the pools ---------------------- */

static const char *small_enc =
    "filters = [4, 6, 8]; pool = [true, true, false]; layer_norm = true;";

/* Copies a c x h x w image into plane b of a [B, c, H, W] batch padded with white. */
static void place(float *batch, int b, int c, int H, int W, const float *img, int h, int w) {
  for (int k = 0; k < c; k++)
    for (int i = 0; i < H; i++)
      for (int j = 0; j < W; j++)
        batch[(((size_t)b * c + k) * H + i) * W + j] =
            (i < h && j < w) ? img[((size_t)k * h + i) * w + j] : 1.0f;
}

static void test_batch_independence(void) {
  struct intrus_config *cfg = NULL;
  struct intrus_error err = {0};
  struct intrus_model *m = make_model(small_enc, ar_dec, 16, 8, &cfg, &err);
  EXPECT(m != NULL, "%s", err.msg);
  if (!m) return;
  struct intrus_rng r;
  intrus_rng_seed(&r, 5);
  enum { HA = 11, WA = 13, HB = 20, WB = 27 };
  float a[HA * WA], bimg[HB * WB];
  tu_fill_uniform(&r, a, HA * WA, 0.0f, 1.0f);
  tu_fill_uniform(&r, bimg, HB * WB, 0.0f, 1.0f);
  intrus_ctx *ctx = intrus_ctx_create(0);
  intrus_ctx_set_grad(ctx, false);

  /* alone, unpadded: 11 x 13 -> plane 12 x 16 -> 3 x 4; real 3 x 4 */
  struct intrus_src_batch alone = {.batch = 1, .channels = 1, .height = HA, .width = WA,
                                   .pixels = a};
  struct intrus_memory ma;
  EXPECT(intrus_model_encode(m, ctx, &alone, &ma, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(ma.len == 3 * 4, "alone: %d positions", ma.len);
  int ones = 0;
  for (int i = 0; i < ma.len; i++) ones += ma.mask[i];
  EXPECT(ones == 12, "alone: %d real positions", ones);

  /* second in a batch with a bigger image: plane 20 x 28 -> 5 x 7 */
  float *batch = malloc(2 * HB * WB * sizeof *batch);
  place(batch, 0, 1, HB, WB, bimg, HB, WB);
  place(batch, 1, 1, HB, WB, a, HA, WA);
  int hs[2] = {HB, HA}, ws[2] = {WB, WA};
  struct intrus_src_batch both = {.batch = 2, .channels = 1, .height = HB, .width = WB,
                                  .pixels = batch, .heights = hs, .widths = ws};
  struct intrus_memory mb;
  EXPECT(intrus_model_encode(m, ctx, &both, &mb, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(mb.len == 5 * 7, "batch: %d positions", mb.len);
  /* Both hold the small image's 12 real positions first, in the same order. */
  const int d = 16;
  double worst = 0.0;
  int real = 0, extra = 0;
  for (int t = 0; t < 12; t++) {
    const float *x = ma.states->data + (size_t)t * d;
    const float *y = mb.states->data + ((size_t)mb.len + t) * d;
    real += mb.mask[mb.len + t];
    for (int k = 0; k < d; k++) worst = fmax(worst, fabs((double)x[k] - y[k]));
  }
  for (int t = 0; t < mb.len; t++) extra += mb.mask[mb.len + t];
  EXPECT(real == 12 && extra == 12, "the small image has %d real positions in the batch, "
         "%d of them first", extra, real);
  EXPECT(worst <= 1e-5, "an image's memory changes by %.3g inside a batch", worst);
  printf("batch independence: largest difference %.3g over the 12 real positions\n", worst);
  free(batch);
  intrus_ctx_destroy(ctx);
  intrus_model_destroy(m);
  intrus_config_free(cfg);
}

static void test_mask(void) {
  struct intrus_config *cfg = NULL;
  struct intrus_error err = {0};
  /* Two pools (stages 1 and 3): the plane rounds up to multiples of 4. */
  struct intrus_model *m =
      make_model("filters = [2, 2, 2]; pool = [true, false, true]; layer_norm = false;",
                 ar_dec, 8, 8, &cfg, &err);
  EXPECT(m != NULL, "%s", err.msg);
  if (!m) return;
  intrus_ctx *ctx = intrus_ctx_create(0);
  intrus_ctx_set_grad(ctx, false);
  /* Batch plane 10 x 7 -> 12 x 8 -> 6 x 4 -> 3 x 2. Real sizes, ceil(h / 2) per pool:
   *   10 x 7 -> 5 x 4 -> 3 x 2: all six positions
   *    3 x 2 -> 2 x 1 -> 1 x 1: (0, 0) only
   *    6 x 5 -> 3 x 3 -> 2 x 2: rows 0-1, columns 0-1, four positions
   * each first in the memory (a prefix mask). */
  enum { B = 3, H = 10, W = 7 };
  float *px = malloc((size_t)B * H * W * sizeof *px);
  for (int i = 0; i < B * H * W; i++) px[i] = (float)((i * 37) % 11) / 11.0f;
  int hs[B] = {10, 3, 6}, ws[B] = {7, 2, 5};
  struct intrus_src_batch sb = {.batch = B, .channels = 1, .height = H, .width = W,
                                .pixels = px, .heights = hs, .widths = ws};
  struct intrus_memory mem;
  EXPECT(intrus_model_encode(m, ctx, &sb, &mem, &err) == INTRUS_OK, "%s", err.msg);
  static const uint8_t want[B][6] = {{1, 1, 1, 1, 1, 1}, {1, 0, 0, 0, 0, 0}, {1, 1, 1, 1, 0, 0}};
  EXPECT(mem.len == 6, "%d positions, want 3 x 2", mem.len);
  if (mem.len == 6)
    for (int b = 0; b < B; b++)
      EXPECT(memcmp(mem.mask + b * 6, want[b], 6) == 0,
             "image %d: mask %d%d%d%d%d%d", b, mem.mask[b * 6], mem.mask[b * 6 + 1],
             mem.mask[b * 6 + 2], mem.mask[b * 6 + 3], mem.mask[b * 6 + 4], mem.mask[b * 6 + 5]);
  /* heights/widths NULL: nothing is padded, every position is real. */
  sb.heights = sb.widths = NULL;
  EXPECT(intrus_model_encode(m, ctx, &sb, &mem, &err) == INTRUS_OK, "%s", err.msg);
  int ones = 0;
  for (int t = 0; t < B * mem.len; t++) ones += mem.mask[t];
  EXPECT(ones == B * 6, "without sizes %d of %d positions are real", ones, B * 6);
  /* A size outside the plane is refused. */
  int bad_h[B] = {11, 3, 6};
  sb.heights = bad_h;
  sb.widths = ws;
  EXPECT(intrus_model_encode(m, ctx, &sb, &mem, &err) == INTRUS_ERR_INVALID,
         "an image taller than its batch was accepted");
  EXPECT_CONTAINS(err.msg, "image 0 is 11 x 7");
  free(px);
  intrus_ctx_destroy(ctx);
  intrus_model_destroy(m);
  intrus_config_free(cfg);
}

/* ---- (d) finite differences over every parameter ---------------------------------- */

/* sum over the real positions of memory * r, in double. */
static double objective(struct intrus_model *m, intrus_ctx *ctx,
                        const struct intrus_src_batch *sb, const float *r) {
  intrus_ctx_reset(ctx);
  struct intrus_memory mem;
  struct intrus_error err = {0};
  if (intrus_model_encode(m, ctx, sb, &mem, &err)) return NAN;
  const int d = mem.states->shape[2];
  double s = 0.0;
  for (size_t i = 0; i < mem.states->n; i++)
    s += mem.mask[i / d] ? (double)mem.states->data[i] * r[i] : 0.0;
  return s;
}

static void test_gradients(void) {
  struct intrus_config *cfg = NULL;
  struct intrus_error err = {0};
  struct intrus_model *m = make_model(
      "filters = [2, 3]; pool = [true, false]; layer_norm = true;", ar_dec, 4, 8, &cfg, &err);
  EXPECT(m != NULL, "%s", err.msg);
  if (!m) return;
  struct intrus_params *p = intrus_model_params(m);
  /* Parameters off their initial values (zero biases, unit gains) so that every term
   * of the gradient is exercised. */
  struct intrus_rng r;
  intrus_rng_seed(&r, 11);
  float *vals = intrus_params_values(p);
  const size_t np = intrus_params_numel(p);
  size_t nenc = 0;
  for (size_t i = 0; i < intrus_params_count(p); i++) {
    intrus_tensor *t = intrus_params_at(p, i);
    if (strncmp(t->name, "encoder.", 8) != 0) continue;
    for (size_t k = 0; k < t->n; k++) t->data[k] += 0.3f * (2.0f * intrus_rng_uniform(&r) - 1.0f);
    nenc += t->n;
  }
  (void)vals;
  (void)np;
  enum { B = 2, H = 5, W = 6 };
  float px[B * H * W];
  tu_fill_uniform(&r, px, B * H * W, 0.0f, 1.0f);
  int hs[B] = {5, 3}, ws[B] = {6, 4};
  struct intrus_src_batch sb = {.batch = B, .channels = 1, .height = H, .width = W,
                                .pixels = px, .heights = hs, .widths = ws};
  intrus_ctx *ctx = intrus_ctx_create(0);
  /* the analytic gradient: memory 3 x 4 positions of d = 4 */
  intrus_ctx_reset(ctx);
  struct intrus_memory mem;
  EXPECT(intrus_model_encode(m, ctx, &sb, &mem, &err) == INTRUS_OK, "%s", err.msg);
  const size_t n = mem.states->n;
  float *rw = malloc(n * sizeof *rw), *seed = malloc(n * sizeof *seed);
  tu_fill_uniform(&r, rw, n, -1.0f, 1.0f);
  for (size_t i = 0; i < n; i++) seed[i] = mem.mask[i / 4] ? rw[i] : 0.0f;
  intrus_params_zero_grad(p);
  intrus_backward_seed(ctx, mem.states, seed);
  int bad = 0, checked = 0;
  double worst = 0.0;
  const float eps = 1e-3f;
  for (size_t i = 0; i < intrus_params_count(p); i++) {
    intrus_tensor *t = intrus_params_at(p, i);
    if (strncmp(t->name, "encoder.", 8) != 0) continue;
    const float *g = t->grad;
    for (size_t k = 0; k < t->n; k++) {
      const float keep = t->data[k];
      t->data[k] = keep + eps;
      double up = objective(m, ctx, &sb, rw);
      t->data[k] = keep - eps;
      double down = objective(m, ctx, &sb, rw);
      t->data[k] = keep;
      double num = (up - down) / (2.0 * eps), ana = g ? g[k] : 0.0;
      double rel = fabs(num - ana) / fmax(1.0, fmax(fabs(num), fabs(ana)));
      worst = fmax(worst, rel);
      checked++;
      if (rel > 1e-2 && bad++ < 5)
        fprintf(stderr, "%s[%zu]: numeric %.6g, analytic %.6g\n", t->name, k, num, ana);
    }
  }
  EXPECT(bad == 0 && checked == (int)nenc, "%d of %d encoder parameters disagree", bad, checked);
  printf("gradient check: %d encoder parameters, worst relative difference %.2g\n", checked,
         worst);
  free(rw);
  free(seed);
  intrus_ctx_destroy(ctx);
  intrus_model_destroy(m);
  intrus_config_free(cfg);
}

/* ---- (e) learning to read glyphs -------------------------------------------------- */

/* Images of 1 to 4 glyphs side by side in 12-pixel cells, each a vertical bar (token
 * 4), a horizontal bar (5) or a hollow box (6), black ink on white, shifted up or down
 * by a pixel at random; the target is the glyphs left to right. Widths differ (12k + 4),
 * so batches are padded. */
enum { GV = 7, GH = 16, GMAXK = 4, GW = 12 * GMAXK + 4 };

struct glyph_batch {
  int B;
  float px[32 * GH * GW];
  int heights[32], widths[32];
  int32_t tgt[32 * GMAXK];
  int lens[32];
  struct intrus_src_batch sb;
  struct intrus_tgt_batch tb;
};

static void draw(float *img, int glyph, int x0, int y0) {
  for (int i = 0; i < 10; i++)
    for (int j = 0; j < 10; j++) {
      bool ink = glyph == 0   ? (j == 4 || j == 5)
                 : glyph == 1 ? (i == 4 || i == 5)
                              : (i == 0 || i == 9 || j == 0 || j == 9);
      if (ink) img[(y0 + i) * GW + x0 + j] = 0.0f;
    }
}

static void glyph_batch_make(struct glyph_batch *g, int B, struct intrus_rng *r) {
  g->B = B;
  int maxw = 0;
  for (int b = 0; b < B; b++) {
    int k = 1 + (int)intrus_rng_below(r, GMAXK);
    g->lens[b] = k;
    g->widths[b] = 12 * k + 4;
    g->heights[b] = GH;
    if (g->widths[b] > maxw) maxw = g->widths[b];
  }
  /* Draw into GW-wide rows, then pack to the batch's width. */
  float img[GH * GW];
  for (int b = 0; b < B; b++) {
    for (int i = 0; i < GH * GW; i++) img[i] = 1.0f;
    for (int t = 0; t < GMAXK; t++) g->tgt[b * GMAXK + t] = INTRUS_PAD;
    for (int t = 0; t < g->lens[b]; t++) {
      int glyph = (int)intrus_rng_below(r, 3);
      g->tgt[b * GMAXK + t] = 4 + glyph;
      draw(img, glyph, 2 + 12 * t, 2 + (int)intrus_rng_below(r, 3));
    }
    for (int i = 0; i < GH; i++)
      for (int j = 0; j < maxw; j++)
        g->px[((size_t)b * GH + i) * maxw + j] = j < g->widths[b] ? img[i * GW + j] : 1.0f;
  }
  g->sb = (struct intrus_src_batch){.batch = B, .len = 0, .channels = 1, .height = GH,
                                    .width = maxw, .pixels = g->px, .heights = g->heights,
                                    .widths = g->widths};
  g->tb = (struct intrus_tgt_batch){.batch = B, .len = GMAXK, .tokens = g->tgt, .lens = g->lens};
}

static const char *glyph_enc =
    "filters = [16, 32]; pool = [true, true]; layer_norm = true; dropout = 0.0;";

/* Share of exactly read glyph strings in a fresh batch of 32 (beam search). */
static double ar_accuracy(struct intrus_model *m, intrus_ctx *ctx, int beam) {
  struct intrus_rng r;
  intrus_rng_seed(&r, 1234);
  static struct glyph_batch g;
  glyph_batch_make(&g, 32, &r);
  struct intrus_beam_opts o = intrus_beam_defaults();
  o.beam = beam;
  o.max_len_a = 0.0f;
  o.max_len_b = GMAXK + 2;
  struct intrus_beam_result res[32];
  struct intrus_error err = {0};
  intrus_ctx_set_grad(ctx, false);
  enum intrus_status st = intrus_beam_search(m, ctx, &g.sb, &o, res, &err);
  intrus_ctx_set_grad(ctx, true);
  EXPECT(st == INTRUS_OK, "search: %s", err.msg);
  if (st) return 0.0;
  int right = 0;
  for (int b = 0; b < 32; b++) {
    right += res[b].len == g.lens[b] &&
             memcmp(res[b].tokens, g.tgt + b * GMAXK, (size_t)g.lens[b] * 4) == 0;
    free(res[b].tokens);
  }
  return right / 32.0;
}

static double ins_accuracy(struct intrus_model *m, int beam) {
  struct intrus_rng r;
  intrus_rng_seed(&r, 1234);
  static struct glyph_batch g;
  glyph_batch_make(&g, 32, &r);
  intrus_ctx *ctx = intrus_ctx_create(0);
  struct ins_model_scorer sc;
  struct intrus_ins_hyp h[32];
  memset(h, 0, sizeof h);
  int max_steps[32];
  for (int b = 0; b < 32; b++) max_steps[b] = GMAXK + 2;
  struct intrus_ins_search_opts o = intrus_ins_search_defaults();
  o.beam = beam;
  struct intrus_error err = {0};
  enum intrus_status st = ins_scorer_open(&sc, m, ctx, &g.sb, &err);
  if (!st) st = intrus_ins_beam_search(&sc.sc, 32, max_steps, &o, h, NULL, &err);
  ins_scorer_close(&sc);
  EXPECT(st == INTRUS_OK, "insertion search: %s", err.msg);
  int right = 0;
  for (int b = 0; b < 32 && !st; b++)
    right += h[b].len == g.lens[b] &&
             memcmp(h[b].tokens, g.tgt + b * GMAXK, (size_t)g.lens[b] * 4) == 0;
  for (int b = 0; b < 32; b++) intrus_ins_hyp_free(&h[b]);
  intrus_ctx_destroy(ctx);
  return right / 32.0;
}

static void test_learn_autoregressive(void) {
  struct intrus_config *cfg = NULL;
  struct intrus_error err = {0};
  struct intrus_model *m = make_model(glyph_enc, ar_dec, 32, GV, &cfg, &err);
  EXPECT(m != NULL, "%s", err.msg);
  if (!m) return;
  struct intrus_params *p = intrus_model_params(m);
  struct intrus_adam opt = intrus_adam_defaults();
  opt.base_lr = 3e-3f;
  opt.warmup = 0;
  opt.clip_norm = 1.0f;
  intrus_ctx *ctx = intrus_ctx_create(0);
  struct intrus_rng r;
  intrus_rng_seed(&r, 42);
  static struct glyph_batch g;
  double first = 0.0, last = 0.0;
  enum { STEPS = 300 };
  for (int s = 0; s < STEPS; s++) {
    glyph_batch_make(&g, 16, &r);
    intrus_ctx_reset(ctx);
    intrus_ctx_set_training(ctx, true);
    intrus_params_zero_grad(p);
    struct intrus_train_opts o = {.direction = 1};
    struct intrus_loss_out lo;
    if (intrus_model_loss(m, ctx, &g.sb, &g.tb, &o, &lo, &err)) {
      EXPECT(0, "step %d: %s", s, err.msg);
      break;
    }
    intrus_backward(ctx, lo.loss);
    intrus_adam_step(p, &opt, s);
    double loss = lo.loss->data[0];
    if (s < 10) first += loss / 10;
    if (s >= STEPS - 10) last += loss / 10;
  }
  intrus_ctx_set_training(ctx, false);
  double greedy = ar_accuracy(m, ctx, 1), beam = ar_accuracy(m, ctx, 4);
  printf("cnn + autoregressive: loss %.3f -> %.4f in %d steps; reads %.0f%% (greedy), %.0f%% "
         "(beam 4) of 32 new images\n",
         first, last, STEPS, 100 * greedy, 100 * beam);
  EXPECT(last < 0.1 * first, "loss %.4f -> %.4f", first, last);
  EXPECT(greedy >= 0.8 && beam >= 0.8, "reads %.2f / %.2f of new images", greedy, beam);
  intrus_ctx_destroy(ctx);
  intrus_model_destroy(m);
  intrus_config_free(cfg);
}

static void test_learn_insertion(void) {
  struct intrus_config *cfg = NULL;
  struct intrus_error err = {0};
  struct intrus_model *m = make_model(
      glyph_enc, "plugin = \"insertion\"; layers = 1; heads = 2; ff = 64; dropout = 0.0;", 32,
      GV, &cfg, &err);
  EXPECT(m != NULL, "%s", err.msg);
  if (!m) return;
  struct intrus_plugin_search *search = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(search);
  struct intrus_plugin *plug = NULL;
  void *order = NULL;
  const struct intrus_order_vtable *ov = NULL;
  enum intrus_status st = intrus_plugin_load(search, INTRUS_KIND_ORDER, "uniform", &plug, &err);
  if (!st) {
    ov = intrus_plugin_descriptor(plug)->vtable;
    st = ov->create(NULL, &order, &err);
  }
  EXPECT(st == INTRUS_OK, "order plugin: %s", err.msg);
  if (st) {
    intrus_plugin_close(plug);
    intrus_plugin_search_free(search);
    intrus_model_destroy(m);
    intrus_config_free(cfg);
    return;
  }
  struct ins_train_spec spec = {.order = ov, .order_self = order,
                                .loss = INTRUS_INS_LOSS_MAIN, .all_states = true,
                                .per_sentence = 1};
  struct intrus_params *p = intrus_model_params(m);
  struct intrus_adam opt = intrus_adam_defaults();
  opt.base_lr = 3e-3f;
  opt.warmup = 0;
  opt.clip_norm = 1.0f;
  intrus_ctx *ctx = intrus_ctx_create(0), *scratch = intrus_ctx_create(0);
  struct intrus_rng r;
  intrus_rng_seed(&r, 43);
  static struct glyph_batch g;
  double first = 0.0, last = 0.0;
  enum { STEPS = 600 };
  for (int s = 0; s < STEPS; s++) {
    glyph_batch_make(&g, 16, &r);
    intrus_ctx_reset(ctx);
    intrus_ctx_set_training(ctx, true);
    intrus_params_zero_grad(p);
    struct intrus_loss_out lo;
    if (ins_train_loss(m, ctx, scratch, &g.sb, &g.tb, &spec, 1000 + (uint64_t)s, &lo, &err)) {
      EXPECT(0, "step %d: %s", s, err.msg);
      break;
    }
    intrus_backward(ctx, lo.loss);
    intrus_adam_step(p, &opt, s);
    double loss = lo.loss->data[0];
    if (s < 10) first += loss / 10;
    if (s >= STEPS - 10) last += loss / 10;
  }
  double greedy = ins_accuracy(m, 1), beam = ins_accuracy(m, 4);
  printf("cnn + insertion: loss %.3f -> %.4f in %d steps; reads %.0f%% (greedy), %.0f%% "
         "(beam 4) of 32 new images\n",
         first, last, STEPS, 100 * greedy, 100 * beam);
  EXPECT(last < 0.25 * first, "loss %.4f -> %.4f", first, last);
  EXPECT(greedy >= 0.8 && beam >= 0.8, "reads %.2f / %.2f of new images", greedy, beam);
  ov->destroy(order);
  intrus_plugin_close(plug);
  intrus_plugin_search_free(search);
  intrus_ctx_destroy(ctx);
  intrus_ctx_destroy(scratch);
  intrus_model_destroy(m);
  intrus_config_free(cfg);
}

int main(int argc, char **argv) {
  /* `test_cnn learn` runs the training part only (for timing it by hand). */
  const bool only_learn = argc > 1 && strcmp(argv[1], "learn") == 0;
  if (!only_learn) {
    test_config();
    test_batch_independence();
    test_mask();
    test_gradients();
  }
  test_learn_autoregressive();
  test_learn_insertion();
  return test_finish("test_cnn");
}

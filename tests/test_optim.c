/* Adam against torch.optim.Adam, the learning-rate schedule against its formula,
 * gradient clipping, and parameter initialisation. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "intrus/optim.h"
#include "intrus/params.h"
#include "testutil.h"

static void test_adam_matches_torch(void) {
  struct intrus_params *p = intrus_params_create();
  int shape[1] = {5};
  intrus_tensor *w = intrus_params_add(p, "w", 1, shape, INTRUS_INIT_ZEROS, 0.0f);
  EXPECT(intrus_params_finalize(p, 1, NULL) == INTRUS_OK, "finalize");
  const float w0[5] = {0.5f, -1.0f, 2.0f, 0.0f, 3.0f};
  memcpy(w->data, w0, sizeof w0);
  const float grads[3][5] = {{0.1f, -0.2f, 0.3f, 0.0f, 1.0f},
                             {0.05f, 0.1f, -0.3f, 0.2f, -1.0f},
                             {1.0f, 1.0f, 1.0f, 1.0f, 1.0f}};
  /* torch 1.13: w = torch.tensor(w0, requires_grad=True);
   * opt = torch.optim.Adam([w], lr=0.01, betas=(0.9, 0.998), eps=1e-9);
   * for g in grads: w.grad = torch.tensor(g); opt.step(); print(w) */
  const float want[3][5] = {{0.49000001f, -0.99000001f, 1.99000001f, 0.0f, 2.99000001f},
                            {0.4806768f, -0.987336218f, 1.99052632f, -0.00743950671f,
                             2.99052644f},
                            {0.473531723f, -0.993119121f, 1.98480594f, -0.0148277115f,
                             2.98716855f}};
  struct intrus_adam opt = intrus_adam_defaults();
  opt.base_lr = 0.01f;
  opt.warmup = 0;
  for (int s = 0; s < 3; s++) {
    memcpy(w->grad, grads[s], sizeof grads[s]);
    intrus_adam_step(p, &opt, s);
    for (int i = 0; i < 5; i++) EXPECT_NEAR(w->data[i], want[s][i], 2e-6);
  }
  intrus_params_destroy(p);
}

static void test_schedule(void) {
  struct intrus_adam opt = intrus_adam_defaults();
  EXPECT_NEAR(opt.base_lr, 1.4e-3, 1e-9);
  EXPECT(opt.warmup == 16000, "paper warm-up");
  /* lr = base * min(sqrt(W/(s+1)), (s+1)/W) */
  EXPECT_NEAR(intrus_lr_at(&opt, 0), 1.4e-3 / 16000, 1e-13);
  EXPECT_NEAR(intrus_lr_at(&opt, 7999), 1.4e-3 * 0.5, 1e-9);
  EXPECT_NEAR(intrus_lr_at(&opt, 15999), 1.4e-3, 1e-9);
  EXPECT_NEAR(intrus_lr_at(&opt, 63999), 1.4e-3 * 0.5, 1e-9);
  /* peak at s + 1 = W */
  EXPECT(intrus_lr_at(&opt, 15998) < intrus_lr_at(&opt, 15999), "rising before W");
  EXPECT(intrus_lr_at(&opt, 16000) < intrus_lr_at(&opt, 15999), "falling after W");
  opt.warmup = 0;
  EXPECT_NEAR(intrus_lr_at(&opt, 12345), 1.4e-3, 1e-10);
}

static void test_clipping(void) {
  struct intrus_params *p = intrus_params_create();
  int shape[1] = {2};
  intrus_tensor *a = intrus_params_add(p, "a", 1, shape, INTRUS_INIT_ZEROS, 0.0f);
  intrus_tensor *b = intrus_params_add(p, "b", 1, shape, INTRUS_INIT_ZEROS, 0.0f);
  EXPECT(intrus_params_finalize(p, 1, NULL) == INTRUS_OK, "finalize");
  a->grad[0] = 3.0f;
  b->grad[1] = 4.0f;
  EXPECT_NEAR(intrus_grad_norm(p), 5.0, 1e-6);
  /* With clipping to 1 the first Adam step still moves each weight by lr (Adam is
   * scale-invariant on step 1), but the moments see the clipped gradient. */
  struct intrus_adam opt = intrus_adam_defaults();
  opt.base_lr = 0.1f;
  opt.warmup = 0;
  opt.clip_norm = 1.0f;
  double norm = intrus_adam_step(p, &opt, 0);
  EXPECT_NEAR(norm, 5.0, 1e-6);
  EXPECT_NEAR(intrus_params_adam_m(p)[0], (1 - 0.9) * 3.0 / 5.0, 1e-7);
  EXPECT_NEAR(a->data[0], -0.1, 1e-6);
  EXPECT_NEAR(b->data[1], -0.1, 1e-6);
  EXPECT_NEAR(a->data[1], 0.0, 0.0);
  intrus_params_destroy(p);
}

static void test_init(void) {
  struct intrus_params *p = intrus_params_create();
  int s2[2] = {100, 300}, s4[4] = {8, 4, 3, 3}, s1[1] = {7};
  intrus_tensor *g = intrus_params_add(p, "g", 2, s2, INTRUS_INIT_GLOROT_UNIFORM, 1.0f);
  intrus_tensor *c = intrus_params_add(p, "c", 4, s4, INTRUS_INIT_GLOROT_UNIFORM, 1.0f);
  intrus_tensor *n = intrus_params_add(p, "n", 2, s2, INTRUS_INIT_NORMAL, 0.5f);
  intrus_tensor *o = intrus_params_add(p, "o", 1, s1, INTRUS_INIT_ONES, 0.0f);
  EXPECT(intrus_params_finalize(p, 42, NULL) == INTRUS_OK, "finalize");
  EXPECT(intrus_params_count(p) == 4, "count");
  EXPECT(intrus_params_find(p, "c") == c && intrus_params_find(p, "x") == NULL, "find");
  double a = sqrt(6.0 / 400.0), mx = 0, sum = 0, sq = 0;
  for (size_t i = 0; i < g->n; i++) mx = fmax(mx, fabs(g->data[i]));
  EXPECT(mx <= a && mx > 0.95 * a, "glorot bound %g, max %g", a, mx);
  double ac = sqrt(6.0 / (4 * 9 + 8 * 9));
  for (size_t i = 0; i < c->n; i++) EXPECT(fabs(c->data[i]) <= ac, "conv glorot %g", c->data[i]);
  for (size_t i = 0; i < n->n; i++) {
    sum += n->data[i];
    sq += (double)n->data[i] * n->data[i];
  }
  double mean = sum / n->n, sd = sqrt(sq / n->n - mean * mean);
  EXPECT(fabs(mean) < 0.02 && fabs(sd - 0.5) < 0.02, "normal mean %g sd %g", mean, sd);
  for (int i = 0; i < 7; i++) EXPECT(o->data[i] == 1.0f, "ones");
  /* Each parameter's values depend on the seed and its own name only. */
  struct intrus_params *q = intrus_params_create();
  intrus_params_add(q, "extra", 1, s1, INTRUS_INIT_NORMAL, 1.0f);
  intrus_tensor *n2 = intrus_params_add(q, "n", 2, s2, INTRUS_INIT_NORMAL, 0.5f);
  EXPECT(intrus_params_finalize(q, 42, NULL) == INTRUS_OK, "finalize");
  EXPECT(memcmp(n->data, n2->data, n->n * sizeof(float)) == 0, "init depends on order");
  /* Every view is 64-byte aligned inside one block. */
  for (size_t i = 0; i < intrus_params_count(p); i++)
    EXPECT(((uintptr_t)intrus_params_at(p, i)->data & 63) == 0, "alignment of %zu", i);
  intrus_params_destroy(p);
  intrus_params_destroy(q);
}

int main(void) {
  test_adam_matches_torch();
  test_schedule();
  test_clipping();
  test_init();
  return test_finish("test_optim");
}

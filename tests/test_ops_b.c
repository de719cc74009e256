/* Forward values of layer_norm, log_softmax, cross_entropy, conv2d and maxpool2d
 * against PyTorch, plus the invariants of the masked softmax family and the thread-count
 * independence of cross_entropy. The reference numbers were produced once with
 * PyTorch 1.13 (Debian python3-torch) by the script quoted at each table; the test
 * itself needs no python. Inputs are generated identically on both sides from libm's
 * sin/cos in double, rounded to float. */
#include <math.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "intrus/tensor.h"
#include "tensor/ops_internal.h"
#include "testutil.h"

/* Reference script (header for every table below):
 *   import math, torch; import torch.nn.functional as F
 *   def seq(n, f): return torch.tensor([f(i) for i in range(n)],
 *                                      dtype=torch.float64).float()
 */

/* x = seq(24, lambda i: math.sin(0.37*i)).reshape(3, 8)
 * g = seq(8, lambda j: 1 + 0.1*j); b = seq(8, lambda j: 0.05*j - 0.2)
 * F.layer_norm(x, (8,), g, b, 1e-5) */
static const float ref_layer_norm[24] = {
    -2.23321676f, -1.14451933f, -0.0133835385f, 0.942567527f, 1.50685143f, 1.50240469f,
    0.826367855f, -0.524798512f, 1.83147359f,   1.04105806f,  0.139347166f, -0.698628426f,
    -1.28505599f, -1.45104623f, -1.07782304f,   -0.122050278f, -2.14257336f, -1.4257338f,
    -0.554723978f, 0.33247301f, 1.07600462f,    1.51993203f,  1.53958452f,  1.06594026f};

/* x = seq(21, lambda i: 3*math.sin(0.37*i)).reshape(3, 7); F.log_softmax(x, dim=-1) */
static const float ref_log_softmax[21] = {
    -4.31534576f, -3.23049927f, -2.2924819f,  -1.62824941f, -1.327703f,   -1.43151999f,
    -1.92564917f, -0.443676263f, -1.47402048f, -2.57769322f, -3.60531783f, -4.41780996f,
    -4.90520239f, -5.00152922f, -5.97676516f, -5.30654192f, -4.36458302f, -3.27837825f,
    -2.19494081f, -1.26090813f, -0.602697909f};

/* x = seq(30, lambda i: 2*math.sin(0.37*i + 0.5)).reshape(6, 5)
 * t = torch.tensor([1, 4, -100, 0, 2, 3])
 * F.cross_entropy(x, t, ignore_index=-100, label_smoothing=0.1) */
static const float ref_cross_entropy = 2.38916349f;

/* x = seq(2*3*7*6, lambda i: math.sin(0.37*i)).reshape(2, 3, 7, 6)
 * w = seq(4*3*3*3, lambda i: 0.5*math.cos(0.23*i)).reshape(4, 3, 3, 3)
 * b = seq(4, lambda i: 0.1*i - 0.15)
 * F.conv2d(x, w, b, stride=2, padding=1)          # [2, 4, 4, 3] */
static const float ref_conv2d[96] = {
    1.20625842f,   2.48834705f,   1.88033879f,    -0.613603354f, -0.748741031f, -0.164909676f,
    0.0201533884f, -0.599176764f, -0.985483885f,  -0.202224344f, 1.35195422f,   2.35048199f,
    1.38126957f,   2.60126281f,   1.88334942f,    -0.547221482f, -0.578473926f, 0.116327837f,
    -0.00423507765f, -0.70283705f, -1.02504587f,  0.00553922728f, 1.56330085f,  2.4480226f,
    1.54861808f,   2.69998503f,   1.87600958f,    -0.478177845f, -0.405377954f, 0.396674901f,
    -0.0288684033f, -0.803001702f, -1.05938816f,  0.21300514f,   1.76601064f,   2.53218913f,
    1.70794344f,   2.78451943f,   1.85889387f,    -0.406306416f, -0.229844004f, 0.675165653f,
    -0.0530794859f, -0.898599744f, -1.08779037f,  0.41959855f,   1.95953333f,   2.6030674f,
    -0.794655442f, -2.40171027f,  -2.74359536f,   0.233207852f,  0.680257678f,  0.283911169f,
    -0.508469224f, -0.11739175f,  0.461485296f,   0.738554955f,  -0.468987286f, -2.09296203f,
    -0.796934485f, -2.38930154f,  -2.61919546f,   0.429540247f,  0.811346054f,  0.27072081f,
    -0.33317107f,  0.168713897f,  0.755736172f,   0.735282242f,  -0.527135789f, -2.07184076f,
    -0.795214474f, -2.36436892f,  -2.48104286f,   0.623305202f,  0.937822521f,  0.255813122f,
    -0.156356648f, 0.45364821f,   1.04567313f,    0.727805674f,  -0.582729697f, -2.03989506f,
    -0.788969517f, -2.32651067f,  -2.32933879f,   0.814000845f,  1.05954611f,   0.239804447f,
    0.0215626806f, 0.736421108f,  1.33027935f,    0.716700196f,  -0.634936094f, -1.99676025f};

/* x = seq(2*7*7, lambda i: math.sin(0.37*i)).reshape(1, 2, 7, 7)
 * F.max_pool2d(x, 3, 2)                           # [1, 2, 3, 3] */
static const float ref_max_pool2d[18] = {
    0.674287915f, 0.995880842f, 0.995880842f, 0.996475637f, 0.792427182f, 0.898708105f,
    0.901675761f, 0.997024119f, 0.957429886f, 0.955440521f, 0.689243257f, 0.997526288f,
    0.997982144f, 0.997982144f, 0.779792249f, 0.775507927f, 0.910327017f, 0.998391688f};

/* v[i] = (float)(a * sin(f * i + p)), as the reference script's seq(). */
static void fill_sin(float *v, size_t n, double a, double f, double p) {
  for (size_t i = 0; i < n; i++) v[i] = (float)(a * sin(f * (double)i + p));
}

static void expect_close(const char *what, const float *got, const float *want, size_t n,
                         double tol) {
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - want[i]) / fmax(1.0, fabs(want[i]));
    if (!(e <= worst)) {
      worst = e;
      at = i;
    }
  }
  EXPECT(worst <= tol, "%s: element %zu is %.9g, torch says %.9g (rel err %.3g > %.3g)", what,
         at, (double)got[at], (double)want[at], worst, tol);
}

static void test_layer_norm(intrus_ctx *ctx) {
  float x[24], g[8], b[8];
  fill_sin(x, 24, 1.0, 0.37, 0.0);
  for (int j = 0; j < 8; j++) {
    g[j] = (float)(1 + 0.1 * j);
    b[j] = (float)(0.05 * j - 0.2);
  }
  const int xs[2] = {3, 8}, ds[1] = {8};
  intrus_tensor *y = intrus_layer_norm(ctx, intrus_tensor_from(ctx, 2, xs, x),
                                       intrus_tensor_from(ctx, 1, ds, g),
                                       intrus_tensor_from(ctx, 1, ds, b), 1e-5f);
  EXPECT(y->ndim == 2 && y->shape[0] == 3 && y->shape[1] == 8, "layer_norm shape");
  expect_close("layer_norm", y->data, ref_layer_norm, 24, 1e-5);
}

static void test_log_softmax(intrus_ctx *ctx) {
  float x[21];
  fill_sin(x, 21, 3.0, 0.37, 0.0);
  const int xs[2] = {3, 7};
  intrus_tensor *y = intrus_log_softmax(ctx, intrus_tensor_from(ctx, 2, xs, x), NULL);
  expect_close("log_softmax", y->data, ref_log_softmax, 21, 1e-5);
}

static void test_cross_entropy(intrus_ctx *ctx) {
  float x[30];
  fill_sin(x, 30, 2.0, 0.37, 0.5);
  const int xs[2] = {6, 5};
  const int32_t t[6] = {1, 4, -100, 0, 2, 3};
  intrus_tensor *y =
      intrus_cross_entropy(ctx, intrus_tensor_from(ctx, 2, xs, x), t, 0.1f, -100);
  EXPECT(y->n == 1, "cross_entropy gives %zu elements", y->n);
  expect_close("cross_entropy", y->data, &ref_cross_entropy, 1, 1e-5);

  /* Every row ignored: loss 0, not 0/0. */
  const int32_t none[6] = {-100, -100, -100, -100, -100, -100};
  y = intrus_cross_entropy(ctx, intrus_tensor_from(ctx, 2, xs, x), none, 0.1f, -100);
  EXPECT(y->data[0] == 0.0f, "all-ignored cross_entropy is %g", (double)y->data[0]);
}

static void test_conv2d(intrus_ctx *ctx) {
  float x[2 * 3 * 7 * 6], w[4 * 3 * 3 * 3], b[4];
  fill_sin(x, 2 * 3 * 7 * 6, 1.0, 0.37, 0.0);
  for (int i = 0; i < 4 * 3 * 3 * 3; i++) w[i] = (float)(0.5 * cos(0.23 * i));
  for (int i = 0; i < 4; i++) b[i] = (float)(0.1 * i - 0.15);
  const int xs[4] = {2, 3, 7, 6}, ws[4] = {4, 3, 3, 3}, bs[1] = {4};
  intrus_tensor *y = intrus_conv2d(ctx, intrus_tensor_from(ctx, 4, xs, x),
                                   intrus_tensor_from(ctx, 4, ws, w),
                                   intrus_tensor_from(ctx, 1, bs, b), 2, 1);
  EXPECT(y->ndim == 4 && y->shape[0] == 2 && y->shape[1] == 4 && y->shape[2] == 4 &&
             y->shape[3] == 3,
         "conv2d shape [%d, %d, %d, %d], want [2, 4, 4, 3]", y->shape[0], y->shape[1],
         y->shape[2], y->shape[3]);
  expect_close("conv2d", y->data, ref_conv2d, 96, 1e-5);
}

static void test_maxpool2d(intrus_ctx *ctx) {
  float x[2 * 7 * 7];
  fill_sin(x, 2 * 7 * 7, 1.0, 0.37, 0.0);
  const int xs[4] = {1, 2, 7, 7};
  intrus_tensor *y = intrus_maxpool2d(ctx, intrus_tensor_from(ctx, 4, xs, x), 3, 2);
  EXPECT(y->shape[2] == 3 && y->shape[3] == 3, "maxpool2d %dx%d, want 3x3", y->shape[2],
         y->shape[3]);
  /* A max copies an input element, so the match is exact. */
  expect_close("maxpool2d", y->data, ref_max_pool2d, 18, 0.0);
}

/* Softmax rows sum to 1, masked entries are exactly 0 (-inf for log-softmax), and a
 * fully masked row is all 0 / -inf with no NaN anywhere, gradients included. */
static void test_masked_softmax(intrus_ctx *ctx) {
  enum { R = 4, C = 6 };
  float x[R * C];
  fill_sin(x, R * C, 4.0, 0.91, 0.3);
  uint8_t mask[R * C];
  for (int i = 0; i < R * C; i++) mask[i] = (uint8_t)(i % 3 != 1);
  for (int j = 0; j < C; j++) mask[2 * C + j] = 0; /* row 2: fully masked */
  const int xs[2] = {R, C};
  intrus_tensor *xt = intrus_tensor_from(ctx, 2, xs, x);
  xt->requires_grad = true;

  intrus_tensor *p = intrus_softmax(ctx, xt, NULL);
  for (int r = 0; r < R; r++) {
    double s = 0.0;
    for (int j = 0; j < C; j++) s += p->data[r * C + j];
    EXPECT_NEAR(s, 1.0, 1e-6);
  }

  p = intrus_softmax(ctx, xt, mask);
  intrus_tensor *lp = intrus_log_softmax(ctx, xt, mask);
  for (int r = 0; r < R; r++) {
    double s = 0.0;
    for (int j = 0; j < C; j++) {
      const int i = r * C + j;
      EXPECT(!isnan(p->data[i]) && !isnan(lp->data[i]), "NaN at row %d col %d", r, j);
      if (!mask[i]) {
        EXPECT(p->data[i] == 0.0f, "masked softmax[%d][%d] = %g", r, j, (double)p->data[i]);
        EXPECT(lp->data[i] == -INFINITY, "masked log_softmax[%d][%d] = %g", r, j,
               (double)lp->data[i]);
      } else {
        EXPECT_NEAR(lp->data[i], log(p->data[i]), 1e-5);
      }
      s += p->data[i];
    }
    EXPECT_NEAR(s, r == 2 ? 0.0 : 1.0, 1e-6);
  }

  /* Backward through both, seeding every entry (masked ones too): the masked and the
   * fully masked entries must get exactly zero gradient, and nothing may be NaN. */
  float seed[R * C];
  fill_sin(seed, R * C, 1.0, 1.3, 0.0);
  intrus_backward_seed(ctx, p, seed);
  intrus_backward_seed(ctx, lp, seed);
  for (int i = 0; i < R * C; i++) {
    EXPECT(isfinite(xt->grad[i]), "grad[%d] = %g", i, (double)xt->grad[i]);
    if (!mask[i]) EXPECT(xt->grad[i] == 0.0f, "masked grad[%d] = %g", i, (double)xt->grad[i]);
  }

  /* logsumexp_masked: empty row gives -inf, the rest match log of the masked sum. */
  intrus_tensor *l = intrus_logsumexp_masked(ctx, xt, mask);
  EXPECT(l->ndim == 1 && l->shape[0] == R, "logsumexp_masked shape");
  for (int r = 0; r < R; r++) {
    double s = 0.0;
    for (int j = 0; j < C; j++)
      if (mask[r * C + j]) s += exp(x[r * C + j]);
    if (r == 2) EXPECT(l->data[r] == -INFINITY, "empty row gives %g", (double)l->data[r]);
    else EXPECT_NEAR(l->data[r], log(s), 1e-5);
  }
}

/* Loss and gradient on an input above INTRUS_OMP_MIN, computed with 1 and with 2
 * threads, must agree bit for bit: rows are computed whole by one thread and the loss
 * is reduced in row order. */
static void ce_run(int threads, int R, int V, const float *x, const int32_t *t, float *loss,
                   float *grad) {
  test_set_threads(threads);
  intrus_ctx *ctx = intrus_ctx_create(0);
  const int xs[2] = {R, V};
  intrus_tensor *xt = intrus_tensor_from(ctx, 2, xs, x);
  xt->requires_grad = true;
  intrus_tensor *y = intrus_cross_entropy(ctx, xt, t, 0.1f, -1);
  intrus_backward(ctx, y);
  *loss = y->data[0];
  memcpy(grad, xt->grad, (size_t)R * V * sizeof(float));
  intrus_ctx_destroy(ctx);
}

static void test_ce_threads(void) {
  enum { R = 300, V = 200 };
  _Static_assert((long)R * V > INTRUS_OMP_MIN, "input must take the OpenMP path");
  float *x = malloc(sizeof(float) * R * V), *g1 = malloc(sizeof(float) * R * V),
        *g2 = malloc(sizeof(float) * R * V);
  int32_t t[R];
  fill_sin(x, (size_t)R * V, 5.0, 0.0137, 0.2);
  for (int r = 0; r < R; r++) t[r] = r % 7 == 3 ? -1 : (r * 31) % V;
  float l1, l2;
  ce_run(1, R, V, x, t, &l1, g1);
  ce_run(2, R, V, x, t, &l2, g2);
  EXPECT(memcmp(&l1, &l2, sizeof l1) == 0, "loss %.9g with 1 thread, %.9g with 2",
         (double)l1, (double)l2);
  EXPECT(memcmp(g1, g2, sizeof(float) * R * V) == 0,
         "gradients differ between 1 and 2 threads");
  EXPECT(isfinite(l1) && l1 > 0.0f, "loss %g", (double)l1);
  free(x);
  free(g1);
  free(g2);
}

static void embed_bad_id(const void *unused) {
  (void)unused;
  intrus_ctx *ctx = intrus_ctx_create(1 << 16);
  const int ts[2] = {5, 2}, ids_shape[1] = {3};
  const int32_t ids[3] = {0, 7, 1};
  intrus_embedding(ctx, intrus_tensor_zeros(ctx, 2, ts), ids, 1, ids_shape);
}

/* An id outside [0, V) panics with the id and V (run in a child: a panic aborts). */
static void test_embedding_bad_id(void) {
  char buf[512];
  int st = test_run_child(embed_bad_id, NULL, buf, sizeof buf);
  EXPECT(st != -1 && WIFSIGNALED(st), "embedding with id 7 of 5 did not abort (status %d)", st);
  EXPECT_CONTAINS(buf, "id 7");
  EXPECT_CONTAINS(buf, "[0, 5)");
}

static void test_embedding(intrus_ctx *ctx) {
  float tab[4 * 3];
  fill_sin(tab, 12, 1.0, 0.37, 0.0);
  const int ts[2] = {4, 3}, is[2] = {1, 3};
  const int32_t ids[3] = {2, 0, 2};
  intrus_tensor *y = intrus_embedding(ctx, intrus_tensor_from(ctx, 2, ts, tab), ids, 2, is);
  EXPECT(y->ndim == 3 && y->shape[0] == 1 && y->shape[1] == 3 && y->shape[2] == 3,
         "embedding shape");
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      EXPECT(y->data[i * 3 + j] == tab[ids[i] * 3 + j], "embedding row %d col %d", i, j);
}

int main(void) {
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  test_layer_norm(ctx);
  test_log_softmax(ctx);
  test_cross_entropy(ctx);
  test_conv2d(ctx);
  test_maxpool2d(ctx);
  test_masked_softmax(ctx);
  test_embedding(ctx);
  intrus_ctx_destroy(ctx);
  test_ce_threads();
  test_embedding_bad_id();
  return test_finish("test_ops_b");
}

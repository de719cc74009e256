/* Forward values of the ops in core/tensor/ops_linalg.c, core/tensor/ops_elementwise.c and
 * core/tensor/ops_shape.c (their gradients are checked by test_gradcheck): matmul against a
 * naive product, activations against PyTorch, the erf behind gelu against double erf,
 * dropout's statistics and determinism, and the shape ops' data layout. */
#include <stdint.h>
#include <string.h>

#include "intrus/rng.h"
#include "intrus/tensor.h"
#include "tensor/ops_internal.h"
#include "testutil.h"

static intrus_tensor *random_tensor(intrus_ctx *ctx, struct intrus_rng *r, int ndim,
                                    const int *shape) {
  intrus_tensor *t = intrus_tensor_new(ctx, ndim, shape);
  tu_fill_uniform(r, t->data, t->n, -1.0f, 1.0f);
  return t;
}

/* ---- matmul --------------------------------------------------------------------- */

/* Element (i, j) of op(X) for one stored [rows, cols] matrix. */
static double at(const float *x, int cols, bool trans, int i, int j) {
  return trans ? x[(size_t)j * cols + i] : x[(size_t)i * cols + j];
}

/* a: [batch..., M, K] (or [..., K, M]); b: 2-D shared or batched like a. */
static void check_matmul_case(intrus_ctx *ctx, struct intrus_rng *r, int nbatch,
                              const int *batch, bool shared_b, int M, int N, int K, bool ta,
                              bool tb) {
  int ashape[4], bshape[4], bnd = shared_b ? 2 : nbatch + 2, nb = 1;
  for (int i = 0; i < nbatch; i++) {
    ashape[i] = batch[i];
    if (!shared_b) bshape[i] = batch[i];
    nb *= batch[i];
  }
  ashape[nbatch] = ta ? K : M;
  ashape[nbatch + 1] = ta ? M : K;
  bshape[bnd - 2] = tb ? N : K;
  bshape[bnd - 1] = tb ? K : N;
  intrus_tensor *a = random_tensor(ctx, r, nbatch + 2, ashape);
  intrus_tensor *b = random_tensor(ctx, r, bnd, bshape);
  intrus_tensor *c = intrus_matmul(ctx, a, b, ta, tb);

  EXPECT(c->ndim == nbatch + 2 && c->shape[nbatch] == M && c->shape[nbatch + 1] == N,
         "matmul result of %d dims, last [%d, %d], want [%d, %d]", c->ndim,
         c->shape[c->ndim - 2], c->shape[c->ndim - 1], M, N);
  double worst = 0.0;
  for (int e = 0; e < nb; e++) {
    const float *ae = a->data + (size_t)e * M * K;
    const float *be = b->data + (shared_b ? 0 : (size_t)e * K * N);
    const float *ce = c->data + (size_t)e * M * N;
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        double ref = 0.0;
        for (int k = 0; k < K; k++)
          ref += at(ae, ta ? M : K, ta, i, k) * at(be, tb ? K : N, tb, k, j);
        double err = fabs(ref - ce[(size_t)i * N + j]);
        if (err > worst) worst = err;
      }
  }
  EXPECT(worst <= 1e-5 * (K + 1), "matmul batch %d shared %d M %d N %d K %d ta %d tb %d: "
         "max error %.3g", nb, shared_b, M, N, K, ta, tb, worst);
}

static void test_matmul(void) {
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  struct intrus_rng r;
  intrus_rng_seed(&r, 11);
  static const int b3[] = {3}, b23[] = {2, 3};
  for (int rep = 0; rep < 6; rep++) {
    for (int t = 0; t < 4; t++) {
      bool ta = t & 1, tb = t & 2;
      int M = 1 + (int)intrus_rng_below(&r, 17), N = 1 + (int)intrus_rng_below(&r, 17);
      int K = 1 + (int)intrus_rng_below(&r, 33);
      check_matmul_case(ctx, &r, 0, NULL, true, M, N, K, ta, tb);
      check_matmul_case(ctx, &r, 1, b3, false, M, N, K, ta, tb);
      check_matmul_case(ctx, &r, 1, b3, true, M, N, K, ta, tb);
      check_matmul_case(ctx, &r, 2, b23, false, M, N, K, ta, tb);
      check_matmul_case(ctx, &r, 2, b23, true, M, N, K, ta, tb);
    }
    intrus_ctx_reset(ctx);
  }
  intrus_ctx_destroy(ctx);
}

/* ---- activations ---------------------------------------------------------------- */

static const float act_x[15] = {-6.0f, -3.5f, -2.0f, -1.0f, -0.5f, -0.1f, -1e-3f, 0.0f,
                                1e-3f, 0.1f, 0.5f, 1.0f, 2.0f, 3.5f, 6.0f};
/* torch 1.13 (Debian python3-torch): torch.nn.GELU()(torch.tensor(act_x)), float32 */
static const float gelu_ref[15] = {
    0.0f,         -0.000814333558f, -0.0455000997f, -0.158655286f, -0.154268786f,
    -0.0460172109f, -0.000499601127f, 0.0f,        0.000500398921f, 0.0539827906f,
    0.345731199f, 0.841344714f,     1.95449996f,    3.49918556f,   6.0f};
/* torch 1.13 (Debian python3-torch): torch.nn.ELU()(torch.tensor(act_x)), float32 */
static const float elu_ref[15] = {
    -0.997521222f, -0.969802618f,   -0.864664733f, -0.63212055f, -0.393469334f,
    -0.0951625705f, -0.000999510288f, 0.0f,        0.00100000005f, 0.100000001f,
    0.5f,          1.0f,            2.0f,          3.5f,         6.0f};

static void test_activations(void) {
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  const int n = 15;
  intrus_tensor *x = intrus_tensor_from(ctx, 1, &n, act_x);
  intrus_tensor *g = intrus_gelu(ctx, x), *e = intrus_elu(ctx, x), *rl = intrus_relu(ctx, x);
  for (int i = 0; i < n; i++) {
    EXPECT_NEAR(g->data[i], gelu_ref[i], 1e-6 + 1e-6 * fabs(gelu_ref[i]));
    EXPECT_NEAR(e->data[i], elu_ref[i], 1e-6 + 1e-6 * fabs(elu_ref[i]));
    EXPECT(rl->data[i] == (act_x[i] > 0 ? act_x[i] : 0.0f), "relu(%g) = %g", act_x[i],
           rl->data[i]);
  }
  intrus_tensor *s = intrus_scale(ctx, x, -2.5f);
  for (int i = 0; i < n; i++) EXPECT(s->data[i] == act_x[i] * -2.5f, "scale at %d", i);
  intrus_ctx_destroy(ctx);
}

/* gelu's own erf (core/tensor/ops_elementwise.c) against double erf: every multiple of 2^-17
 * in [0, 4.5] (past 3.92 erf rounds to 1), 64 points per binade from 2^-126 to 1
 * (where the relative error is hardest to keep), and all of them negated: within 1e-7
 * relative (the approximation reaches 8.9e-8, 9.4e-8 without FMA, over every float),
 * odd to the bit, 0 at 0. */
static void test_erf(void) {
  const long ngrid = 9 * (1L << 16) + 1, nsmall = 126 * 64, n = 2 * (ngrid + nsmall);
  float *x = malloc((size_t)n * sizeof(float)), *y = malloc((size_t)n * sizeof(float));
  long k = 0;
  for (long i = 0; i < ngrid; i++) x[k++] = (float)i * 0x1p-17f;
  for (int e = -126; e < 0; e++)
    for (int j = 0; j < 64; j++) x[k++] = ldexpf(1.0f + j / 64.0f, e);
  for (long i = 0; i < n / 2; i++) x[k++] = -x[i];
  intrus_erf_n(y, x, n);
  double worst = 0.0, worst_x = 0.0;
  long odd_bad = 0;
  for (long i = 0; i < n; i++) {
    double ref = erf((double)x[i]);
    double err = ref == 0.0 ? fabs((double)y[i]) : fabs(y[i] - ref) / fabs(ref);
    if (err > worst) {
      worst = err;
      worst_x = x[i];
    }
    if (i < n / 2) odd_bad += memcmp(&y[i + n / 2], &(float){-y[i]}, sizeof(float)) != 0;
  }
  EXPECT(worst <= 1e-7, "erf: max relative error %.3g at x = %.9g", worst, worst_x);
  EXPECT(odd_bad == 0, "erf(-x) != -erf(x) at %ld points", odd_bad);
  EXPECT(y[0] == 0.0f, "erf(0) = %g", y[0]);

  /* gelu on [-4, 4) against x Phi(x) in double: within the erf error (including that
   * of rounding x / sqrt(2)) scaled by |x| / 2, plus the rounding of the result (it
   * reached 0.68 of this bound with FMA and 0.95 without when |x| weighed 0.5e-7). */
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  const int m = 2 * 16 * 1024;
  float *gx = malloc(m * sizeof(float));
  for (int i = 0; i < m; i++) gx[i] = (float)(i - m / 2) * (8.0f / m);
  intrus_tensor *g = intrus_gelu(ctx, intrus_tensor_from(ctx, 1, &m, gx));
  double gworst = 0.0;
  for (int i = 0; i < m; i++) {
    double v = gx[i], ref = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    double err = fabs(g->data[i] - ref) / (fabs(v) * 1e-7 + fabs(ref) * 1.2e-7 + 1e-30);
    if (err > gworst) gworst = err;
  }
  EXPECT(gworst <= 1.0, "gelu off by %.3g of its bound", gworst);
  free(gx);

  /* elu on [-20, 2) against double expm1 (every multiple of 2^-13): its vectorised exp
   * and, near 0, its series keep it within 4 float ulps relative (expm1f's accuracy). */
  const int me = 22 * 8192;
  float *ex = malloc(me * sizeof(float));
  for (int i = 0; i < me; i++) ex[i] = -20.0f + (float)i / 8192.0f;
  intrus_tensor *e = intrus_elu(ctx, intrus_tensor_from(ctx, 1, &me, ex));
  double eworst = 0.0, eworst_x = 0.0;
  for (int i = 0; i < me; i++) {
    double v = ex[i], ref = v > 0 ? v : expm1(v);
    double err = fabs(e->data[i] - ref) / (fabs(ref) + 1e-30);
    if (ref != 0 && err > eworst) eworst = err, eworst_x = v;
  }
  EXPECT(eworst <= 4.8e-7, "elu: max relative error %.3g at x = %.9g", eworst, eworst_x);
  EXPECT(e->data[0] >= -1.0f && e->data[me - 1] == ex[me - 1], "elu limits: %g, %g",
         e->data[0], e->data[me - 1]);
  free(ex);
  intrus_ctx_destroy(ctx);
  free(x);
  free(y);
}

/* ---- add / mul ------------------------------------------------------------------ */

static void test_add_mul(void) {
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  struct intrus_rng r;
  intrus_rng_seed(&r, 5);
  const int as[3] = {2, 3, 4}, bs[2] = {3, 4};
  intrus_tensor *a = random_tensor(ctx, &r, 3, as), *b = random_tensor(ctx, &r, 2, bs);
  intrus_tensor *same = random_tensor(ctx, &r, 3, as);
  intrus_tensor *sum = intrus_add(ctx, a, b), *prod = intrus_mul(ctx, a, b);
  intrus_tensor *sum2 = intrus_add(ctx, a, same), *prod2 = intrus_mul(ctx, a, same);
  int bad = 0;
  for (int i = 0; i < 24; i++) {
    bad += sum->data[i] != a->data[i] + b->data[i % 12];
    bad += prod->data[i] != a->data[i] * b->data[i % 12];
    bad += sum2->data[i] != a->data[i] + same->data[i];
    bad += prod2->data[i] != a->data[i] * same->data[i];
  }
  EXPECT(bad == 0, "%d wrong elements in add / mul", bad);
  intrus_ctx_destroy(ctx);
}


/* Above INTRUS_OMP_MIN_STREAM (131072), so the parallel loops are taken, with row
 * lengths that cut the threads' parts mid-row, a row of one (scalar b) and of 7 (short
 * segments), against the naive a[i] op b[i % inner], on 1 and 2 threads. */
static void test_add_mul_large(void) {
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  struct intrus_rng r;
  intrus_rng_seed(&r, 6);
  static const int cases[][2] = {{700, 300}, {150001, 1}, {30011, 7}, {1, 140001}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int as[2] = {cases[c][0], cases[c][1]};
    for (int threads = 1; threads <= 2; threads++) {
      test_set_threads(threads);
      intrus_ctx_reset(ctx);
      intrus_tensor *a = random_tensor(ctx, &r, 2, as), *b = random_tensor(ctx, &r, 1, &as[1]);
      intrus_tensor *same = random_tensor(ctx, &r, 2, as);
      intrus_tensor *sum = intrus_add(ctx, a, b), *prod = intrus_mul(ctx, a, b);
      intrus_tensor *sum2 = intrus_add(ctx, a, same), *prod2 = intrus_mul(ctx, a, same);
      long bad = 0, inner = as[1];
      for (size_t i = 0; i < a->n; i++) {
        bad += sum->data[i] != a->data[i] + b->data[i % inner];
        bad += prod->data[i] != a->data[i] * b->data[i % inner];
        bad += sum2->data[i] != a->data[i] + same->data[i];
        bad += prod2->data[i] != a->data[i] * same->data[i];
      }
      EXPECT(bad == 0, "[%d, %d] op [%d] on %d thread(s): %ld wrong elements", as[0], as[1],
             as[1], threads, bad);
    }
  }
  intrus_ctx_destroy(ctx);
}

/* ---- dropout -------------------------------------------------------------------- */

#define DROP_N 200000 /* above INTRUS_OMP_MIN, so the parallel loop is taken */

static intrus_tensor *dropout_step(intrus_ctx *ctx, const float *x, uint64_t step, float p) {
  intrus_ctx_reset(ctx);
  intrus_ctx_set_seed(ctx, 42, step);
  intrus_ctx_set_training(ctx, true);
  const int n = DROP_N;
  return intrus_dropout(ctx, intrus_tensor_from(ctx, 1, &n, x), p);
}

static void test_dropout(void) {
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  struct intrus_rng r;
  intrus_rng_seed(&r, 9);
  /* Inputs bounded away from 0, so a 0 in the output always means dropped. */
  float *x = malloc(DROP_N * sizeof(float)), *y = malloc(DROP_N * sizeof(float));
  tu_fill_uniform(&r, x, DROP_N, 0.5f, 1.5f);
  const int n = DROP_N;
  const float p = 0.3f;

  intrus_ctx_set_training(ctx, false);
  intrus_tensor *in = intrus_tensor_from(ctx, 1, &n, x);
  EXPECT(intrus_dropout(ctx, in, p) == in, "dropout when not training is not the identity");
  intrus_ctx_set_training(ctx, true);
  EXPECT(intrus_dropout(ctx, in, 0.0f) == in, "dropout with p = 0 is not the identity");

  intrus_tensor *out = dropout_step(ctx, x, 3, p);
  size_t kept = 0, badscale = 0;
  const float scale = 1.0f / (1.0f - p);
  for (int i = 0; i < n; i++) {
    if (out->data[i] == 0.0f) continue;
    kept++;
    badscale += out->data[i] != x[i] * scale;
  }
  /* The binomial standard deviation of the kept fraction is about 0.001 here. */
  EXPECT_NEAR((double)kept / n, 1.0 - p, 0.006);
  EXPECT(badscale == 0, "%zu kept values not scaled by 1/(1-p)", badscale);
  /* Neighbours independent: both of i, i + 1 dropped with probability p^2 (standard
   * deviation about 0.0007), and likewise i, i + 16 (a vector apart) and i, i + 2^16. */
  static const int lags[3] = {1, 16, 1 << 16};
  for (int l = 0; l < 3; l++) {
    size_t both = 0;
    for (int i = 0; i + lags[l] < n; i++)
      both += out->data[i] == 0.0f && out->data[i + lags[l]] == 0.0f;
    EXPECT_NEAR((double)both / (n - lags[l]), (double)p * p, 0.004);
  }
  memcpy(y, out->data, DROP_N * sizeof(float));

  out = dropout_step(ctx, x, 3, p);
  EXPECT(memcmp(y, out->data, DROP_N * sizeof(float)) == 0,
         "same seed and step give different masks");
  out = dropout_step(ctx, x, 4, p);
  EXPECT(memcmp(y, out->data, DROP_N * sizeof(float)) != 0,
         "another step gives the same mask");
  /* ... and an independent one: both dropped with probability p^2. */
  size_t both = 0;
  for (int i = 0; i < n; i++) both += y[i] == 0.0f && out->data[i] == 0.0f;
  EXPECT_NEAR((double)both / n, (double)p * p, 0.004);
  /* Other rates: the kept fraction follows p. */
  static const float ps[3] = {0.05f, 0.5f, 0.9f};
  for (int k = 0; k < 3; k++) {
    out = dropout_step(ctx, x, 5, ps[k]);
    kept = 0;
    for (int i = 0; i < n; i++) kept += out->data[i] != 0.0f;
    EXPECT_NEAR((double)kept / n, 1.0 - ps[k], 0.006);
  }

  test_set_threads(1);
  out = dropout_step(ctx, x, 3, p);
  memcpy(y, out->data, DROP_N * sizeof(float));
  test_set_threads(2);
  out = dropout_step(ctx, x, 3, p);
  EXPECT(memcmp(y, out->data, DROP_N * sizeof(float)) == 0,
         "dropout differs between 1 and 2 threads");
  free(x);
  free(y);
  intrus_ctx_destroy(ctx);
}

/* The broadcast-b gradient is the one reduction that runs under OpenMP: its order must
 * not follow the thread count. */
static void broadcast_grad(intrus_ctx *ctx, const float *xa, const float *xb, float *db,
                           int rows, int cols) {
  intrus_ctx_reset(ctx);
  const int as[2] = {rows, cols};
  intrus_tensor *a = intrus_tensor_from(ctx, 2, as, xa), *b = intrus_tensor_from(ctx, 1, &cols, xb);
  b->requires_grad = true;
  intrus_tensor *s = intrus_sum(ctx, intrus_mul(ctx, intrus_add(ctx, a, b), b));
  intrus_backward(ctx, s);
  memcpy(db, b->grad, (size_t)cols * sizeof(float));
}

static void test_thread_independence(void) {
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  struct intrus_rng r;
  intrus_rng_seed(&r, 13);
  /* Above INTRUS_OMP_MIN both: 3 row chunks, the last partial; one chunk of 19
   * column blocks, the last partial. */
  static const int cases[][2] = {{700, 300}, {200, 1201}};
  for (int c = 0; c < 2; c++) {
    const int rows = cases[c][0], cols = cases[c][1];
    float *xa = malloc((size_t)rows * cols * sizeof(float)), *xb = malloc(cols * sizeof(float));
    float *d1 = malloc(cols * sizeof(float)), *d2 = malloc(cols * sizeof(float));
    tu_fill_uniform(&r, xa, (size_t)rows * cols, -1.0f, 1.0f);
    tu_fill_uniform(&r, xb, cols, -1.0f, 1.0f);
    test_set_threads(1);
    broadcast_grad(ctx, xa, xb, d1, rows, cols);
    test_set_threads(2);
    broadcast_grad(ctx, xa, xb, d2, rows, cols);
    EXPECT(memcmp(d1, d2, cols * sizeof(float)) == 0,
           "[%d, %d]: broadcast gradient differs between 1 and 2 threads", rows, cols);
    /* d/db sum((a + b) * b) = sum_r (a[r] + 2 b) */
    double worst = 0.0;
    for (int j = 0; j < cols; j++) {
      double ref = 2.0 * rows * xb[j];
      for (int i = 0; i < rows; i++) ref += xa[(size_t)i * cols + j];
      if (fabs(ref - d1[j]) > worst) worst = fabs(ref - d1[j]);
    }
    EXPECT(worst < 1e-2, "[%d, %d]: broadcast gradient off by %.3g", rows, cols, worst);
    free(xa);
    free(xb);
    free(d1);
    free(d2);
  }
  intrus_ctx_destroy(ctx);
}

/* ---- shape ops ------------------------------------------------------------------ */

static void test_shape_ops(void) {
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  struct intrus_rng r;
  intrus_rng_seed(&r, 21);
  const int xs[4] = {2, 3, 4, 5};
  intrus_tensor *x = random_tensor(ctx, &r, 4, xs);

  const int rs[2] = {6, 20};
  intrus_tensor *v = intrus_reshape(ctx, x, 2, rs);
  EXPECT(v->data == x->data, "reshape copied the data");
  EXPECT(v->ndim == 2 && v->shape[0] == 6 && v->shape[1] == 20 && v->n == x->n,
         "reshape gave %d dims [%d, %d]", v->ndim, v->shape[0], v->shape[1]);

  /* out[i0, i1, i2, i3] = x[index with x's axis perm[k] set to i_k] */
  const int perm[4] = {2, 0, 3, 1}, inv[4] = {1, 3, 0, 2};
  intrus_tensor *p = intrus_permute(ctx, x, perm);
  EXPECT(p->shape[0] == 4 && p->shape[1] == 2 && p->shape[2] == 5 && p->shape[3] == 3,
         "permute shape [%d, %d, %d, %d]", p->shape[0], p->shape[1], p->shape[2],
         p->shape[3]);
  int bad = 0;
  for (int i0 = 0; i0 < 4; i0++)
    for (int i1 = 0; i1 < 2; i1++)
      for (int i2 = 0; i2 < 5; i2++)
        for (int i3 = 0; i3 < 3; i3++) {
          int xi[4];
          xi[perm[0]] = i0;
          xi[perm[1]] = i1;
          xi[perm[2]] = i2;
          xi[perm[3]] = i3;
          float want = x->data[((xi[0] * 3 + xi[1]) * 4 + xi[2]) * 5 + xi[3]];
          bad += p->data[((i0 * 2 + i1) * 5 + i2) * 3 + i3] != want;
        }
  EXPECT(bad == 0, "%d permuted elements misplaced", bad);
  intrus_tensor *back = intrus_permute(ctx, p, inv);
  EXPECT(intrus_tensor_same_shape(back, x) &&
             memcmp(back->data, x->data, x->n * sizeof(float)) == 0,
         "permute round trip differs");

  /* concat of [2, 3] and [2, 1] along axis 1, and of [2, 3] and [1, 3] along axis 0 */
  const float av[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {7, 8, 9};
  const int as[2] = {2, 3}, b1[2] = {2, 1}, b0[2] = {1, 3};
  intrus_tensor *a = intrus_tensor_from(ctx, 2, as, av);
  intrus_tensor *c1 = intrus_concat(ctx, a, intrus_tensor_from(ctx, 2, b1, bv), 1);
  intrus_tensor *c0 = intrus_concat(ctx, a, intrus_tensor_from(ctx, 2, b0, bv), 0);
  const float w1[8] = {1, 2, 3, 7, 4, 5, 6, 8}, w0[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT(c1->shape[0] == 2 && c1->shape[1] == 4 && memcmp(c1->data, w1, sizeof w1) == 0,
         "concat along axis 1");
  EXPECT(c0->shape[0] == 3 && c0->shape[1] == 3 && memcmp(c0->data, w0, sizeof w0) == 0,
         "concat along axis 0");

  EXPECT(intrus_sum(ctx, a)->data[0] == 21.0f, "sum of 1..6");
  EXPECT(intrus_mean(ctx, a)->data[0] == 3.5f, "mean of 1..6");
  intrus_ctx_destroy(ctx);
}

/* Above INTRUS_OMP_MIN the shape ops take their parallel loops, which the small
 * gradient checks never reach. Seeding the backward pass with the output's own values
 * must give back exactly the inputs, since every element moves without arithmetic. */
static void test_shape_ops_large(void) {
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  struct intrus_rng r;
  intrus_rng_seed(&r, 23);
  const int xs[4] = {6, 32, 10, 20}, perm[4] = {3, 0, 2, 1}; /* 38400 elements */
  intrus_tensor *x = random_tensor(ctx, &r, 4, xs);
  x->requires_grad = true;
  intrus_tensor *p = intrus_permute(ctx, x, perm);
  intrus_backward_seed(ctx, p, p->data);
  EXPECT(x->grad && memcmp(x->grad, x->data, x->n * sizeof(float)) == 0,
         "large permute backward is not the inverse permutation");

  intrus_ctx_reset(ctx);
  /* Above INTRUS_OMP_MIN_STREAM (131072) each, for concat backward's parallel loop. */
  const int as[3] = {61, 31, 80}, bs[3] = {61, 31, 76}; /* threads split mid-row */
  intrus_tensor *a = random_tensor(ctx, &r, 3, as), *b = random_tensor(ctx, &r, 3, bs);
  a->requires_grad = b->requires_grad = true;
  intrus_tensor *c = intrus_concat(ctx, a, b, 2);
  intrus_backward_seed(ctx, c, c->data);
  EXPECT(a->grad && memcmp(a->grad, a->data, a->n * sizeof(float)) == 0,
         "large concat backward into a");
  EXPECT(b->grad && memcmp(b->grad, b->data, b->n * sizeof(float)) == 0,
         "large concat backward into b");
  intrus_ctx_destroy(ctx);
}

int main(void) {
  test_matmul();
  test_activations();
  test_erf();
  test_add_mul();
  test_add_mul_large();
  test_dropout();
  test_thread_independence();
  test_shape_ops();
  test_shape_ops_large();
  return test_finish("test_ops_a");
}

/* Gradient checks of embedding, layer_norm, softmax, log_softmax, cross_entropy,
 * logsumexp_masked, conv2d and maxpool2d. Shapes stay tiny (a few hundred elements) so
 * the two forward passes per element keep the whole suite within seconds. */
#include <stdint.h>

#include "gradcheck.h"

int gradcheck_suite_b(void);

/* ---- builders --------------------------------------------------------------- */

/* ids: [2, 3] with repeats, into a [5, 3] table: rows 1 and 3 receive several
 * gradients, row 2 none. */
static const int32_t emb_ids[6] = {1, 3, 1, 0, 3, 3};

static intrus_tensor *build_embedding(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  const int shape[2] = {2, 3};
  return intrus_embedding(ctx, in[0], emb_ids, 2, shape);
}

static intrus_tensor *build_layer_norm(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_layer_norm(ctx, in[0], in[1], in[2], 1e-5f);
}

/* [4, 5] masks: row 2 fully masked, others partly; NULL user means no mask. */
static const uint8_t mask_4x5[20] = {1, 0, 1, 1, 0,  /* */
                                     1, 1, 1, 1, 1,  /* */
                                     0, 0, 0, 0, 0,  /* fully masked */
                                     0, 0, 1, 0, 0}; /* one kept entry */

static intrus_tensor *build_softmax(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_softmax(ctx, in[0], user);
}

static intrus_tensor *build_log_softmax(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_log_softmax(ctx, in[0], user);
}

/* Logits [5, 7]; row 2 is ignored. */
static const int32_t ce_targets[5] = {3, 0, -100, 6, 2};

static intrus_tensor *build_ce(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_cross_entropy(ctx, in[0], ce_targets, *(const float *)user, -100);
}

static intrus_tensor *build_lse(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_logsumexp_masked(ctx, in[0], mask_4x5);
}

struct conv_args {
  int stride, pad;
  bool bias;
};

static intrus_tensor *build_conv(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  const struct conv_args *a = user;
  return intrus_conv2d(ctx, in[0], in[1], a->bias ? in[2] : NULL, a->stride, a->pad);
}

struct pool_args {
  int k, stride;
};

static intrus_tensor *build_pool(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  const struct pool_args *a = user;
  return intrus_maxpool2d(ctx, in[0], a->k, a->stride);
}

/* ---- suite ------------------------------------------------------------------ */

/* The default tolerance (2e-2, absolute below 1) would let through errors of the size
 * of a smoothing term s/V or a dropped layer-norm mean correction; these ops agree
 * with central differences to ~1e-5, so 1e-3 leaves a wide margin and still bites. */
#define TOL 1e-3f

#define IN2(d0, d1, g) {.ndim = 2, .shape = {d0, d1}, .grad = g, .lo = -2.0f, .hi = 2.0f}
#define IN1(d0, g) {.ndim = 1, .shape = {d0}, .grad = g, .lo = -1.5f, .hi = 1.5f}
#define IN4(d0, d1, d2, d3, g) \
  {.ndim = 4, .shape = {d0, d1, d2, d3}, .grad = g, .lo = -1.0f, .hi = 1.0f}

int gradcheck_suite_b(void) {
  int failed = 0;

  struct gc_spec emb = {.name = "embedding (repeated ids)", .op = INTRUS_OP_EMBEDDING,
                        .tol = TOL, .build = build_embedding, .ninputs = 1,
                        .in = {IN2(5, 3, true)}};
  failed += !gradcheck_run(&emb);

  struct gc_spec ln = {.name = "layer_norm x,gain,bias", .op = INTRUS_OP_LAYER_NORM,
                       .tol = TOL, .build = build_layer_norm, .ninputs = 3,
                       .in = {IN2(3, 6, true), IN1(6, true), IN1(6, true)}};
  failed += !gradcheck_run(&ln);

  struct gc_spec sm = {.name = "softmax", .op = INTRUS_OP_SOFTMAX, .tol = TOL,
                       .build = build_softmax, .ninputs = 1, .in = {IN2(4, 5, true)}};
  failed += !gradcheck_run(&sm);
  struct gc_spec smm = sm;
  smm.name = "softmax masked";
  smm.user = (void *)mask_4x5;
  failed += !gradcheck_run(&smm);

  struct gc_spec lsm = {.name = "log_softmax", .op = INTRUS_OP_LOG_SOFTMAX, .tol = TOL,
                        .build = build_log_softmax, .ninputs = 1, .in = {IN2(4, 5, true)}};
  failed += !gradcheck_run(&lsm);
  struct gc_spec lsmm = lsm;
  lsmm.name = "log_softmax masked";
  lsmm.user = (void *)mask_4x5;
  failed += !gradcheck_run(&lsmm);

  static float smooth0 = 0.0f, smooth1 = 0.1f;
  struct gc_spec ce = {.name = "cross_entropy s=0 ignore", .op = INTRUS_OP_CROSS_ENTROPY,
                       .tol = TOL, .build = build_ce, .user = &smooth0, .ninputs = 1,
                       .in = {IN2(5, 7, true)}};
  failed += !gradcheck_run(&ce);
  struct gc_spec ces = ce;
  ces.name = "cross_entropy s=0.1 ignore";
  ces.user = &smooth1;
  failed += !gradcheck_run(&ces);

  struct gc_spec lse = {.name = "logsumexp_masked (empty row)",
                        .op = INTRUS_OP_LOGSUMEXP_MASKED, .tol = TOL, .build = build_lse,
                        .ninputs = 1, .in = {IN2(4, 5, true)}};
  failed += !gradcheck_run(&lse);

  static struct conv_args c11 = {1, 1, true}, c20 = {2, 0, false}, c20b = {2, 0, true},
                          c11n = {1, 1, false}, c1x1 = {1, 0, true};
  struct gc_spec conv = {.name = "conv2d s1 p1 bias", .op = INTRUS_OP_CONV2D, .tol = TOL,
                         .build = build_conv, .user = &c11, .ninputs = 3,
                         .in = {IN4(2, 3, 5, 5, true), IN4(4, 3, 3, 3, true),
                                IN1(4, true)}};
  failed += !gradcheck_run(&conv);
  struct gc_spec conv2 = conv;
  conv2.name = "conv2d s1 p1 no bias";
  conv2.user = &c11n;
  conv2.ninputs = 2;
  failed += !gradcheck_run(&conv2);
  /* [2, 3, 6, 7] with a 3x3 kernel at stride 2: the last row and column of the input
   * fall outside every window. */
  struct gc_spec conv3 = conv;
  conv3.name = "conv2d s2 p0 no bias";
  conv3.user = &c20;
  conv3.ninputs = 2;
  conv3.in[0] = (struct gc_input)IN4(2, 3, 6, 7, true);
  failed += !gradcheck_run(&conv3);
  struct gc_spec conv4 = conv3;
  conv4.name = "conv2d s2 p0 bias";
  conv4.user = &c20b;
  conv4.ninputs = 3;
  failed += !gradcheck_run(&conv4);
  /* 1x1 / stride 1 / no padding skips im2col and multiplies x in place. */
  struct gc_spec conv5 = {.name = "conv2d 1x1 (no im2col)", .op = INTRUS_OP_CONV2D,
                          .tol = TOL, .build = build_conv, .user = &c1x1, .ninputs = 3,
                          .in = {IN4(2, 3, 4, 4, true), IN4(5, 3, 1, 1, true),
                                 IN1(5, true)}};
  failed += !gradcheck_run(&conv5);

  /* Values 0.05 apart (a permutation, 37 being coprime with 100), far more than twice
   * the finite-difference step, so no window's argmax changes under the step. */
  static float pool_x[100];
  for (int i = 0; i < 100; i++) pool_x[i] = (float)((i * 37) % 100) * 0.05f - 2.5f;
  static struct pool_args p22 = {2, 2}, p32 = {3, 2};
  struct gc_spec pool = {.name = "maxpool2d k2 s2 (floor)", .op = INTRUS_OP_MAXPOOL2D,
                         .tol = TOL, .build = build_pool, .user = &p22, .ninputs = 1,
                         .in = {{.ndim = 4, .shape = {2, 2, 5, 5}, .grad = true,
                                 .values = pool_x}}};
  failed += !gradcheck_run(&pool);
  struct gc_spec pool2 = pool;
  pool2.name = "maxpool2d k3 s2 (overlap)";
  pool2.user = &p32;
  failed += !gradcheck_run(&pool2);

  return failed;
}

/* Gradient checks for the ops of core/tensor/ops_linalg.c, core/tensor/ops_elementwise.c and
 * core/tensor/ops_shape.c. Every check is a few hundred elements at most so the whole suite
 * runs in well under a second. */
#include <stdbool.h>
#include <stddef.h>

#include "gradcheck.h"

int gradcheck_suite_a(void);

/* ---- builders ------------------------------------------------------------------- */

struct mm_args {
  bool ta, tb;
};

static intrus_tensor *build_matmul(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  const struct mm_args *m = user;
  return intrus_matmul(ctx, in[0], in[1], m->ta, m->tb);
}

static intrus_tensor *build_add(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_add(ctx, in[0], in[1]);
}

static intrus_tensor *build_mul(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_mul(ctx, in[0], in[1]);
}

static intrus_tensor *build_scale(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_scale(ctx, in[0], -1.75f);
}

static intrus_tensor *build_relu(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_relu(ctx, in[0]);
}

static intrus_tensor *build_gelu(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_gelu(ctx, in[0]);
}

static intrus_tensor *build_elu(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_elu(ctx, in[0]);
}

static intrus_tensor *build_dropout(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_dropout(ctx, in[0], 0.3f);
}

static intrus_tensor *build_permute(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_permute(ctx, in[0], user);
}

static intrus_tensor *build_concat(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_concat(ctx, in[0], in[1], *(const int *)user);
}

static intrus_tensor *build_reshape(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  static const int shape[2] = {6, 4};
  return intrus_reshape(ctx, in[0], 2, shape);
}

/* The reshaped view feeding another op, so its gradient must reach x through the tape. */
static intrus_tensor *build_reshape_chain(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  static const int shape[3] = {3, 2, 4};
  return intrus_mul(ctx, intrus_reshape(ctx, in[0], 3, shape), in[1]);
}

static intrus_tensor *build_sum(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_sum(ctx, in[0]);
}

static intrus_tensor *build_mean(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  return intrus_mean(ctx, in[0]);
}

/* Weights of every size, zero and fractional ones included (as weight = "length" gives a
 * state of a 6-token target drawn 4 times 7/4), over a denominator that is not their sum. */
static intrus_tensor *build_weighted_mean(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  double w[24];
  for (int i = 0; i < 24; i++) w[i] = i % 5 == 0 ? 0.0 : 0.25 * (double)(1 + (i * 7) % 11);
  return intrus_weighted_mean(ctx, in[0], w, 13.5);
}

/* ---- helpers -------------------------------------------------------------------- */

static struct gc_input input(int ndim, int d0, int d1, int d2, int d3) {
  struct gc_input in = {.ndim = ndim, .shape = {d0, d1, d2, d3}, .grad = true,
                        .lo = -1.0f, .hi = 1.0f};
  return in;
}

/* One matmul check: a is [batch..., ar, ac], b is [br, bc] or [batch..., br, bc]. */
static bool check_matmul(const char *name, bool ta, bool tb, int nbatch, const int *batch,
                         int ar, int ac, bool shared_b, int br, int bc) {
  struct mm_args m = {ta, tb};
  struct gc_spec s = {.name = name, .op = INTRUS_OP_MATMUL, .build = build_matmul,
                      .user = &m, .ninputs = 2};
  struct gc_input *a = &s.in[0], *b = &s.in[1];
  *a = input(nbatch + 2, 0, 0, 0, 0);
  for (int i = 0; i < nbatch; i++) a->shape[i] = batch[i];
  a->shape[nbatch] = ar;
  a->shape[nbatch + 1] = ac;
  if (shared_b) {
    *b = input(2, br, bc, 0, 0);
  } else {
    *b = input(nbatch + 2, 0, 0, 0, 0);
    for (int i = 0; i < nbatch; i++) b->shape[i] = batch[i];
    b->shape[nbatch] = br;
    b->shape[nbatch + 1] = bc;
  }
  return gradcheck_run(&s);
}

static bool check_unary(const char *name, enum intrus_op op, gc_build_fn build,
                        struct gc_input in, bool training) {
  struct gc_spec s = {.name = name, .op = op, .build = build, .ninputs = 1,
                      .training = training};
  s.in[0] = in;
  return gradcheck_run(&s);
}

static bool check_binary(const char *name, enum intrus_op op, gc_build_fn build,
                         struct gc_input a, struct gc_input b, void *user) {
  struct gc_spec s = {.name = name, .op = op, .build = build, .user = user, .ninputs = 2};
  s.in[0] = a;
  s.in[1] = b;
  return gradcheck_run(&s);
}

/* ---- the suite ------------------------------------------------------------------ */

int gradcheck_suite_a(void) {
  int failed = 0;
#define RUN(x) failed += (x) ? 0 : 1

  /* 2-D, every transpose combination: op(A) [3, 4], op(B) [4, 5]. */
  RUN(check_matmul("matmul NN", false, false, 0, NULL, 3, 4, true, 4, 5));
  RUN(check_matmul("matmul NT", false, true, 0, NULL, 3, 4, true, 5, 4));
  RUN(check_matmul("matmul TN", true, false, 0, NULL, 4, 3, true, 4, 5));
  RUN(check_matmul("matmul TT", true, true, 0, NULL, 4, 3, true, 5, 4));
  /* Batched with per-entry b: [2, ...] and [2, 2, ...]. */
  static const int b2[] = {2}, b22[] = {2, 2};
  RUN(check_matmul("matmul batched NN", false, false, 1, b2, 3, 4, false, 4, 5));
  RUN(check_matmul("matmul batched NT", false, true, 1, b2, 3, 4, false, 5, 4));
  RUN(check_matmul("matmul batched TN", true, false, 1, b2, 4, 3, false, 4, 5));
  RUN(check_matmul("matmul batched TT", true, true, 1, b2, 4, 3, false, 5, 4));
  RUN(check_matmul("matmul batched 4-D TN", true, false, 2, b22, 3, 2, false, 3, 4));
  /* Shared 2-D b: the folded single GEMM (no trans_a) and the per-entry path. */
  RUN(check_matmul("matmul shared-b NN", false, false, 1, b2, 3, 4, true, 4, 5));
  RUN(check_matmul("matmul shared-b NT", false, true, 1, b2, 3, 4, true, 5, 4));
  RUN(check_matmul("matmul shared-b TN", true, false, 1, b2, 4, 3, true, 4, 5));
  RUN(check_matmul("matmul shared-b TT", true, true, 1, b2, 4, 3, true, 5, 4));
  RUN(check_matmul("matmul shared-b 4-D NT", false, true, 2, b22, 3, 4, true, 2, 4));

  /* add / mul: same shape, b = a's last dim, b = a's last two dims. */
  RUN(check_binary("add same-shape", INTRUS_OP_ADD, build_add, input(3, 2, 3, 4, 0),
                   input(3, 2, 3, 4, 0), NULL));
  RUN(check_binary("add broadcast [4]", INTRUS_OP_ADD, build_add, input(3, 2, 3, 4, 0),
                   input(1, 4, 0, 0, 0), NULL));
  RUN(check_binary("add broadcast [3,4]", INTRUS_OP_ADD, build_add, input(3, 2, 3, 4, 0),
                   input(2, 3, 4, 0, 0), NULL));
  RUN(check_binary("mul same-shape", INTRUS_OP_MUL, build_mul, input(3, 2, 3, 4, 0),
                   input(3, 2, 3, 4, 0), NULL));
  RUN(check_binary("mul broadcast [4]", INTRUS_OP_MUL, build_mul, input(3, 2, 3, 4, 0),
                   input(1, 4, 0, 0, 0), NULL));
  RUN(check_binary("mul broadcast [3,4]", INTRUS_OP_MUL, build_mul, input(3, 2, 3, 4, 0),
                   input(2, 3, 4, 0, 0), NULL));
  RUN(check_unary("scale", INTRUS_OP_SCALE, build_scale, input(2, 3, 5, 0, 0), false));

  /* relu: finite differences straddling 0 would see the kink, so every input is at
   * least 0.1 (ten times eps) away from it, with both signs. */
  static float relu_vals[40];
  for (int i = 0; i < 40; i++)
    relu_vals[i] = (i % 2 ? 1.0f : -1.0f) * (0.1f + 0.047f * (float)((i * 7) % 40));
  struct gc_input relu_in = input(2, 5, 8, 0, 0);
  relu_in.values = relu_vals;
  RUN(check_unary("relu", INTRUS_OP_RELU, build_relu, relu_in, false));
  struct gc_input wide = input(2, 6, 7, 0, 0);
  wide.lo = -3.0f;
  wide.hi = 3.0f;
  RUN(check_unary("gelu", INTRUS_OP_GELU, build_gelu, wide, false));
  RUN(check_unary("elu", INTRUS_OP_ELU, build_elu, wide, false));
  /* The gradcheck harness reseeds every evaluation, so the mask stays fixed. */
  RUN(check_unary("dropout p=0.3 training", INTRUS_OP_DROPOUT, build_dropout,
                  input(2, 8, 16, 0, 0), true));

  static const int perm3[] = {2, 0, 1}, perm4a[] = {0, 2, 1, 3}, perm4b[] = {3, 1, 0, 2};
  struct gc_spec ps = {.name = "permute 3-D (2,0,1)", .op = INTRUS_OP_PERMUTE,
                       .build = build_permute, .user = (void *)perm3, .ninputs = 1};
  ps.in[0] = input(3, 2, 3, 4, 0);
  RUN(gradcheck_run(&ps));
  ps.name = "permute 4-D (0,2,1,3)";
  ps.user = (void *)perm4a;
  ps.in[0] = input(4, 2, 3, 4, 2);
  RUN(gradcheck_run(&ps));
  ps.name = "permute 4-D (3,1,0,2)";
  ps.user = (void *)perm4b;
  RUN(gradcheck_run(&ps));

  static const int axes[] = {0, 1, 2};
  RUN(check_binary("concat axis 0", INTRUS_OP_CONCAT, build_concat, input(3, 2, 3, 4, 0),
                   input(3, 1, 3, 4, 0), (void *)&axes[0]));
  RUN(check_binary("concat axis 1", INTRUS_OP_CONCAT, build_concat, input(3, 2, 3, 4, 0),
                   input(3, 2, 2, 4, 0), (void *)&axes[1]));
  RUN(check_binary("concat axis 2", INTRUS_OP_CONCAT, build_concat, input(3, 2, 3, 4, 0),
                   input(3, 2, 3, 5, 0), (void *)&axes[2]));

  RUN(check_unary("reshape [2,3,4]->[6,4]", INTRUS_OP_RESHAPE, build_reshape,
                  input(3, 2, 3, 4, 0), false));
  RUN(check_binary("reshape then mul", INTRUS_OP_RESHAPE, build_reshape_chain,
                   input(2, 6, 4, 0, 0), input(2, 2, 4, 0, 0), NULL));
  RUN(check_unary("sum", INTRUS_OP_SUM, build_sum, input(3, 2, 3, 4, 0), false));
  RUN(check_unary("mean", INTRUS_OP_MEAN, build_mean, input(3, 2, 3, 4, 0), false));
  RUN(check_unary("weighted mean", INTRUS_OP_WEIGHTED_MEAN, build_weighted_mean,
                  input(3, 2, 3, 4, 0), false));
#undef RUN
  return failed;
}

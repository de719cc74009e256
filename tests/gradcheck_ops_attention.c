/* Gradient checks of the fused packed attention (intrus_attention) with respect to q, k
 * and v: plain and causal, one and several heads, query segments sharing key rows (both
 * merged into one block and apart), a segment without keys, query rows outside every
 * segment, and dropout on the weights in training mode. */
#include <stdbool.h>

#include "gradcheck.h"

int gradcheck_suite_attention(void);

struct attn_case {
  int heads;
  bool causal;
  float dropout;
  struct intrus_segments seg;
};

static intrus_tensor *build_attention(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  const struct attn_case *c = user;
  return intrus_attention(ctx, in[0], in[1], in[2], c->heads, &c->seg, c->causal, c->dropout);
}

/* Agrees with central differences to ~1e-5 in these cases (see the printed errors); a
 * missing 1/sqrt(Dh), softmax correction term or dropout scale is off by far more. */
#define TOL 1e-3f

#define QKV(N, M, d)                                                            \
  {{.ndim = 2, .shape = {N, d}, .grad = true, .lo = -1.0f, .hi = 1.0f},          \
   {.ndim = 2, .shape = {M, d}, .grad = true, .lo = -1.0f, .hi = 1.0f},          \
   {.ndim = 2, .shape = {M, d}, .grad = true, .lo = -1.0f, .hi = 1.0f}}

static bool run_case(const char *name, struct attn_case *c, int N, int M, int d,
                     bool training) {
  struct gc_spec s = {.name = name, .op = INTRUS_OP_ATTENTION, .tol = TOL,
                      .build = build_attention, .user = c, .ninputs = 3, .in = QKV(N, M, d),
                      .training = training};
  return gradcheck_run(&s);
}

int gradcheck_suite_attention(void) {
  int failed = 0;

  /* One segment, q [3, 4] against k, v [5, 4]. */
  static const int one_qb[] = {0}, one_ql[] = {3}, one_kb[] = {0}, one_kl[] = {5};
  struct attn_case plain = {.heads = 1, .seg = {1, one_qb, one_ql, one_kb, one_kl}};
  failed += !run_case("attention 1 head", &plain, 3, 5, 4, false);

  /* Two sequences of self-attention (4 and 3 rows), causal, 2 heads of width 3. */
  static const int self_qb[] = {0, 4}, self_ql[] = {4, 3}, self_kb[] = {0, 4},
                   self_kl[] = {4, 3};
  struct attn_case causal = {.heads = 2, .causal = true,
                             .seg = {2, self_qb, self_ql, self_kb, self_kl}};
  failed += !run_case("attention causal 2 heads", &causal, 7, 7, 6, false);

  /* Causal with more queries than keys: local rows 2.. see both keys. */
  static const int wide_qb[] = {0}, wide_ql[] = {4}, wide_kb[] = {1}, wide_kl[] = {2};
  struct attn_case wide = {.heads = 2, .causal = true,
                           .seg = {1, wide_qb, wide_ql, wide_kb, wide_kl}};
  failed += !run_case("attention causal q>k", &wide, 4, 3, 4, false);

  /* Three heads of width 2; two segments with their own keys. */
  static const int h3_qb[] = {0, 2}, h3_ql[] = {2, 3}, h3_kb[] = {3, 0}, h3_kl[] = {3, 3};
  struct attn_case three = {.heads = 3, .seg = {2, h3_qb, h3_ql, h3_kb, h3_kl}};
  failed += !run_case("attention 3 heads", &three, 5, 6, 6, false);

  /* Query rows 0-1 and 2-4 share keys 0-2 (contiguous: merged into one block); rows
   * 5-6 have keys 3-4; rows 7-8 share keys 0-2 again after them (a block of their own
   * adding into the same key gradients); row 9 is in no segment; rows 10-11 are a
   * segment without keys. */
  static const int sh_qb[] = {0, 2, 5, 7, 10}, sh_ql[] = {2, 3, 2, 2, 2},
                   sh_kb[] = {0, 0, 3, 0, 1}, sh_kl[] = {3, 3, 2, 3, 0};
  struct attn_case shared = {.heads = 2, .seg = {5, sh_qb, sh_ql, sh_kb, sh_kl}};
  failed += !run_case("attention shared keys, empty", &shared, 12, 5, 4, false);
  struct attn_case shared_causal = shared;
  shared_causal.causal = true;
  failed += !run_case("attention shared keys causal", &shared_causal, 12, 5, 4, false);

  /* Dropout on the weights, training mode: the mask is a function of the seed and the
   * element index only, so it is the same in every finite-difference evaluation. */
  struct attn_case drop = shared;
  drop.dropout = 0.3f;
  failed += !run_case("attention dropout 0.3", &drop, 12, 5, 4, true);
  struct attn_case drop_causal = causal;
  drop_causal.dropout = 0.5f;
  failed += !run_case("attention causal dropout 0.5", &drop_causal, 7, 7, 6, true);

  return failed;
}

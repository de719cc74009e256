/* The hand-written kernels under every ISA this CPU runs (AVX-512, AVX2, the portable
 * C), forced with intrus_x86_level_set as INTRUS_ISA forces them for a process. Each
 * kernel below runs at every level with 2 and with 1 thread(s); the two must agree bit
 * for bit wherever our own code computes it (not where a product goes to OpenBLAS,
 * whose bits may follow the split: struct kernel's own_from), and each level is compared with the generic level (0) to a stated tolerance,
 * or bit for bit where the arithmetic is the same at every level. The largest
 * difference per kernel and level is printed.
 *  - gelu forward and backward and erf, elu (FMAs at levels 1 and 2);
 *  - the small-product kernel behind intrus_gemm (level 0: OpenBLAS) over M 1..7 and
 *    13, N 1..70, K 1..65, every transpose pair, beta 0 and not; levels 1 and 2 run
 *    the same FMA chains and must agree bit for bit; and a few long-K shapes, most of
 *    which level 1 leaves to OpenBLAS;
 *  - the packed-weight product (level 0: intrus_gemm) with and without bias, plain and
 *    transposed B, small and split across threads; levels 1 and 2 bit for bit, and a
 *    matrix packed at the CPU's level used at every level gives what one packed there
 *    gives;
 *  - the INTRUS_ISA_VARIANTS loops: intrus_row_sumexp and intrus_row_add_softmax on
 *    rows of 1 to 8,000 entries; softmax and log_softmax; intrus_linear_log_softmax;
 *    layer norm forward and backward; attention forward and backward (causal, and
 *    with dropout in training); dropout forward and backward (the same bits at every
 *    level);
 * and INTRUS_ISA itself through `intrus --version`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/blas.h"
#include "intrus/nn.h"
#include "intrus/rng.h"
#include "intrus/tensor.h"
#include "tensor/ops_internal.h"
#include "testutil.h"

static void set_threads(int n) {
  test_set_threads(n);
  intrus_blas_set_threads(n);
}

static intrus_tensor *leaf(intrus_ctx *ctx, int ndim, const int *shape, const float *x,
                           bool grad) {
  intrus_tensor *t = intrus_tensor_from(ctx, ndim, shape, x);
  t->requires_grad = grad;
  return t;
}

/* Random inputs shared by the kernels, made once. */
static struct intrus_rng rng;
static float *rand_floats(size_t n, float lo, float hi) {
  float *x = malloc((n ? n : 1) * sizeof *x);
  if (!x) abort();
  tu_fill_uniform(&rng, x, n, lo, hi);
  return x;
}

/* ---- gelu --------------------------------------------------------------------------- */

#define N_ACT 10007
static float *act_x;

/* erf, then gelu, then gelu's backward: 3 N_ACT floats. */
static void run_gelu(float *o) {
  intrus_erf_n(o, act_x, N_ACT);
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  int n = N_ACT;
  intrus_tensor *t = leaf(ctx, 1, &n, act_x, true);
  intrus_tensor *g = intrus_gelu(ctx, t);
  memcpy(o + N_ACT, g->data, N_ACT * sizeof *o);
  intrus_backward(ctx, intrus_sum(ctx, g));
  memcpy(o + 2 * N_ACT, intrus_tensor_grad(ctx, t), N_ACT * sizeof *o);
  intrus_ctx_destroy(ctx);
}

/* elu forward (its exp and series are FMAs at levels 1 and 2): N_ACT floats. */
static void run_elu(float *o) {
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  int n = N_ACT;
  intrus_tensor *t = leaf(ctx, 1, &n, act_x, false);
  memcpy(o, intrus_elu(ctx, t)->data, N_ACT * sizeof *o);
  intrus_ctx_destroy(ctx);
}

/* ---- small products through intrus_gemm --------------------------------------------- */

struct gemm_case {
  bool ta, tb;
  int M, N, K, lda, ldb;
  float alpha, beta;
  const float *A, *B, *C0; /* C0: C's input, [M, N] */
};

#define MAX_GEMM_CASES 20000
static struct gemm_case gemm_cases[MAX_GEMM_CASES], long_cases[16];
static int n_gemm, n_long;
static size_t gemm_out, long_out; /* floats of all the cases' C */

static void add_gemm_case(struct gemm_case *set, int *count, size_t *out, bool ta, bool tb,
                          int M, int N, int K, float alpha, float beta) {
  struct gemm_case c = {.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .alpha = alpha, .beta = beta};
  c.lda = (ta ? M : K) + 1; /* strides wider than the rows */
  c.ldb = (tb ? K : N) + 3;
  c.A = rand_floats((size_t)(ta ? K : M) * c.lda, -1.0f, 1.0f);
  c.B = rand_floats((size_t)(tb ? N : K) * c.ldb, -1.0f, 1.0f);
  c.C0 = rand_floats((size_t)M * N, -1.0f, 1.0f);
  if (*count >= (set == gemm_cases ? MAX_GEMM_CASES : 16)) abort();
  set[(*count)++] = c;
  *out += (size_t)M * N;
}

/* C of every case, one after the other (row stride N + 2 while computed: nothing may be
 * written past column N). */
static void run_gemm_set(const struct gemm_case *set, int count, float *o) {
  for (int i = 0; i < count; i++) {
    const struct gemm_case *c = &set[i];
    const int ldc = c->N + 2;
    float *C = malloc((size_t)c->M * ldc * sizeof *C);
    for (int r = 0; r < c->M; r++)
      for (int j = 0; j < ldc; j++)
        C[(size_t)r * ldc + j] = j >= c->N ? 777.0f
                                 : c->beta == 0.0f ? NAN /* beta 0 must not read C */
                                                   : c->C0[(size_t)r * c->N + j];
    intrus_gemm(c->ta, c->tb, c->M, c->N, c->K, c->alpha, c->A, c->lda, c->B, c->ldb, c->beta,
                C, ldc);
    for (int r = 0; r < c->M; r++) {
      memcpy(o, C + (size_t)r * ldc, (size_t)c->N * sizeof *o);
      o += c->N;
      EXPECT(C[(size_t)r * ldc + c->N] == 777.0f && C[(size_t)r * ldc + c->N + 1] == 777.0f,
             "gemm %s%s %d x %d x %d wrote past column N", c->ta ? "T" : "N", c->tb ? "T" : "N",
             c->M, c->N, c->K);
    }
    free(C);
  }
}

static void run_small(float *o) { run_gemm_set(gemm_cases, n_gemm, o); }
static void run_long(float *o) { run_gemm_set(long_cases, n_long, o); }

/* Per element of C, |alpha| sum_k |a b| + |beta c|: the scale of its rounding. */
static double *gemm_magnitudes(const struct gemm_case *set, int count, size_t n) {
  double *mag = malloc(n * sizeof *mag), *m = mag;
  for (int i = 0; i < count; i++) {
    const struct gemm_case *c = &set[i];
    for (int r = 0; r < c->M; r++)
      for (int j = 0; j < c->N; j++) {
        double s = 0.0;
        for (int k = 0; k < c->K; k++) {
          double a = c->ta ? c->A[(size_t)k * c->lda + r] : c->A[(size_t)r * c->lda + k];
          double b = c->tb ? c->B[(size_t)j * c->ldb + k] : c->B[(size_t)k * c->ldb + j];
          s += fabs(a * b);
        }
        *m++ = fabs(c->alpha) * s + fabs(c->beta * c->C0[(size_t)r * c->N + j]) + 1e-30;
      }
  }
  return mag;
}

/* ---- packed products ---------------------------------------------------------------- */

struct packed_case {
  bool trans;
  int M, N, K;
  const float *A, *B, *bias; /* bias NULL: none */
};

#define MAX_PACKED_CASES 1024
static struct packed_case packed_cases[MAX_PACKED_CASES];
static int n_packed;
static size_t packed_out;
/* -1: pack at the level the product runs at; else pack at this level, then switch back. */
static int pack_level = -1;

static void add_packed_case(bool trans, int M, int N, int K, bool bias) {
  struct packed_case c = {.trans = trans, .M = M, .N = N, .K = K};
  c.A = rand_floats((size_t)M * K, -1.0f, 1.0f);
  c.B = rand_floats((size_t)K * N, -1.0f, 1.0f);
  c.bias = bias ? rand_floats((size_t)N, -1.0f, 1.0f) : NULL;
  if (n_packed >= MAX_PACKED_CASES) abort();
  packed_cases[n_packed++] = c;
  packed_out += (size_t)M * N;
}

static void run_packed(float *o) {
  const int level = intrus_x86_level();
  for (int i = 0; i < n_packed; i++) {
    const struct packed_case *c = &packed_cases[i];
    if (pack_level >= 0) intrus_x86_level_set(pack_level);
    struct intrus_packed *p = intrus_pack(c->K, c->N, c->B, c->trans ? c->K : c->N, c->trans);
    intrus_packed_set_bias(p, c->bias);
    intrus_x86_level_set(level);
    EXPECT(intrus_packed_uses_kernel(p) == (level >= 1 && (pack_level < 0 || pack_level >= 1)),
           "packed at %d, used at %d: uses_kernel %d", pack_level, level,
           intrus_packed_uses_kernel(p));
    intrus_gemm_packed(c->M, c->A, c->K, p, o, c->N);
    intrus_packed_free(p);
    o += (size_t)c->M * c->N;
  }
}

static double *packed_magnitudes(void) {
  double *mag = malloc(packed_out * sizeof *mag), *m = mag;
  for (int i = 0; i < n_packed; i++) {
    const struct packed_case *c = &packed_cases[i];
    for (int r = 0; r < c->M; r++)
      for (int j = 0; j < c->N; j++) {
        double s = c->bias ? fabs(c->bias[j]) : 0.0;
        for (int k = 0; k < c->K; k++)
          s += fabs((double)c->A[(size_t)r * c->K + k] *
                    (c->trans ? c->B[(size_t)j * c->K + k] : c->B[(size_t)k * c->N + j]));
        *m++ = s + 1e-30;
      }
  }
  return mag;
}

/* ---- softmax rows ------------------------------------------------------------------- */

static const int row_len[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 1000, 8000};
#define N_ROWS ((int)(sizeof row_len / sizeof row_len[0]))
static float *row_x[N_ROWS], *row_dx0[N_ROWS], row_lse[N_ROWS];
static size_t row_total;

/* Per row its maximum and sum of exponentials (intrus_row_sumexp). */
static void run_sumexp(float *o) {
  for (int r = 0; r < N_ROWS; r++) {
    float mx;
    o[2 * r + 1] = intrus_row_sumexp(row_x[r], row_len[r], &mx);
    o[2 * r] = mx;
  }
}

/* Every row's dx += g (softmax - uni), from the same dx and lse at every level. */
static void run_add_softmax(float *o) {
  for (int r = 0; r < N_ROWS; r++) {
    memcpy(o, row_dx0[r], (size_t)row_len[r] * sizeof *o);
    intrus_row_add_softmax(o, row_x[r], row_len[r], row_lse[r], 0.75f, 0.001f);
    o += row_len[r];
  }
}

/* softmax, then log_softmax, of [SM_R, SM_C] logits. */
enum { SM_R = 70, SM_C = 1000 };
static float *sm_x;

static void run_softmax_ops(float *o) {
  intrus_ctx *ctx = intrus_ctx_create(0);
  const int shape[2] = {SM_R, SM_C};
  intrus_tensor *x = leaf(ctx, 2, shape, sm_x, false);
  memcpy(o, intrus_softmax(ctx, x, NULL)->data, SM_R * SM_C * sizeof *o);
  memcpy(o + SM_R * SM_C, intrus_log_softmax(ctx, x, NULL)->data, SM_R * SM_C * sizeof *o);
  intrus_ctx_destroy(ctx);
}

/* intrus_linear_log_softmax: [LS_R, LS_K] rows times packed [LS_K, LS_V] weights. */
enum { LS_R = 130, LS_K = 64, LS_V = 500 };
static float *ls_x, *ls_w;

static void run_linear_log_softmax(float *o) {
  struct intrus_packed *p = intrus_pack(LS_K, LS_V, ls_w, LS_V, false);
  intrus_linear_log_softmax(LS_R, ls_x, LS_K, p, o);
  intrus_packed_free(p);
}

/* ---- layer norm, attention, dropout through the ops --------------------------------- */

/* Two layer norms, [LN_R, LN_D] (threaded) and [LN_R, 13] (tails only), and the
 * gradients of sum(y * w): y1, y2, dx1, dx2, dgain1, dbias1, dgain2, dbias2. */
enum { LN_R = 300, LN_D = 200, LN_D2 = 13 };
static float *ln_x1, *ln_x2, *ln_w1, *ln_w2, *ln_g1, *ln_b1, *ln_g2, *ln_b2;
#define LN_OUT (2 * LN_R * (LN_D + LN_D2) + 2 * (LN_D + LN_D2))

static void run_layer_norm(float *o) {
  intrus_ctx *ctx = intrus_ctx_create(0);
  const int s1[2] = {LN_R, LN_D}, s2[2] = {LN_R, LN_D2}, d1 = LN_D, d2 = LN_D2;
  intrus_tensor *x1 = leaf(ctx, 2, s1, ln_x1, true), *x2 = leaf(ctx, 2, s2, ln_x2, true);
  intrus_tensor *g1 = leaf(ctx, 1, &d1, ln_g1, true), *b1 = leaf(ctx, 1, &d1, ln_b1, true);
  intrus_tensor *g2 = leaf(ctx, 1, &d2, ln_g2, true), *b2 = leaf(ctx, 1, &d2, ln_b2, true);
  intrus_tensor *y1 = intrus_layer_norm(ctx, x1, g1, b1, 1e-5f);
  intrus_tensor *y2 = intrus_layer_norm(ctx, x2, g2, b2, 1e-5f);
  intrus_tensor *loss =
      intrus_add(ctx, intrus_sum(ctx, intrus_mul(ctx, y1, leaf(ctx, 2, s1, ln_w1, false))),
                 intrus_sum(ctx, intrus_mul(ctx, y2, leaf(ctx, 2, s2, ln_w2, false))));
  intrus_backward(ctx, loss);
  const struct {
    const float *p;
    size_t n;
  } parts[] = {{y1->data, LN_R * LN_D},
               {y2->data, LN_R * LN_D2},
               {intrus_tensor_grad(ctx, x1), LN_R * LN_D},
               {intrus_tensor_grad(ctx, x2), LN_R * LN_D2},
               {intrus_tensor_grad(ctx, g1), LN_D},
               {intrus_tensor_grad(ctx, b1), LN_D},
               {intrus_tensor_grad(ctx, g2), LN_D2},
               {intrus_tensor_grad(ctx, b2), LN_D2}};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    memcpy(o, parts[i].p, parts[i].n * sizeof *o);
    o += parts[i].n;
  }
  intrus_ctx_destroy(ctx);
}

/* Self-attention (causal, 4 heads) over three segments of q, and cross-attention with
 * dropout 0.2 in training (2 heads) of the same queries to a memory, segments sharing
 * key rows; outputs and the gradients of q, k, v, mem of sum(out1 w1) + sum(out2 w2). */
enum { AT_N = 40, AT_M = 30, AT_D = 32 };
static float *at_q, *at_k, *at_v, *at_mem, *at_w1, *at_w2;
#define AT_OUT (2 * AT_N * AT_D + 3 * AT_N * AT_D + AT_M * AT_D)

static void run_attention(float *o) {
  intrus_ctx *ctx = intrus_ctx_create(0);
  intrus_ctx_set_training(ctx, true);
  intrus_ctx_set_seed(ctx, 17, 3);
  const int sq[2] = {AT_N, AT_D}, sm[2] = {AT_M, AT_D};
  intrus_tensor *q = leaf(ctx, 2, sq, at_q, true), *k = leaf(ctx, 2, sq, at_k, true),
                *v = leaf(ctx, 2, sq, at_v, true), *mem = leaf(ctx, 2, sm, at_mem, true);
  const int qb1[] = {0, 9, 21}, ql1[] = {9, 12, 19};
  const struct intrus_segments self = {3, qb1, ql1, qb1, ql1};
  const int qb2[] = {0, 9, 21, 30}, ql2[] = {9, 12, 9, 10}, kb2[] = {0, 0, 12, 12},
            kl2[] = {12, 12, 18, 18};
  const struct intrus_segments cross = {4, qb2, ql2, kb2, kl2};
  intrus_tensor *o1 = intrus_attention(ctx, q, k, v, 4, &self, true, 0.0f);
  intrus_tensor *o2 = intrus_attention(ctx, q, mem, mem, 2, &cross, false, 0.2f);
  intrus_tensor *loss =
      intrus_add(ctx, intrus_sum(ctx, intrus_mul(ctx, o1, leaf(ctx, 2, sq, at_w1, false))),
                 intrus_sum(ctx, intrus_mul(ctx, o2, leaf(ctx, 2, sq, at_w2, false))));
  intrus_backward(ctx, loss);
  const size_t nq = AT_N * AT_D, nm = AT_M * AT_D;
  memcpy(o, o1->data, nq * sizeof *o);
  memcpy(o + nq, o2->data, nq * sizeof *o);
  memcpy(o + 2 * nq, intrus_tensor_grad(ctx, q), nq * sizeof *o);
  memcpy(o + 3 * nq, intrus_tensor_grad(ctx, k), nq * sizeof *o);
  memcpy(o + 4 * nq, intrus_tensor_grad(ctx, v), nq * sizeof *o);
  memcpy(o + 5 * nq, intrus_tensor_grad(ctx, mem), nm * sizeof *o);
  intrus_ctx_destroy(ctx);
}

/* dropout(x, 0.3) in training over DR_N elements (threaded), and the gradient of
 * sum(y w). */
enum { DR_N = 50021 };
static float *dr_x, *dr_w;

static void run_dropout(float *o) {
  intrus_ctx *ctx = intrus_ctx_create(0);
  intrus_ctx_set_training(ctx, true);
  intrus_ctx_set_seed(ctx, 5, 1);
  const int n = DR_N;
  intrus_tensor *x = leaf(ctx, 1, &n, dr_x, true);
  intrus_tensor *y = intrus_dropout(ctx, x, 0.3f);
  intrus_backward(ctx, intrus_sum(ctx, intrus_mul(ctx, y, leaf(ctx, 1, &n, dr_w, false))));
  memcpy(o, y->data, DR_N * sizeof *o);
  memcpy(o + DR_N, intrus_tensor_grad(ctx, x), DR_N * sizeof *o);
  intrus_ctx_destroy(ctx);
}

/* ---- the comparison ------------------------------------------------------------------ */

struct kernel {
  const char *name;
  void (*run)(float *out);
  size_t n;          /* floats out */
  double tol;        /* largest difference from level 0; < 0: none (bit for bit) */
  bool simd_same;    /* levels 1 and 2 must agree bit for bit */
  const double *mag; /* per element scale of the difference; NULL: max(1, |level 0's|) */
  /* The lowest level at which our own code computes every product of the kernel: below
   * it some go to OpenBLAS, whose bits may depend on how intrus splits a product across
   * threads (core/tensor/blas.c; seen under valgrind's AVX2-only CPU, where OpenBLAS
   * takes its Haswell kernels), so the thread check starts there. */
  int own_from;
};

/* Largest |a - b| / scale; NaN against anything but NaN counts as infinite. */
static double max_diff(const float *a, const float *b, size_t n, const double *mag) {
  double d = 0.0;
  for (size_t i = 0; i < n; i++) {
    if (isnan(a[i]) && isnan(b[i])) continue;
    double s = mag ? mag[i] : fabs((double)b[i]) > 1.0 ? fabs((double)b[i]) : 1.0;
    double e = fabs((double)a[i] - b[i]) / s;
    if (!(e <= d)) d = isnan(e) ? INFINITY : e;
  }
  return d;
}

static bool same_bits(const float *a, const float *b, size_t n) {
  return memcmp(a, b, n * sizeof *a) == 0;
}

static void compare_levels(const struct kernel *k, int cpu) {
  float *ref = malloc(k->n * sizeof *ref), *o2 = malloc(k->n * sizeof *o2),
        *o1 = malloc(k->n * sizeof *o1), *simd = malloc(k->n * sizeof *simd);
  for (int level = 0; level <= cpu; level++) {
    const char *isa = intrus_x86_level_name(level);
    intrus_x86_level_set(level);
    set_threads(2);
    k->run(o2);
    set_threads(1);
    k->run(o1);
    set_threads(2);
    if (level >= k->own_from)
      EXPECT(same_bits(o1, o2, k->n), "%s %s: 1 and 2 threads differ (by %.3g)", isa, k->name,
             max_diff(o1, o2, k->n, k->mag));
    if (level == 0) {
      memcpy(ref, o2, k->n * sizeof *ref);
      continue;
    }
    const double d = max_diff(o2, ref, k->n, k->mag);
    const bool bits = same_bits(o2, ref, k->n);
    if (k->tol < 0)
      EXPECT(bits, "%s %s differs from generic by %.3g (should be bit for bit)", isa, k->name,
             d);
    else
      EXPECT(d <= k->tol, "%s %s off generic by %.3g > %.3g", isa, k->name, d, k->tol);
    bool simd_bits = true;
    if (level == 1) memcpy(simd, o2, k->n * sizeof *simd);
    else simd_bits = same_bits(o2, simd, k->n);
    if (k->simd_same)
      EXPECT(simd_bits, "%s %s differs from avx2 by %.3g (should be bit for bit)", isa, k->name,
             max_diff(o2, simd, k->n, k->mag));
    char tol[32] = "bitwise";
    if (k->tol >= 0) snprintf(tol, sizeof tol, "tol %.0e", k->tol);
    printf("test_isa: %-7s %-28s max diff from generic %.3g (%s)%s%s\n", isa, k->name, d, tol,
           bits ? ", same bits" : "", level == 2 && simd_bits ? ", same bits as avx2" : "");
  }
  intrus_x86_level_set(-1);
  free(ref);
  free(o2);
  free(o1);
  free(simd);
}

static void free_inputs(void) {
  for (int i = 0; i < n_gemm; i++) {
    free((void *)gemm_cases[i].A);
    free((void *)gemm_cases[i].B);
    free((void *)gemm_cases[i].C0);
  }
  for (int i = 0; i < n_long; i++) {
    free((void *)long_cases[i].A);
    free((void *)long_cases[i].B);
    free((void *)long_cases[i].C0);
  }
  for (int i = 0; i < n_packed; i++) {
    free((void *)packed_cases[i].A);
    free((void *)packed_cases[i].B);
    free((void *)packed_cases[i].bias);
  }
  for (int r = 0; r < N_ROWS; r++) {
    free(row_x[r]);
    free(row_dx0[r]);
  }
  float *flat[] = {act_x, sm_x,  ls_x,  ls_w,  ln_x1, ln_x2, ln_w1, ln_w2, ln_g1, ln_b1,
                   ln_g2, ln_b2, at_q,  at_k,  at_v,  at_mem, at_w1, at_w2, dr_x, dr_w};
  for (size_t i = 0; i < sizeof flat / sizeof *flat; i++) free(flat[i]);
}

static void make_inputs(void) {
  intrus_rng_seed(&rng, 5);
  act_x = malloc(N_ACT * sizeof *act_x);
  for (int i = 0; i < N_ACT; i++) act_x[i] = -8.0f + 16.0f * (float)i / (N_ACT - 1);

  static const int Ms[] = {1, 2, 3, 4, 5, 6, 7, 13};
  static const int Ns[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  12, 15, 16, 17,
                           23, 24, 25, 31, 32, 33, 47, 48, 49, 64, 65, 70};
  static const int Ks[] = {1, 2, 8, 9, 31, 64, 65};
  for (size_t a = 0; a < sizeof Ms / sizeof *Ms; a++)
    for (size_t b = 0; b < sizeof Ns / sizeof *Ns; b++)
      for (size_t c = 0; c < sizeof Ks / sizeof *Ks; c++)
        for (int t = 0; t < 8; t++)
          add_gemm_case(gemm_cases, &n_gemm, &gemm_out, t & 1, t & 2, Ms[a], Ns[b], Ks[c],
                        t & 4 ? -0.75f : 1.0f, t & 4 ? 0.5f : 0.0f);
  /* Long K: level 1 leaves a B with N % 8 != 0 (its [K, 8] strip) or a B^T (its
   * padded copy) past SMALL_MAX_BT floats to OpenBLAS, and takes N % 8 == 0. */
  add_gemm_case(long_cases, &n_long, &long_out, false, false, 3, 5, 2000, 1.0f, 0.0f);
  add_gemm_case(long_cases, &n_long, &long_out, true, false, 2, 9, 3000, 0.5f, 1.0f);
  add_gemm_case(long_cases, &n_long, &long_out, false, false, 4, 16, 1500, 1.0f, 0.0f);
  add_gemm_case(long_cases, &n_long, &long_out, false, true, 2, 3, 1500, 1.0f, 0.0f);

  static const int pM[] = {1, 2, 5, 6, 7, 13}, pN[] = {1, 7, 8, 15, 17, 63, 64, 65, 100, 130},
                   pK[] = {1, 5, 64, 65};
  for (size_t a = 0; a < sizeof pM / sizeof *pM; a++)
    for (size_t b = 0; b < sizeof pN / sizeof *pN; b++)
      for (size_t c = 0; c < sizeof pK / sizeof *pK; c++)
        for (int t = 0; t < 4; t++) add_packed_case(t & 1, pM[a], pN[b], pK[c], t & 2);
  /* Big enough to be split across threads. */
  add_packed_case(false, 50, 1000, 256, true);
  add_packed_case(true, 37, 333, 128, false);

  for (int r = 0; r < N_ROWS; r++) {
    row_x[r] = rand_floats((size_t)row_len[r], -10.0f, 10.0f);
    row_dx0[r] = rand_floats((size_t)row_len[r], -1.0f, 1.0f);
    if (row_len[r] > 3) row_x[r][row_len[r] / 3] = -INFINITY;
    row_total += (size_t)row_len[r];
  }
  sm_x = rand_floats(SM_R * SM_C, -8.0f, 8.0f);
  ls_x = rand_floats(LS_R * LS_K, -1.0f, 1.0f);
  ls_w = rand_floats(LS_K * LS_V, -1.0f, 1.0f);

  ln_x1 = rand_floats(LN_R * LN_D, -3.0f, 5.0f);
  ln_x2 = rand_floats(LN_R * LN_D2, -3.0f, 5.0f);
  ln_w1 = rand_floats(LN_R * LN_D, -1.0f, 1.0f);
  ln_w2 = rand_floats(LN_R * LN_D2, -1.0f, 1.0f);
  ln_g1 = rand_floats(LN_D, 0.5f, 1.5f);
  ln_b1 = rand_floats(LN_D, -0.5f, 0.5f);
  ln_g2 = rand_floats(LN_D2, 0.5f, 1.5f);
  ln_b2 = rand_floats(LN_D2, -0.5f, 0.5f);

  at_q = rand_floats(AT_N * AT_D, -1.0f, 1.0f);
  at_k = rand_floats(AT_N * AT_D, -1.0f, 1.0f);
  at_v = rand_floats(AT_N * AT_D, -1.0f, 1.0f);
  at_mem = rand_floats(AT_M * AT_D, -1.0f, 1.0f);
  at_w1 = rand_floats(AT_N * AT_D, -1.0f, 1.0f);
  at_w2 = rand_floats(AT_N * AT_D, -1.0f, 1.0f);

  dr_x = rand_floats(DR_N, -2.0f, 2.0f);
  dr_w = rand_floats(DR_N, -1.0f, 1.0f);
}

int main(void) {
  make_inputs();
  const int cpu = intrus_x86_cpu_level();
  intrus_x86_level_set(0);
  EXPECT(intrus_x86_level() == 0, "forced generic: level %d", intrus_x86_level());
  for (int level = 0; level <= cpu; level++) {
    intrus_x86_level_set(level);
    EXPECT(intrus_x86_level() == level, "forced %s: level %d", intrus_x86_level_name(level),
           intrus_x86_level());
  }
  /* The lse that intrus_row_add_softmax is given, the same at every level. */
  intrus_x86_level_set(0);
  for (int r = 0; r < N_ROWS; r++) {
    float mx;
    const float s = intrus_row_sumexp(row_x[r], row_len[r], &mx);
    row_lse[r] = mx + logf(s);
  }
  intrus_x86_level_set(-1);

  double *small_mag = gemm_magnitudes(gemm_cases, n_gemm, gemm_out);
  double *long_mag = gemm_magnitudes(long_cases, n_long, long_out);
  double *packed_mag = packed_magnitudes();
  /* Tolerances. gelu: erf within 1e-7 relative of the true value on every path, so the
   * paths differ by a few float ulps (fused multiply-adds against separate ones).
   * Products: two orders of rounding of K <= 3000 terms, relative to the sum of |terms|
   * (the bound is K ulps; random signs give far less). Softmax rows: float sums of up
   * to 8,000 exponentials in 4, 8 or 16 lanes. */
  const struct kernel kernels[] = {
      {"gelu, erf, gelu backward", run_gelu, 3 * N_ACT, 1e-5, false, NULL, 0},
      {"elu", run_elu, N_ACT, 1e-5, false, NULL, 0},
      {"small product", run_small, gemm_out, 1e-5, true, small_mag, 1},
      {"small product, long K", run_long, long_out, 1e-5, false, long_mag, 2},
      {"packed product", run_packed, packed_out, 1e-5, true, packed_mag, 1},
      {"row_sumexp", run_sumexp, 2 * N_ROWS, 1e-5, false, NULL, 0},
      {"row_add_softmax", run_add_softmax, row_total, -1, true, NULL, 0},
      {"softmax, log_softmax", run_softmax_ops, 2 * SM_R * SM_C, 1e-5, false, NULL, 0},
      {"linear_log_softmax", run_linear_log_softmax, LS_R * LS_V, 1e-5, false, NULL, 1},
      {"layer norm fwd+bwd", run_layer_norm, LN_OUT, -1, true, NULL, 0},
      {"attention fwd+bwd", run_attention, AT_OUT, 1e-5, false, NULL, 1},
      {"dropout fwd+bwd", run_dropout, 2 * DR_N, -1, true, NULL, 0},
  };
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) compare_levels(&kernels[i], cpu);

  /* A matrix packed at one level serves products at another: packed at the CPU's
   * level, used at each level, it gives what one packed at that level gives; packed at
   * the generic level (no panels), used at the CPU's, its products go to intrus_gemm
   * (whose small kernel takes the small ones there). */
  float *own = malloc(packed_out * sizeof *own), *other = malloc(packed_out * sizeof *other);
  for (int level = 0; level <= cpu; level++) {
    intrus_x86_level_set(level);
    pack_level = -1;
    run_packed(own);
    pack_level = cpu;
    run_packed(other);
    EXPECT(same_bits(own, other, packed_out), "packed at %s, used at %s: differs by %.3g",
           intrus_x86_level_name(cpu), intrus_x86_level_name(level),
           max_diff(other, own, packed_out, packed_mag));
    if (level == 0) {
      intrus_x86_level_set(cpu);
      pack_level = 0;
      run_packed(other);
      EXPECT(max_diff(other, own, packed_out, packed_mag) <= 1e-5,
             "packed at generic, used at %s: off generic by %.3g", intrus_x86_level_name(cpu),
             max_diff(other, own, packed_out, packed_mag));
    }
    pack_level = -1;
  }
  intrus_x86_level_set(-1);
  free(own);
  free(other);
  printf("test_isa: compared %d ISA level(s) of this CPU (widest %s) with the generic path; "
         "%d small, %d long-K and %d packed products\n",
         cpu + 1, intrus_x86_level_name(cpu), n_gemm, n_long, n_packed);

  /* INTRUS_ISA for a process: lowers, never raises; a bad value is named and ignored.
   * (The child runs natively: under valgrind this process sees a narrower CPU than it.) */
  char out[4096];
  EXPECT(test_run_intrus(NULL, "--version", out, sizeof out) == 0, "--version");
  EXPECT(strstr(out, "kernels avx512,") || strstr(out, "kernels avx2,") ||
             strstr(out, "kernels generic,"),
         "--version names no kernels: %s", out);
  setenv("INTRUS_ISA", "generic", 1);
  test_run_intrus(NULL, "--version", out, sizeof out);
  EXPECT_CONTAINS(out, "kernels generic,");
  setenv("INTRUS_ISA", "sse9", 1);
  test_run_intrus(NULL, "--version", out, sizeof out);
  EXPECT_CONTAINS(out, "INTRUS_ISA=sse9 is not generic, avx2 or avx512; using ");
  unsetenv("INTRUS_ISA");
  free(small_mag);
  free(long_mag);
  free(packed_mag);
  free_inputs();
  return test_finish("test_isa");
}

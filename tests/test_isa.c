/* The hand-written kernels under every ISA this CPU runs (AVX-512, AVX2, the portable
 * C), forced with intrus_x86_level_set as INTRUS_ISA forces them for a process: gelu
 * forward and backward and erf, the small-product kernel behind intrus_gemm and the
 * packed-weight product, each compared with the portable path to a stated tolerance,
 * and each independent of the thread count bit for bit; and INTRUS_ISA itself through
 * `intrus --version`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/blas.h"
#include "intrus/rng.h"
#include "intrus/tensor.h"
#include "tensor/ops_internal.h"
#include "testutil.h"

#define N_ACT 10007

struct act_out {
  float erf[N_ACT], gelu[N_ACT], dgelu[N_ACT];
};

static void activations(const float *x, struct act_out *o) {
  intrus_erf_n(o->erf, x, N_ACT);
  intrus_ctx *ctx = intrus_ctx_create(1 << 20);
  int n = N_ACT;
  intrus_tensor *t = intrus_tensor_from(ctx, 1, &n, x);
  t->requires_grad = true;
  intrus_tensor *g = intrus_gelu(ctx, t);
  memcpy(o->gelu, g->data, sizeof o->gelu);
  intrus_backward(ctx, intrus_sum(ctx, g));
  memcpy(o->dgelu, intrus_tensor_grad(ctx, t), sizeof o->dgelu);
  intrus_ctx_destroy(ctx);
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
  double d = 0.0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)a[i] - b[i]);
    if (!(e <= d)) d = e;
  }
  return d;
}

/* C = A B^T-ish products of the sizes the small kernel and the packed kernel take. */
enum { M = 9, K = 40, NC = 70 };
struct prod_out {
  float small[M * NC], packed[M * NC];
};

static void products(const float *A, const float *B, struct prod_out *o) {
  intrus_gemm(false, false, M, NC, K, 1.0f, A, K, B, NC, 0.0f, o->small, NC);
  struct intrus_packed *p = intrus_pack(K, NC, B, NC, false);
  intrus_gemm_packed(M, A, K, p, o->packed, NC);
  intrus_packed_free(p);
}

int main(void) {
  struct intrus_rng r;
  intrus_rng_seed(&r, 5);
  float *x = malloc(N_ACT * sizeof *x), *A = tu_random_floats(&r, M * K),
        *B = tu_random_floats(&r, K * NC);
  for (int i = 0; i < N_ACT; i++) x[i] = -8.0f + 16.0f * (float)i / (N_ACT - 1);
  static struct act_out act_ref, act, act1;
  static struct prod_out prod_ref, prod;

  const int cpu = intrus_x86_cpu_level();
  intrus_x86_level_set(0);
  EXPECT(intrus_x86_level() == 0, "forced generic: level %d", intrus_x86_level());
  activations(x, &act_ref);
  products(A, B, &prod_ref);
  int tested = 1;
  for (int level = 0; level <= cpu; level++) {
    intrus_x86_level_set(level);
    EXPECT(intrus_x86_level() == level, "forced %s: level %d", intrus_x86_level_name(level),
           intrus_x86_level());
    test_set_threads(2);
    activations(x, &act);
    test_set_threads(1);
    activations(x, &act1);
    test_set_threads(2);
    const char *isa = intrus_x86_level_name(level);
    /* erf within 1e-7 relative of the true value on every path, so the paths differ by
     * a few float ulps (fused multiply-adds against separate ones). */
    EXPECT(max_abs_diff(act.erf, act_ref.erf, N_ACT) <= 1e-6, "%s erf off by %g", isa,
           max_abs_diff(act.erf, act_ref.erf, N_ACT));
    EXPECT(max_abs_diff(act.gelu, act_ref.gelu, N_ACT) <= 1e-5, "%s gelu off by %g", isa,
           max_abs_diff(act.gelu, act_ref.gelu, N_ACT));
    EXPECT(max_abs_diff(act.dgelu, act_ref.dgelu, N_ACT) <= 1e-5, "%s gelu backward off by %g",
           isa, max_abs_diff(act.dgelu, act_ref.dgelu, N_ACT));
    EXPECT(!memcmp(&act, &act1, sizeof act), "%s: 1 and 2 threads differ", isa);
    products(A, B, &prod);
    /* |terms| are below 1 and K = 40: float rounding of either order stays under 1e-5. */
    EXPECT(max_abs_diff(prod.small, prod_ref.small, M * NC) <= 1e-5, "%s small product off by %g",
           isa, max_abs_diff(prod.small, prod_ref.small, M * NC));
    EXPECT(max_abs_diff(prod.packed, prod_ref.packed, M * NC) <= 1e-5,
           "%s packed product off by %g", isa, max_abs_diff(prod.packed, prod_ref.packed, M * NC));
    tested += level > 0;
  }
  intrus_x86_level_set(-1);
  printf("test_isa: compared %d ISA level(s) of this CPU (widest %s) with the generic path\n",
         tested, intrus_x86_level_name(cpu));

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
  free(x);
  free(A);
  free(B);
  return test_finish("test_isa");
}

/* Core benchmarks, run by `make bench` (never by `make check`): each result is printed
 * next to its reference measured in the same run, under the same environment.
 *  - matmul: the engine's op (forward) against a raw cblas_sgemm of the same shapes.
 *    (This file calls cblas_sgemm only as the reference; the engine's single call site
 *    is core/tensor/blas.c.) Target: at least 90% of raw for shapes of 256 and up.
 *  - memory-bound ops: bytes moved per second against memcpy. Target: at least 50%.
 *  - attention: the fused packed op (intrus_attention), forward and backward, against
 *    the composition of ops the padded Transformer layers used before it, at the
 *    shapes of bench_train. For information; no target.
 *  - kernels: the hand-written small-product and packed-product kernels against
 *    OpenBLAS at each ISA level the CPU runs (INTRUS_ISA's levels), same shapes, same run.
 *  - cnn: the `cnn` encoder plugin's default stack (filters 64..512, docs/cnn.md), forward
 *    and backward over a batch of 64 x 320 grey images, in GFLOP/s of its convolutions
 *    against the same run's sgemm peak. Target: at least 60%.
 * `bench_core matmul`, `bench_core bandwidth`, `bench_core attention`, `bench_core
 * kernels` or `bench_core cnn [batch]` runs one part only. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tensor/ops_internal.h"
#include "bench_util.h"
#include "intrus/blas.h"
#include "intrus/tensor.h"
#include "intrus/nn.h"
#include "intrus/params.h"
#include "intrus/plugin.h"


/* Repeats fn until at least min_s have passed and it ran at least 5 times (after one
 * warm-up call); returns the best time of one call, which is the least disturbed by
 * the other tenants. */
#define TIME_BEST(best, min_s, ...)                                    \
  do {                                                                 \
    __VA_ARGS__;                                                       \
    double start_all = now_s();                                        \
    int reps_ = 0;                                                     \
    best = 1e30;                                                       \
    do {                                                               \
      double t0 = now_s();                                             \
      __VA_ARGS__;                                                     \
      double dt_ = now_s() - t0;                                       \
      if (dt_ < best) best = dt_;                                      \
    } while (++reps_ < 5 || now_s() - start_all < (min_s));            \
  } while (0)

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) x[i] = (float)((i * 2654435761u + seed) % 1000) / 1000.0f - 0.5f;
}

static int bench_matmul(intrus_ctx *ctx) {
  static const int shapes[][3] = {{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024},
                                  {4000, 1024, 256}, {4000, 256, 1024}, {4000, 8000, 256},
                                  {64, 64, 64}};
  int below = 0;
  printf("\nmatmul (forward, no grad)   M     N     K   raw GFLOP/s  op GFLOP/s  op/raw\n");
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    int M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
    float *C = malloc(sizeof(float) * M * N);
    fill(A, (size_t)M * K, 1);
    fill(B, (size_t)K * N, 2);
    double t_raw, t_op;
    raw_sgemm_threads(1);
    TIME_BEST(t_raw, 0.5,
              cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N,
                          0.0f, C, N));
    raw_sgemm_threads(0);
    intrus_ctx_set_grad(ctx, false);
    int sa[2] = {M, K}, sb[2] = {K, N};
    intrus_ctx_reset(ctx);
    intrus_tensor *a = intrus_tensor_from(ctx, 2, sa, A), *b = intrus_tensor_from(ctx, 2, sb, B);
    (void)a;
    (void)b;
    /* Rewind to just after the inputs so every call reuses the same output memory. */
    TIME_BEST(t_op, 0.5, {
      intrus_ctx_reset(ctx);
      a = intrus_tensor_new(ctx, 2, sa);
      b = intrus_tensor_new(ctx, 2, sb);
      intrus_matmul(ctx, a, b, false, false);
    });
    double flop = 2.0 * M * N * K;
    double ratio = t_raw / t_op;
    bool counts = M >= 256 && N >= 256 && K >= 256;
    if (counts && ratio < 0.90) below++;
    printf("%27s %5d %5d %5d %12.1f %11.1f %6.1f%%%s\n", "", M, N, K, flop / t_raw / 1e9,
           flop / t_op / 1e9, 100 * ratio, counts ? (ratio >= 0.90 ? "" : "  < 90% target") : "  (small)");
    free(A);
    free(B);
    free(C);
  }
  return below;
}

/* memcpy of n floats split into one contiguous part per OpenMP thread, as the ops
 * split their loops. */
static void memcpy_threads(float *dst, const float *src, long n) {
#ifdef _OPENMP
#pragma omp parallel
  {
    long nt = omp_get_num_threads(), t = omp_get_thread_num();
    long lo = n * t / nt, hi = n * (t + 1) / nt;
    memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof(float));
  }
#else
  memcpy(dst, src, (size_t)n * sizeof(float));
#endif
}

/* Bytes moved per second, each op counting the bytes it must read and write per
 * element (the B/elem column): 12 for add and mul (two inputs, one output), 8 for the
 * others (the 4 KB bias stays in cache); memcpy counts 8 (read + write). Reads for
 * ownership before a store are counted for none of them (glibc's memcpy avoids them
 * at this size with non-temporal stores; the ops pay them). The target compares with
 * memcpy on one thread; the last column compares with memcpy split over the threads
 * the ops use, for information. */
static int bench_bandwidth(intrus_ctx *ctx) {
  const int n = 1 << 24; /* 64 MB per tensor: far beyond the caches */
  int shape[2] = {n / 1024, 1024};
  float *src = malloc(sizeof(float) * n), *dst = malloc(sizeof(float) * n);
  fill(src, n, 3);
  memset(dst, 0, sizeof(float) * n);
  double t_copy, t_copyn;
  TIME_BEST(t_copy, 0.5, memcpy(dst, src, sizeof(float) * n));
  TIME_BEST(t_copyn, 0.5, memcpy_threads(dst, src, n));
  double bw_copy = 2.0 * sizeof(float) * n / t_copy;
  double bw_copyn = 2.0 * sizeof(float) * n / t_copyn;
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  char label[64];
  snprintf(label, sizeof label, "memcpy, %d thread%s", threads, threads == 1 ? "" : "s");
  printf("\nmemory-bound op (n = %d)  B/elem   GB/s  vs memcpy  vs memcpy %dT\n", n, threads);
  printf("%-26s %6d %6.1f  (target reference)\n", "memcpy, 1 thread", 8, bw_copy / 1e9);
  printf("%-26s %6d %6.1f\n", label, 8, bw_copyn / 1e9);
  intrus_ctx_set_grad(ctx, false);
  intrus_ctx_set_training(ctx, true);
  intrus_ctx_reset(ctx);
  intrus_tensor *a = intrus_tensor_from(ctx, 2, shape, src);
  intrus_tensor *b = intrus_tensor_from(ctx, 2, shape, src);
  int bias_shape[1] = {1024};
  intrus_tensor *bias = intrus_tensor_from(ctx, 1, bias_shape, src);
  int below = 0;
  /* Each op's result is allocated from the arena; rewinding to just after the inputs
   * keeps reusing the same, already-touched memory, as a training step does. */
  struct {
    const char *name;
    int streams; /* tensors read + written */
  } ops[] = {{"add", 3}, {"add (bias)", 2}, {"mul", 3}, {"scale", 2},
             {"relu", 2}, {"gelu", 2},      {"dropout", 2}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    double t;
    TIME_BEST(t, 0.5, {
      intrus_ctx_reset(ctx);
      a = intrus_tensor_new(ctx, 2, shape);
      b = intrus_tensor_new(ctx, 2, shape);
      bias = intrus_tensor_new(ctx, 1, bias_shape);
      switch (i) {
      case 0: intrus_add(ctx, a, b); break;
      case 1: intrus_add(ctx, a, bias); break;
      case 2: intrus_mul(ctx, a, b); break;
      case 3: intrus_scale(ctx, a, 0.5f); break;
      case 4: intrus_relu(ctx, a); break;
      case 5: intrus_gelu(ctx, a); break;
      case 6: intrus_dropout(ctx, a, 0.1f); break;
      }
    });
    int bytes = ops[i].streams * (int)sizeof(float);
    double bw = (double)bytes * n / t;
    double ratio = bw / bw_copy;
    if (ratio < 0.5) below++;
    printf("%-26s %6d %6.1f %9.1f%% %11.1f%%%s\n", ops[i].name, bytes, bw / 1e9, 100 * ratio,
           100 * bw / bw_copyn, ratio >= 0.5 ? "" : "  < 50% target");
  }
  free(src);
  free(dst);
  return below;
}

/* ---- attention ---------------------------------------------------------------------- */

/* [B, T, d] -> [B, H, T, Dh] and back, as the padded layers did before the fused op. */
static intrus_tensor *split_heads(intrus_ctx *ctx, intrus_tensor *x, int H) {
  const int s4[4] = {x->shape[0], x->shape[1], H, x->shape[2] / H}, perm[4] = {0, 2, 1, 3};
  return intrus_permute(ctx, intrus_reshape(ctx, x, 4, s4), perm);
}

static intrus_tensor *merge_heads(intrus_ctx *ctx, intrus_tensor *x) {
  const int perm[4] = {0, 2, 1, 3}, s3[3] = {x->shape[0], x->shape[2], x->shape[1] * x->shape[3]};
  return intrus_reshape(ctx, intrus_permute(ctx, x, perm), 3, s3);
}

struct attn_shape {
  const char *name;
  int B, T, S, d, H;
  bool causal;
};

/* One forward and backward of the attention core on q [B, T, d], k, v [B, S, d] (the
 * projections excluded), training with dropout 0.1; fused or composed. */
static void attention_step(intrus_ctx *ctx, const struct attn_shape *a, bool fused,
                           const float *x, const float *dy) {
  intrus_ctx_reset(ctx);
  intrus_ctx_set_seed(ctx, 1, 1);
  const int B = a->B, T = a->T, S = a->S, d = a->d, H = a->H;
  const int qs[3] = {B, T, d}, ks[3] = {B, S, d};
  intrus_tensor *q = intrus_tensor_from(ctx, 3, qs, x);
  intrus_tensor *k = intrus_tensor_from(ctx, 3, ks, x);
  intrus_tensor *v = intrus_tensor_from(ctx, 3, ks, x + (size_t)B * T * d);
  q->requires_grad = k->requires_grad = v->requires_grad = true;
  intrus_tensor *y;
  if (fused) {
    int *arr = intrus_ctx_alloc(ctx, sizeof(int) * 4 * B);
    for (int b = 0; b < B; b++) {
      arr[b] = b * T;
      arr[B + b] = T;
      arr[2 * B + b] = b * S;
      arr[3 * B + b] = S;
    }
    const struct intrus_segments seg = {B, arr, arr + B, arr + 2 * B, arr + 3 * B};
    const int q2[2] = {B * T, d}, k2[2] = {B * S, d};
    y = intrus_attention(ctx, intrus_reshape(ctx, q, 2, q2), intrus_reshape(ctx, k, 2, k2),
                         intrus_reshape(ctx, v, 2, k2), H, &seg, a->causal, 0.1f);
  } else {
    /* Every key kept (full lengths), as bench_train's batches; the mask is still built,
     * as the padded layers built it from their length masks. */
    uint8_t *mask = intrus_ctx_alloc(ctx, (size_t)B * H * T * S);
    for (size_t i = 0; i < (size_t)B * H * T * S; i++)
      mask[i] = (uint8_t)(!a->causal || (long)(i % S) <= (long)(i / S % T));
    intrus_tensor *sc = intrus_scale(
        ctx, intrus_matmul(ctx, split_heads(ctx, q, H), split_heads(ctx, k, H), false, true),
        1.0f / sqrtf((float)(d / H)));
    intrus_tensor *w = intrus_dropout(ctx, intrus_softmax(ctx, sc, mask), 0.1f);
    y = merge_heads(ctx, intrus_matmul(ctx, w, split_heads(ctx, v, H), false, false));
  }
  intrus_backward_seed(ctx, y, dy);
}

static void bench_attention(intrus_ctx *ctx) {
  static const struct attn_shape shapes[] = {
      {"(a) self, causal", 160, 25, 25, 256, 4, true},
      {"(a) cross", 160, 25, 24, 256, 4, false},
      {"(b) self, causal", 160, 25, 25, 512, 8, true},
      {"(b) cross", 160, 25, 24, 512, 8, false},
      {"long: 16 x 200, self", 16, 200, 200, 512, 8, false},
  };
  printf("\nattention core, forward + backward   composed ms   fused ms   speed-up\n");
  intrus_ctx_set_grad(ctx, true);
  intrus_ctx_set_training(ctx, true);
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const struct attn_shape *a = &shapes[i];
    size_t n = (size_t)a->B * (a->T + a->S) * a->d;
    float *x = malloc(n * sizeof(float)), *dy = malloc(n * sizeof(float));
    fill(x, n, 4);
    fill(dy, n, 5);
    double t_old, t_new;
    TIME_BEST(t_old, 0.5, attention_step(ctx, a, false, x, dy));
    TIME_BEST(t_new, 0.5, attention_step(ctx, a, true, x, dy));
    printf("%-36s %11.2f %10.2f %9.2fx\n", a->name, 1e3 * t_old, 1e3 * t_new, t_old / t_new);
    free(x);
    free(dy);
  }
  intrus_ctx_set_training(ctx, false);
}

/* With an argument "matmul", "bandwidth" or "attention", runs only that part. */
/* The hand-written kernels against OpenBLAS at each ISA level this CPU runs, side by
 * side: small products (attention's per-state pieces: scores Q K^T and weights x V)
 * through intrus_gemm with the small kernel on and off, and products with a packed
 * right-hand matrix (search's steps: a few rows against the token layer or a linear)
 * against intrus_gemm on the plain matrix. Level 0 (generic) is OpenBLAS on both sides. */
static void bench_kernels(void) {
  static const struct { const char *what; int M, N, K; bool tb; } small[] = {
      {"scores 12x12x64 (B^T)", 12, 12, 64, true},
      {"weights x V 12x64x12", 12, 64, 12, false},
      {"scores 20x40x64 (B^T)", 20, 40, 64, true},
      {"cross 24x64x20", 24, 64, 20, false}};
  static const struct { const char *what; int M, N, K; } packed[] = {
      {"search 16 rows x 8000 x 256", 16, 8000, 256},
      {"search 4 rows x 1024 x 256", 4, 1024, 256},
      {"search 48 rows x 512 x 128", 48, 512, 128}};
  const int cpu = intrus_x86_cpu_level();
  printf("\nkernels against OpenBLAS, per ISA level (best of >= 5 runs / 0.2 s)\n");
  printf("level    product                        kernel us   OpenBLAS us   OpenBLAS/kernel\n");
  for (int level = cpu; level >= 1; level--) {
    intrus_x86_level_set(level);
    for (size_t i = 0; i < sizeof small / sizeof *small; i++) {
      const int M = small[i].M, N = small[i].N, K = small[i].K;
      float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
      float *C = malloc(sizeof(float) * M * N);
      fill(A, (size_t)M * K, 1);
      fill(B, (size_t)K * N, 2);
      const int ldb = small[i].tb ? K : N;
      double tk, tb;
      enum { REPS = 200 };
      intrus_blas_set_small(true);
      TIME_BEST(tk, 0.2, for (int r = 0; r < REPS; r++) intrus_gemm(false, small[i].tb, M, N, K, 1.0f, A, K, B, ldb, 0.0f, C, N));
      intrus_blas_set_small(false);
      TIME_BEST(tb, 0.2, for (int r = 0; r < REPS; r++) intrus_gemm(false, small[i].tb, M, N, K, 1.0f, A, K, B, ldb, 0.0f, C, N));
      intrus_blas_set_small(true);
      printf("%-8s small %-24s %9.3f   %11.3f   %6.2fx\n", intrus_x86_level_name(level),
             small[i].what, 1e6 * tk / REPS, 1e6 * tb / REPS, tb / tk);
      free(A), free(B), free(C);
    }
    for (size_t i = 0; i < sizeof packed / sizeof *packed; i++) {
      const int M = packed[i].M, N = packed[i].N, K = packed[i].K;
      float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
      float *C = malloc(sizeof(float) * M * N);
      fill(A, (size_t)M * K, 3);
      fill(B, (size_t)K * N, 4);
      struct intrus_packed *pk = intrus_pack(K, N, B, N, false);
      double tk, tb;
      TIME_BEST(tk, 0.2, intrus_gemm_packed(M, A, K, pk, C, N));
      TIME_BEST(tb, 0.2, intrus_gemm(false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N));
      printf("%-8s packed %-23s %9.1f   %11.1f   %6.2fx\n", intrus_x86_level_name(level),
             packed[i].what, 1e6 * tk, 1e6 * tb, tb / tk);
      intrus_packed_free(pk);
      free(A), free(B), free(C);
    }
  }
  intrus_x86_level_set(-1);
}

/* The cnn encoder with its defaults (d_model 256) on B images of 64 x 320: forward and
 * backward (the gradient of every parameter; the pixels need none), timed best of
 * several. FLOPs are the convolutions' only: 2 O K P per image for the forward and
 * for each of the weight and input gradients (none for the first stage's input). */
static int bench_cnn(intrus_ctx *ctx, int B) {
  struct intrus_error err = {0};
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(s);
  intrus_plugin_search_add(s, INTRUS_BUILDDIR "/plugins");
  struct intrus_plugin *plug = NULL;
  if (intrus_plugin_load(s, INTRUS_KIND_ENCODER, "cnn", &plug, &err)) {
    printf("\ncnn: skipped (%s)\n", err.msg);
    intrus_plugin_search_free(s);
    return 0;
  }
  const struct intrus_encoder_vtable *vt = intrus_plugin_descriptor(plug)->vtable;
  struct intrus_config *cfg = intrus_config_load_string("cnn: {};", "bench", &err);
  const intrus_cfg *g = NULL;
  if (!cfg || intrus_cfg_group_req(intrus_config_root(cfg), "cnn", &g, &err)) {
    printf("cnn: %s\n", err.msg);
    return 1;
  }
  struct intrus_params *p = intrus_params_create();
  struct intrus_model_init init = {.cfg = g, .params = p, .prefix = "encoder.", .d_model = 256,
                                   .src_vocab = 0, .tgt_vocab = 0};
  void *enc = NULL;
  if (vt->create(&init, &enc, &err) || intrus_params_finalize(p, 1, &err)) {
    printf("cnn: %s\n", err.msg);
    return 1;
  }
  const int H = 64, W = 320;
  float *px = malloc(sizeof(float) * B * H * W);
  fill(px, (size_t)B * H * W, 5);
  for (size_t i = 0; i < (size_t)B * H * W; i++) px[i] += 0.5f;
  struct intrus_src_batch sb = {.batch = B, .channels = 1, .height = H, .width = W, .pixels = px};
  /* conv FLOPs from the weights' shapes; stage i sees the map after the pools before it */
  double flops = 0.0;
  int h = H, w = W;
  for (size_t i = 0; i < intrus_params_count(p); i++) {
    const intrus_tensor *t = intrus_params_at(p, i);
    if (t->ndim != 4) continue;
    const double O = t->shape[0], K = (double)t->shape[1] * t->shape[2] * t->shape[3];
    const double one = 2.0 * B * O * K * h * w;
    flops += (i == 0 ? 2.0 : 3.0) * one;
    int stage = 0;
    sscanf(t->name, "encoder.conv%d", &stage);
    /* the default pools after the first three stages */
    if (stage < 3) h /= 2, w /= 2;
  }
  struct intrus_memory mem;
  float *seed = NULL;
  double t_fwd, t_all;
  const double peak_before = sgemm_peak();
  intrus_ctx_set_grad(ctx, false);
  TIME_BEST(t_fwd, 2.0, {
    intrus_ctx_reset(ctx);
    vt->encode(enc, ctx, &sb, &mem, &err);
  });
  intrus_ctx_set_grad(ctx, true);
  TIME_BEST(t_all, 3.0, {
    intrus_ctx_reset(ctx);
    intrus_params_zero_grad(p);
    vt->encode(enc, ctx, &sb, &mem, &err);
    if (!seed) {
      seed = malloc(mem.states->n * sizeof *seed);
      fill(seed, mem.states->n, 9);
    }
    intrus_backward_seed(ctx, mem.states, seed);
  });
  /* The peak of a shared machine moves with the other tenants' load: the better of one
   * measurement before and one after the encoder's, so the fraction is never flattered. */
  const double peak = fmax(peak_before, sgemm_peak());
  const double rate = flops / t_all / 1e9;
  printf("\ncnn encoder (defaults: filters 64,128,256,512,512, pools after 1-3, d 256), "
         "batch %d of 64 x 320 grey, %d -> %d positions\n", B, H * W, mem.len);
  printf("  forward (no grad)        %8.1f ms\n", 1e3 * t_fwd);
  printf("  forward + backward       %8.1f ms   %.1f GFLOP of convolutions\n", 1e3 * t_all,
         flops / 1e9);
  printf("  conv GFLOP/s             %8.1f   sgemm peak %.1f GFLOP/s   fraction %.1f%% "
         "(target 60%%)\n", rate, peak, 100.0 * rate / peak);
  free(seed);
  free(px);
  vt->destroy(enc);
  intrus_params_destroy(p);
  intrus_config_free(cfg);
  intrus_plugin_close(plug);
  intrus_plugin_search_free(s);
  return rate < 0.6 * peak;
}

int main(int argc, char **argv) {
  intrus_blas_restart_better(argv); /* as the intrus command does */
  intrus_malloc_keep_pages(); /* as the intrus CLI does */
  const char *only = argc > 1 ? argv[1] : "";
  printf("intrus core benchmark: OpenBLAS core %s, %d threads, kernels %s (the CPU's widest: "
         "%s; INTRUS_ISA lowers it)\n",
         intrus_blas_corename(), intrus_blas_threads(), intrus_x86_level_name(intrus_x86_level()),
         intrus_x86_level_name(intrus_x86_cpu_level()));
  intrus_ctx *ctx = intrus_ctx_create(512u << 20);
  int below = 0;
  if (!*only || strcmp(only, "matmul") == 0) below += bench_matmul(ctx);
  if (!*only || strcmp(only, "bandwidth") == 0) below += bench_bandwidth(ctx);
  if (!*only || strcmp(only, "attention") == 0) bench_attention(ctx);
  if (!*only || strcmp(only, "kernels") == 0) bench_kernels();
  if (!*only || strcmp(only, "cnn") == 0) below += bench_cnn(ctx, argc > 2 ? atoi(argv[2]) : 8);
  intrus_ctx_destroy(ctx);
  printf("\n%d measurement(s) below target\n", below);
  return 0;
}

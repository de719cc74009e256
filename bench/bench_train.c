/* Training throughput of the Transformer baseline (`make bench`): target tokens per
 * second and the model's achieved GFLOP/s as a fraction of the cblas_sgemm peak measured
 * in the same run, for
 *   (a) d_model 256, 4 heads, ff 1024, 3+3 layers
 *   (b) d_model 512, 8 heads, ff 2048, 6+6 layers (Transformer-base)
 * with vocab 8000, batches of about 4000 target tokens, dropout 0.1. FLOPs are counted
 * as issued through intrus_gemm. Also prints the arena's peak memory.
 *   bench/bench_train [a|b] [steps] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "intrus/blas.h"
#include "intrus/model.h"
#include "intrus/optim.h"
#include "intrus/rng.h"
#include "tensor/ops_internal.h"

struct size {
  const char *name;
  int d, heads, ff, layers;
};

static void run(const struct size *sz, int steps, double peak) {
  char text[1024];
  snprintf(text, sizeof text,
           "model: { d_model = %d;"
           " encoder: { plugin = \"transformer\"; layers = %d; heads = %d; ff = %d; dropout = 0.1; };"
           " decoder: { plugin = \"autoregressive\"; layers = %d; heads = %d; ff = %d; dropout = 0.1; };"
           "};",
           sz->d, sz->layers, sz->heads, sz->ff, sz->layers, sz->heads, sz->ff);
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_string(text, "bench", &err);
  const intrus_cfg *g;
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(s);
  struct intrus_model *m = NULL;
  const int V = 8000;
  if (!cfg || intrus_cfg_group_req(intrus_config_root(cfg), "model", &g, &err) ||
      intrus_model_create(g, s, V, V, 1, &m, &err)) {
    fprintf(stderr, "bench_train: %s\n", err.msg);
    exit(1);
  }
  /* 160 sentence pairs of 24 + 24 tokens: 4000 target tokens with EOS. */
  enum { B = 160, L = 24 };
  struct bench_batch bb;
  bench_batch_make(&bb, B, L, V);
  struct intrus_src_batch sb = bb.sb;
  struct intrus_tgt_batch tb = bb.tb;
  struct intrus_train_opts o = {.direction = 1, .label_smoothing = 0.1f};
  struct intrus_params *p = intrus_model_params(m);
  struct intrus_adam adam = intrus_adam_defaults();
  intrus_ctx *ctx = intrus_ctx_create(0);
  intrus_ctx_set_training(ctx, true);
  double t_total = 0, flops_total = 0, t_best = 1e30, flops_best = 0;
  long tokens = 0;
  /* Two warm-up steps: the first grows the arena, the reset after it merges the chunks
   * into one fresh block that the second step touches for the first time. */
  const int warmup = 2;
  for (int step = 0; step < steps + warmup; step++) {
    double f0 = intrus_blas_flops(), t0 = now_s();
    intrus_ctx_reset(ctx);
    intrus_ctx_set_seed(ctx, 1, (uint64_t)step);
    struct intrus_loss_out out;
    if (intrus_model_loss(m, ctx, &sb, &tb, &o, &out, &err)) {
      fprintf(stderr, "bench_train: %s\n", err.msg);
      exit(1);
    }
    intrus_params_zero_grad(p);
    intrus_backward(ctx, out.loss);
    intrus_adam_step(p, &adam, step);
    double t = now_s() - t0;
    if (step < warmup) continue;
    t_total += t;
    flops_total += intrus_blas_flops() - f0;
    if (t < t_best) {
      t_best = t;
      flops_best = intrus_blas_flops() - f0;
    }
    tokens += out.tokens;
  }
  double gflops = flops_total / t_total / 1e9;
  printf("%-4s d%d/%d heads/ff%d/%d+%d layers: %6.0f target tokens/s  %6.1f GFLOP/s  %5.1f%% of "
         "peak  (%.0f ms/step, %.1f GFLOP/step, %zu params, arena peak %.0f MB)\n",
         sz->name, sz->d, sz->heads, sz->ff, sz->layers, sz->layers, tokens / t_total, gflops,
         100 * gflops / peak, 1000 * t_total / steps, flops_total / steps / 1e9,
         intrus_params_numel(p), intrus_ctx_arena_peak(ctx) / 1e6);
  /* On a shared machine the mean takes in every other tenant's bursts; the fastest step
   * is the least disturbed, for comparing builds measured at different times. */
  printf("     fastest step: %.0f ms, %.1f%% of peak\n", 1000 * t_best,
         100 * flops_best / t_best / 1e9 / peak);
  intrus_ctx_destroy(ctx);
  intrus_model_destroy(m);
  intrus_plugin_search_free(s);
  intrus_config_free(cfg);
  bench_batch_free(&bb);
}

int main(int argc, char **argv) {
  intrus_blas_restart_better(argv); /* as the intrus command does */
  intrus_malloc_keep_pages(); /* as the intrus CLI does */
  static const struct size sizes[] = {{"(a)", 256, 4, 1024, 3}, {"(b)", 512, 8, 2048, 6}};
  const char *which = argc > 1 ? argv[1] : "ab";
  int steps = argc > 2 ? atoi(argv[2]) : 5;
  double peak = sgemm_peak();
  printf("intrus training benchmark: OpenBLAS core %s, %d threads, kernels %s; cblas_sgemm "
         "peak (2048^3) %.1f GFLOP/s; targets: >= 65%% of peak\n",
         intrus_blas_corename(), intrus_blas_threads(), intrus_x86_level_name(intrus_x86_level()),
         peak);
  for (int i = 0; i < 2; i++)
    if (strchr(which, 'a' + i)) run(&sizes[i], steps, peak);
  return 0;
}

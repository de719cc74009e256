/* Evaluation helpers of the core that work with any evaluator plugin (see the evaluator
 * vtable in intrus/plugin.h): paired bootstrap resampling over per-segment statistics.
 *
 * An evaluator's first score (values[0] of struct intrus_eval_scores, e.g. "BLEU") is
 * its primary score; that is the one resampled here. */
#ifndef INTRUS_EVAL_H
#define INTRUS_EVAL_H

#include <stdint.h>

#include "intrus/plugin.h"
#include "intrus/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define INTRUS_BOOTSTRAP_DEFAULT_SAMPLES 1000
/* sacreBLEU's default seed (SACREBLEU_SEED unset), with which it draws the same
 * resamples as intrus_paired_bootstrap. */
#define INTRUS_BOOTSTRAP_DEFAULT_SEED 12345

struct intrus_bootstrap_system {
  double score;         /* primary score on the whole corpus */
  double mean;          /* mean of the primary score over the resamples */
  double lower, upper;  /* 95% interval: sorted resample scores [n/40] and [n - n/40 - 1] */
  double ci;            /* 0.5 * (upper - lower): sacreBLEU's "mean ± ci" half-width */
};

struct intrus_bootstrap_result {
  struct intrus_bootstrap_system a, b;
  int samples;
  int b_better;        /* resamples in which B scored strictly higher than A */
  /* p-value that B is not better than A (one-sided):
   * (samples - b_better + 1) / (samples + 1). Identical systems give 1; a B better in
   * every resample gives 1 / (samples + 1). */
  double p_value;
  /* sacreBLEU's paired-bs statistic (two-sided): d_i = |B_i - A_i| over the resamples,
   * p = (#{d_i - mean(d) > |B - A|} + 1) / (samples + 1). Note that it is 1/(samples+1)
   * for two identical systems, since a zero difference is never exceeded. */
  double p_sacrebleu;
};

/* Paired bootstrap resampling as in sacreBLEU's paired-bs test: each of `samples`
 * resamples draws nseg segment indices uniformly with replacement, the SAME indices for
 * both systems, sums each system's statistics over them and scores the sums.
 *
 * stats_a, stats_b: nseg rows of vt->stats_size(self) doubles (segment_stats output,
 * row-major). samples <= 0 means INTRUS_BOOTSTRAP_DEFAULT_SAMPLES. The indices are the
 * ones sacreBLEU draws (NumPy's default_rng(seed).choice, reproduced in C), so the same
 * seed and sample count give sacreBLEU's resamples, means, intervals and p-value.
 * Passing the same array twice gives one system's confidence interval. */
enum intrus_status intrus_paired_bootstrap(const struct intrus_evaluator_vtable *vt,
                                           void *self, int nseg, const double *stats_a,
                                           const double *stats_b, int samples, uint64_t seed,
                                           struct intrus_bootstrap_result *out,
                                           struct intrus_error *err);

#ifdef __cplusplus
}
#endif
#endif

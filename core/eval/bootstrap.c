/* Paired bootstrap resampling over per-segment statistics (see intrus/eval.h).
 *
 * Working on sufficient statistics rather than on text is what makes this cheap: a
 * resample is a sum of nseg stat rows and one call to the evaluator's score(), never a
 * re-tokenisation. It is also why the evaluator ABI splits segment_stats from score. */
#include <stdlib.h>
#include <string.h>

#include "eval/numpy_rng.h"
#include "intrus/eval.h"

static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

/* The primary score (values[0]) of summed statistics. */
static enum intrus_status primary_score(const struct intrus_evaluator_vtable *vt, void *self,
                                        const double *sum, double *score,
                                        struct intrus_error *err) {
  struct intrus_eval_scores sc;
  memset(&sc, 0, sizeof sc);
  enum intrus_status st = vt->score(self, sum, &sc, err);
  if (st != INTRUS_OK) return st;
  if (sc.count < 1)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "paired bootstrap: the evaluator returned no score");
  *score = sc.values[0];
  return INTRUS_OK;
}

/* sacreBLEU's estimate_ci: mean of the resample scores and the 2.5% / 97.5% order
 * statistics (1/40 from either end). Sorts scores. */
static void summarise(double *scores, int n, struct intrus_bootstrap_system *sys) {
  double total = 0;
  for (int i = 0; i < n; i++) total += scores[i];
  qsort(scores, (size_t)n, sizeof *scores, cmp_double);
  int lo = n / 40, hi = n - lo - 1;
  sys->mean = total / n;
  sys->lower = scores[lo];
  sys->upper = scores[hi];
  sys->ci = 0.5 * (sys->upper - sys->lower);
}

enum intrus_status intrus_paired_bootstrap(const struct intrus_evaluator_vtable *vt,
                                           void *self, int nseg, const double *stats_a,
                                           const double *stats_b, int samples, uint64_t seed,
                                           struct intrus_bootstrap_result *out,
                                           struct intrus_error *err) {
  if (!vt || !vt->stats_size || !vt->score || !stats_a || !stats_b || !out)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "paired bootstrap: missing argument");
  if (nseg < 1)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "paired bootstrap: needs at least one segment, got %d", nseg);
  if (samples <= 0) samples = INTRUS_BOOTSTRAP_DEFAULT_SAMPLES;
  int ss = vt->stats_size(self);
  if (ss < 1)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "paired bootstrap: the evaluator has %d statistics per segment", ss);
  memset(out, 0, sizeof *out);
  out->samples = samples;

  double *sum_a = calloc((size_t)ss, sizeof *sum_a), *sum_b = calloc((size_t)ss, sizeof *sum_b);
  double *sc_a = malloc((size_t)samples * sizeof *sc_a);
  double *sc_b = malloc((size_t)samples * sizeof *sc_b);
  double *diff = malloc((size_t)samples * sizeof *diff);
  enum intrus_status st = INTRUS_OK;
  struct intrus_np_rng rng;
  double mean_diff = 0, real;
  int above = 0;
  if (!sum_a || !sum_b || !sc_a || !sc_b || !diff) {
    st = intrus_error_set(err, INTRUS_ERR_NOMEM, "paired bootstrap: out of memory");
    goto done;
  }

  /* The actual corpus scores. */
  for (int i = 0; i < nseg; i++)
    for (int k = 0; k < ss; k++) {
      sum_a[k] += stats_a[(size_t)i * ss + k];
      sum_b[k] += stats_b[(size_t)i * ss + k];
    }
  if ((st = primary_score(vt, self, sum_a, &out->a.score, err)) ||
      (st = primary_score(vt, self, sum_b, &out->b.score, err)))
    goto done;

  /* sacreBLEU's resamples: np.random.default_rng(seed).choice(nseg, size=(samples,
   * nseg)), row by row, so the same seed and count give sacreBLEU's p-value. */
  intrus_np_rng_seed(&rng, seed);
  for (int s = 0; s < samples; s++) {
    memset(sum_a, 0, (size_t)ss * sizeof *sum_a);
    memset(sum_b, 0, (size_t)ss * sizeof *sum_b);
    for (int i = 0; i < nseg; i++) {
      /* One index for both systems: that pairing is what makes the test paired. */
      size_t j = intrus_np_rng_below(&rng, (uint64_t)nseg);
      const double *ra = stats_a + j * (size_t)ss, *rb = stats_b + j * (size_t)ss;
      for (int k = 0; k < ss; k++) {
        sum_a[k] += ra[k];
        sum_b[k] += rb[k];
      }
    }
    if ((st = primary_score(vt, self, sum_a, &sc_a[s], err)) ||
        (st = primary_score(vt, self, sum_b, &sc_b[s], err)))
      goto done;
    if (sc_b[s] > sc_a[s]) out->b_better++;
    diff[s] = sc_b[s] > sc_a[s] ? sc_b[s] - sc_a[s] : sc_a[s] - sc_b[s];
  }

  out->p_value = (double)(samples - out->b_better + 1) / (samples + 1);

  /* sacreBLEU: centre the resampled absolute differences and count those above the
   * observed absolute difference (strictly: "the != is important", multeval). */
  real = out->b.score - out->a.score;
  if (real < 0) real = -real;
  for (int s = 0; s < samples; s++) mean_diff += diff[s];
  mean_diff /= samples;
  for (int s = 0; s < samples; s++)
    if (diff[s] - mean_diff > real) above++;
  out->p_sacrebleu = (double)(above + 1) / (samples + 1);

  summarise(sc_a, samples, &out->a);
  summarise(sc_b, samples, &out->b);

done:
  free(sum_a);
  free(sum_b);
  free(sc_a);
  free(sc_b);
  free(diff);
  return st;
}

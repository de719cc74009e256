/* order "sampled": every step samples a correct insertion with probability proportional
 * to the model's p(i, c)^(1/temperature), restricted to the correct set (DESIGN.md
 * section 4; the paper's main training order). No gradient flows through the choice.
 *
 * Experiment file: order: { plugin = "sampled"; temperature = 1.0; };
 *   temperature > 0 (default 1): below 1 sharpens towards the model's favourite
 *   insertion, above 1 flattens towards "uniform". */
#include <math.h>
#include <stdlib.h>

#include "intrus/plugin.h"
#include "intrus/rng.h"

struct sampled {
  double inv_temp;
};

static enum intrus_status sampled_create(const intrus_cfg *cfg, void **self,
                                         struct intrus_error *err) {
  double temp = 1.0;
  enum intrus_status st;
  if (cfg) {
    if ((st = intrus_cfg_double(cfg, "temperature", 1.0, &temp, err))) return st;
    if (!(temp > 0) || !isfinite(temp) || !isfinite(1.0 / temp))
      return intrus_cfg_error(cfg, "temperature", err,
                              "must be a positive finite number (got %g)", temp);
    if ((st = intrus_cfg_check_unknown(cfg, err))) return st;
  }
  struct sampled *p = malloc(sizeof *p);
  if (!p) return intrus_error_set(err, INTRUS_ERR_NOMEM, "order sampled: out of memory");
  p->inv_temp = 1.0 / temp;
  *self = p;
  return INTRUS_OK;
}

static void sampled_destroy(void *self) { free(self); }

static bool sampled_needs_model(void *self) {
  (void)self;
  return true;
}

static int sampled_choose(void *user, int b, int npairs, const int *slot, const int32_t *token,
                          const float *logp, struct intrus_rng *rng) {
  (void)b, (void)slot, (void)token;
  const struct sampled *p = user;
  /* Weights relative to the best pair, so that a small temperature (a large exponent)
   * cannot overflow; that pair's weight is 1, so the total is at least 1. */
  double best = -INFINITY;
  for (int j = 0; j < npairs; j++)
    if (logp[j] > best) best = logp[j];
  /* A model that gives every correct pair probability 0 (or NaN) has no preference to
   * follow: fall back to a uniform choice rather than fail the batch. */
  if (!isfinite(best)) return (int)intrus_rng_below(rng, (uint64_t)npairs);
  double total = 0;
  for (int j = 0; j < npairs; j++)
    if (logp[j] == logp[j]) total += exp((logp[j] - best) * p->inv_temp);
  /* 53 random bits: the pairs of a long sentence can have tiny probabilities. */
  double u = (double)(intrus_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0) * total;
  int last = 0;
  for (int j = 0; j < npairs; j++) {
    if (logp[j] != logp[j]) continue;
    double w = exp((logp[j] - best) * p->inv_temp);
    if (w <= 0) continue;
    last = j;
    if (u < w) return j;
    u -= w;
  }
  /* Rounding left u just above the last weight. */
  return last;
}

static enum intrus_status sampled_trajectories(void *self, const struct intrus_order_batch *batch,
                                               const struct intrus_ins_scorer *scorer,
                                               struct intrus_ins_step *steps,
                                               struct intrus_error *err) {
  if (!scorer)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "order sampled: needs the model's scores, but no scorer was given");
  /* Weights relative to a sentence's best pair need log p(i, c) only up to a constant of
   * the sentence: the driver can then skip the position normaliser and forced steps. */
  return intrus_order_greedy_relative(batch, scorer, sampled_choose, self, steps, err);
}

static const struct intrus_order_vtable vtable = {
    .create = sampled_create,
    .destroy = sampled_destroy,
    .needs_model = sampled_needs_model,
    .trajectories = sampled_trajectories,
};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(order_sampled) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "sampled",
    .version = "1.0.0",
    .kind = INTRUS_KIND_ORDER,
    .summary = "each step a correct insertion sampled from the model, p(i,c)^(1/temperature)",
    .vtable = &vtable,
};

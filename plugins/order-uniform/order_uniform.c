/* order "uniform": every step inserts a correct (slot, token) pair drawn uniformly from
 * the correct set (DESIGN.md section 4; the paper's pretraining order). A pair, not a
 * token: a token that fits several slots is proportionally more likely.
 *
 * Experiment file: order: { plugin = "uniform"; };  (no settings) */
#include "intrus/plugin.h"
#include "intrus/rng.h"

static enum intrus_status uniform_create(const intrus_cfg *cfg, void **self,
                                         struct intrus_error *err) {
  if (cfg) {
    enum intrus_status st = intrus_cfg_check_unknown(cfg, err);
    if (st != INTRUS_OK) return st;
  }
  *self = NULL; /* stateless */
  return INTRUS_OK;
}

static void uniform_destroy(void *self) { (void)self; }

static bool uniform_needs_model(void *self) {
  (void)self;
  return false;
}

static int uniform_choose(void *user, int b, int npairs, const int *slot, const int32_t *token,
                          const float *logp, struct intrus_rng *rng) {
  (void)user, (void)b, (void)slot, (void)token, (void)logp;
  return (int)intrus_rng_below(rng, (uint64_t)npairs);
}

static enum intrus_status uniform_trajectories(void *self, const struct intrus_order_batch *batch,
                                               const struct intrus_ins_scorer *scorer,
                                               struct intrus_ins_step *steps,
                                               struct intrus_error *err) {
  (void)self, (void)scorer;
  return intrus_order_greedy(batch, NULL, uniform_choose, NULL, steps, err);
}

static const struct intrus_order_vtable vtable = {
    .create = uniform_create,
    .destroy = uniform_destroy,
    .needs_model = uniform_needs_model,
    .trajectories = uniform_trajectories,
};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(order_uniform) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "uniform",
    .version = "1.0.0",
    .kind = INTRUS_KIND_ORDER,
    .summary = "each step a uniformly random correct (slot, token) insertion",
    .vtable = &vtable,
};

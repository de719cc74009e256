/* order "r2l": right to left: step k prepends Y[n-1-k] at the front (slot 0). For the
 * autoregressive decoder it selects the reversed reading direction.
 *
 * Experiment file: order: { plugin = "r2l"; };  (no settings)
 *
 * The steps come from intrus_order_fixed (core/insertion/insertion_fixed.c), which l2r
 * shares: this file differs from order_l2r.c only in the direction and the descriptor. */
#include "intrus/plugin.h"

static enum intrus_status fixed_create(const intrus_cfg *cfg, void **self,
                                        struct intrus_error *err) {
  if (cfg) {
    enum intrus_status st = intrus_cfg_check_unknown(cfg, err);
    if (st != INTRUS_OK) return st;
  }
  *self = NULL; /* stateless */
  return INTRUS_OK;
}

static void fixed_destroy(void *self) { (void)self; }

static bool fixed_needs_model(void *self) {
  (void)self;
  return false;
}

static enum intrus_status fixed_trajectories(void *self, const struct intrus_order_batch *batch,
                                              const struct intrus_ins_scorer *scorer,
                                              struct intrus_ins_step *steps,
                                              struct intrus_error *err) {
  (void)self, (void)scorer;
  return intrus_order_fixed(batch, true, steps, err);
}

static const struct intrus_order_vtable vtable = {
    .create = fixed_create,
    .destroy = fixed_destroy,
    .needs_model = fixed_needs_model,
    .trajectories = fixed_trajectories,
};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(order_r2l) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "r2l",
    .version = "1.0.0",
    .kind = INTRUS_KIND_ORDER,
    .summary = "right to left: prepend the target's tokens at the front, last first",
    .vtable = &vtable,
};

/* order "l2r": left to right, the autoregressive order: step k appends Y[k] at the end
 * (slot k). For the autoregressive decoder it selects the reading direction.
 *
 * Experiment file: order: { plugin = "l2r"; };  (no settings)
 *
 * The steps come from intrus_order_fixed (core/insertion/insertion_fixed.c), which r2l
 * shares: this file differs from order_r2l.c only in the direction and the descriptor. */
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
  return intrus_order_fixed(batch, false, steps, err);
}

static const struct intrus_order_vtable vtable = {
    .create = fixed_create,
    .destroy = fixed_destroy,
    .needs_model = fixed_needs_model,
    .trajectories = fixed_trajectories,
};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(order_l2r) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "l2r",
    .version = "1.0.0",
    .kind = INTRUS_KIND_ORDER,
    .summary = "left to right: append the next target token at the end",
    .vtable = &vtable,
};

/* order "l2r": left to right, the autoregressive order: step k appends Y[k] at the end
 * (slot k). For the autoregressive decoder it selects the reading direction.
 *
 * Experiment file: order: { plugin = "l2r"; };  (no settings)
 *
 * The order is fixed, so the steps are written directly rather than through the
 * greedy driver: appending at slot k is always a correct insertion and the driver's
 * oracle calls would only confirm it. */
#include "intrus/plugin.h"

static enum intrus_status l2r_create(const intrus_cfg *cfg, void **self, struct intrus_error *err) {
  if (cfg) {
    enum intrus_status st = intrus_cfg_check_unknown(cfg, err);
    if (st != INTRUS_OK) return st;
  }
  *self = NULL; /* stateless */
  return INTRUS_OK;
}

static void l2r_destroy(void *self) { (void)self; }

static bool l2r_needs_model(void *self) {
  (void)self;
  return false;
}

static enum intrus_status l2r_trajectories(void *self, const struct intrus_order_batch *batch,
                                          const struct intrus_ins_scorer *scorer,
                                          struct intrus_ins_step *steps, struct intrus_error *err) {
  (void)self, (void)scorer;
  for (int b = 0; b < batch->count; b++) {
    int n = batch->off[b + 1] - batch->off[b];
    if (n < 0)
      return intrus_error_set(err, INTRUS_ERR_INVALID, "order l2r: sentence %d has length %d",
                              b, n);
    const int32_t *y = batch->tok + batch->off[b];
    for (int k = 0; k < n; k++) steps[batch->off[b] + k] = (struct intrus_ins_step){k, y[k]};
  }
  return INTRUS_OK;
}

static const struct intrus_order_vtable vtable = {
    .create = l2r_create,
    .destroy = l2r_destroy,
    .needs_model = l2r_needs_model,
    .trajectories = l2r_trajectories,
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

/* order "r2l": right to left: step k prepends Y[n-1-k] at the front (slot 0). For the
 * autoregressive decoder it selects the reversed reading direction.
 *
 * Experiment file: order: { plugin = "r2l"; };  (no settings)
 *
 * The order is fixed, so the steps are written directly rather than through the
 * greedy driver: prepending at slot 0 is always a correct insertion and the driver's
 * oracle calls would only confirm it. */
#include "intrus/plugin.h"

static enum intrus_status r2l_create(const intrus_cfg *cfg, void **self, struct intrus_error *err) {
  if (cfg) {
    enum intrus_status st = intrus_cfg_check_unknown(cfg, err);
    if (st != INTRUS_OK) return st;
  }
  *self = NULL; /* stateless */
  return INTRUS_OK;
}

static void r2l_destroy(void *self) { (void)self; }

static bool r2l_needs_model(void *self) {
  (void)self;
  return false;
}

static enum intrus_status r2l_trajectories(void *self, const struct intrus_order_batch *batch,
                                          const struct intrus_ins_scorer *scorer,
                                          struct intrus_ins_step *steps, struct intrus_error *err) {
  (void)self, (void)scorer;
  for (int b = 0; b < batch->count; b++) {
    int n = batch->off[b + 1] - batch->off[b];
    if (n < 0)
      return intrus_error_set(err, INTRUS_ERR_INVALID, "order r2l: sentence %d has length %d",
                              b, n);
    const int32_t *y = batch->tok + batch->off[b];
    for (int k = 0; k < n; k++)
      steps[batch->off[b] + k] = (struct intrus_ins_step){0, y[n - 1 - k]};
  }
  return INTRUS_OK;
}

static const struct intrus_order_vtable vtable = {
    .create = r2l_create,
    .destroy = r2l_destroy,
    .needs_model = r2l_needs_model,
    .trajectories = r2l_trajectories,
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

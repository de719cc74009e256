/* The fixed generation orders, left to right and right to left (insertion.h): one
 * loop for both plugins, so that the two directions cannot drift apart. */
#include "intrus/insertion.h"

enum intrus_status intrus_order_fixed(const struct intrus_order_batch *batch,
                                      bool right_to_left, struct intrus_ins_step *steps,
                                      struct intrus_error *err) {
  for (int b = 0; b < batch->count; b++) {
    int n = batch->off[b + 1] - batch->off[b];
    if (n < 0)
      return intrus_error_set(err, INTRUS_ERR_INVALID, "order %s: sentence %d has length %d",
                              right_to_left ? "r2l" : "l2r", b, n);
    const int32_t *y = batch->tok + batch->off[b];
    struct intrus_ins_step *s = steps + batch->off[b];
    if (right_to_left)
      for (int k = 0; k < n; k++) s[k] = (struct intrus_ins_step){0, y[n - 1 - k]};
    else
      for (int k = 0; k < n; k++) s[k] = (struct intrus_ins_step){k, y[k]};
  }
  return INTRUS_OK;
}

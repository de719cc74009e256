/* A test encoder whose reader accepts a setting the settings reference does not describe
 * (model.encoder(undescribed).width): tests/test_settings.sh checks that
 * `intrus config --check` fails on an experiment using it and names the line to add to
 * core/cli/settings_doc.c. Read, never run: encode refuses. */
#include <stdlib.h>

#include "intrus/plugin.h"

static enum intrus_status undescribed_create(const struct intrus_model_init *init, void **self,
                                             struct intrus_error *err) {
  long long width;
  enum intrus_status st;
  if ((st = intrus_cfg_int_range(init->cfg, "width", 8, 1, 64, &width, err)) ||
      (st = intrus_cfg_check_unknown(init->cfg, err)))
    return st;
  *self = malloc(1);
  return *self ? INTRUS_OK : intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
}

static void undescribed_destroy(void *self) { free(self); }

static enum intrus_status undescribed_encode(void *self, intrus_ctx *ctx,
                                             const struct intrus_src_batch *src,
                                             struct intrus_memory *out,
                                             struct intrus_error *err) {
  return intrus_error_set(err, INTRUS_ERR_INVALID, "encoder 'undescribed' is read, never run");
}

static const struct intrus_encoder_vtable undescribed_vtable = {
    .create = undescribed_create, .destroy = undescribed_destroy, .encode = undescribed_encode};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(encoder_undescribed) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "undescribed",
    .version = "0.0.1",
    .kind = INTRUS_KIND_ENCODER,
    .summary = "test encoder reading a setting the settings reference does not describe",
    .vtable = &undescribed_vtable,
};

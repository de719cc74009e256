/* A module whose descriptor symbol matches its file (encoder_misnamed.la) but whose
 * descriptor declares another name: the loader must not hand it out as "misnamed". */
#include "intrus/plugin.h"

static const struct intrus_encoder_vtable misnamed_vtable = {0};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(encoder_misnamed) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "othername",
    .version = "0.0.1",
    .kind = INTRUS_KIND_ENCODER,
    .summary = "test module whose descriptor name differs from its file name",
    .vtable = &misnamed_vtable,
};

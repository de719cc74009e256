/* A module built for a future major ABI: the loader must refuse it with a message that
 * gives both versions, without touching any field past abi_minor. */
#include "intrus/plugin.h"

static const struct intrus_encoder_vtable abibad_vtable = {0};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(encoder_abibad) = {
    .abi_major = INTRUS_ABI_MAJOR + 1,
    .abi_minor = 0,
    .name = "abibad",
    .version = "0.0.1",
    .kind = INTRUS_KIND_ENCODER,
    .summary = "test module with an incompatible major ABI",
    .vtable = &abibad_vtable,
};

/* A module built against a newer minor ABI than this core: it may use vtable slots the
 * core does not know about, so the loader must refuse it. */
#include "intrus/plugin.h"

static const struct intrus_encoder_vtable abinewer_vtable = {0};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(encoder_abinewer) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR + 1,
    .name = "abinewer",
    .version = "0.0.1",
    .kind = INTRUS_KIND_ENCODER,
    .summary = "test module with a newer minor ABI",
    .vtable = &abinewer_vtable,
};

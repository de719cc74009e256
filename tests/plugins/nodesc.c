/* The most common plugin mistake: a copied template whose descriptor still carries the
 * old module name. The file is encoder_nodesc.la, so libltdl looks for
 * encoder_nodesc_LTX_intrus_plugin_desc and finds nothing; the loader must say so. */
#include "intrus/plugin.h"

static const struct intrus_encoder_vtable nodesc_vtable = {0};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(encoder_renamed) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "nodesc",
    .version = "0.0.1",
    .kind = INTRUS_KIND_ENCODER,
    .summary = "test module whose descriptor has the wrong symbol name",
    .vtable = &nodesc_vtable,
};

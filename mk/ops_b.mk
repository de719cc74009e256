# Ops: embedding, layer_norm, softmax, log_softmax, cross_entropy, logsumexp_masked, conv2d, maxpool2d
core_libintrus_la_SOURCES += core/ops_norm.c core/ops_softmax.c core/ops_conv.c

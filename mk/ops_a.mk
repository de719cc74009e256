# Ops: matmul, add, mul, scale, relu, gelu, elu, dropout, reshape, permute, concat, sum, mean
core_libintrus_la_SOURCES += core/ops_linalg.c core/ops_elementwise.c core/ops_shape.c

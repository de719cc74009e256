# Ops: matmul, add, mul, scale, relu, gelu, elu, dropout, reshape, permute, concat, sum, mean
core_libintrus_la_SOURCES += core/ops_linalg.c core/ops_elementwise.c core/ops_shape.c

# Forward values of the ops above (matmul, activations, dropout, shape ops).
check_PROGRAMS += tests/test_ops_a
TESTS += tests/test_ops_a
tests_test_ops_a_SOURCES = tests/test_ops_a.c
tests_test_ops_a_LDADD = core/libintrus.la

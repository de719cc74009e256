# Ops: matmul, add, mul, scale, relu, gelu, elu, dropout, reshape, permute, concat, sum, mean
src_libintrus_la_SOURCES += src/ops_linalg.c src/ops_elementwise.c src/ops_shape.c

# Forward values of the ops above (matmul, activations, dropout, shape ops).
check_PROGRAMS += tests/test_ops_a
TESTS += tests/test_ops_a
tests_test_ops_a_SOURCES = tests/test_ops_a.c
tests_test_ops_a_LDADD = src/libintrus.la

# Ops: matmul, add, mul, scale, relu, gelu, elu, dropout, reshape, permute, concat, sum, mean
src_libintrus_la_SOURCES += src/ops_linalg.c src/ops_elementwise.c src/ops_shape.c

# Forward values of the ops above (matmul, activations, dropout, shape ops).
check_PROGRAMS += tests/test_ops_a
TESTS += tests/test_ops_a
tests_test_ops_a_SOURCES = tests/test_ops_a.c
tests_test_ops_a_LDADD = src/libintrus.la
# Ops: embedding, layer_norm, softmax, log_softmax, cross_entropy, logsumexp_masked, conv2d, maxpool2d
src_libintrus_la_SOURCES += src/ops_norm.c src/ops_softmax.c src/ops_conv.c

# Forward values against PyTorch references, masked-softmax invariants, and
# thread-count independence of cross_entropy.
check_PROGRAMS += tests/test_ops_b
TESTS += tests/test_ops_b
tests_test_ops_b_SOURCES = tests/test_ops_b.c
tests_test_ops_b_LDADD = src/libintrus.la
# The test calls omp_set_num_threads() itself, so it links the OpenMP runtime directly.
tests_test_ops_b_LDFLAGS = $(AM_LDFLAGS) $(OPENMP_CFLAGS)

# Order policies: the greedy trajectory driver in the core (src/insertion_order.c, listed
# with the insertion sources) and one plugin module per policy, plugins/order_<name>.la.
include plugins/order-uniform/Makefile.inc
include plugins/order-l2r/Makefile.inc
include plugins/order-r2l/Makefile.inc
include plugins/order-sampled/Makefile.inc
include plugins/order-argmax/Makefile.inc

# Every policy's trajectories against the oracle, exact l2r/r2l steps, determinism and
# independence from batch-mates, uniform and sampled choice frequencies, argmax against
# exhaustive search, the driver's one scorer call pair per step, and bad settings;
# loads the plugins above from the build tree (built by `all`).
check_PROGRAMS += tests/test_order
TESTS += tests/test_order
tests_test_order_SOURCES = tests/test_order.c
tests_test_order_LDADD = src/libintrus.la

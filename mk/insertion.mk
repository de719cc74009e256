# INTRUS: the fused attention and insertion-loss ops, the correct-insertion oracle,
# insertion beam search, decoding-order traces, and the insertion decoder plugin.
intrusinclude_HEADERS += include/intrus/insertion.h include/intrus/trace.h
src_libintrus_la_SOURCES += src/ops_attention.c src/ops_insertion.c src/insertion_oracle.c \
	src/insertion_search.c src/insertion_order.c src/trace.c

# Packed multi-head attention against compositions of the other ops, the padded forms
# against their former composition, and thread-count independence.
check_PROGRAMS += tests/test_attention
TESTS += tests/test_attention
tests_test_attention_SOURCES = tests/test_attention.c
tests_test_attention_LDADD = src/libintrus.la
# The test calls omp_set_num_threads() itself, so it links the OpenMP runtime directly.
tests_test_attention_LDFLAGS = $(AM_LDFLAGS) $(OPENMP_CFLAGS)

# The oracle against brute force; the insertion losses against their definitions.
check_PROGRAMS += tests/test_oracle
TESTS += tests/test_oracle
tests_test_oracle_SOURCES = tests/test_oracle.c
tests_test_oracle_LDADD = src/libintrus.la

# Insertion beam search against exhaustive search.
check_PROGRAMS += tests/test_ins_search
TESTS += tests/test_ins_search
tests_test_ins_search_SOURCES = tests/test_ins_search.c
tests_test_ins_search_LDADD = src/libintrus.la

# Decoding-order traces: text, relative indices, PNG and SVG.
check_PROGRAMS += tests/test_trace
TESTS += tests/test_trace
tests_test_trace_SOURCES = tests/test_trace.c
tests_test_trace_LDADD = src/libintrus.la $(CAIRO_LIBS)
include plugins/decoder-insertion/Makefile.inc
noinst_HEADERS += src/insertion_model.h
src_libintrus_la_SOURCES += src/insertion_model.c
noinst_HEADERS += src/train_phases.h
src_libintrus_la_SOURCES += src/train_phases.c
EXTRA_DIST += experiments/toy-intrus.cfg

# INTRUS end to end: every order policy on the copy task, phased training and its
# resume, beam search against exhaustive search on a tiny model, experiment errors.
check_PROGRAMS += tests/test_intrus
TESTS += tests/test_intrus
tests_test_intrus_SOURCES = tests/test_intrus.c
tests_test_intrus_LDADD = src/libintrus.la
EXTRA_DIST += experiments/quickstart-intrus.cfg

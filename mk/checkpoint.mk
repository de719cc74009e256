# checkpoint: sources and tests of this area
src_libintrus_la_SOURCES += src/checkpoint.c

# Round trips, every corruption the reader must name, and failing writes.
check_PROGRAMS += tests/test_checkpoint
TESTS += tests/test_checkpoint
tests_test_checkpoint_SOURCES = tests/test_checkpoint.c
tests_test_checkpoint_LDADD = src/libintrus.la

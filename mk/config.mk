# config: sources and tests of this area
src_libintrus_la_SOURCES += src/config.c

# Strict config reading: messages, defaults, effective config, fingerprints.
check_PROGRAMS += tests/test_config
TESTS += tests/test_config
tests_test_config_SOURCES = tests/test_config.c
tests_test_config_LDADD = src/libintrus.la
EXTRA_DIST += tests/data/config/bad.cfg tests/data/config/exp.cfg \
	tests/data/config/fp_a.cfg tests/data/config/fp_b.cfg tests/data/config/fp_c.cfg \
	tests/data/config/inc_main.cfg tests/data/config/inc_part.cfg \
	tests/data/config/syntax.cfg tests/data/config/unknown.cfg
CLEANFILES += tests/test_config_effective.cfg

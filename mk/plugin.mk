# plugin: the module loader, `intrus plugins`, and the loader's tests. The template
# plugin's own lines live in plugins/template/Makefile.inc, included at the end (include
# it from one place only: automake rejects the variables being defined twice).
src_libintrus_la_SOURCES += src/plugin_loader.c
intrus_SOURCES += src/cmd_plugins.c

# Broken modules the loader must reject. -rpath makes libtool build real shared
# objects (check_LTLIBRARIES are otherwise convenience archives); the directory is never
# used because these are never installed.
TEST_MODULE_FLAGS = $(MODULE_FLAGS) -rpath /nowhere
check_LTLIBRARIES += tests/plugins/encoder_abibad.la tests/plugins/encoder_abinewer.la \
	tests/plugins/encoder_nodesc.la tests/plugins/encoder_misnamed.la
tests_plugins_encoder_abibad_la_SOURCES = tests/plugins/abi_bad.c
tests_plugins_encoder_abibad_la_LDFLAGS = $(TEST_MODULE_FLAGS)
tests_plugins_encoder_abinewer_la_SOURCES = tests/plugins/abi_newer_minor.c
tests_plugins_encoder_abinewer_la_LDFLAGS = $(TEST_MODULE_FLAGS)
tests_plugins_encoder_nodesc_la_SOURCES = tests/plugins/nodesc.c
tests_plugins_encoder_nodesc_la_LDFLAGS = $(TEST_MODULE_FLAGS)
tests_plugins_encoder_misnamed_la_SOURCES = tests/plugins/misnamed.c
tests_plugins_encoder_misnamed_la_LDFLAGS = $(TEST_MODULE_FLAGS)

# Loads, rejects and lists plugins, and runs `intrus plugins`; needs the template
# plugin (plugins/encoder_template.la) and the intrus binary, both built by `all`.
check_PROGRAMS += tests/test_plugin
TESTS += tests/test_plugin
tests_test_plugin_SOURCES = tests/test_plugin.c
tests_test_plugin_LDADD = src/libintrus.la
EXTRA_DIST += plugins/template/README.md

# The template encoder plugin (tests/test_plugin loads it).
include plugins/template/Makefile.inc

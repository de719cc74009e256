# Transformer blocks, the model (encoder + decoder plugins), training, and the
# plugins of the baseline.
intrusinclude_HEADERS += include/intrus/nn.h include/intrus/model.h
src_libintrus_la_SOURCES += src/nn.c src/model.c
include plugins/encoder-transformer/Makefile.inc
include plugins/decoder-autoregressive/Makefile.inc
intrusinclude_HEADERS += include/intrus/train.h
src_libintrus_la_SOURCES += src/train.c
intrus_SOURCES += src/cmd_train.c
check_PROGRAMS += tests/test_train
TESTS += tests/test_train
tests_test_train_SOURCES = tests/test_train.c
tests_test_train_LDADD = src/libintrus.la
EXTRA_DIST += experiments/toy-copy.cfg
intrusinclude_HEADERS += include/intrus/search.h
src_libintrus_la_SOURCES += src/search_beam.c
check_PROGRAMS += tests/test_beam
TESTS += tests/test_beam
tests_test_beam_SOURCES = tests/test_beam.c
tests_test_beam_LDADD = src/libintrus.la
noinst_HEADERS += src/dataset.h
src_libintrus_la_SOURCES += src/dataset.c
noinst_HEADERS += src/translate.h
src_libintrus_la_SOURCES += src/translate.c
noinst_HEADERS += src/score.h
src_libintrus_la_SOURCES += src/score.c
intrus_SOURCES += src/cmd_decode.c
intrusinclude_HEADERS += include/intrus/text.h
check_PROGRAMS += tests/test_mt
TESTS += tests/test_mt
tests_test_mt_SOURCES = tests/test_mt.c
tests_test_mt_LDADD = src/libintrus.la
EXTRA_DIST += experiments/quickstart.cfg experiments/quickstart-de-en.cfg \
	README.md LICENSE docs/architecture.md docs/benchmarks.md scripts/install-deps.sh .ci/run

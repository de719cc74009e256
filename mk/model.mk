# Transformer blocks, the model (encoder + decoder plugins), training, and the
# plugins of the baseline.
intrusinclude_HEADERS += include/intrus/nn.h include/intrus/model.h
core_libintrus_la_SOURCES += core/nn.c core/model.c
include plugins/encoder-transformer/Makefile.inc
include plugins/decoder-autoregressive/Makefile.inc
intrusinclude_HEADERS += include/intrus/train.h
core_libintrus_la_SOURCES += core/train.c
intrus_SOURCES += core/cmd_train.c
check_PROGRAMS += tests/test_train
TESTS += tests/test_train
tests_test_train_SOURCES = tests/test_train.c
tests_test_train_LDADD = core/libintrus.la
EXTRA_DIST += experiments/toy-copy.cfg

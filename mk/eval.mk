# eval: evaluator plugins (BLEU), `intrus eval`, and paired bootstrap resampling over
# per-segment statistics in the core.
intrusinclude_HEADERS += include/intrus/eval.h
src_libintrus_la_SOURCES += src/bootstrap.c
intrus_SOURCES += src/cmd_eval.c
# cmd_eval.c decodes UTF-8 with utf8proc itself; libtool here does not pass libintrus's
# own dependencies on to the programs linked against it.
intrus_LDADD += $(UTF8PROC_LIBS)

# The BLEU evaluator (sacreBLEU 2.3.1 compatible): plugins/eval_bleu.la.
include plugins/eval-bleu/Makefile.inc

# BLEU against hand-computed values, the tokenizers, `intrus eval bleu` and the
# bootstrap; loads plugins/eval_bleu.la and runs the intrus binary, both built by `all`.
check_PROGRAMS += tests/test_bleu
TESTS += tests/test_bleu
tests_test_bleu_SOURCES = tests/test_bleu.c
tests_test_bleu_LDADD = src/libintrus.la

# text (tokenizer): strings, UTF-8 validation, the utf8proc/MeCab tokenizer and its test
src_libintrus_la_SOURCES += src/text_str.c src/text_tokenize.c

# Token sequences per language, round trips (table and random), invalid UTF-8, BPE
# marks, MeCab segmentation. utf8proc is linked directly: the test computes the NFC
# form it expects with it.
check_PROGRAMS += tests/test_tokenize
TESTS += tests/test_tokenize
tests_test_tokenize_SOURCES = tests/test_tokenize.c
tests_test_tokenize_LDADD = src/libintrus.la $(UTF8PROC_LIBS)

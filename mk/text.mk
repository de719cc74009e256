# text (tokenizer): strings, UTF-8 validation, the utf8proc/MeCab tokenizer and its test
src_libintrus_la_SOURCES += src/text_str.c src/text_tokenize.c

# Token sequences per language, round trips (table and random), invalid UTF-8, BPE
# marks, MeCab segmentation. utf8proc is linked directly: the test computes the NFC
# form it expects with it.
check_PROGRAMS += tests/test_tokenize
TESTS += tests/test_tokenize
tests_test_tokenize_SOURCES = tests/test_tokenize.c
tests_test_tokenize_LDADD = src/libintrus.la $(UTF8PROC_LIBS)
# text_bpe: BPE (subword-nmt), vocabularies, corpora and batching
src_libintrus_la_SOURCES += src/text_bpe.c src/text_vocab.c src/corpus.c
noinst_HEADERS += src/text_bpe_internal.h
intrusinclude_HEADERS += include/intrus/corpus.h

# BPE learning and application against subword-nmt, vocabularies.
check_PROGRAMS += tests/test_bpe
TESTS += tests/test_bpe
tests_test_bpe_SOURCES = tests/test_bpe.c
tests_test_bpe_LDADD = src/libintrus.la

# Line files (plain and gzip), encoded corpora, the batcher. zlib is linked directly:
# the test writes its own gzip files.
check_PROGRAMS += tests/test_corpus
TESTS += tests/test_corpus
tests_test_corpus_SOURCES = tests/test_corpus.c
tests_test_corpus_LDADD = src/libintrus.la $(ZLIB_LIBS)

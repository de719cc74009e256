# data: machine-translation pairs from gettext catalogs of Debian packages.
# intrus-mocorpus extracts and filters them; scripts/build-mt-data.sh downloads the
# packages and makes the splits; data/mt/en-de is a small set built that way and kept
# in the repository so experiments run without network.
bin_PROGRAMS += intrus-mocorpus
intrus_mocorpus_SOURCES = src/tools/mocorpus.c src/tools/mo.c src/tools/mo.h
intrus_mocorpus_LDADD = src/libintrus.la $(UTF8PROC_LIBS)

# Parser (both byte orders, contexts, plurals, every corruption it must name), filters,
# deduplication, splits, and the tool end to end on the fixtures.
check_PROGRAMS += tests/test_mocorpus
TESTS += tests/test_mocorpus
tests_test_mocorpus_SOURCES = tests/test_mocorpus.c src/tools/mo.c src/tools/mo.h
tests_test_mocorpus_LDADD = src/libintrus.la $(UTF8PROC_LIBS)

# The fixtures' .mo files are committed next to their .po sources, so tests need no msgfmt.
EXTRA_DIST += scripts/build-mt-data.sh scripts/mt-packages.txt scripts/mt-packages-en-de-small.txt \
	tests/data/mo/ar.po tests/data/mo/de.po tests/data/mo/ja.po tests/data/mo/latin1.po \
	tests/data/mo/ru.po tests/data/mo/ar.mo tests/data/mo/de.mo tests/data/mo/ja.mo \
	tests/data/mo/latin1.mo tests/data/mo/ru.mo \
	data/mt/en-de/README.md data/mt/en-de/MANIFEST \
	data/mt/en-de/train.en.gz data/mt/en-de/train.de.gz \
	data/mt/en-de/valid.en.gz data/mt/en-de/valid.de.gz \
	data/mt/en-de/test.en.gz data/mt/en-de/test.de.gz

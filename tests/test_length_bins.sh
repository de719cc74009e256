#!/bin/sh
# scripts/length-by-bins.py: the length ratio of a decode by reference length, in words
# (issue 44's bins 1-5 / 6-10 / 11-20 / 21+) and with --chars in characters other than
# whitespace (1-10 / 11-20 / 21-40 / 41+, for Japanese). Expected values worked out by
# hand from the small files below; a mismatched line count is refused, naming both files.
# Needs python3 (standard library only); --bleu the built intrus.
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

need_python test_length_bins
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
script="$src/scripts/length-by-bins.py"

# Words: references of 2, 4 (bin 1-5), 8 (6-10) and 25 (21+) words; outputs of 1, 4, 8
# and 10 words. Bin 1-5: 5 / 6 = 0.83 over 2 sentences; 6-10: 8 / 8 = 1.00; 11-20 empty;
# 21+: 10 / 25 = 0.40; all: 23 / 39 = 0.59.
words() { i=0; while [ $i -lt "$1" ]; do printf 'w%d ' $i; i=$((i + 1)); done; echo; }
{ words 2; words 4; words 8; words 25; } > "$tmp/ref"
{ words 1; words 4; words 8; words 10; } > "$tmp/hyp"
"$py" "$script" "$tmp/ref" "$tmp/hyp" --labels sys > "$tmp/out" 2>&1
expect "words: one row of the four bins and the whole" \
  grep -qxF '| sys | 0.83 (2) | 1.00 (1) | - (0) | 0.40 (1) | 0.59 |' "$tmp/out"
expect "words: the header names the word bins" \
  grep -qxF '| system | 1-5 | 6-10 | 11-20 | 21+ | all |' "$tmp/out"

# --bleu: each bin's BLEU is `intrus eval bleu` of that bin's lines (bin 6-10, its output
# the reference itself: 100.00; 11-20 empty), the last column the whole file's.
score() { "$intrus" eval bleu --ref "$1" --hyp "$2" | head -n 1 | cut -d' ' -f3; }
head -n 2 "$tmp/ref" > "$tmp/ref12"
head -n 2 "$tmp/hyp" > "$tmp/hyp12"
b12=$(score "$tmp/ref12" "$tmp/hyp12")
ball=$(score "$tmp/ref" "$tmp/hyp")
tail -n 1 "$tmp/ref" > "$tmp/ref4"
tail -n 1 "$tmp/hyp" > "$tmp/hyp4"
b4=$(score "$tmp/ref4" "$tmp/hyp4")
INTRUS=$intrus "$py" "$script" --bleu "$tmp/ref" "$tmp/hyp" --labels sys > "$tmp/out" 2>&1
expect "--bleu: each bin's BLEU is intrus eval bleu of its lines ($b12, 100.00, -, $b4; all $ball)" \
  grep -qxF "| sys | $b12 | 100.00 | - | $b4 | $ball |" "$tmp/out"
expect "--bleu: (under its own header)" grep -qxF '| BLEU | 1-5 | 6-10 | 11-20 | 21+ | all |' "$tmp/out"
expect "--bleu: the length table is still there" \
  grep -qxF '| sys | 0.83 (2) | 1.00 (1) | - (0) | 0.40 (1) | 0.59 |' "$tmp/out"
INTRUS=$tmp/no-intrus "$py" "$script" --bleu "$tmp/ref" "$tmp/hyp" > "$tmp/out" 2>&1
rc=$?
expect "--bleu without the binary fails (exit $rc), naming it" \
  eval 'test $rc -ne 0 && grep -q "no-intrus: No such file" "$tmp/out"'

# Characters (spaces not counted): references of 5 (1-10), 15 (11-20) and 45 (41+)
# characters, written with a space inside; outputs of 6, 12 and 9. 1-10: 6 / 5 = 1.20;
# 11-20: 12 / 15 = 0.80; 21-40 empty; 41+: 9 / 45 = 0.20; all: 27 / 65 = 0.42.
chars() { "$py" -c "import sys; n = int(sys.argv[1]); print('あ' * (n - n // 2) + ' ' + 'い' * (n // 2))" "$1"; }
{ chars 5; chars 15; chars 45; } > "$tmp/ref"
{ chars 6; chars 12; chars 9; } > "$tmp/hyp"
gzip -c "$tmp/hyp" > "$tmp/hyp.gz"
"$py" "$script" --chars "$tmp/ref" "$tmp/hyp.gz" --labels ja > "$tmp/out" 2>&1
expect "chars: one row of the four bins and the whole (a .gz output read as text)" \
  grep -qxF '| ja | 1.20 (1) | 0.80 (1) | - (0) | 0.20 (1) | 0.42 |' "$tmp/out"
expect "chars: the header names the character bins" \
  grep -qxF '| system | 1-10 | 11-20 | 21-40 | 41+ | all |' "$tmp/out"

# Files of different lengths are refused, naming both.
head -n 2 "$tmp/hyp" > "$tmp/short"
if "$py" "$script" "$tmp/ref" "$tmp/short" > "$tmp/out" 2>&1; then
  bad "a decode with fewer lines than its references was accepted"
else
  expect "a line-count mismatch names both files" \
    grep -qF "$tmp/ref: 3 lines but $tmp/short: 2" "$tmp/out"
fi
finish test_length_bins

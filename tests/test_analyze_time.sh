#!/bin/sh
# intrus analyze time on two tiny trained models (left-to-right and INTRUS, a few steps on
# a slice of the bundled en-de data): every sentence decoded once per model (--checkpoint
# naming another file), the buckets' counts adding up to the sentences asked for, a PNG,
# a TSV that the TSV form draws again, and bad arguments refused; and search.slots below
# train.valid_beam, the experiment's beam or -b refused.
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
cd "$tmp" || exit 1
tiny_experiments at
for x in l2r ins; do
  "$intrus" train -q "$x.cfg" -o "run-$x" > "train-$x.txt" 2>&1
  expect "$x trains" test $? -eq 0
done

"$intrus" analyze time l2r.cfg ins.cfg --run-dir run-l2r --run-dir run-ins -L left-to-right \
  -i data/test.en -n 12 -w 3 -o time.png --tsv time.tsv -q > out.txt 2> err.txt
rc=$?
expect "analyze time runs" test $rc -eq 0
cat err.txt
cat out.txt
expect "the chart is a PNG" sh -c 'head -c 8 time.png | od -An -c | grep -q "P   N   G"'
expect "a label names the first decoder, the experiment's name the second" \
  sh -c 'grep -q "^| left-to-right | " out.txt && grep -q "^| at-ins | " out.txt'
for dec in left-to-right at-ins; do
  n=$(awk -F'|' -v d=" $dec " '$2 == d { s += $4 } END { print s + 0 }' out.txt)
  expect "$dec: the buckets hold the 12 sentences ($n)" test "$n" -eq 12
  expect "$dec: a speed line" grep -q "^$dec: 12 sentences in .* sentences/s at batch 1$" out.txt
done
expect "buckets are 3 tokens wide" grep -q "^| at-ins | [0-9]*-[0-9]* |" out.txt
expect "the TSV's header" sh -c 'head -1 time.tsv | grep -q "^decoder	length	ms_per_sentence$"'
rows=$(grep -c "^| \(left-to-right\|at-ins\) |" out.txt)
expect "the TSV has a row per bucket" test "$(($(wc -l < time.tsv) - 1))" -eq "$rows"
"$intrus" analyze time time.tsv -o again.png > again.txt 2>&1
expect "the TSV form draws the TSV" sh -c 'test $? -eq 0 && test -s again.png'

"$intrus" analyze time l2r.cfg -o x.png > bad.txt 2>&1
expect "an experiment without -i is a usage error" test $? -eq 2
"$intrus" analyze time l2r.cfg -i data/test.en -n 0 -o x.png > bad.txt 2>&1
expect "-n 0 is refused" test $? -eq 2
"$intrus" analyze time l2r.cfg --run-dir nosuch -i data/test.en -o x.png > bad.txt 2>&1
rc=$?
expect "a run directory without a checkpoint is an error naming it" \
  sh -c "test $rc -ne 0 && grep -q nosuch bad.txt"
# --checkpoint: a copy of the run's checkpoint outside it decodes as the run's own (the
# same outputs, so the same buckets); a missing one is an error naming it.
cp run-l2r/checkpoint.ckpt elsewhere.ckpt
"$intrus" analyze time l2r.cfg --run-dir run-l2r -c elsewhere.ckpt -i data/test.en -n 12 -w 3 \
  -o c.png > c.txt 2>&1
expect "-c decodes with the checkpoint named (exit $?)" grep -q "decoding 12 sentences .*elsewhere.ckpt" c.txt
expect "(its buckets are the run's own)" test "$(grep '^| at-l2r |' c.txt | cut -d'|' -f3,4)" = \
  "$(grep '^| left-to-right |' out.txt | cut -d'|' -f3,4)"
"$intrus" analyze time l2r.cfg --run-dir run-l2r -c nosuch.ckpt -i data/test.en -o x.png > bad.txt 2>&1
rc=$?
expect "a missing --checkpoint is an error naming it" \
  sh -c "test $rc -ne 0 && grep -q nosuch.ckpt bad.txt"
"$intrus" analyze time l2r.cfg -c a.ckpt -c b.ckpt -i data/test.en -o x.png > bad.txt 2>&1
expect "more --checkpoint than experiments is a usage error" test $? -eq 2
# search.slots below the validation beam is refused before training, naming the settings
# (the two decoders' experiments serve here for want of a shell test of search settings).
sed 's/valid_bleu = 0;/valid_bleu = 0; valid_beam = 4;/; s/"at-ins"/"at-slots"/' ins.cfg \
  | sed 's/@include "common.cfg"/@include "slots.cfg"/' > slots-exp.cfg
sed 's/max_len_b = 5; };/max_len_b = 5; slots = 2; };/' common.cfg > slots.cfg
"$intrus" train -q slots-exp.cfg -o run-slots > slots.txt 2>&1
rc=$?
expect "valid_beam above search.slots is refused" \
  sh -c "test $rc -ne 0 && grep -q 'train.valid_beam: 4 is more than search.slots = 2' slots.txt"
expect "nothing trained" test ! -f run-slots/checkpoint.ckpt
# The check is made on the beam a decode uses: slots = 1 is refused at the experiment's
# beam 2 and at -b 2, accepted at -b 1 (the rows K = 1, 2 at beam 1 of the slots table).
sed 's/max_len_b = 5; };/max_len_b = 5; slots = 1; };/' common.cfg > slots1.cfg
sed 's/@include "common.cfg"/@include "slots1.cfg"/' ins.cfg > slots1-exp.cfg
"$intrus" decode slots1-exp.cfg --run-dir run-ins -i data/test.en -q > s1.txt 2>&1
rc=$?
expect "slots below the experiment's beam is refused at decode, naming the setting" \
  sh -c "test $rc -ne 0 && grep -q 'search.slots: 1 slots is fewer than the beam (2)' s1.txt"
"$intrus" decode slots1-exp.cfg --run-dir run-ins -b 2 -i data/test.en -q > s1.txt 2>&1
rc=$?
expect "slots below -b is refused, naming -b" \
  sh -c "test $rc -ne 0 && grep -q 'fewer than the beam (2, from -b)' s1.txt"
"$intrus" decode slots1-exp.cfg --run-dir run-ins -b 1 -i data/test.en -q > s1.txt 2>&1
expect "slots = 1 decodes at -b 1" sh -c "test $? -eq 0 && test -s s1.txt"
finish test_analyze_time.sh

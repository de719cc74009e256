#!/bin/sh
# A table's order figures (`figures` in the table file) on three tiny trained systems
# (left-to-right, right-to-left, INTRUS; a few steps on a slice of the bundled en-de
# data): every run's test decode keeps test.order.tsv (left-to-right appends a token a
# step, right-to-left prepends, the insertion model's steps a permutation), the table
# writes the insertion row's order chart and one picture per sentence asked for with a
# panel per row, a run without test.order.tsv is decoded again to the same outputs (and
# left out under --no-train), and a bad figures group is refused naming file and line.
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
cd "$tmp" || exit 1
tiny_experiments tf
cat > table.cfg <<'EOF2'
title = "tiny orders";
baseline = "l2r";
columns = ( { name = "en-de"; title = "En-De"; } );
rows = (
  { name = "l2r"; title = "Left-to-right"; experiments = { en-de = "l2r.cfg"; }; },
  { name = "r2l"; title = "Right-to-left"; experiments = { en-de = "r2l.cfg"; }; },
  { name = "intrus"; title = "INTRUS"; experiments = { en-de = "ins.cfg"; }; }
);
figures = { column = "en-de"; lang = "de"; sentences = [2, 5, 99]; };
EOF2

# ---- a bad figures group: refused before anything trains ----------------------------
sed 's/column = "en-de"; lang/column = "en-dx"; lang/' table.cfg > bad.cfg
"$intrus" table bad.cfg > out.txt 2>&1
rc=$?
expect "a figures column that is no column is refused ($rc)" \
  sh -c "[ $rc -eq 3 ] && grep -q \"bad.cfg:9: figures.column: 'en-dx' is not the name of a column\" out.txt && [ ! -d runs ]"
sed 's/sentences = \[2, 5, 99\]/sentences = [0]/' table.cfg > bad.cfg
"$intrus" table bad.cfg > out.txt 2>&1
expect "a test line 0 is refused" sh -c "[ $? -eq 3 ] && grep -q 'bad.cfg:9: figures.sentences.0.: 0 is out of range' out.txt"
sed 's/lang = "de";/lang = "de"; colour = 1;/' table.cfg > bad.cfg
"$intrus" table bad.cfg > out.txt 2>&1
expect "an unknown figures setting is refused" sh -c "[ $? -eq 3 ] && grep -q 'colour' out.txt"

# ---- the table and its figures -----------------------------------------------------
"$intrus" table -q table.cfg > out.txt 2> err.txt
rc=$?
expect "the table runs ($rc)" test $rc -eq 0
[ $rc -eq 0 ] || { cat out.txt err.txt; }
for r in l2r r2l ins; do
  expect "$r: test.order.tsv" test -s runs/tf-$r/test.order.tsv
done
# Left-to-right: step = position - 1; right-to-left: step = len - position; INTRUS:
# every sentence's steps are 0..len-1 once each.
order_check() { # FILE KIND
  awk -F'\t' -v kind="$2" 'NR > 1 {
      n[$1]++; pos[$1, $2] = $4; seen[$1, $4]++ }
    END { bad = 0
      for (s in n) for (p = 1; p <= n[s]; p++) {
        st = pos[s, p]
        if (kind == "l2r" && st != p - 1) bad++
        if (kind == "r2l" && st != n[s] - p) bad++
        if (seen[s, p - 1] != 1) bad++ }
      exit bad > 0 }' "$1"
}
expect "left-to-right appends a token a step" order_check runs/tf-l2r/test.order.tsv l2r
expect "right-to-left prepends a token a step" order_check runs/tf-r2l/test.order.tsv r2l
expect "INTRUS writes each position once" order_check runs/tf-ins/test.order.tsv ins
for r in l2r r2l ins; do # an empty output has no rows
  expect "$r: the order table has the words of every output" \
    sh -c "[ \$(awk 'NR > 1' runs/tf-$r/test.order.tsv | cut -f1 | sort -un | wc -l) -eq \$(grep -c . runs/tf-$r/test.hyp) ]"
done
fig=runs/tables/table/figures
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{ print $3 * 65536 + $4 * 256 + $5 + 0, $7 * 65536 + $8 * 256 + $9 + 0 }'; }
expect "the insertion row's order chart" sh -c "head -c 8 $fig/order-intrus.png | od -An -c | grep -q 'P   N   G'"
expect "no order chart of the left-to-right rows" sh -c "[ ! -e $fig/order-l2r.png ] && [ ! -e $fig/order.png ]"
expect "the analysis table is printed" grep -q '^| punctuation |' out.txt
for n in 2 5; do
  expect "sentence $n drawn (PNG, SVG)" sh -c "[ -s $fig/sentence-$n.png ] && grep -q '<svg' $fig/sentence-$n.svg"
done
expect "a line the test set lacks is named, not drawn" \
  sh -c "grep -q 'the test set has 20 lines, no line 99' err.txt && [ ! -e $fig/sentence-99.png ]"
# Three panels, one per row: taller than the insertion model's own picture of the line.
"$intrus" decode ins.cfg -o runs/tf-ins -i data/test.en -t single -q > /dev/null
set -- $(png_size $fig/sentence-2.png)
panels_h=$2
set -- $(png_size single/sentence-2.png)
expect "the sentence picture holds the panels ($panels_h px against $2 for one)" \
  test "$panels_h" -gt $(( 2 * $2 ))
expect "decode --trace's order.tsv equals the run's own" cmp single/order.tsv runs/tf-ins/test.order.tsv

# ---- a finished run without test.order.tsv -------------------------------------------
cp runs/tf-r2l/test.order.tsv r2l-order.tsv
cp runs/tf-r2l/test.hyp r2l-hyp
rm runs/tf-r2l/test.order.tsv
"$intrus" table -q --no-train table.cfg > out.txt 2> err.txt
expect "--no-train leaves it out, saying so" \
  sh -c "[ $? -eq 0 ] && grep -q 'tf-r2l has no test.order.tsv' err.txt && [ ! -e runs/tf-r2l/test.order.tsv ]"
"$intrus" table -q table.cfg > out.txt 2> err.txt
expect "a table decodes it again" sh -c "[ $? -eq 0 ] && grep -q 'decoding its test set again' err.txt"
expect "to the same order and outputs" sh -c "cmp r2l-order.tsv runs/tf-r2l/test.order.tsv && cmp r2l-hyp runs/tf-r2l/test.hyp"
expect "and nothing trains" sh -c "! grep -q 'training into' err.txt"

finish test_table_figures.sh

#!/bin/sh
# intrus decode --set PATH=VALUE on a tiny left-to-right model whose `search` group comes
# from an @include'd file (testlib's tiny_experiments): --set search.beam=1 decodes as
# -b 1 does, settings added and replaced reach the search, a misspelt one is refused as
# unknown, bad assignments exit 2 naming them; scripts/measure-search.sh times two
# searches of that experiment.
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
cd "$tmp" || exit 1
tiny_experiments ds   # l2r.cfg, its search group in the @include'd common.cfg
"$intrus" train -q l2r.cfg -o run -n 60 > train.txt 2>&1
expect "the model trains" test $? -eq 0

dec() { "$intrus" decode -q l2r.cfg -o run -i data/test.en "$@"; }
dec -O b1.hyp -b 1 && dec -O set1.hyp --set search.beam=1
expect "--set search.beam=1 and -b 1 both decode" test $? -eq 0
expect "--set search.beam=1 decodes as -b 1" cmp -s b1.hyp set1.hyp
dec -O b3.hyp
expect "(the file's beam 2 decodes otherwise: $(cmp b1.hyp b3.hyp >/dev/null && echo same || echo differs))" \
  test -s b3.hyp
dec -O long.hyp --set search.beam=1 --set search.finish_penalty=5
w1=$(wc -w < set1.hyp) w2=$(wc -w < long.hyp)
expect "an added setting reaches the search (finish_penalty 5: $w2 words against $w1)" \
  test "$w2" -gt "$w1"
dec -O x.hyp --set search.beem=2 > out.txt 2>&1
rc=$?
expect "a misspelt setting is refused (exit $rc)" test $rc -eq 3
expect "(naming it)" grep -q "search: unknown setting 'beem'" out.txt
expect "(writing nothing)" test ! -e x.hyp
dec -O x.hyp --set search.beam=wide > out.txt 2>&1
expect "a wrong type is refused (exit $?)" grep -q "search.beam: expected an integer, got a string" out.txt
dec -O x.hyp --set search.beam > out.txt 2>&1
rc=$?
expect "an assignment without '=' exits 2" test $rc -eq 2
expect "(naming it)" grep -q "intrus decode: --set 'search.beam': expected PATH=VALUE" out.txt
dec -O x.hyp --set model=1 > out.txt 2>&1
rc=$?
expect "replacing a group exits 2" test $rc -eq 2
expect "(saying so)" grep -q "has 'model' as a group" out.txt

# ---- scripts/measure-search.sh on an experiment with an @include'd search -------------------
cd "$INTRUS_TEST_BUILDDIR" || exit 1
"$INTRUS_TEST_SRCDIR/scripts/measure-search.sh" -o "$tmp/run" "$tmp/l2r.cfg" \
  "$tmp/data/test.en" "$tmp/data/test.de" beam=1 beam=1,finish_penalty=5 > "$tmp/table.md" 2> "$tmp/ms.err"
expect "measure-search.sh runs on an @include'd search (exit $?)" test -s "$tmp/table.md"
expect "(a row per setting)" test "$(grep -c '^| beam=1' "$tmp/table.md")" -eq 2
expect "(the second differs from the first)" grep -q '^| beam=1,finish_penalty=5 .*| differs |$' "$tmp/table.md"
expect "(and the experiment is left as it was)" test -z "$(ls -a "$tmp" | grep '^\.measure')"
finish test_decode_set

#!/bin/sh
# intrus train / intrus run --set PATH=VALUE on testlib's tiny experiments: a changed
# model setting trains that model (into the run directory a changed name gives) and is
# written into effective.cfg; a resume with a different model setting is refused by the
# fingerprint, one with the same settings goes on; a search setting reaches run's test
# decode; bad assignments are refused before anything is written; intrus config --set
# prints the configuration so changed, each changed setting marked.
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
cd "$tmp" || exit 1
tiny_experiments rs   # l2r.cfg: d_model 32, name rs-l2r, beam 2 in common.cfg

"$intrus" train -q l2r.cfg --set name=wide --set model.d_model=48 -n 10 > out.txt 2>&1
expect "train --set name=wide --set model.d_model=48 trains (exit $?)" test -s runs/wide/checkpoint.ckpt
expect "(into runs/wide, not runs/rs-l2r)" test ! -e runs/rs-l2r
expect "(effective.cfg has d_model 48)" grep -q "d_model = 48;" runs/wide/effective.cfg

"$intrus" train -q l2r.cfg --set name=wide -n 20 > out.txt 2>&1
rc=$?
expect "a resume without the model setting is refused (exit $rc)" test $rc -eq 5
expect "(by the fingerprint)" grep -q "written for another model configuration" out.txt
"$intrus" train -q l2r.cfg --set name=wide --set model.d_model=48 -n 20 > out.txt 2>&1
expect "the same settings resume (exit $?)" grep -q "20 steps (resumed from 10)" out.txt

"$intrus" run -q l2r.cfg --set name=b1 --set search.beam=1 -n 20 > out.txt 2>&1
expect "run --set search.beam=1 runs (exit $?)" test -s runs/b1/test.hyp
"$intrus" decode -q l2r.cfg -o runs/b1 -i data/test.en -b 1 -O b1.hyp
expect "(its test output is the beam-1 decode of its checkpoint)" cmp -s runs/b1/test.hyp b1.hyp
values() { "$intrus" checkpoint info "$1" | sed -n 's/^parameters: .*, \([0-9]*\) values$/\1/p'; }
w=$(values runs/wide/checkpoint.ckpt) n=$(values runs/b1/checkpoint.ckpt)
expect "(the d_model 48 model has more parameters: $w against ${n:-none})" test "${w:-0}" -gt "${n:-0}"
"$intrus" decode -q l2r.cfg -o runs/b1 -i data/test.en -O b2.hyp
expect "(the file's beam 2 decodes $(cmp -s b1.hyp b2.hyp && echo the same || echo otherwise))" \
  test -s b2.hyp

"$intrus" train -q l2r.cfg --set name=bad --set train.bogus=1 > out.txt 2>&1
rc=$?
expect "a misspelt setting is refused (exit $rc)" test $rc -eq 3
expect "(naming it)" grep -q "train: unknown setting 'bogus'" out.txt
expect "(writing no run directory)" test ! -e runs/bad
"$intrus" run -q l2r.cfg --set model.d_model > out.txt 2>&1
rc=$?
expect "an assignment without '=' exits 2 (exit $rc)" test $rc -eq 2
expect "(naming it)" grep -q "intrus run: --set 'model.d_model': expected PATH=VALUE" out.txt
"$intrus" train -q l2r.cfg --set model=1 > out.txt 2>&1
rc=$?
expect "replacing a group exits 2 (exit $rc)" test $rc -eq 2
"$intrus" config l2r.cfg --set model.d_model=48 > config.txt 2>&1
expect "intrus config --set prints the changed setting, marked" grep -q "^  d_model = 48;  # --set$" config.txt
expect "(a setting the file leaves out still marked as a default)" grep -q "# default$" config.txt
"$intrus" config --check l2r.cfg --set model.d_model=48 > out.txt 2>&1
rc=$?
expect "intrus config --check with --set exits 2 (exit $rc)" test $rc -eq 2
"$intrus" train --help | grep -q -- "--set PATH=VALUE"
expect "train --help names --set" test $? -eq 0
finish test_run_set

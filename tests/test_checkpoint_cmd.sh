#!/bin/sh
# intrus checkpoint (info, strip) and the run's best.ckpt without the optimizer state, on
# a tiny left-to-right model trained on a slice of the bundled en-de data: best.ckpt has
# no moments and checkpoint.ckpt has them; a stripped checkpoint decodes byte for byte as
# its source and a resume from it is refused naming the missing record; the strip keeps
# the configuration fingerprint, in place too; bad command lines exit 2, a damaged file 5.
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
cd "$tmp" || exit 1
en_de_slice data 200 30 30
cat > tiny.cfg <<EOF
name = "tiny";
seed = 3;
data: { kind = "parallel"; dir = "data"; src = "en"; tgt = "de"; bpe_merges = 150; max_len = 40; };
model: { d_model = 32; order = "l2r";
  encoder: { plugin = "transformer"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
  decoder: { plugin = "autoregressive"; layers = 1; heads = 2; ff = 64; dropout = 0.0; }; };
search: { beam = 2; batch_tokens = 500; };
train: { steps = 60; batch_tokens = 400; lr = 3e-3; warmup = 5; log_every = 10;
  valid_every = 30; valid_bleu = 30; checkpoint_every = 10; };
EOF
"$intrus" train -q tiny.cfg -o run > train.txt 2>&1
expect "the model trains" test $? -eq 0

# ---- info -----------------------------------------------------------------------------------
"$intrus" checkpoint info run/checkpoint.ckpt > info-ckpt.txt 2>&1
expect "info exits 0" test $? -eq 0
expect "checkpoint.ckpt keeps the moments" grep -q "^Adam's moments: kept" info-ckpt.txt
expect "info shows the step" grep -q "^step = 60$" info-ckpt.txt
"$intrus" checkpoint info run/best.ckpt > info-best.txt 2>&1
expect "best.ckpt has no moments" grep -q "^Adam's moments: none" info-best.txt
n1=$(sed -n 's/^parameters: \(.*\)$/\1/p' info-ckpt.txt)
n2=$(sed -n 's/^parameters: \(.*\)$/\1/p' info-best.txt)
expect "both hold the same parameters ($n1)" test -n "$n1" -a "$n1" = "$n2"
s1=$(wc -c < run/checkpoint.ckpt) s2=$(wc -c < run/best.ckpt)
expect "best.ckpt is about a third of checkpoint.ckpt ($s2 of $s1 bytes)" \
  test $((s2 * 3)) -lt $((s1 + s1 / 20)) -a $((s2 * 3)) -gt $((s1 - s1 / 20))

# ---- strip ----------------------------------------------------------------------------------
"$intrus" checkpoint strip run/checkpoint.ckpt -o lean.ckpt > strip.txt 2>&1
expect "strip exits 0" test $? -eq 0
expect "strip says what it left out" grep -q "records left out" strip.txt
"$intrus" checkpoint info lean.ckpt > info-lean.txt 2>&1
expect "the stripped copy has no moments" grep -q "^Adam's moments: none" info-lean.txt
f1=$(grep '^configuration fingerprint' info-ckpt.txt) f2=$(grep '^configuration fingerprint' info-lean.txt)
expect "the configuration fingerprint is kept" test -n "$f1" -a "$f1" = "$f2"
c1=$(grep '^content fingerprint' info-ckpt.txt) c2=$(grep '^content fingerprint' info-lean.txt)
expect "the content fingerprint changes" test "$c1" != "$c2"
"$intrus" decode -q tiny.cfg -o run -c run/checkpoint.ckpt -i data/test.en -O full.hyp &&
  "$intrus" decode -q tiny.cfg -o run -c lean.ckpt -i data/test.en -O lean.hyp
expect "both decode" test $? -eq 0
expect "the stripped copy decodes byte for byte as its source" cmp -s full.hyp lean.hyp
expect "(on $(sort -u full.hyp | wc -l) distinct lines)" test "$(sort -u full.hyp | wc -l)" -gt 5
mkdir run2 && cp run/* run2/ && cp lean.ckpt run2/checkpoint.ckpt
"$intrus" train -q tiny.cfg -o run2 -n 70 > resume.txt 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "no record 'adam_m/" resume.txt; then
  ok "a resume from a stripped checkpoint is refused, naming the missing moments"
else
  bad "resume from a stripped checkpoint: exit $rc: $(cat resume.txt)"
fi
cp run/checkpoint.ckpt inplace.ckpt
"$intrus" checkpoint strip inplace.ckpt -o inplace.ckpt > /dev/null 2>&1
expect "stripping in place gives the same bytes" cmp -s inplace.ckpt lean.ckpt
expect "no temporary file is left" test -z "$(ls | grep '\.tmp\.')"

# ---- average: train.keep_checkpoints and eval.checkpoint = "average" -----------------------
sed -e 's/checkpoint_every = 10; };/checkpoint_every = 10; keep_checkpoints = 3; };/' \
    -e '$a eval: { checkpoint = "average"; };' tiny.cfg > avg.cfg
"$intrus" run -q avg.cfg -o avg > avg.txt 2>&1
expect "a run tested on its average runs: $(tail -2 avg.txt)" test $? -eq 0
expect "it keeps the snapshots of the last 3 checkpoint steps" \
  test "$(ls avg/snapshots | tr '\n' ' ')" = "step-0000000040.ckpt step-0000000050.ckpt step-0000000060.ckpt "
expect "its test decode names average.ckpt" grep -q '"test_checkpoint": "average.ckpt"' avg/results.json
"$intrus" checkpoint info avg/average.ckpt > info-avg.txt 2>&1
expect "average.ckpt records the 3 it averaged" grep -q "^averaged = 3$" info-avg.txt
"$intrus" checkpoint average avg/snapshots/*.ckpt -o by-hand.ckpt > by-hand.txt 2>&1
expect "intrus checkpoint average of the snapshots exits 0" test $? -eq 0
expect "and equals the run's average.ckpt byte for byte" cmp -s by-hand.ckpt avg/average.ckpt
"$intrus" checkpoint average avg/snapshots/step-0000000060.ckpt -o one.ckpt > /dev/null 2>&1 &&
  "$intrus" decode -q avg.cfg -o avg -c one.ckpt -i data/test.en -O one.hyp &&
  "$intrus" decode -q avg.cfg -o avg -c avg/snapshots/step-0000000060.ckpt -i data/test.en -O last.hyp
expect "the average of one snapshot decodes as that snapshot" cmp -s one.hyp last.hyp
expect "the average of three decodes otherwise" test "$(cmp -s avg/test.hyp last.hyp; echo $?)" -ne 0
# Killed after step 30 (its snapshot kept, a later one left as by a kill between snapshot
# and checkpoint): the resumed run keeps the same snapshots, byte for byte.
"$intrus" train -q avg.cfg -o avg2 -n 30 > avg2.txt 2>&1
cp avg/snapshots/step-0000000050.ckpt avg2/snapshots/step-0000000050.ckpt
"$intrus" train -q avg.cfg -o avg2 > avg2.txt 2>&1
expect "the interrupted run trains on" test $? -eq 0
# (Their train_ms records differ, so the files do: the parameters are compared by what
# their averages decode.)
expect "and keeps the same steps: $(ls avg2/snapshots | tr '\n' ' ')" \
  test "$(ls avg2/snapshots)" = "$(ls avg/snapshots)"
"$intrus" checkpoint average avg2/snapshots/*.ckpt -o avg2.ckpt > /dev/null 2>&1 &&
  "$intrus" decode -q avg.cfg -o avg -c avg2.ckpt -i data/test.en -O avg2.hyp
expect "whose average decodes as the uninterrupted run's" cmp -s avg2.hyp avg/test.hyp
sed 's/keep_checkpoints = 3;/keep_checkpoints = 2; snapshot_every = 25;/' avg.cfg > every.cfg
"$intrus" train -q every.cfg -o every > every.txt 2>&1
expect "snapshot_every 25, 2 kept, 60 steps: steps 50 and 60 ($(ls every/snapshots | tr '\n' ' '))" \
  test "$(ls every/snapshots | tr '\n' ' ')" = "step-0000000050.ckpt step-0000000060.ckpt "
# Stopped by -n at 35, between snapshot steps: no snapshot there; resumed, the same
# three as without the stop (25, 50, 60), not 35, 50, 60.
sed 's/keep_checkpoints = 2;/keep_checkpoints = 3;/' every.cfg > every3.cfg
"$intrus" train -q every3.cfg -o every3 -n 35 > every3.txt 2>&1 &&
  "$intrus" train -q every3.cfg -o every3 > every3.txt 2>&1
expect "a run stopped by -n between snapshots keeps 25, 50, 60 ($(ls every3/snapshots | tr '\n' ' '))" \
  test "$(ls every3/snapshots | tr '\n' ' ')" = "step-0000000025.ckpt step-0000000050.ckpt step-0000000060.ckpt "
sed -e '$a eval: { checkpoint = "average"; };' tiny.cfg > noavg.cfg
"$intrus" train -q noavg.cfg -o noavg > noavg.txt 2>&1
rc=$?
expect "eval.checkpoint = \"average\" without keep_checkpoints: exit 3 before training ($rc)" \
  test $rc -eq 3 -a ! -f noavg/checkpoint.ckpt
expect "(naming the setting)" grep -q "eval.checkpoint.*keep_checkpoints" noavg.txt
"$intrus" checkpoint average run/best.ckpt > out.txt 2>&1
expect "average without -o is a usage error" test $? -eq 2
sed 's/d_model = 32;/d_model = 16;/' tiny.cfg > narrow.cfg
"$intrus" train -q narrow.cfg -o narrow -n 1 > narrow.txt 2>&1
"$intrus" checkpoint average run/best.ckpt narrow/checkpoint.ckpt -o mixed.ckpt > out.txt 2>&1
rc=$?
expect "checkpoints of two models are refused, naming the file: exit $rc, $(cat out.txt)" \
  test $rc -eq 5 -a ! -e mixed.ckpt && grep -q "narrow/checkpoint.ckpt" out.txt

# ---- errors ---------------------------------------------------------------------------------
"$intrus" checkpoint > out.txt 2>&1
expect "no subcommand is a usage error" test $? -eq 2
"$intrus" checkpoint strip run/checkpoint.ckpt > out.txt 2>&1
expect "strip without -o is a usage error" test $? -eq 2
"$intrus" checkpoint frob run/checkpoint.ckpt > out.txt 2>&1
expect "an unknown subcommand is a usage error" test $? -eq 2
expect "(and says so)" grep -q "unknown subcommand 'frob'" out.txt
"$intrus" checkpoint --help > out.txt 2>&1
expect "--help exits 0" test $? -eq 0
head -c 1000 run/checkpoint.ckpt > cut.ckpt
"$intrus" checkpoint strip cut.ckpt -o cut-out.ckpt > out.txt 2>&1
rc=$?
if [ $rc -eq 5 ] && grep -q "cut.ckpt: truncated" out.txt && [ ! -e cut-out.ckpt ]; then
  ok "a truncated checkpoint is refused, naming it, and nothing is written"
else
  bad "strip of a truncated file: exit $rc: $(cat out.txt)"
fi
finish test_checkpoint_cmd

#!/bin/sh
# intrus distill and data.distill on a tiny left-to-right teacher trained on a slice of
# the bundled en-de data: the distilled targets are `intrus decode` of the training
# sources with the same checkpoint and search, and the other files are the teacher's
# corpus; its BLEU is `intrus eval bleu` of them; a distillation killed with SIGKILL
# resumes at the line it reached and ends with the bytes of an uninterrupted one; a
# corpus made with another search (a finish penalty included: -f, data.distill's
# finish_penalty) or another checkpoint is refused, naming it, and one
# made with the same is reused; an experiment with data.distill distils first, then
# trains exactly as one whose data.dir names that corpus; its teacher untrained is an
# error; intrus table trains a teacher row before the row that distils from it or starts
# from its checkpoint (model.init); a student
# warm-started from its teacher takes the teacher's BPE and vocabulary (data.vocab_from).
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

tmp=$(mktemp -d) || exit 1
trap 'kill -9 $bg 2>/dev/null; rm -rf "$tmp"' 0
bg=
cd "$tmp" || exit 1
en_de_slice data 300 40 40
gzip data/valid.de # copied as it is, gzip or not
model='model: { d_model = 32; order = "l2r";
  encoder: { plugin = "transformer"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
  decoder: { plugin = "autoregressive"; layers = 1; heads = 2; ff = 64; dropout = 0.0; }; };
search: { beam = 2; batch_tokens = 500; };'
cat > teacher.cfg <<EOF
name = "teacher";
seed = 3;
data: { kind = "parallel"; dir = "data"; src = "en"; tgt = "de"; bpe_merges = 200; max_len = 40; };
$model
train: { steps = 160; batch_tokens = 400; lr = 3e-3; warmup = 5; log_every = 10;
  valid_every = 1000; checkpoint_every = 10; };
EOF
"$intrus" train -q -n 150 teacher.cfg > train.txt 2>&1
expect "the teacher trains" test $? -eq 0

# ---- the command line -------------------------------------------------------------------
"$intrus" distill --help > help.txt 2>&1
expect "--help exits 0" test $? -eq 0
expect "--help describes it" grep -q "Usage: intrus distill TEACHER.cfg -o OUT_DIR" help.txt
"$intrus" distill teacher.cfg > out.txt 2>&1
expect "no -o is a usage error" test $? -eq 2
cp data/train.de train-before.de
"$intrus" distill teacher.cfg -o data > out.txt 2>&1
rc=$?
if [ $rc -eq 5 ] && grep -q "data holds .* but no distillation" out.txt && [ ! -e data/.lock ] &&
  cmp -s data/train.de train-before.de; then
  ok "a directory that is no distillation's is not written into"
else
  bad "-o data: exit $rc (want 5): $(cat out.txt)"
fi

# ---- the corpus ---------------------------------------------------------------------------
"$intrus" distill teacher.cfg -o dist --chunk 70 > dist.txt 2> dist.err
expect "distill exits 0" test $? -eq 0
expect "it reports progress with an ETA" grep -q "^distill: 140/300 lines (47%), .* left$" dist.err
"$intrus" decode -q teacher.cfg -i data/train.en -O decoded.de
expect "the targets are intrus decode of the training sources" cmp -s decoded.de dist/train.de
expect "(which vary: $(sort -u decoded.de | wc -l) distinct lines)" test "$(sort -u decoded.de | wc -l)" -gt 60
for f in train.en valid.en valid.de.gz test.en test.de; do
  expect "$f is the teacher's, as it was" cmp -s "data/$f" "dist/$f"
done
expect "the MANIFEST has the checkpoint's fingerprint" grep -q "^checkpoint 0x[0-9a-f]\{16\}$" dist/MANIFEST
expect "the MANIFEST has the search" grep -q "^search.beam 2$" dist/MANIFEST
expect "the MANIFEST has the sources' fingerprint" grep -q "^sources 0x[0-9a-f]\{16\}$" dist/MANIFEST
"$intrus" eval bleu --ref data/train.de --hyp dist/train.de --json > bleu.json
want=$(sed -n 's/^ "score": \(.*\),$/\1/p' bleu.json) # rounded to 1 decimal
ratio=$(sed -n 's/^ "ratio": \(.*\),$/\1/p' bleu.json)
got=$(sed -n 's/^bleu //p' dist/MANIFEST)
gotr=$(sed -n 's/^ratio //p' dist/MANIFEST)
if [ -n "$want" ] && awk -v a="$want" -v b="$got" -v r="$ratio" -v s="$gotr" \
  'BEGIN { exit !((a - b) ^ 2 <= 0.0025 && (r - s) ^ 2 < 1e-8) }'; then
  ok "the MANIFEST's BLEU and ratio are intrus eval bleu's ($got, $gotr)"
else
  bad "MANIFEST bleu $got ratio $gotr, intrus eval bleu $want ratio $ratio"
fi
expect "distill prints them" grep -q "^teacher outputs against the training references: BLEU = " dist.txt

# ---- killed and resumed ---------------------------------------------------------------
"$intrus" distill -q teacher.cfg -o ref --chunk 5 > ref.txt 2>&1
expect "the uninterrupted distillation runs" test $? -eq 0
"$intrus" distill -q teacher.cfg -o cut --chunk 5 > cut1.txt 2>&1 &
bg=$!
i=0
while [ $i -lt 600 ] && ! grep -q "^done [1-9]" cut/distill.progress 2>/dev/null; do
  sleep 0.05
  i=$((i + 1))
done
kill -9 $bg 2>/dev/null
wait $bg 2>/dev/null
bg=
if [ -f cut/MANIFEST ]; then
  bad "the distillation finished before it was killed (make it longer)"
fi
done_at=$(sed -n 's/^done //p' cut/distill.progress)
expect "the kill left a progress record ($done_at of 300 lines)" \
  test -n "$done_at" -a "${done_at:-0}" -gt 0 -a "${done_at:-300}" -lt 300
"$intrus" distill -q teacher.cfg -o cut > cut2.txt 2>&1
expect "the killed distillation resumes and ends" test $? -eq 0
expect "it resumed at the line it reached" grep -q "resumed at line $((done_at + 1))" cut2.txt
expect "distill.log has both sessions" grep -q "^lines $((done_at + 1))-300 seconds" cut/distill.log
for f in train.de train.en valid.en valid.de.gz test.en test.de MANIFEST; do
  expect "$f equals the uninterrupted distillation's" cmp -s "ref/$f" "cut/$f"
done
expect "no partial files are left" test ! -e cut/train.de.partial -a ! -e cut/distill.progress
expect "chunks of 5 lines decode as one of 300" cmp -s ref/train.de decoded.de

# ---- reused, or refused -------------------------------------------------------------------
"$intrus" distill teacher.cfg -o ref > again.txt 2>&1
expect "the same teacher, search and sources: reused" grep -q "already distilled" again.txt
refused() { # DESCRIPTION WANT-TEXT ARGS...
  d=$1
  w=$2
  shift 2
  "$intrus" distill -q teacher.cfg -o ref "$@" > out.txt 2>&1
  rc=$?
  if [ $rc -eq 5 ] && grep -q -- "$w" out.txt && cmp -s ref/train.de decoded.de; then
    ok "$d"
  else
    bad "$d: exit $rc (want 5), wanted '$w' in: $(cat out.txt)"
  fi
}
refused "another beam is refused, naming it" "search.beam: 2 when it was made, 3 now" -b 3
refused "another alpha is refused, naming it" "search.alpha: 1 when it was made, 0.5 now" -a 0.5
refused "another finish penalty is refused, naming it" \
  "search.finish_penalty: 0 when it was made, 1.5 now" -f 1.5
"$intrus" distill -q teacher.cfg -o fp -f 2 > fp.txt 2>&1
expect "-f distils with that finish penalty" grep -q "^search.finish_penalty 2$" fp/MANIFEST
sed 's/beam = 2;/beam = 2; finish_penalty = 2.0;/' teacher.cfg > teacher-fp.cfg
"$intrus" decode -q teacher-fp.cfg -i data/train.en -O decoded-fp.de
expect "its targets are intrus decode with search.finish_penalty = 2" cmp -s decoded-fp.de fp/train.de
expect "(longer: $(wc -w < decoded-fp.de) words against $(wc -w < decoded.de) without)" \
  test "$(wc -w < decoded-fp.de)" -gt "$(wc -w < decoded.de)"
sed 's/beam = 2;/beam = 2; max_len_a = 1.5;/' teacher.cfg > teacher-len.cfg
"$intrus" distill -q teacher-len.cfg -r runs/teacher -o ref > out.txt 2>&1
expect "another search setting of the teacher's is refused, naming it" \
  grep -q "search.max_len_a: 2 when it was made, 1.5 now" out.txt
# The teacher trained on: another checkpoint.
"$intrus" train -q teacher.cfg > train2.txt 2>&1
expect "the teacher trains on to step 160" test $? -eq 0
refused "another checkpoint is refused, naming it" \
  "the teacher's checkpoint runs/teacher/checkpoint.ckpt is not the one it was made with"

# ---- data.distill -------------------------------------------------------------------------
student() { # NAME DATA-SETTINGS
  cat > "$1.cfg" <<EOF
name = "$1";
seed = 5;
data: { kind = "parallel"; $2 src = "en"; tgt = "de"; bpe_merges = 150; max_len = 30; };
$model
train: { steps = 10; batch_tokens = 300; lr = 3e-3; warmup = 5; log_every = 2;
  valid_every = 1000; checkpoint_every = 10; };
EOF
}
student student 'distill = { teacher = "teacher.cfg"; };'
"$intrus" train student.cfg > student.txt 2>&1
expect "a data.distill experiment trains" test $? -eq 0
expect "it distilled first, into the teacher's run" test -f runs/teacher/distill/MANIFEST
expect "with the teacher's search" grep -q "^search.beam 2$" runs/teacher/distill/MANIFEST
student twin 'dir = "runs/teacher/distill";'
"$intrus" train -q twin.cfg > twin.txt 2>&1
expect "its twin with data.dir trains" test $? -eq 0
cut -f1-3 runs/student/train.log > a.log
cut -f1-3 runs/twin/train.log > b.log
expect "it trains exactly as data.dir naming the corpus (train.log's losses)" \
  eval 'test -s a.log && cmp -s a.log b.log'
expect "its BPE is learnt from the distilled pairs, as data.dir's" \
  cmp -s runs/student/bpe.codes runs/twin/bpe.codes
student plain 'dir = "data";'
"$intrus" train -q -n 2 plain.cfg > plain.txt 2>&1
if [ ! -s runs/plain/bpe.codes ] || cmp -s runs/student/bpe.codes runs/plain/bpe.codes; then
  bad "the student's BPE is that of the original corpus (or none was learnt)"
else
  ok "(not that of the original corpus)"
fi
"$intrus" train student.cfg > student2.txt 2>&1
expect "run again, the corpus is reused" grep -q "holds the corpus of this teacher" student2.txt
student beam3 'distill = { teacher = "teacher.cfg"; beam = 3; };'
"$intrus" train -q -n 1 beam3.cfg > beam3.txt 2>&1
expect "data.distill.beam makes a corpus of its own" grep -q "^search.beam 3$" runs/teacher/distill-b3/MANIFEST
student fp2 'distill = { teacher = "teacher.cfg"; finish_penalty = 2.0; };'
"$intrus" train -q -n 1 fp2.cfg > fp2.txt 2>&1
expect "data.distill.finish_penalty makes a corpus of its own" \
  grep -q "^search.finish_penalty 2$" runs/teacher/distill-f2/MANIFEST
sed -i 's/beam = 2;/beam = 2; alpha = 0.8;/' teacher.cfg
"$intrus" train student.cfg > out.txt 2>&1
rc=$?
if [ $rc -eq 5 ] && grep -q "data.distill: runs/teacher/distill was distilled with .*search.alpha: 1 when it was made, 0.8 now" out.txt; then
  ok "a teacher whose search changed is refused, naming the setting"
else
  bad "teacher alpha 0.8: exit $rc (want 5): $(cat out.txt)"
fi
sed -i 's/ alpha = 0.8;//' teacher.cfg

# ---- data.vocab_from: a distilled student warm-started from its teacher ------------------
warm() { # NAME DATA-SETTINGS
  cat > "$1.cfg" <<EOF
name = "$1";
seed = 5;
data: { kind = "parallel"; distill = { teacher = "teacher.cfg"; }; $2 src = "en"; tgt = "de";
  bpe_merges = 200; max_len = 40; };
$(echo "$model" | sed 's|^model: {|model: { init = { checkpoint = "runs/teacher/checkpoint.ckpt"; };|')
train: { steps = 4; batch_tokens = 300; lr = 3e-3; warmup = 5; log_every = 2;
  valid_every = 1000; checkpoint_every = 2; };
EOF
}
warm own ''
"$intrus" train -q -n 1 own.cfg > out.txt 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "another vocabulary than this run's.*or data.vocab_from" out.txt; then
  ok "without data.vocab_from the student's own BPE is refused by model.init, naming the setting"
else
  bad "warm start on the distilled corpus's own BPE: exit $rc: $(cat out.txt)"
fi
warm warm 'vocab_from = "runs/teacher";'
"$intrus" train -n 2 warm.cfg > warm.txt 2>&1
expect "with data.vocab_from the warm-started student trains" test $? -eq 0
expect "it says whose BPE it takes" grep -q "^BPE codes and vocabulary of ./runs/teacher$" warm.txt
expect "its BPE codes are the teacher's" cmp -s runs/teacher/bpe.codes runs/warm/bpe.codes
expect "its vocabulary is the teacher's" cmp -s runs/teacher/vocab.txt runs/warm/vocab.txt
expect "every parameter is copied: $(sed -n "s/^ *copied //p" runs/warm/warm_start.txt)" \
  grep -Eq "copied ([0-9]+) of \1 parameters" runs/warm/warm_start.txt
"$intrus" train -q warm.cfg > out.txt 2>&1
expect "it resumes to its last step (its tokenizer files checked against its tokenizer.txt)" \
  eval 'test $? -eq 0 && tail -1 runs/warm/train.log | grep -q "^4	"'
warm nofiles 'vocab_from = "data";'
"$intrus" train -q -n 1 nofiles.cfg > out.txt 2>&1
expect "a directory without tokenizer.txt is refused, naming file, line and setting" \
  grep -q "nofiles.cfg:3: .*data.vocab_from.*data holds no tokenizer.txt" out.txt
warm merges 'vocab_from = "runs/student";'
"$intrus" train -q -n 1 merges.cfg > out.txt 2>&1
expect "a run of other data settings is refused, naming the setting" \
  grep -q "data.vocab_from: .*runs/student: the BPE codes and vocabulary there were made with other data settings" out.txt
expect "(and nothing of it is taken)" test ! -e runs/merges/bpe.codes
sed 's/name = "teacher"/name = "untrained"/' teacher.cfg > untrained.cfg
student orphan 'distill = { teacher = "untrained.cfg"; };'
"$intrus" run orphan.cfg > out.txt 2>&1
rc=$?
if [ $rc -eq 5 ] && grep -q "the teacher .*untrained.cfg is not trained: runs/untrained/checkpoint.ckpt" out.txt &&
  [ ! -d runs/orphan ]; then
  ok "an untrained teacher is an error before anything trains"
else
  bad "untrained teacher: exit $rc (want 5): $(cat out.txt)"
fi
student both 'dir = "data"; distill = { teacher = "teacher.cfg"; };'
"$intrus" train both.cfg > out.txt 2>&1
expect "dir and distill together are refused" grep -q "both.cfg:3: .*data.dir.*give dir or distill, not both" out.txt

# ---- intrus table: the teacher's row first --------------------------------------------
sed -e 's/name = "teacher"/name = "tt"/' -e 's/steps = 160;/steps = 10;/' teacher.cfg > tt.cfg
student ts 'distill = { teacher = "tt.cfg"; };'
# A table of two rows on the en-de column, the second the baseline:
# two_rows FILE TITLE  ROW1 TITLE1 EXP1  ROW2 TITLE2 EXP2
two_rows() {
  cat > "$1" <<EOF
title = "$2";
baseline = "$6";
columns = ( { name = "en-de"; title = "En-De"; } );
rows = (
  { name = "$3"; title = "$4"; experiments = { en-de = "$5"; }; },
  { name = "$6"; title = "$7"; experiments = { en-de = "$8"; }; }
);
EOF
}
two_rows table.cfg distilled  student Student ts.cfg  teacher Teacher tt.cfg
"$intrus" table -q -r tab -O tab-out table.cfg > table.txt 2> table.err
expect "a table of a teacher and its student runs" test $? -eq 0
expect "the teacher's row trains first" grep -q "^\[1/2 teacher en-de\]" table.err
expect "the student distils from it into the table's runs" test -f tab/tt/distill/MANIFEST
expect "both are scored" grep -q "^| Student | " tab-out/table.md
expect "the student's cell is named as distilled" grep -q \
  "^- row student, column en-de: trained on a distilled corpus (data.distill" tab-out/table.md
expect "(not as a column whose scores do not compare)" sh -c '! grep -q "do not compare" tab-out/table.md'
# Scored against the corpus the teacher reads, not the distilled copy of its references:
# a table of committed files (scripts/score-committed.sh) has no distilled corpus.
mv tab/tt/distill tab/tt/distill.away
grep "^| Student | " tab-out/table.md > student-row.want
"$intrus" table --no-train -q -r tab -O tab-out2 table.cfg > table2.txt 2> table2.err
expect "without the distilled corpus the student is still scored" test $? -eq 0
expect "(to the same score)" sh -c 'grep "^| Student | " tab-out2/table.md | cmp -s - student-row.want'
mv tab/tt/distill.away tab/tt/distill

# ---- intrus table: the row a warm start reads trains first ---------------------------------
# (model.init names the other row's checkpoint; listed first, it would find none.)
sed -e 's/name = "tt"/name = "ws"/' \
  -e 's#model: { d_model = 32;#model: { d_model = 32; init = { checkpoint = "tab3/tt/checkpoint.ckpt"; };#' \
  tt.cfg > ws.cfg
two_rows table3.cfg warm  ws Warm-started ws.cfg  tt "Its source" tt.cfg
# The source row held (--row ws) and its checkpoint not there: refused before anything
# runs, naming the checkpoint and the setting's line, not when the cell starts.
"$intrus" table -q -r tab3 -O tab3-out --row ws table3.cfg > table3a.txt 2> table3a.err
rc=$?
line=$(grep -n "init = " ws.cfg | cut -d: -f1)
expect "a warm start whose source no cell trains first is refused (exit $rc)" test $rc -ne 0
expect "(naming the checkpoint, ws.cfg:$line and the row)" grep -q \
  "row ws, column en-de: ws.cfg:$line: model.init.checkpoint: .*tab3/tt/checkpoint.ckpt: No such file" \
  table3a.err
expect "(before anything runs)" test ! -e tab3/ws
"$intrus" table -q -r tab3 -O tab3-out table3.cfg > table3.txt 2> table3.err
expect "a table of a warm-started row and its source runs" test $? -eq 0
expect "the source's row trains first" grep -q "^\[1/2 tt en-de\]" table3.err
expect "the other row starts from its checkpoint" grep -q "copied" tab3/ws/warm_start.txt
expect "both are scored" grep -q "^| Warm-started | [0-9]" tab3-out/table.md

finish test_distill

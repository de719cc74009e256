#!/bin/sh
# intrus table on a tiny table of two experiments (left-to-right and right-to-left on a
# slice of the bundled en-de data): bad table files are refused naming file, line and
# setting before anything trains; --dry-run runs nothing; a table killed with SIGKILL in
# the middle of a run and invoked again resumes it and ends with the same numbers as an
# uninterrupted table (logs, outputs, scores); a second invocation trains nothing; a cell
# trained on other data than its corpus holds now, or than its column's other cells, is
# named; two tables that share a run, started together, train it once; --row and --column
# run only the cells named; scripts/score-committed.sh scores a table from its cells'
# committed files into the same table.
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

tmp=$(mktemp -d) || exit 1
trap 'kill -9 $bg 2>/dev/null; rm -rf "$tmp"; [ -z "$exe" ] || rm -f "$exe"' 0
bg=
exe=
cd "$tmp" || exit 1
en_de_slice data 400 40 40
cat > common.cfg <<'EOF'
seed = 3;
data: { kind = "parallel"; dir = "data"; src = "en"; tgt = "de"; bpe_merges = 200; max_len = 40; };
search: { beam = 2; batch_tokens = 500; };
EOF
experiment() { # NAME ORDER STEPS
  cat > "$1.cfg" <<EOF
@include "common.cfg"
name = "tt-$1";
model: { d_model = 32; order = "$2";
  encoder: { plugin = "transformer"; layers = 1; heads = 2; ff = 64; dropout = 0.1; };
  decoder: { plugin = "autoregressive"; layers = 1; heads = 2; ff = 64; dropout = 0.1; };
};
train: { steps = $3; batch_tokens = 400; lr = 3e-3; warmup = 5; log_every = 10;
  valid_every = 100; valid_bleu = 20; checkpoint_every = 20; };
EOF
}
experiment l2r l2r 600
experiment r2l r2l 40
cat > table.cfg <<'EOF'
title = "tiny table";
baseline = "l2r";
columns = ( { name = "en-de"; title = "En-De"; } );
rows = (
  { name = "l2r"; title = "Left-to-right"; experiments = { en-de = "l2r.cfg"; };
    paper = { en-de = 27.5; }; },
  { name = "r2l"; title = "Right-to-left"; experiments = { en-de = "r2l.cfg"; }; }
);
EOF

# ---- bad table files: refused before anything runs ----------------------------------
refused() { # DESCRIPTION WANT-EXIT WANT-TEXT SED-EXPRESSION
  sed "$4" table.cfg > bad.cfg
  "$intrus" table bad.cfg > out.txt 2>&1
  rc=$?
  if [ $rc -eq "$2" ] && grep -q -- "$3" out.txt && [ ! -d runs ]; then
    ok "$1"
  else
    bad "$1: exit $rc (want $2), wanted '$3' in: $(cat out.txt)"
  fi
}
refused "an unknown setting" 3 "bad.cfg:1: unknown setting .titel" 's/^title/titel/'
refused "a baseline that is no row" 3 "bad.cfg:2: baseline: 'l2rr' is not the name of a row" \
  's/baseline = "l2r"/baseline = "l2rr"/'
refused "a misspelt column in experiments" 3 "bad.cfg:7: .*en-dx" \
  '7s/en-de = "r2l.cfg"/en-dx = "r2l.cfg"/'
refused "a missing experiment file" 5 "r2x.cfg" 's/r2l.cfg/r2x.cfg/'
refused "two rows of one name" 3 "named twice" 's/name = "r2l"/name = "l2r"/'
refused "a bad metric" 3 "metric" 's/title = "En-De";/title = "En-De"; metric = "ter";/'
"$intrus" table > out.txt 2>&1
expect "no table file: usage error" test $? -eq 2
# A cell whose corpus is missing: refused before any cell runs.
sed 's/dir = "data"/dir = "nodata"/' common.cfg > common-nodata.cfg
sed 's/common.cfg/common-nodata.cfg/' r2l.cfg > r2l-nodata.cfg
sed 's/"r2l.cfg"/"r2l-nodata.cfg"/' table.cfg > nodata.cfg
"$intrus" table nodata.cfg > out.txt 2>&1
rc=$?
if [ $rc -eq 3 ] && grep -q "nodata/train.en" out.txt && grep -q "row r2l, column en-de" out.txt &&
  [ ! -d runs ]; then
  ok "a missing corpus is refused before anything runs"
else
  bad "a missing corpus: exit $rc (want 3, data.dir), runs/ $([ -d runs ] && echo made || echo not made): $(cat out.txt)"
fi
"$intrus" table --dry-run nodata.cfg > out.txt 2>&1
rc=$?
if [ $rc -eq 3 ] && grep -q "nodata/train.en" out.txt && grep -q "2 runs to train" out.txt &&
  grep -q "would stop here" out.txt && [ ! -d runs ]; then
  ok "--dry-run lists the plan, then refuses the missing corpus as the run would"
else
  bad "--dry-run with a missing corpus: exit $rc (want 3): $(cat out.txt)"
fi

# ---- --dry-run ------------------------------------------------------------------------
"$intrus" table --dry-run table.cfg > plan.txt 2>&1
rc=$?
expect "--dry-run exits 0" test $rc -eq 0
expect "--dry-run lists both runs to train" grep -q "2 runs to train" plan.txt
expect "--dry-run trains nothing" test ! -d runs

# ---- --row / --column: run only the cells named ------------------------------------------
"$intrus" table --dry-run --row r2l table.cfg > plan-row.txt 2>&1
expect "--row: the plan trains one run" grep -q "^1 run to train" plan-row.txt
expect "--row: the plan names the other" grep -q "^ *l2r .*train .*(not selected)$" plan-row.txt
expect "--row: and counts it apart" grep -q "^1 more run not selected" plan-row.txt
"$intrus" table --row r2x table.cfg > row-bad.txt 2>&1
rc=$?
expect "an unknown --row is a usage error ($rc)" test $rc -eq 2
expect "an unknown --row names the rows there are" \
  grep -q -- "--row r2x: table has no row of that name (rows: l2r, r2l)" row-bad.txt
"$intrus" table --column en-dx table.cfg > col-bad.txt 2>&1
expect "an unknown --column is a usage error" test $? -eq 2
expect "--row r2x and --column en-dx train nothing" test ! -d runs
"$intrus" table -q -r sel -O sel-out --row r2l --column en-de table.cfg > sel.txt 2>&1
expect "--row r2l runs" test $? -eq 0
expect "--row r2l trains r2l" test -f sel/tt-r2l/results.json
expect "--row r2l leaves l2r alone" test ! -d sel/tt-l2r
expect "--row r2l: the table marks l2r not run" grep -q "^| Left-to-right (baseline) | (not run) |" sel-out/table.md

# ---- --dry-run times each phase at its own speed ---------------------------------------
# An INTRUS run of 20 pretraining and 40 sampled steps, stopped in its phases; its
# train.log replaced by rows of known train_s. A sampled step scores a rollout and 4
# states: the cost model puts its decoder at 2.9 / 0.5 = 5.8 pretraining steps' and its
# encoder at one's (the encoder reads each source once), 6 FLOPs per parameter and token:
# encoder 4d^2 + 2d ff = 8192 parameters, decoder 8d^2 + 2d ff + d vocab = 28288 at d 32,
# ff 64, vocab 500, so (8192 + 2.9 x 28288) / (8192 + 0.5 x 28288) = 4.04 pretraining
# steps until one was timed.
cat > ins.cfg <<'EOF'
@include "common.cfg"
name = "tt-ins";
model: { d_model = 32; canonical = true;
  encoder: { plugin = "transformer"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
  decoder: { plugin = "insertion"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
};
train: { batch_tokens = 400; lr = 3e-3; warmup = 5; log_every = 10; valid_every = 100;
  valid_bleu = 0; checkpoint_every = 10;
  phases = (
    { name = "pretrain"; order = { plugin = "uniform"; }; loss = "uniform"; states = "one";
      steps = 20; },
    { name = "sampled"; order = { plugin = "sampled"; }; loss = "main"; states = "some";
      per_sentence = 4; steps = 40; }
  );
};
EOF
cat > ins-table.cfg <<'EOF'
title = "phases";
baseline = "intrus";
columns = ( { name = "en-de"; title = "En-De"; } );
rows = ( { name = "intrus"; title = "INTRUS"; experiments = { en-de = "ins.cfg"; }; } );
EOF
train_log() { # STEP TRAIN_S ...: a train.log of those rows
  printf 'step\tloss\tlr\ttokens_per_s\tvalid_loss\tvalid_bleu\ttrain_s\n'
  while [ $# -ge 2 ]; do
    printf '%s\t5\t0.003\t100\t\t\t%s\n' "$1" "$2"
    shift 2
  done
}
"$intrus" train -q -n 20 -o est/tt-ins ins.cfg > train-est.txt 2>&1
expect "the phased run trains its pretraining" test $? -eq 0
# Its effective.cfg trains again (copied beside the experiment: data.dir is relative to
# the file that names it).
cp est/tt-ins/effective.cfg again.cfg
"$intrus" train -q -n 10 -o again-run again.cfg > again-run.txt 2>&1
rc=$?
expect "a phased run's effective.cfg trains again: $(head -c 300 again-run.txt)" test $rc -eq 0
train_log 10 10 20 20 > est/tt-ins/train.log
"$intrus" table --dry-run -r est ins-table.cfg > plan-ins.txt 2>&1
expect "40 sampled steps after 1 s pretraining steps: about 162 s, modelled: $(grep tt-ins plan-ins.txt)" \
  grep -q "resume .*est/tt-ins at step 20 of 60, ~3 min" plan-ins.txt
"$intrus" train -q -n 40 -o est/tt-ins ins.cfg > train-est.txt 2>&1
expect "the phased run trains into its sampled phase" test $? -eq 0
# A first try reached step 45 and was killed; resumed from step 20, steps 25-40 were
# logged again (as before resumes trimmed train.log): the later rows count (taken in
# file order, the intervals would give 18 s a step).
train_log 10 10 20 20 25 100 30 200 35 300 40 500 45 600 25 35 30 50 35 65 40 80 \
  > est/tt-ins/train.log
"$intrus" table --dry-run -r est ins-table.cfg > plan-ins.txt 2>&1
expect "20 sampled steps at the sampled phase's 3 s: 60 s, measured" \
  grep -q "resume .*est/tt-ins at step 40 of 60, 60 s" plan-ins.txt
# A 300 s pause between steps 30 and 35 (SIGSTOP): one interval of the median.
train_log 10 10 20 20 25 35 30 50 35 365 40 380 > est/tt-ins/train.log
"$intrus" table --dry-run -r est ins-table.cfg > plan-ins.txt 2>&1
expect "a pause does not move the estimate" \
  grep -q "resume .*est/tt-ins at step 40 of 60, 60 s" plan-ins.txt

# ---- --dry-run times a phase from another run of the same phase ----------------------
# Another table in the same runs directory, whose cells tt-ins is none of: an INTRUS
# experiment with another schedule and other step counts (the same model, batch and
# phases: 30 x 1 s + 10 x 3 s), one without pretraining (25 x 3 s, its first phase being
# tt-ins's second) and one of a wider model (nothing to borrow: modelled).
ins_experiment() { # NAME D_MODEL PHASES
  cat > "$1.cfg" <<EOF
@include "common.cfg"
name = "$1";
model: { d_model = $2; canonical = true;
  encoder: { plugin = "transformer"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
  decoder: { plugin = "insertion"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
};
train: { batch_tokens = 400; lr = 1e-3; warmup = 20; log_every = 10; valid_every = 100;
  valid_bleu = 0; checkpoint_every = 10; phases = ( $3 ); };
EOF
}
pre='{ name = "pre"; order = { plugin = "uniform"; }; loss = "uniform"; states = "one"; steps = 30; }'
smp='{ name = "smp"; order = { plugin = "sampled"; temperature = 0.5; }; loss = "main"; states = "some"; per_sentence = 4;'
ins_experiment tt-other 32 "$pre, $smp steps = 10; }"
ins_experiment tt-nopre 32 "$smp steps = 25; }"
ins_experiment tt-wide 48 "$pre, $smp steps = 10; }"
cat > other-table.cfg <<'EOF'
title = "others";
baseline = "other";
columns = ( { name = "en-de"; title = "En-De"; } );
rows = ( { name = "other"; title = "other"; experiments = { en-de = "tt-other.cfg"; }; },
         { name = "nopre"; title = "no pretraining"; experiments = { en-de = "tt-nopre.cfg"; }; },
         { name = "wide"; title = "wider"; experiments = { en-de = "tt-wide.cfg"; }; } );
EOF
"$intrus" table --dry-run -r est other-table.cfg > plan-other.txt 2>&1
expect "another schedule of the same phases is timed from tt-ins: 60 s" \
  grep -q "train .*est/tt-other, 40 steps, 60 s$" plan-other.txt
expect "a run of the sampled phase alone is timed from tt-ins's sampled phase: 75 s" \
  grep -q "train .*est/tt-nopre, 25 steps, 75 s$" plan-other.txt
# The wider model has no phase of its kind timed anywhere: the cost model (6 FLOPs per
# parameter and token; encoder 4d^2 + 128d, decoder 8d^2 + 128d + 500d: 15360 and 48576
# at d 48, 8192 and 28288 at d 32, in units of 6 x 400 FLOPs), at the median seconds per
# unit of the phases that were timed (tt-ins's pretraining, 1 s for 8192 + 0.5 x 28288,
# and sampled, 3 s for 8192 + 2.9 x 28288: 3.901e-5 s, their mean), so its 30
# pretraining steps of 15360 + 0.5 x 48576 and 10 sampled of 15360 + 2.9 x 48576:
# 2,751,740 x 3.901e-5 = 107 s. Not the
# sgemm probe's speed, which reads what else the machine runs (an estimate taken beside
# a training run read twice as long) and puts this model at a few milliseconds a step.
expect "a wider model is modelled from the timed runs: 107 s, $(grep tt-wide plan-other.txt)" \
  grep -q "train .*est/tt-wide, 40 steps, ~2 min$" plan-other.txt

# ---- --dry-run models an image model's CNN ---------------------------------------------
# Two image experiments on the bundled im2latex, alike but for data.batch_pixels; the
# first timed at 1 s a step. An image model's step is mostly its CNN (3 x 2 x 9 x in x
# out FLOPs per pixel of each stage's resolution, then the projection to d_model: 2352
# per pixel with filters 8, 16 both pooling, at d 32, so 2.466 GFLOP for 2^20 pixels),
# beside the decoder's 6 FLOPs per parameter and token (0.667 GFLOP: 8d^2 + 2d ff + d
# x 8300 at 400 tokens). Twice the pixels: (4.932 + 0.667) / (2.466 + 0.667) = 1.787
# times the time, so 100 steps about 179 s, where a model without the CNN has 100 s.
image_experiment() { # NAME BATCH_PIXELS
  cat > "$1.cfg" <<EOF
seed = 3;
name = "$1";
data: { kind = "images"; dir = "$src/data/im2latex"; tgt = "tex"; channels = 1;
        targets = "tokens"; max_len = 150; batch_pixels = $2; };
model: { d_model = 32; order = "l2r";
  encoder: { plugin = "cnn"; channels = 1; filters = [8, 16]; pool = [true, true]; };
  decoder: { plugin = "autoregressive"; layers = 1; heads = 2; ff = 64; };
};
train: { steps = 100; batch_tokens = 400; lr = 1e-3; warmup = 5; log_every = 10;
  valid_every = 1000; valid_bleu = 0; checkpoint_every = 10; };
EOF
}
image_experiment tt-img 1048576
image_experiment tt-img-wide 2097152
cat > img-table.cfg <<'EOF'
title = "images";
baseline = "img";
columns = ( { name = "tex"; title = "Tex"; } );
rows = ( { name = "img"; title = "CNN"; experiments = { tex = "tt-img.cfg"; }; },
         { name = "wide"; title = "CNN, twice the pixels"; experiments = { tex = "tt-img-wide.cfg"; }; } );
EOF
"$intrus" train -q -n 10 -o img/tt-img tt-img.cfg > train-img.txt 2>&1
expect "the image run trains: $(tail -3 train-img.txt)" test $? -eq 0
train_log 10 10 20 20 > img/tt-img/train.log
"$intrus" table --dry-run -r img img-table.cfg > plan-img.txt 2>&1
expect "the timed image run: 90 steps at 1 s: $(cat plan-img.txt)" grep -q "resume .*img/tt-img at step 10 of 100, 2 min$" plan-img.txt
expect "twice the pixels: the CNN modelled, about 179 s: $(grep tt-img-wide plan-img.txt)" \
  grep -q "train .*img/tt-img-wide, 100 steps, ~3 min$" plan-img.txt

# ---- a finished cell kept without its checkpoint still times its phases ---------------
# As docs/small-* keeps runs (results.json, test.hyp, train.log, effective.cfg): its
# phases are timed back from its last step, and its sampled phase (3 s a step) times the
# no-pretraining cell of the same table.
"$intrus" table -q -r fin -O fin-out ins-table.cfg > fin.txt 2>&1
expect "the phased cell finishes" test -f fin/tt-ins/results.json
rm -f fin/tt-ins/*.ckpt
train_log 10 10 20 20 30 50 40 80 50 110 60 140 > fin/tt-ins/train.log
cat > fin-table.cfg <<'EOF'
title = "finished";
baseline = "intrus";
columns = ( { name = "en-de"; title = "En-De"; } );
rows = ( { name = "intrus"; title = "INTRUS"; experiments = { en-de = "ins.cfg"; }; },
         { name = "nopre"; title = "no pretraining"; experiments = { en-de = "tt-nopre.cfg"; }; } );
EOF
"$intrus" table --dry-run -r fin fin-table.cfg > plan-fin.txt 2>&1
expect "the cell without its checkpoint is done" grep -q "done .*fin/tt-ins$" plan-fin.txt
expect "its sampled phase times the no-pretraining cell: 25 x 3 s, measured" \
  grep -q "train .*fin/tt-nopre, 25 steps, 75 s$" plan-fin.txt

# ---- a finished run whose config lengthens its last phase is timed as a resume -------
# The trainer reopens a last phase that its steps ended when the config gives it more
# (reopen_last_phase): tt-ins finished at step 60, its sampled phase begun after step
# 20; with 80 sampled steps it has 40 left, at that phase's 3 s a step: 120 s, not 0.
"$intrus" train -q -o est/tt-ins ins.cfg > train-est.txt 2>&1
expect "the phased run finishes" test $? -eq 0
mkdir -p long && cp -a est/tt-ins long/
train_log 10 10 20 20 30 50 40 80 50 110 60 140 > long/tt-ins/train.log
sed 's/per_sentence = 4; steps = 40;/per_sentence = 4; steps = 80;/' ins.cfg > ins-long.cfg
sed 's/"ins.cfg"/"ins-long.cfg"/' ins-table.cfg > long-table.cfg
"$intrus" table --dry-run -r long long-table.cfg > plan-long.txt 2>&1
expect "the lengthened last phase: 40 steps at 3 s, $(grep tt-ins plan-long.txt)" \
  grep -q "resume .*long/tt-ins at step 60 of 100, 2 min$" plan-long.txt
"$intrus" table --dry-run -r est ins-table.cfg > plan-same.txt 2>&1
expect "under its own config the trained run has no step left: $(grep tt-ins plan-same.txt)" \
  grep -q "resume .*est/tt-ins at step 60 of 60, 0 s$" plan-same.txt

wait_for() { # FILE: until it exists, at most 30 s
  i=0
  while [ $i -lt 600 ] && [ ! -f "$1" ]; do
    sleep 0.05
    i=$((i + 1))
  done
}

# ---- uninterrupted, then killed and resumed ------------------------------------------
"$intrus" table -q -r ref -O ref-out table.cfg > ref.txt 2>&1
expect "the uninterrupted table runs" test $? -eq 0
# The same table scored from its cells' files alone, as committed under docs/.
# scripts/keep-cell.sh copies what a finished cell needs (checked below: the table of
# these copies is the runs' table).
for r in l2r r2l; do
  sh "$src/scripts/keep-cell.sh" ref/tt-$r committed/$r > keep.txt 2>&1
  expect "scripts/keep-cell.sh keeps $r's files: $(cat keep.txt)" test $? -eq 0
done
expect "(not its checkpoints)" test ! -e committed/l2r/best.ckpt -a ! -e committed/l2r/checkpoint.ckpt
sh "$src/scripts/keep-cell.sh" ref/tt-nothing committed/x > keep.txt 2>&1
expect "a run directory that is not there is refused" test $? -eq 1 -a ! -e committed/x
mkdir -p half && cp ref/tt-l2r/train.log ref/tt-l2r/effective.cfg half/
sh "$src/scripts/keep-cell.sh" half committed/half > keep.txt 2>&1
rc=$?
expect "an unfinished run is refused (exit $rc), naming the missing file, copying nothing" \
  eval 'test $rc -eq 1 && grep -q "half/results.json: missing" keep.txt && test ! -e committed/half'
# A folder inside a cell's (a teacher's distilled corpus, as under docs/small-en-ru/) is
# not the cell's and is left out.
mkdir -p committed/l2r/distill-b4 && echo corpus > committed/l2r/distill-b4/train.de
INTRUS=$intrus sh "$src/scripts/score-committed.sh" -d committed table.cfg sc-out > sc.txt 2>&1
expect "scripts/score-committed.sh scores the committed files" test $? -eq 0
sed 's|`ref/|`runs/|' ref-out/table.md > ref-table.md
if cmp -s ref-table.md sc-out/table.md; then
  ok "into the table of the runs themselves (run paths as runs/NAME)"
else
  bad "scripts/score-committed.sh's table differs: $(diff ref-table.md sc-out/table.md; cat sc.txt)"
fi
"$intrus" table -q -r cut -O cut-out table.cfg > cut1.txt 2>&1 &
bg=$!
# Kill it once l2r has checkpointed (step 20 or later) and before it finished.
wait_for cut/tt-l2r/checkpoint.ckpt
kill -9 $bg 2>/dev/null
wait $bg 2>/dev/null
bg=
if [ -f cut/tt-l2r/results.json ]; then
  bad "the run finished before it was killed (make tt-l2r longer)"
fi
"$intrus" table --dry-run -r cut table.cfg > plan2.txt 2>&1
expect "after the kill, --dry-run resumes l2r" grep -q "resume .*cut/tt-l2r at step" plan2.txt
# --no-train: the table of what is finished, nothing trained or decoded.
cp cut/tt-l2r/checkpoint.ckpt ckpt-before
"$intrus" table --no-train -r cut -O part-out table.cfg > part.txt 2>&1
expect "--no-train exits 0" test $? -eq 0
expect "--no-train trains nothing" cmp -s ckpt-before cut/tt-l2r/checkpoint.ckpt
expect "--no-train decodes nothing" test ! -f cut/tt-l2r/test.hyp
expect "--no-train marks the half-trained cell" grep -q "| (not finished) |" part-out/table.md
expect "--no-train gives the half-trained cell's step" \
  grep -q "^| l2r | en-de | .cut/tt-l2r. | [1-9][0-9]* | .*| not finished |$" part-out/table.md
"$intrus" table -q -r cut -O cut-out table.cfg > cut2.txt 2>&1
expect "the killed table resumes and ends" test $? -eq 0
for f in tt-l2r/test.hyp tt-r2l/test.hyp; do
  expect "$f equals the uninterrupted run's" cmp -s "ref/$f" "cut/$f"
done
# train.log without its speed columns (tokens_per_s, train_s): losses, lr, validation.
cut -f1-3,5,6 ref/tt-l2r/train.log > a.log
cut -f1-3,5,6 cut/tt-l2r/train.log > b.log
expect "the resumed train.log equals the uninterrupted one" cmp -s a.log b.log
expect "sessions.tsv: one session for the uninterrupted run" \
  test "$(awk -F'\t' 'NR > 1 && NF == 9 { print $2 }' ref/tt-l2r/sessions.tsv)" = 0
expect "sessions.tsv: the killed run's two sessions, the second from its checkpoint" \
  test "$(awk -F'\t' 'NR > 1 && NF == 9 { printf "%s ", ($2 > 0) }' cut/tt-l2r/sessions.tsv)" = "0 1 "
expect "sessions.tsv: its header" \
  grep -q "^start	from_step	threads	ranks	kernels	blas_core	version	host	cpu$" cut/tt-l2r/sessions.tsv
# The second session on another thread count (a machine of more cores): the table says
# the cell's time mixes two setups; another host name alone is no other setup.
cp cut/tt-l2r/sessions.tsv sessions-before
awk -F'\t' 'BEGIN { OFS = "\t" } NR == 3 { $8 = $8 "-other" } { print }' sessions-before \
  > cut/tt-l2r/sessions.tsv
"$intrus" table --no-train -r cut -O host-out table.cfg > host.txt 2>&1
expect "another host name alone is one setup" sh -c '! grep -q "setups" host-out/table.md'
awk -F'\t' 'BEGIN { OFS = "\t" } NR == 3 { $3 = $3 + 14 } { print }' sessions-before \
  > cut/tt-l2r/sessions.tsv
"$intrus" table --no-train -r cut -O setup-out table.cfg > setup.txt 2>&1
expect "two thread counts: two setups in table.md" \
  grep -q "^| l2r | en-de | .cut/tt-l2r. | [0-9]* | [0-9]* s (2 setups) |" setup-out/table.md
expect "two thread counts: and in table.json" grep -q '"setups": 2' setup-out/table.json
cp sessions-before cut/tt-l2r/sessions.tsv
# A finished cell that cannot be scored here (its references gone or cut short: a column
# whose corpus this machine lacks) is marked, the table is still written, exit status 1.
mv data/test.de test.de.kept
"$intrus" table --no-train -r cut -O unscored-out table.cfg > unscored.txt 2>&1
expect "an unscorable finished cell: exit status 1" test $? -eq 1
expect "an unscorable finished cell: named on stderr" \
  grep -q "row r2l, column en-de: cannot score: .*test.de" unscored.txt
expect "an unscorable finished cell: the table is still written" test -s unscored-out/table.md
expect "an unscorable finished cell: marked failed in table.md" \
  grep -q "^| r2l | en-de | .*| failed |$" unscored-out/table.md
mv test.de.kept data/test.de
cut -d, -f1-8 ref-out/table.csv > a.csv
cut -d, -f1-8 cut-out/table.csv > b.csv
expect "the resumed table's scores equal the uninterrupted one's" cmp -s a.csv b.csv
expect "table.md written" grep -q "| Left-to-right (baseline) |" cut-out/table.md
expect "table.json names the baseline" grep -q '"baseline": "l2r"' cut-out/table.json
expect "the paper's number is in the table" grep -q "27.50" cut-out/table.md

# ---- orderings against the paper -------------------------------------------------------
# No baseline row, so the pair's p can only come from bootstrapping the two rows against
# each other: it must be what intrus eval bootstrap gives for their outputs.
order_table() { # FILE L2R-PAPER R2L-PAPER
  sed -e '/^baseline/d' -e "s/paper = { en-de = 27.5; }/paper = { en-de = $2; }/" \
    -e "s/experiments = { en-de = \"r2l.cfg\"; };/& paper = { en-de = $3; };/" table.cfg > "$1"
}
score() { awk -F, -v r="$1" '$1 == r { print $4 }' cut-out/table.csv; }
higher=$(awk -v a="$(score l2r)" -v b="$(score r2l)" 'BEGIN { print (a > b) ? "l2r" : (a < b) ? "r2l" : "tie" }')
"$intrus" eval bootstrap -r data/test.de -i cut/tt-l2r/test.hyp -i cut/tt-r2l/test.hyp > bs.txt 2>&1
p=$(sed -n 's/.*sacreBLEU paired-bs p = \([0-9.]*\).*/\1/p' bs.txt)
if [ "$higher" = r2l ]; then same=reversed; swapped="as in the paper"; else same="as in the paper"; swapped=reversed; fi
order_table ord1.cfg 27.5 20.0
"$intrus" table --no-train -r cut -O ord1-out ord1.cfg > ord1.txt 2>&1
expect "orderings: the pair's p is the bootstrap between the two rows ($p)" \
  grep -q "^| En-De | Left-to-right | Right-to-left | 27.50 / 20.00 | .* | $p | $same" ord1-out/table.md
expect "orderings: the summary line on stdout" \
  grep -q "^En-De: [01] of 1 pair of rows ordered as in the paper" ord1.txt
expect "orderings: table.json has the pair" \
  grep -q '"higher_in_paper": "l2r", "lower_in_paper": "r2l", "paper": \[27.50, 20.00\]' ord1-out/table.json
order_table ord2.cfg 27.5 30.0
"$intrus" table --no-train -r cut -O ord2-out ord2.cfg > ord2.txt 2>&1
expect "orderings: the paper's order the other way round: $swapped" \
  grep -q "^| En-De | Right-to-left | Left-to-right | 30.00 / 27.50 | .* | $p | $swapped" ord2-out/table.md
order_table ord3.cfg 27.5 27.5
"$intrus" table --no-train -r cut -O ord3-out ord3.cfg > ord3.txt 2>&1
expect "orderings: equal paper numbers are no order to reproduce" \
  grep -q "| $p | tied in the paper |$" ord3-out/table.md
expect "orderings: a row without the paper's number is in no pair" \
  sh -c '! grep -q "Orderings against the paper" cut-out/table.md'

# ---- a second invocation trains nothing ------------------------------------------------
sum1=$(cat cut/tt-l2r/train.log cut/tt-r2l/train.log | cksum)
"$intrus" table -r cut -O cut-out table.cfg > again.txt 2>&1
expect "a second invocation succeeds" test $? -eq 0
expect "a second invocation has nothing to train" grep -q "nothing to train" again.txt
expect "a second invocation leaves the logs alone" \
  test "$sum1" = "$(cat cut/tt-l2r/train.log cut/tt-r2l/train.log | cksum)"

# ---- the training data each cell learnt from ----------------------------------------
expect "finished cells from one corpus: no note" sh -c '! grep -q "^note:" again.txt'
expect "table.md gives each cell's training data" \
  grep -q "^| r2l | en-de | .cut/tt-r2l. | 40 | .* | 0x[0-9a-f]\{8\} | " cut-out/table.md
# The corpus rebuilt with one more pair: every finished cell learnt from other data.
cp -r data data-before
echo "One more line." >> data/train.en
echo "Noch eine Zeile." >> data/train.de
"$intrus" table --no-train -r cut -O drift-out table.cfg > drift.txt 2>&1
expect "--no-train after the corpus changed exits 0" test $? -eq 0
expect "the plan says a cell was trained on other data than the corpus holds" \
  grep -q "^note: row l2r, column en-de: cut/tt-l2r was trained on other training data" drift.txt
expect "table.md says so too" grep -q "^- row r2l, column en-de: .*other training data" \
  drift-out/table.md
expect "table.json has both fingerprints" \
  grep -q '"train_data": "[0-9a-f]\{16\}", "train_data_now": "[0-9a-f]\{16\}"' drift-out/table.json
rm -rf data
mv data-before data
# One cell retrained on other data (its recorded fingerprint edited): the column differs.
cp cut/tt-r2l/tokenizer.txt tokenizer-before
sed 's/^train 0x./train 0xf/' tokenizer-before > cut/tt-r2l/tokenizer.txt
"$intrus" table --no-train -r cut -O differ-out table.cfg > differ.txt 2>&1
expect "a column whose cells learnt from different data is named" \
  grep -q "^note: column en-de: its cells were trained on different training data (l2r 0x[0-9a-f]*, r2l 0xf" differ.txt
expect "table.md names it" grep -q "^- column en-de: .*do not compare" differ-out/table.md
# A run copied without its tokenizer.txt cannot be checked, and the table says so.
rm cut/tt-r2l/tokenizer.txt
"$intrus" table --no-train -r cut -O norec-out table.cfg > norec.txt 2>&1
expect "a run without tokenizer.txt is not checked, and says so" \
  grep -q "^note: row r2l, column en-de: cut/tt-r2l records no training data" norec.txt
expect "table.md: not recorded" grep -q "^| r2l | en-de | .* | not recorded | " norec-out/table.md
cp tokenizer-before cut/tt-r2l/tokenizer.txt

# ---- intrus rebuilt while a table runs --------------------------------------------------
# make replacing the binary leaves /proc/self/exe pointing at a deleted file; the cells
# after the first still find the build tree's plugins. A copy of the real binary under
# tests/.libs (a build-tree directory) stands in, removed during the first cell.
if [ -x "$build/.libs/intrus" ] && [ -d "$build/tests/.libs" ]; then
  exe="$build/tests/.libs/intrus-test-table-$$"
  cp "$build/.libs/intrus" "$exe"
  env -u INTRUS_PLUGIN_PATH LD_LIBRARY_PATH="$build/core/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$exe" table -q -r rebuilt -O rebuilt-out table.cfg > rebuilt.txt 2>&1 &
  bg=$!
  wait_for rebuilt/tt-l2r/checkpoint.ckpt
  rm -f "$exe"
  wait $bg
  rc=$?
  bg=
  expect "a table whose binary was removed during its first cell runs the second: $(grep -m1 failed rebuilt.txt)" \
    test $rc -eq 0 -a -f rebuilt/tt-r2l/results.json
fi

# ---- two tables sharing a run ---------------------------------------------------------
experiment l2r l2r 100
sed -e 's/"r2l.cfg"/"l2r.cfg"/' -e 's/"r2l"/"other"/' table.cfg > table2.cfg
"$intrus" table -q -r both -O both1 table.cfg > both1.txt 2>&1 &
bg=$!
"$intrus" table -q -r both -O both2 table2.cfg > both2.txt 2>&1
rc2=$?
wait $bg
rc1=$?
bg=
expect "two tables sharing a run both succeed" test $rc1 -eq 0 -a $rc2 -eq 0
steps=$(grep -c '^100	' both/tt-l2r/train.log)
expect "the shared run trained once (step 100 logged $steps times)" test "$steps" -eq 1

finish test_table

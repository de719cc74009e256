#!/bin/sh
# Data-parallel training over MPI (docs/mpi.md): `mpirun -np 2` trains the toy
# experiments (left-to-right, and INTRUS through a sampled phase) with the same losses
# as one process on the same global batches, step for step, to 1e-5 relative; a
# checkpoint written by 2 ranks resumes on 1 and one of 1 on 2, ending where the
# uninterrupted run ends; a rank that fails (its data bad) stops every rank with that
# rank's message, and ranks given different experiments (files, or --set) are refused,
# both without hanging; `intrus run` and `intrus table` under mpirun decode and score on rank 0;
# commands that are not data-parallel refuse mpirun. Every rank reads the command line
# with the command's own parser: options after the experiment file (the README's
# order) or before it; a usage error is reported once and every rank exits with
# status 2. Skipped (exit 77) unless intrus was built with ./configure --with-mpi.
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

if ! "$intrus" -V | grep -q 'MPI)'; then
  echo "SKIP: intrus was built without MPI (./configure --with-mpi)"
  exit 77
fi
mpirun=${INTRUS_TEST_MPIRUN:-mpirun}
if ! command -v "$mpirun" > /dev/null 2>&1; then
  echo "SKIP: no mpirun (apt-get install openmpi-bin)"
  exit 77
fi
# Open MPI refuses root unless told; CI runs as root. --oversubscribe: two ranks even
# where the machine announces one slot.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# One OpenMP thread per rank (two ranks on two cores).
mpi() { timeout 300 "$mpirun" -np 2 -x OMP_NUM_THREADS=1 -x INTRUS_PLUGIN_PATH "$@"; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
cd "$tmp" || exit 1

# The toy experiments, 50 steps, a log row every step.
sed -e 's/steps = 400;/steps = 50;/' -e 's/log_every = 50;/log_every = 1;/' \
  -e 's/valid_every = 200;/valid_every = 25;/' -e 's/checkpoint_every = 200;/checkpoint_every = 10;/' \
  "$src/experiments/toy-copy.cfg" > l2r.cfg
sed -e 's/steps = 200; },/steps = 25; },/' -e 's/steps = 200; }/steps = 25; }/' \
  -e 's/log_every = 50;/log_every = 1;/' -e 's/valid_every = 100;/valid_every = 25;/' \
  -e 's/checkpoint_every = [0-9]*;/checkpoint_every = 10;/' \
  "$src/experiments/toy-intrus.cfg" > intrus.cfg

# same_losses LOG-A LOG-B: every step's loss (column 2) within 1e-5 relative (plus the
# log's 6 decimals), and the same steps. Both logs have the header's columns, however
# many train.log has.
same_losses() {
  paste "$1" "$2" | awk -F'\t' '
    NR == 1 { k = NF / 2; next }   # the header: each log has k columns
    { n++; a = $2; b = $(k + 2); d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a
      if ($1 != $(k + 1) || d > 1e-5 * m + 1e-6) { bad++; if (bad < 4) print "step " $1 ": " a " vs " b } }
    END { print n " steps compared"; exit (bad > 0 || n == 0) }'
}

# The options after the file here (the README's order), before it below.
for x in l2r intrus; do
  "$intrus" train -q -o one-$x $x.cfg > /dev/null 2>&1
  mpi "$intrus" train $x.cfg -q -o two-$x > two-$x.out 2>&1
  expect "$x: 2 ranks train 50 steps" grep -q "50 steps" two-$x.out
  expect "$x: 2 ranks give the losses of one process, step for step" \
    same_losses one-$x/train.log two-$x/train.log
  expect "$x: rank 0 alone writes the run directory" test -f two-$x/checkpoint.ckpt

  # Resume across rank counts: 2 ranks to step 30, then 1 rank to the end; 1 rank to
  # step 30, then 2 ranks to the end.
  mpi "$intrus" train -q -n 30 -o two-one-$x $x.cfg > /dev/null 2>&1
  "$intrus" train -q -o two-one-$x $x.cfg > /dev/null 2>&1
  expect "$x: a checkpoint of 2 ranks resumes on 1 and ends as the uninterrupted run" \
    same_losses one-$x/train.log two-one-$x/train.log
  "$intrus" train -q -n 30 -o one-two-$x $x.cfg > /dev/null 2>&1
  mpi "$intrus" train -q $x.cfg -o one-two-$x > one-two-$x.out 2>&1
  expect "$x: a checkpoint of 1 rank resumes on 2" grep -q "resumed from 30" one-two-$x.out
  expect "$x: ... and ends as the uninterrupted run" \
    same_losses one-$x/train.log one-two-$x/train.log
done

# ---- text data: run and table on rank 0, a failing rank, mismatched experiments ----
mkdir -p a/data b/data
for s in train:200 valid:20 test:20; do
  split=${s%:*}
  n=${s#*:}
  for l in en de; do
    gzip -dc "$src/data/mt/en-de/$split.$l.gz" | head -n "$n" > "a/data/$split.$l"
    cp "a/data/$split.$l" "b/data/$split.$l"
  done
done
cat > a/mt.cfg <<'EOF'
name = "mt";
seed = 3;
data: { kind = "parallel"; dir = "data"; src = "en"; tgt = "de"; bpe_merges = 100; max_len = 40; };
model: { d_model = 32;
  encoder: { plugin = "transformer"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
  decoder: { plugin = "autoregressive"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
};
train: { steps = 20; batch_tokens = 400; lr = 3e-3; warmup = 5; log_every = 1;
  valid_every = 10; valid_bleu = 10; checkpoint_every = 10; };
search: { beam = 2; batch_tokens = 500; };
EOF
cp a/mt.cfg b/mt.cfg

(cd a && "$intrus" run -q -o "$tmp/mt-one" mt.cfg > "$tmp/mt-one.out" 2>&1)
(cd a && mpi "$intrus" run -q -o "$tmp/mt-two" mt.cfg > "$tmp/mt-two.out" 2>&1)
expect "run: 2 ranks train, rank 0 decodes and scores the test set" \
  test -f mt-two/results.json -a -f mt-two/test.hyp
expect "run: the same losses as one process" same_losses mt-one/train.log mt-two/train.log
expect "run: the same test output" cmp -s mt-one/test.hyp mt-two/test.hyp
expect "run: the result printed once" test "$(grep -c '^results:' mt-two.out)" -eq 1
(cd a && mpi "$intrus" run mt.cfg -q -o "$tmp/mt-two-after" > "$tmp/mt-two-after.out" 2>&1)
expect "run, options after the file: the same losses as one process" \
  same_losses mt-one/train.log mt-two-after/train.log
expect "... and the same test output" cmp -s mt-one/test.hyp mt-two-after/test.hyp

cat > a/table.cfg <<'EOF'
title = "mpi table";
baseline = "l2r";
columns = ( { name = "en-de"; title = "En-De"; } );
rows = ( { name = "l2r"; title = "Left-to-right"; experiments = { en-de = "mt.cfg"; }; } );
EOF
(cd a && mpi "$intrus" table -q -r "$tmp/table-runs" -O "$tmp/table-out" table.cfg > "$tmp/table.out" 2>&1)
expect "table: 2 ranks run the table's cell and rank 0 writes the table" \
  test -f table-out/table.md
cell_log=$(find table-runs -name train.log | head -1)
expect "table: the cell's losses are those of one process" same_losses mt-one/train.log "$cell_log"
(cd a && mpi "$intrus" table table.cfg -q -r "$tmp/table-runs-after" -O "$tmp/table-out-after" \
  > "$tmp/table-after.out" 2>&1)
cell_log=$(find table-runs-after -name train.log | head -1)
expect "table, options after the file: the cell's losses are those of one process" \
  same_losses mt-one/train.log "$cell_log"
expect "... and rank 0 writes the table" test -f table-out-after/table.md

# A usage error (no experiment file; an option without its value): said once, by rank 0,
# and every rank exits with status 2. Each rank writes its own exit status.
for args in "train -q" "run -q -o" "table -q"; do
  rm -f rc.0 rc.1
  # shellcheck disable=SC2086
  timeout 60 "$mpirun" -np 2 sh -c '"$0" "$@"; rc=$?; echo $rc > rc.$OMPI_COMM_WORLD_RANK; exit $rc' \
    "$intrus" $args > usage.out 2>&1
  rc=$?
  expect "intrus $args under mpirun: exit 2, not a hang (got $rc)" test $rc -eq 2
  expect "... on both ranks (got $(cat rc.0 rc.1 2>/dev/null | tr '\n' ' '))" \
    test "$(cat rc.0 rc.1 2>/dev/null | tr '\n' ' ')" = "2 2 "
  expect "... the usage said once" test "$(grep -c '^Usage:' usage.out)" -eq 1
done

# Rank 1's copy of the data is bad (a line missing from its training targets).
sed -i '$d' b/data/train.de
mpi_bad() { timeout 300 "$mpirun" -x OMP_NUM_THREADS=1 -x INTRUS_PLUGIN_PATH -np 1 -wdir "$tmp/a" "$intrus" train -q -o "$tmp/mt-bad" mt.cfg : -np 1 -wdir "$tmp/b" "$intrus" train -q -o "$tmp/mt-bad" mt.cfg; }
mpi_bad > bad.out 2>&1
rc=$?
expect "a failing rank stops the job (exit 5, not a hang: got $rc)" test $rc -eq 5
expect "... with that rank's message, naming its file" grep -q "rank 1: .*train" bad.out
cat bad.out | head -5

# Rank 1's experiment differs.
cp a/data/train.de b/data/train.de
sed -i 's/lr = 3e-3/lr = 2e-3/' b/mt.cfg
mpi_bad > diff.out 2>&1
rc=$?
expect "ranks with different experiments are refused (exit 3: got $rc)" test $rc -eq 3
expect "... saying which rank's differs" grep -q "rank 1's experiment" diff.out
cat diff.out | head -3

# The files the same, rank 0's command line changes a setting (--set) and rank 1's does
# not: refused as different experiments. The same --set on both ranks trains as one
# process with it.
cp a/mt.cfg b/mt.cfg
timeout 300 "$mpirun" -x OMP_NUM_THREADS=1 -x INTRUS_PLUGIN_PATH -np 1 -wdir "$tmp/a" "$intrus" \
  train -q -o "$tmp/mt-set" mt.cfg --set train.lr=2e-3 : -np 1 -wdir "$tmp/b" "$intrus" \
  train -q -o "$tmp/mt-set" mt.cfg > set.out 2>&1
rc=$?
expect "ranks with different --set are refused (exit 3: got $rc)" test $rc -eq 3
expect "... saying which rank's differs" grep -q "rank 1's experiment" set.out
(cd a && "$intrus" train -q -o "$tmp/set-one" mt.cfg --set train.lr=2e-3 > /dev/null 2>&1)
(cd a && mpi "$intrus" train -q -o "$tmp/set-two" mt.cfg --set train.lr=2e-3 > "$tmp/set-two.out" 2>&1)
expect "the same --set on both ranks: the losses of one process with it" \
  same_losses set-one/train.log set-two/train.log
expect "... which are not those without it" \
  test "$(cut -f2 set-two/train.log)" != "$(cut -f2 mt-one/train.log)"

# Only rank 1's command line is bad (no experiment file): the job stops with its message.
timeout 120 "$mpirun" -x OMP_NUM_THREADS=1 -np 1 -wdir "$tmp/a" "$intrus" train mt.cfg -q \
  -o "$tmp/mt-usage" : -np 1 -wdir "$tmp/a" "$intrus" train -q -o "$tmp/mt-usage" > usage1.out 2>&1
rc=$?
expect "a rank whose command line is bad stops the job (exit 2: got $rc)" test $rc -eq 2
expect "... with that rank's message" grep -q "rank 1: its command line" usage1.out
cat usage1.out | head -3

mpi "$intrus" eval bleu --help > eval.out 2>&1
rc=$?
expect "a command that is not data-parallel refuses mpirun (exit 2: got $rc)" test $rc -eq 2
expect "... saying to start it without mpirun" grep -q "without mpirun" eval.out

finish test_mpi

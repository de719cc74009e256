#!/bin/sh
# Data-parallel training on one machine, side by side in one run (docs/mpi.md):
# `intrus train` of the quickstart's model (and of a d256 3+3 one) on the bundled en-de
# for STEPS steps, as 1 rank x 2 OpenMP threads and as 2 ranks x 1 thread (mpirun), the
# same batches; prints steps/s of each, their ratio, and the share of a step the
# gradient sum (MPI_Allreduce) takes, with the bandwidth it reached.
#   bench/bench_mpi.sh [STEPS]      (from the build directory of ./configure --with-mpi)
# Needs quiet cores: run nothing else beside it.
set -eu
steps=${1:-60}
build=$(pwd)
src=${INTRUS_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
intrus="$build/intrus"
if ! "$intrus" -V | grep -q 'MPI)'; then
  echo "bench_mpi: $intrus was built without MPI (./configure --with-mpi)" >&2
  exit 2
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export INTRUS_PLUGIN_PATH="$build/plugins"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' 0

# experiment NAME D_MODEL LAYERS FF: the quickstart's settings at that size, no
# validation inside the timed steps.
experiment() {
  sed -e "s|^name = .*|name = \"$1\";|" -e "s|dir = \"../data/mt/en-de\"|dir = \"$src/data/mt/en-de\"|" \
    -e "s/d_model = 128;/d_model = $2;/" -e "s/layers = 2;/layers = $3;/g" -e "s/ff = 512;/ff = $4;/g" \
    -e "s/steps = 1100;/steps = $steps;/" -e "s/log_every = 20;/log_every = 10;/" \
    -e "s/valid_every = 550;/valid_every = 100000; valid_bleu = 0;/" \
    -e "s/checkpoint_every = 100;/checkpoint_every = 100000;/" \
    "$src/experiments/quickstart.cfg" > "$tmp/$1.cfg"
}

# steps_per_s LOG: steps per training second from the first logged row to the last
# (the first rows hold the warm-up of the arena and caches).
steps_per_s() {
  awk -F'\t' 'NR == 2 { s0 = $1; t0 = $7 } NR > 2 { s1 = $1; t1 = $7 }
    END { if (t1 > t0) printf "%.3f", (s1 - s0) / (t1 - t0); else print "nan" }' "$1"
}

echo "intrus data-parallel benchmark: $("$intrus" -V)"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $steps steps per run"
printf '\n| model | parameters | 1 rank x 2 threads steps/s | 2 ranks x 1 thread steps/s | ratio | gradient sum share | allreduce GB/s |\n'
printf '|---|---:|---:|---:|---:|---:|---:|\n'
for size in "d128 128 2 512" "d256 256 3 1024"; do
  set -- $size
  experiment "$1" "$2" "$3" "$4"
  # The vocabulary is learnt once, by a 1-step run, and copied into both runs.
  "$intrus" train -q -n 1 -o "$tmp/prep-$1" "$tmp/$1.cfg" > /dev/null
  for r in one two; do
    mkdir -p "$tmp/$r-$1"
    (cd "$tmp/prep-$1" && for f in *; do case $f in *.ckpt|train.log|effective.cfg) ;; *) cp "$f" "$tmp/$r-$1/";; esac; done)
  done
  OMP_NUM_THREADS=2 "$intrus" train -o "$tmp/one-$1" "$tmp/$1.cfg" > "$tmp/one-$1.out" 2> "$tmp/one-$1.err"
  mpirun -np 2 -x OMP_NUM_THREADS=1 -x INTRUS_PLUGIN_PATH "$intrus" train -q -o "$tmp/two-$1" "$tmp/$1.cfg" > "$tmp/two-$1.out"
  params=$(sed -n 's/.*: \([0-9]*\) parameters.*/\1/p' "$tmp/one-$1.err" | head -1)
  one=$(steps_per_s "$tmp/one-$1/train.log")
  two=$(steps_per_s "$tmp/two-$1/train.log")
  # "(2 ranks; summing gradients S s, P%)" from the summary line of the 2-rank run.
  sum_s=$(sed -n 's/.*summing gradients \([0-9.]*\) s.*/\1/p' "$tmp/two-$1.out")
  total_s=$(sed -n 's/.*tokens\/s, \([0-9.]*\) s (.*/\1/p' "$tmp/two-$1.out")
  awk -v p="$params" -v one="$one" -v two="$two" -v s="$sum_s" -v t="$total_s" -v n="$steps" -v name="$1" 'BEGIN {
    printf "| %s | %d | %.3f | %.3f | %.2fx | %.1f%% | %.2f |\n", name, p, one, two, two / one,
      100 * s / t, (s > 0 ? 4 * p * n / s / 1e9 : 0) }'
done
echo
echo "ratio: 2 ranks x 1 thread over 1 rank x 2 threads (same batches, same model)."
echo "gradient sum share: the gradient sums' time over the whole 2-rank run (setup included);"
echo "  it includes waiting for the slower rank (the sum is where the ranks meet)."
echo "allreduce GB/s: the gradient block's bytes over the time a sum took in training."
if [ -x "$build/bench/bench_allreduce" ]; then
  echo
  echo "MPI_Allreduce alone (bench/bench_allreduce, 2 ranks):"
  echo
  mpirun -np 2 "$build/bench/bench_allreduce"
fi

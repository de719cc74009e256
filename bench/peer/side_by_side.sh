#!/bin/sh
# intrus's benchmarks and the PyTorch peer, line by line in one sitting, on one ISA:
#   bench/peer/side_by_side.sh [native|avx2|generic] [TRAIN_STEPS [ROUNDS]]
# native: each picks its own kernels (intrus its best ISA, OpenBLAS its core, restarted
# with OPENBLAS_CORETYPE where it fell back to an old one); avx2: INTRUS_ISA=avx2 and
# OPENBLAS_CORETYPE=Haswell for both, as on an AVX2-only CPU. Run from the build
# directory after `make bench/bench_train bench/bench_intrus`; nothing else should run
# on the machine meanwhile. Training lines run once each (TRAIN_STEPS timed INTRUS steps,
# 3x that of the baseline); the decoding lines alternate intrus and PyTorch ROUNDS times
# (default 3) and the table gives each one's median (shared machines vary by 20% from
# one minute to the next). Prints every raw line, then a markdown table.
set -eu

isa=${1:-native}
steps=${2:-2}
rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
build=$(pwd)
[ -x "$build/bench/bench_intrus" ] || {
  echo "side_by_side.sh: run it from the build directory after make bench/bench_train bench/bench_intrus" >&2
  exit 1
}
case $isa in
  native) ;;
  avx2) INTRUS_ISA=avx2 OPENBLAS_CORETYPE=Haswell; export INTRUS_ISA OPENBLAS_CORETYPE ;;
  generic) INTRUS_ISA=generic; export INTRUS_ISA ;;
  *) echo "side_by_side.sh: ISA '$isa': use native, avx2 or generic" >&2; exit 2 ;;
esac
INTRUS_PLUGIN_PATH=${INTRUS_PLUGIN_PATH:-$build/plugins}
export INTRUS_PLUGIN_PATH
log=$(mktemp)
out=$(mktemp)
trap 'rm -f "$log" "$out"' EXIT

run() { # label command...: runs it, prints its output, keeps it under the label
  label=$1
  shift
  echo "== $label: $*"
  "$@" >"$out" 2>&1 || { cat "$out"; echo "side_by_side.sh: $label failed" >&2; exit 1; }
  cat "$out"
  sed "s/^/$label	/" "$out" >>"$log"
}

echo "$(lscpu | sed -n 's/^Model name: *//p'); $(nproc) cores; ISA setting: $isa"
run it_train "$build/bench/bench_train" a $((3 * steps))
run pt_train "$here/run.sh" train-base $((3 * steps)) 160 24
run it_intrus "$build/bench/bench_intrus" a "$steps"
run pt_intrus "$here/run.sh" train-intrus "$steps" both
r=1
while [ $r -le "$rounds" ]; do
  for b in 1 32; do
    run it_dec$b "$build/bench/bench_intrus" b $b 4 20
    run pt_dec$b "$here/run.sh" decode $b 4 20
  done
  r=$((r + 1))
done

# Numbers out of the lines above.
get() { grep "^$1	" "$log" | grep -e "$2" | head -1; }
num_before() { sed -n "s/.* \([0-9.][0-9.]*\) *$1.*/\1/p"; }
it_tok=$(get it_train 'target tokens/s' | sed -n 's/.*: *\([0-9]*\) target tokens\/s.*/\1/p')
it_peak=$(get it_train 'target tokens/s' | sed -n 's/.* \([0-9.]*\)% of peak.*/\1/p')
# bench_train counts target tokens with EOS; the peer prints both counts.
pt_tok=$(get pt_train 'target tokens/s' | sed -n 's/.*(\([0-9]*\) with EOS.*/\1/p')
it_ran=$(get it_intrus 'INTRUS random' | sed -n 's/.*order *\([0-9.]*\) ms.*/\1/p')
it_sam=$(get it_intrus 'INTRUS sampled' | sed -n 's/.*sampled *\([0-9.]*\) ms.*/\1/p')
it_pass=$(get it_intrus 'sampling pass' | sed -n 's/.*adds \([-0-9.]*\)%.*/\1/p')
pt_ran=$(get pt_intrus 'train-intrus random' | sed -n 's/.*random: \([0-9.]*\) ms.*/\1/p')
pt_sam=$(get pt_intrus 'train-intrus sampled' | sed -n 's/.*sampled: \([0-9.]*\) ms.*/\1/p')
pt_pass=$(get pt_intrus 'sampling pass' | sed -n 's/.*adds \([-0-9.]*\)%.*/\1/p')
# The sampler's own time inside the sampled steps against the rest of those steps.
it_pass_in=$(get it_intrus 'sampling pass' | sed -n 's/.*, +\([-0-9.]*\)% over the rest.*/\1/p')
pt_pass_in=$(get pt_intrus 'train-intrus sampled' |
  sed -n 's/.*(\([0-9.]*\) ms\/step.*trajectories \([0-9.]*\) ms.*/\1 \2/p' |
  awk '{ if ($1 > $2 && $2 > 0) printf "%.1f", 100 * $2 / ($1 - $2) }')
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else print "?" }'; }

echo
echo "| measure ($isa) | intrus | PyTorch | intrus / PyTorch |"
echo "|---|---:|---:|---:|"
echo "| baseline training (a), target tokens/s | $it_tok ($it_peak% of peak) | $pt_tok | $(ratio "$it_tok" "$pt_tok") |"
echo "| INTRUS random order, ms / target token | $it_ran | $pt_ran | $(ratio "$pt_ran" "$it_ran") faster |"
echo "| INTRUS sampled, ms / target token | $it_sam | $pt_sam | $(ratio "$pt_sam" "$it_sam") faster |"
echo "| sampling pass: between the two lines / timed inside the sampled steps | +$it_pass% / +$it_pass_in% | +$pt_pass% / +$pt_pass_in% | |"
median() { sort -g | awk '{v[NR] = $1} END {
  if (NR == 0) print "?"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
all() { grep "^$1	" "$log" | grep -e "$2"; }
for b in 1 32; do
  it_ins=$(all it_dec$b "^it_dec$b	 *$b  " | awk '{print $5}' | median)
  it_l2r=$(all it_dec$b "^it_dec$b	 *$b  " | awk '{print $7}' | median)
  pt_ins=$(all pt_dec$b 'decode batch' | sed -n 's/.*insertion \([0-9.]*\) sent.*/\1/p' | median)
  pt_l2r=$(all pt_dec$b 'decode batch' | sed -n 's/.*l2r \([0-9.]*\) sent.*/\1/p' | median)
  its=$(all it_dec$b "^it_dec$b	 *$b  " | awk '{print $5}' | tr '\n' ' ')
  pts=$(all pt_dec$b 'decode batch' | sed -n 's/.*insertion \([0-9.]*\) sent.*/\1/p' | tr '\n' ' ')
  echo "| insertion decoding b$b beam 4 L 20, sentences/s (median of: $its/ $pts) | $it_ins | $pt_ins | $(ratio "$it_ins" "$pt_ins") |"
  echo "| left-to-right decoding b$b beam 4 L 20, sentences/s | $it_l2r | $pt_l2r | $(ratio "$it_l2r" "$pt_l2r") |"
done

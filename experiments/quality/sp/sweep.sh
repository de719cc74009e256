#!/bin/sh
# The sampled-phase sweep side by side (../README.md, "Sampled-phase sweep"): every
# sp-*.cfg variant trained at once from a copy of the sp-pre run, 2 threads each, for
# at most SECONDS each (a machine with 2 cores per variant: 16 for all eight).
#   experiments/quality/sp/sweep.sh INTRUS RUNS [SECONDS]
# INTRUS: the intrus binary; RUNS: the folder holding sp-pre (run sp-pre.cfg first).
# Each variant's run goes to RUNS/sp-NAME (resumed if there), its output to
# RUNS/sp-NAME.out; the validations of each are printed at the end.
set -u
[ $# -ge 2 ] || { echo "usage: $0 INTRUS RUNS [SECONDS]" >&2; exit 2; }
intrus=$1
runs=$2
secs=${3:-530}
here=$(cd "$(dirname "$0")" && pwd)
[ -e "$runs/sp-pre/checkpoint.ckpt" ] || { echo "$0: $runs/sp-pre: no checkpoint (train sp-pre.cfg first)" >&2; exit 1; }
OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
export OMP_NUM_THREADS OPENBLAS_NUM_THREADS
for v in ctl lr1e3 w50 t05 ps2 all mainuni morepre; do
  if [ ! -e "$runs/sp-$v/checkpoint.ckpt" ]; then
    cp -r "$runs/sp-pre" "$runs/sp-$v" && rm -f "$runs/sp-$v/.lock" "$runs/sp-$v/best.ckpt"
  fi
  timeout "$secs" "$intrus" train "$here/sp-$v.cfg" -o "$runs/sp-$v" -q >"$runs/sp-$v.out" 2>&1 &
done
wait
for v in ctl lr1e3 w50 t05 ps2 all mainuni morepre; do
  echo "== sp-$v: $(tail -1 "$runs/sp-$v/train.log" | cut -f1) steps"
  awk -F '\t' 'NR > 1 && $6 != "" { printf "  step %s  valid BLEU %s  valid loss %s  train_s %s\n", $1, $6, $5, $7 }' "$runs/sp-$v/train.log"
done

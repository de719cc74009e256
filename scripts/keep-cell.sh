#!/bin/sh
# Copies what a finished run leaves that a results table needs into a folder to commit
# under docs/ (docs/small-en-ru/intrus-warm/ and the like), so that its test score can be
# reproduced from committed files against the original references
# (scripts/score-committed.sh scores a table from such folders) and its curve drawn
# (intrus plot). Checkpoints are not copied: they are large; `intrus checkpoint strip`
# makes one small enough to keep where a later run starts from it.
#
#   scripts/keep-cell.sh RUN_DIR DEST_DIR
#
# Needed (an error when missing): results.json, test.hyp, effective.cfg, train.log,
# tokenizer.txt. Kept when present: sessions.tsv (machines and kernels), test.order.tsv
# (the insertion orders of the test decode), warm_start.txt (what a warm start copied).
set -u
if [ $# -ne 2 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  echo "usage: $0 RUN_DIR DEST_DIR" >&2
  exit 2
fi
run=${1%/} dest=${2%/}
need="results.json test.hyp effective.cfg train.log tokenizer.txt"
optional="sessions.tsv test.order.tsv warm_start.txt"
[ -d "$run" ] || { echo "$0: $run: no such run directory" >&2; exit 1; }
for f in $need; do
  if [ ! -f "$run/$f" ]; then
    echo "$0: $run/$f: missing (a run that finished, with its test decode, has it); nothing copied" >&2
    exit 1
  fi
done
mkdir -p "$dest" || exit 1
n=0
for f in $need $optional; do
  [ -f "$run/$f" ] || continue
  # A temporary name, then rename: a folder never holds half a file.
  cp "$run/$f" "$dest/.$f.tmp" && mv "$dest/.$f.tmp" "$dest/$f" || exit 1
  n=$((n + 1))
done
echo "$dest: $n files of $run"

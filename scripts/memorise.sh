#!/bin/sh
# The memorisation check of issue 13 (docs/studies/2026-11-24-model-checks.md): every experiment of
# experiments/memorise/ trains on the same 64 real sentence pairs and decodes their
# sources with its normal beam search; a model that trains correctly reproduces them
# (BLEU >= 95). Prints one line per experiment and a table at the end.
#   scripts/memorise.sh [EXPERIMENT.cfg ...]     (default: all of experiments/memorise)
# Run from the top of a built tree. Results: runs/memorise/<name>/ (resumable: a finished
# run is not trained again). Exit status 1 if some experiment stays below 95.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/runs/memorise"
data="$out/data"
intrus="$top/intrus"
[ -x "$intrus" ] || { echo "memorise.sh: $intrus not built (run make first)" >&2; exit 1; }
src="$top/data/mt/en-de"

# The first 64 training pairs with 4 to 14 words on both sides; train = valid = test.
if [ ! -s "$data/test.de" ]; then
  mkdir -p "$data"
  gzip -dc "$src/train.en.gz" > "$data/all.en"
  gzip -dc "$src/train.de.gz" > "$data/all.de"
  paste -d '\t' "$data/all.en" "$data/all.de" |
    awk -F '\t' 'NF == 2 { e = split($1, a, " "); d = split($2, b, " ");
                  if (e >= 4 && e <= 14 && d >= 4 && d <= 14) print }' |
    head -n 64 > "$data/pairs.tsv"
  for split in train valid test; do
    cut -f 1 "$data/pairs.tsv" > "$data/$split.en"
    cut -f 2 "$data/pairs.tsv" > "$data/$split.de"
  done
  rm -f "$data/all.en" "$data/all.de" "$data/pairs.tsv"
  echo "memorise.sh: $(wc -l < "$data/test.de") pairs in $data" >&2
fi

[ $# -gt 0 ] || set -- "$top"/experiments/memorise/*.cfg
table=""
status=0
for cfg in "$@"; do
  case "$cfg" in */common.cfg) continue ;; esac
  name=$(basename "$cfg" .cfg)
  run="$out/$name"
  start=$(date +%s)
  if ! "$intrus" run "$cfg" -o "$run" -q > "$out/$name.out" 2>&1; then
    echo "memorise.sh: $name failed, see $out/$name.out" >&2
    status=1
    continue
  fi
  secs=$(( $(date +%s) - start ))
  bleu=$(sed -n 's/^BLEU = \([0-9.]*\).*/\1/p' "$out/$name.out" | tail -n 1)
  line=$(printf '%-16s BLEU %6s  (%d s)' "$name" "$bleu" "$secs")
  echo "$line"
  table="$table$line
"
  awk -v b="$bleu" 'BEGIN { exit !(b + 0 >= 95) }' || status=1
done
printf '\nmemorisation of 64 sentence pairs (BLEU >= 95 passes):\n%s' "$table"
exit $status

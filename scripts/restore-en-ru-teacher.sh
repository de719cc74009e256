#!/bin/sh
# Puts the committed En-Ru teacher back into runs/: the run of
# experiments/small/en-ru/l2r-teacher.cfg (its best.ckpt, BPE codes, vocabulary and
# results, docs/small-en-ru/l2r-teacher/) and the corpus `intrus distill` made from it
# with beam 4 and finish penalty 3 (runs/small-en-ru-l2r-teacher/distill-b4-f3: the
# committed teacher outputs, the other files from data/mt-full/en-ru, which
# scripts/build-mt-data.sh --out data/mt-full builds). The rows beyond the paper of
# experiments/small/levers-en-ru.cfg then train without retraining or re-distilling
# (the distillation's MANIFEST is checked against the restored files as any reuse is).
# Run from the top of the tree:
#   scripts/restore-en-ru-teacher.sh
set -eu
docs=docs/small-en-ru/l2r-teacher
run=runs/small-en-ru-l2r-teacher
data=data/mt-full/en-ru
[ -f "$docs/best.ckpt" ] || { echo "$0: no $docs/best.ckpt: run from the top of the tree" >&2; exit 2; }
for f in train.en valid.en valid.ru test.en test.ru; do
  [ -f "$data/$f" ] || { echo "$0: no $data/$f: scripts/build-mt-data.sh --out data/mt-full first" >&2; exit 2; }
done
mkdir -p "$run"
for f in "$docs"/*; do
  [ -f "$f" ] && cp "$f" "$run/"
done
dist="$run/distill-b4-f3"
mkdir -p "$dist"
for f in train.en valid.en valid.ru test.en test.ru; do cp "$data/$f" "$dist/$f"; done
gzip -dc "$docs/distill-b4-f3/train.ru.gz" > "$dist/train.ru.tmp"
mv "$dist/train.ru.tmp" "$dist/train.ru"
cp "$docs/distill-b4-f3/MANIFEST" "$docs/distill-b4-f3/distill.log" "$dist/"
echo "restored $run and $dist"

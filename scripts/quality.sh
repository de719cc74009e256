#!/bin/sh
# The INTRUS quality proxies of issue 13 (docs/studies/2026-11-25-quality-proxies.md): short runs on the
# bundled en-de that compare pretraining variants and the sampled phase's `states`
# setting by validation BLEU (500 valid sentences, beam 1) against step and training
# time. The sampled-* runs continue from a copy of their pretraining run (the same
# first 1500 steps), so every variant is compared from one starting point.
#   scripts/quality.sh            (about an hour on 2 cores; resumable)
# Run from the top of a built tree. Results: runs/quality/<name>/train.log, a table on
# stdout and runs/quality/curves.png.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/runs/quality"
exp="$top/experiments/quality"
intrus="$top/intrus"
[ -x "$intrus" ] || { echo "quality.sh: $intrus not built (run make first)" >&2; exit 1; }
mkdir -p "$out"

train() { # NAME [FROM]: trains experiments/quality/NAME.cfg, first copying run FROM
  name=$1
  if [ $# -gt 1 ] && [ ! -e "$out/$name/checkpoint.ckpt" ]; then
    rm -rf "$out/$name"
    cp -r "$out/$2" "$out/$name"
    rm -f "$out/$name/.lock"
  fi
  echo "quality.sh: $name ($(date +%T))" >&2
  nice "$intrus" train "$exp/$name.cfg" -o "$out/$name" -q
}

train pretrain
train sampled-all pretrain
train sampled-some pretrain
train sampled-restart pretrain
train pretrain-ls
train ls-sampled-some pretrain-ls
train pretrain-tie
train pretrain-tie-ls
train pretrain-some

printf '%-16s %s\n' run 'step: valid BLEU (training seconds)'
for r in pretrain pretrain-ls pretrain-tie pretrain-tie-ls pretrain-some sampled-all \
         sampled-some sampled-restart ls-sampled-some; do
  printf '%-16s %s\n' "$r" "$(awk -F '\t' 'NR > 1 && $6 != "" { printf "%s: %s (%s s)  ", $1, $6, $7 }' "$out/$r/train.log")"
done
"$intrus" plot "$out/sampled-restart" "$out/sampled-some" "$out/sampled-all" \
  "$out/ls-sampled-some" "$out/pretrain-tie" "$out/pretrain-tie-ls" "$out/pretrain-some" \
  --x time --label "1500 uniform, then 400 sampled (4 states), Adam restarted" \
  --label "1500 uniform (one state), then 400 sampled (4 states)" \
  --label "1500 uniform (one state), then 100 sampled (every state)" \
  --label "label smoothing 0.1: 1500 uniform, then 100 sampled (4 states)" \
  --label "tie_embeddings: 1500 uniform" --label "tie + label smoothing 0.1: 1500 uniform" \
  --label "states = some (4): 750 uniform" \
  --title "INTRUS on en-de: valid BLEU (500 sentences, beam 1) against training time" \
  -o "$out/curves.png"

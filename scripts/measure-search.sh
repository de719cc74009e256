#!/bin/sh
# Decodes one source file with a trained experiment under several search settings, one
# decode at a time, and prints a Markdown table: wall seconds, sentences/s, speed-up
# against the first setting, BLEU, length ratio, the insertion search's share of slots
# given the token softmax, and whether the output is byte-identical to the first's.
# The tables of docs/intrus.md ("search.slots") and the levers study were made with it.
#
#   scripts/measure-search.sh [-o RUN_DIR] [-c CKPT] [-k KEEP_DIR] EXP.cfg SRC REF SETTING...
#
# SETTING: the beam and settings of the experiment's `search` group, comma-separated,
# e.g. "beam=4", "beam=4,slots=8", "beam=1,prune=false", "beam=4,finish_penalty=1.5",
# "beam=4,batch_tokens=500" (beam goes to `intrus decode -b`, each other one to `intrus
# decode --set search.NAME=VALUE`, which replaces the experiment's own value, wherever
# its search group is written, @include'd files included). CKPT: the checkpoint
# to decode with (default: intrus decode's, RUN_DIR/checkpoint.ckpt; the small preset's
# cells are tested with RUN_DIR/best.ckpt). KEEP_DIR: where the outputs stay (default: a
# temporary folder). Run from the top of the tree (./intrus).
set -u
run_dir=
ckpt=
keep=
while getopts o:c:k: opt; do
  case $opt in
    o) run_dir=$OPTARG ;;
    c) ckpt=$OPTARG ;;
    k) keep=$OPTARG ;;
    *) echo "usage: $0 [-o RUN_DIR] [-c CKPT] [-k KEEP_DIR] EXP.cfg SRC REF SETTING..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -lt 4 ]; then
  echo "usage: $0 [-o RUN_DIR] [-c CKPT] [-k KEEP_DIR] EXP.cfg SRC REF SETTING..." >&2
  exit 2
fi
cfg=$1 src=$2 ref=$3
shift 3
intrus=./intrus
[ -x "$intrus" ] || { echo "$0: no ./intrus here: run from the top of a built tree" >&2; exit 2; }
[ -f "$cfg" ] || { echo "$0: $cfg: no such experiment file" >&2; exit 2; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
out=${keep:-$tmp}
mkdir -p "$out" || exit 1
n=$(if [ "${src%.gz}" != "$src" ]; then gzip -dc "$src"; else cat "$src"; fi | wc -l)

echo "| search | wall s | sentences/s | speed-up | BLEU | length ratio | slots given the token softmax | output as the first |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
first= first_s=
i=0
for setting in "$@"; do
  i=$((i + 1))
  beam= sets=
  for kv in $(echo "$setting" | tr ',' ' '); do
    case ${kv%%=*} in
      beam) beam=${kv#*=} ;;
      *) sets="$sets --set search.$kv" ;;
    esac
  done
  hyp="$out/$i.hyp"
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  if ! "$intrus" decode "$cfg" $sets ${run_dir:+-o "$run_dir"} ${ckpt:+-c "$ckpt"} ${beam:+-b "$beam"} -i "$src" \
      -O "$hyp" > "$out/$i.log" 2>&1; then
    echo "$0: decode with '$setting' failed:" >&2
    tail -5 "$out/$i.log" >&2
    exit 1
  fi
  t1=$(date +%s.%N)
  s=$(awk "BEGIN { print $t1 - $t0 }")
  "$intrus" eval bleu -r "$ref" -i "$hyp" -j > "$out/$i.json" || exit 1
  bleu=$(sed -n 's/^ *"score": \([0-9.]*\),/\1/p' "$out/$i.json")
  ratio=$(sed -n 's/^ *"ratio": \([0-9.]*\),/\1/p' "$out/$i.json")
  slots=$(sed -n 's/.*token softmax at \([0-9]* of [0-9]* slots ([0-9.]*%\).*/\1)/p' "$out/$i.log" | tail -1)
  if [ -z "$first" ]; then first=$hyp first_s=$s same="(the first)"
  elif cmp -s "$first" "$hyp"; then same="identical"
  else same="differs"; fi
  printf '| %s | %.1f | %.2f | %.2f | %.2f | %.3f | %s | %s |\n' "$setting" "$s" \
    "$(awk "BEGIN { print $n / $s }")" "$(awk "BEGIN { print $first_s / $s }")" "$bleu" "$ratio" \
    "${slots:--}" "$same"
done

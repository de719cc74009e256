#!/bin/sh
# Every experiment of the small preset (and one of each decoder from the paper preset,
# text and images) is a valid experiment: each trains one step, read as strictly as any
# run reads it, on a stand-in corpus (a slice of the bundled en-de text under each
# pair's file names, since data/mt-full is built, not bundled; slices of the bundled
# image sets for the image columns). The table files of both presets list
# every cell (--dry-run loads each experiment file).
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
mkdir -p "$tmp/experiments" "$tmp/data/mt-full"
cp -R "$src/experiments/common" "$src/experiments/small" "$src/experiments/paper" \
  "$tmp/experiments/"
chmod -R u+w "$tmp/experiments"
for pair in en-ru en-ja en-ar en-de; do
  l=${pair#en-}
  d="$tmp/data/mt-full/$pair"
  mkdir -p "$d"
  for s in train:120 valid:8 test:8; do
    split=${s%:*}
    n=${s#*:}
    gzip -dc "$src/data/mt/en-de/$split.en.gz" | head -n "$n" > "$d/$split.en"
    gzip -dc "$src/data/mt/en-de/$split.de.gz" | head -n "$n" > "$d/$split.$l"
  done
done

# The image columns' stand-ins: slices of the bundled image sets under the full sets' names.
for set in im2latex:im2latex-full caption:caption-full; do
  from=${set%:*}
  d="$tmp/data/${set#*:}"
  mkdir -p "$d/images"
  for f in "$src/data/$from"/*.img "$src/data/$from"/*.tex "$src/data/$from"/*.en*; do
    [ -f "$f" ] || continue
    case $(basename "$f") in train.*) n=40 ;; *) n=6 ;; esac
    head -n "$n" "$f" > "$d/$(basename "$f")"
  done
  for i in $(cat "$d"/*.img | sort -u); do cp "$src/data/$from/$i" "$d/$i"; done
done

train_one() { # EXPERIMENT-FILE (relative to $tmp/experiments)
  if "$intrus" train "$tmp/experiments/$1" -o "$tmp/runs/$(echo "$1" | tr / _)" -n 1 -q \
    > "$tmp/out.txt" 2>&1; then
    ok "$1 trains"
  else
    bad "$1 does not train: $(cat "$tmp/out.txt")"
  fi
}
# The warm-started rows (model.init) copy from their teacher's best.ckpt under runs/,
# relative to the experiment file: a one-step teacher on the same stand-in stands in.
t="$tmp/runs/small-en-ru-l2r-teacher"
"$intrus" train "$tmp/experiments/small/en-ru/l2r-teacher.cfg" -o "$t" -n 1 -q \
  > "$tmp/out.txt" 2>&1 || bad "the stand-in teacher does not train: $(cat "$tmp/out.txt")"
cp "$t/checkpoint.ckpt" "$t/best.ckpt"
n=0
for f in $(cd "$tmp/experiments" && ls small/*/*.cfg | grep -v "^small/common/"); do
  train_one "$f"
  n=$((n + 1))
done
train_one paper/en-ru/l2r.cfg
train_one paper/en-ru/intrus.cfg
train_one paper/im2latex/intrus.cfg
train_one paper/captions/l2r.cfg
[ "$n" -ge 19 ] || bad "only $n experiment files under experiments/small"

for t in small/table1.cfg small/table2-en-ru.cfg small/levers-en-ru.cfg paper/table1.cfg paper/table2-en-ru.cfg; do
  if "$intrus" table --dry-run -r "$tmp/runs-none" "$tmp/experiments/$t" > "$tmp/out.txt" 2>&1 &&
    grep -q "runs to train" "$tmp/out.txt"; then
    ok "intrus table --dry-run $t"
  else
    bad "intrus table --dry-run $t: $(cat "$tmp/out.txt")"
  fi
done

finish test_presets "$n small-preset experiments trained a step"

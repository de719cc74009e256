#!/bin/sh
# Image data end to end (data.kind = "images", the cnn encoder): a tiny model trains on a
# slice of the bundled caption set (left-to-right and INTRUS) and of the image-to-LaTeX
# set, `intrus run` decodes the test images and scores them (BLEU against every
# reference; CIDEr-D for captions), `intrus decode -i LIST.img` gives the same output as
# the run; a resumed run reads the same batches. Bad input is refused naming the file
# and line, writing nothing: a missing image, a truncated PNG, a text file named .png, a
# list and references of different lengths, bad settings.
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
cd "$tmp" || exit 1

# slice SET OUT N-TRAIN N-EVAL: the first lines of every split file, the images copied.
slice() {
  mkdir -p "$2/images"
  for f in "$src/data/$1"/*.img "$src/data/$1"/*.tex "$src/data/$1"/*.en* ; do
    [ -f "$f" ] || continue
    b=$(basename "$f")
    case $b in train.*) n=$3 ;; *) n=$4 ;; esac
    head -n "$n" "$f" > "$2/$b"
  done
  for l in $(cat "$2"/*.img | sort -u); do cp "$src/data/$1/$l" "$2/$l"; done
}
slice caption cap 120 12
slice im2latex tex 120 12

experiment() { # NAME DIR TGT CHANNELS TARGETS DECODER EXTRA-TRAIN EXTRA-MODEL
  cat > "$1.cfg" <<EOF
name = "$1";
seed = 2;
data: { kind = "images"; dir = "$2"; tgt = "$3"; channels = $4; targets = "$5"; bpe_merges = 50;
        max_len = 60; batch_pixels = 65536; };
model: { d_model = 32; $8
  encoder: { plugin = "cnn"; channels = $4; filters = [8, 16]; pool = [true, true]; };
  decoder: { plugin = "$6"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
};
train: { batch_tokens = 600; lr = 3e-3; warmup = 5; log_every = 5; valid_every = 10;
  valid_bleu = 6; checkpoint_every = 5; $7 };
search: { beam = 2; max_len_a = 0.0; max_len_b = 20; };
EOF
}
experiment cap-l2r cap en 3 text autoregressive "steps = 20;" 'order = "l2r";'
experiment cap-ins cap en 3 text insertion 'phases = ( { name = "p"; order = { plugin = "uniform"; }; loss = "uniform"; states = "one"; steps = 10; }, { name = "s"; order = { plugin = "sampled"; }; loss = "main"; states = "some"; per_sentence = 2; steps = 10; } );' ""
experiment tex-l2r tex tex 1 tokens autoregressive "steps = 20;" 'order = "l2r";'

for x in cap-l2r cap-ins tex-l2r; do
  "$intrus" run -q -o "run-$x" "$x.cfg" > "$x.out" 2> "$x.err"
  rc=$?
  expect "$x: intrus run trains, decodes and scores the test images (exit $rc)" test $rc -eq 0
  expect "$x: results.json has the test BLEU" grep -q '"BLEU"' "run-$x/results.json"
  expect "$x: one output line per test image" \
    test "$(wc -l < "run-$x/test.hyp")" -eq "$(wc -l < "${x%%-*}/test.img")"
  [ $rc -eq 0 ] || head -20 "$x.err"
done
expect "captions: every reference counts (3 per image)" grep -q '"test_references": 3' run-cap-l2r/results.json
expect "captions: CIDEr-D is scored" grep -q '"test_cider": {"CIDEr"' run-cap-l2r/results.json
expect "im2latex: one reference, no CIDEr" sh -c '! grep -q test_cider run-tex-l2r/results.json'
expect "im2latex: the vocabulary is the LaTeX tokens" grep -qx '\\frac' run-tex-l2r/vocab.tgt.txt
expect "the validation BLEU is logged" \
  awk -F'\t' 'NR > 1 && $6 != "" { found = 1 } END { exit !found }' run-cap-l2r/train.log

# intrus decode on the test list gives the run's output.
"$intrus" decode -q -o run-cap-l2r -i cap/test.img -O dec-last.txt cap-l2r.cfg 2> dec.err
expect "intrus decode -i LIST.img writes one line per image" \
  test "$(wc -l < dec-last.txt)" -eq "$(wc -l < cap/test.img)"
expect "... the same output as the run (its checkpoint)" cmp -s dec-last.txt run-cap-l2r/test.hyp

# The decoding order of an image input: the image above the steps.
"$intrus" decode -q -o run-cap-ins -i cap/test.img -O trc.txt --trace trc --trace-pictures 2 cap-ins.cfg 2> trc.err
expect "decode --trace on images draws image-N.png and .svg" test -s trc/image-1.png -a -s trc/image-2.svg
expect "... and no third picture" test ! -e trc/image-3.png
expect "... with order.tsv" test -s trc/order.tsv
expect "... the SVG holds the image" grep -q "<image" trc/image-1.svg

# A resumed run trains the same batches: 10 + 10 steps end as 20 in one go.
"$intrus" train -q -n 10 -o resumed cap-l2r.cfg > /dev/null 2>&1
"$intrus" train -q -o resumed cap-l2r.cfg > /dev/null 2>&1
cut -f1,2 run-cap-l2r/train.log > losses-one.txt
cut -f1,2 resumed/train.log > losses-resumed.txt
expect "a resumed run logs the uninterrupted run's losses" cmp -s losses-one.txt losses-resumed.txt

# A results table of image cells: BLEU and CIDEr-D columns, every reference counted,
# INTRUS tested against the left-to-right row.
cat > table.cfg <<'EOF'
title = "captions";
baseline = "l2r";
columns = ( { name = "bleu"; title = "BLEU"; },
            { name = "cider"; title = "CIDEr-D"; metric = "cider"; } );
rows = (
  { name = "l2r"; experiments = { bleu = "cap-l2r.cfg"; cider = "cap-l2r.cfg"; }; },
  { name = "intrus"; experiments = { bleu = "cap-ins.cfg"; cider = "cap-ins.cfg"; }; }
);
EOF
"$intrus" table -q -r tabruns -O tabout table.cfg > table.out 2>&1
rc=$?
expect "intrus table scores image cells (exit $rc)" test $rc -eq 0
expect "... a CIDEr-D column" grep -q '"metric": "cider"' tabout/table.json
[ $rc -eq 0 ] || head -20 table.out
# A tiny model's captions score about 0: give the l2r cell an output that scores well
# (the first references), score the table again (nothing trains), and compare with
# intrus eval on the same files.
cp cap/test.en.0 tabruns/cap-l2r/test.hyp
"$intrus" table -q -r tabruns -O tabout table.cfg > table2.out 2>&1
cider_cell=$(awk -F, '$1 == "l2r" && $2 == "cider" { print $4 }' tabout/table.csv)
bleu_cell=$(awk -F, '$1 == "l2r" && $2 == "bleu" { print $4 }' tabout/table.csv)
want_cider=$("$intrus" eval cider -r cap/test.en.0 -r cap/test.en.1 -r cap/test.en.2 -i cap/test.en.0 --json |
  sed -n 's/^ *"score": \([0-9.e+-]*\).*/\1/p' | head -1)
want_bleu=$("$intrus" eval bleu -r cap/test.en.0 -r cap/test.en.1 -r cap/test.en.2 -i cap/test.en.0 --json |
  sed -n 's/^ *"score": \([0-9.e+-]*\).*/\1/p' | head -1)
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(a != "" && b != "" && a > 1 && d < 1e-2 && d > -1e-2) }'; }
expect "... its CIDEr-D cell is intrus eval cider with every reference ($cider_cell, $want_cider)" \
  close "$cider_cell" "$want_cider"
expect "... its BLEU cell is 100 for outputs equal to a reference, as intrus eval bleu says ($bleu_cell, $want_bleu)" \
  close "$bleu_cell" "$want_bleu"
# An image that lacks a reference is scored against the ones it has (an empty line is
# not a reference of length 0): its BLEU equals the run's own with the same files.
run_bleu=$(sed -n 's/.*"test": {"BLEU": \([0-9.e+-]*\).*/\1/p' tabruns/cap-ins/results.json)
ins_cell=$(awk -F, '$1 == "intrus" && $2 == "bleu" { print $4 }' tabout/table.csv)
expect "... the table's BLEU of a cell is its run's ($ins_cell, $run_bleu)" \
  awk -v a="$ins_cell" -v b="$run_bleu" 'BEGIN { d = a - b; exit !(a != "" && b != "" && d < 1e-3 && d > -1e-3) }'

# ---- bad input ----------------------------------------------------------------------
refused() { # DESCRIPTION WANT-EXIT WANT-TEXT CONFIG [DECODE-LIST]
  if [ $# -ge 5 ]; then
    "$intrus" decode -q -o run-cap-l2r -i "$5" -O bad.txt "$4" > bad.out 2>&1
  else
    "$intrus" train -q -o bad-run "$4" > bad.out 2>&1
  fi
  rc=$?
  if [ $rc -eq "$2" ] && grep -q -- "$3" bad.out && [ ! -e bad.txt ]; then
    ok "$1"
  else
    bad "$1 (exit $rc, want $2 and '$3'): $(head -3 bad.out)"
  fi
  rm -rf bad-run bad.txt
}
mkdir -p badlists
printf 'images/nope.png\n' > badlists/missing.img
refused "decode: a missing image names the list's line" 5 "missing.img:1: .*nope.png" cap-l2r.cfg badlists/missing.img
head -c 100 "cap/$(head -1 cap/test.img)" > badlists/trunc.png
printf 'trunc.png\n' > badlists/trunc.img
refused "decode: a truncated PNG names the list's line and the file" 5 "trunc.img:1: .*trunc.png" cap-l2r.cfg badlists/trunc.img
echo "not a png" > badlists/text.png
printf 'text.png\n' > badlists/text.img
refused "decode: a text file named .png is refused" 5 "text.img:1: .*text.png" cap-l2r.cfg badlists/text.img

cp -r cap capbad
head -n 5 cap/valid.en.1 > capbad/valid.en.1
sed 's|dir = "cap"|dir = "capbad"|' cap-l2r.cfg > capbad.cfg
refused "references and list of different lengths name both files" 5 "valid.en.1 has 5 lines but .*valid.img has 12" capbad.cfg
sed 's|channels = 3; targets|channels = 2; targets|' cap-l2r.cfg > badch.cfg
refused "channels = 2 is refused with file:line" 3 "badch.cfg:3" badch.cfg
sed 's|batch_pixels = 65536;|batch_pixels = 65536; colour = true;|' cap-l2r.cfg > badkey.cfg
refused "an unknown data setting is refused with file:line" 3 "badkey.cfg:.*colour" badkey.cfg

finish test_images

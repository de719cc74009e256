# Shared by the shell tests (sourced): where the build and the sources are, the intrus
# binary, and the check counters. ok/bad count a check; expect DESCRIPTION COMMAND...
# passes when the command succeeds; finish NAME prints the summary and gives the status.
build=${INTRUS_TEST_BUILDDIR:-.}
src=${INTRUS_TEST_SRCDIR:-.}
intrus="$build/intrus"
fails=0
checks=0
ok() { checks=$((checks + 1)); echo "ok: $1"; }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $1" >&2; }
expect() {
  d=$1
  shift
  if "$@"; then ok "$d"; else bad "$d"; fi
}
finish() {
  echo "$1: $checks checks, $fails failed${2:+ ($2)}"
  [ $fails -eq 0 ]
}

# en_de_slice DIR TRAIN VALID TEST: the first lines of the bundled en-de corpus's splits
# (train.en/de, valid.*, test.*) as plain files in DIR, a small corpus for a test.
en_de_slice() {
  local dir=$1 s split n l
  mkdir -p "$dir"
  for s in train:$2 valid:$3 test:$4; do
    split=${s%:*}
    n=${s#*:}
    for l in en de; do
      gzip -dc "$src/data/mt/en-de/$split.$l.gz" | head -n "$n" > "$dir/$split.$l"
    done
  done
}

# tiny_experiments PREFIX: in the current directory, a slice of the bundled corpus (data/,
# 200 training pairs, 20 validation, 20 test) and three experiments that train in
# seconds: l2r.cfg and r2l.cfg (Transformers writing left to right and right to left, 20
# steps) and ins.cfg (an insertion model, 20 steps of uniform-order pretraining), named
# PREFIX-l2r, PREFIX-r2l and PREFIX-ins, their data and search in common.cfg.
tiny_experiments() {
  local o
  en_de_slice data 200 20 20
  cat > common.cfg <<'EOF2'
seed = 3;
data: { kind = "parallel"; dir = "data"; src = "en"; tgt = "de"; bpe_merges = 100; max_len = 40; };
search: { beam = 2; batch_tokens = 500; max_len_a = 1.0; max_len_b = 5; };
EOF2
  for o in l2r r2l; do
    cat > $o.cfg <<EOF2
@include "common.cfg"
name = "$1-$o";
model: { d_model = 32; order = "$o";
  encoder: { plugin = "transformer"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
  decoder: { plugin = "autoregressive"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
};
train: { steps = 20; batch_tokens = 400; lr = 3e-3; warmup = 5; log_every = 10;
  valid_every = 20; valid_bleu = 0; };
EOF2
  done
  cat > ins.cfg <<EOF2
@include "common.cfg"
name = "$1-ins";
model: { d_model = 32; canonical = true;
  encoder: { plugin = "transformer"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
  decoder: { plugin = "insertion"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };
};
train: { batch_tokens = 400; lr = 3e-3; warmup = 5; log_every = 10; valid_every = 20;
  valid_bleu = 0;
  phases = ( { name = "pretrain"; order = { plugin = "uniform"; }; loss = "uniform";
               states = "one"; steps = 20; } ); };
EOF2
}

# need_python NAME [FOR]: sets py to $PYTHON or python3; when there is none, a failed
# check naming what needs it, NAME's summary, and exit 1.
need_python() {
  py=${PYTHON:-python3}
  command -v "$py" >/dev/null 2>&1 && return 0
  bad "python3 is needed${2:+ for $2} and was not found (Debian: python3; or set PYTHON)"
  finish "$1" "no python3"
  exit 1
}

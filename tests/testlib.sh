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

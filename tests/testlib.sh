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

#!/bin/sh
# make fuzz: builds every libFuzzer harness of tests/fuzz with clang, AddressSanitizer
# and UBSan (the core instrumented for coverage) and runs each for SECONDS (default 60),
# starting from its seed corpus in tests/fuzz/corpus/NAME. Prints executions, exec/s
# and coverage per harness, and exits non-zero on any crash, leak, timeout or
# sanitizer report, naming the input that caused it (kept in BUILD/fuzz/artifacts/).
#   tests/fuzz/run.sh [SECONDS [NAME...]]     (FUZZ_CC: the compiler, default clang)
#   tests/fuzz/run.sh --sources               the sources it builds, relative to the tree
#                                             (tests/test_layers.sh checks them)
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
# The core, instrumented for coverage; the CLI and the tools are not under test here.
sources() {
  (cd "$src" && ls core/*/*.c | grep -v -e '^core/cli/' -e '^core/tools/')
  echo plugins/eval-bleu/eval_bleu.c plugins/eval-bleu/bleu_text.c plugins/common/unicode_case.c
}
if [ "${1:-}" = --sources ]; then sources; exit 0; fi
secs=${1:-60}
[ $# -gt 0 ] && shift
build=${FUZZ_BUILDDIR:-$(pwd)}/fuzz
cc=${FUZZ_CC:-clang}
names=${*:-config checkpoint vocab bpe lines bleu png}

probe=$(mktemp -d)
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
  > "$probe/p.c"
if ! "$cc" -fsanitize=fuzzer,address "$probe/p.c" -o "$probe/p" 2> "$probe/err"; then
  echo "make fuzz needs clang with libFuzzer: apt-get install clang libclang-rt-14-dev" >&2
  sed 's/^/  /' "$probe/err" >&2
  rm -rf "$probe"
  exit 2
fi
rm -rf "$probe"

pkgs="openblas libconfig libutf8proc zlib cairo libpng"
cflags="-g -O1 -std=c11 -D_GNU_SOURCE -DINTRUS_NO_ISA_DISPATCH -I$src/include -I$src/core $(pkg-config --cflags $pkgs)"
cflags="$cflags -DINTRUS_PKGLIBDIR=\"/nonexistent\" -DINTRUS_BUILDDIR=\"$build\" -DINTRUS_SRCDIR=\"$src\""
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
libs="$(pkg-config --libs $pkgs) -lltdl -lmecab -lm"

mkdir -p "$build/obj" "$build/bin" "$build/artifacts"
# The harnesses write each input to a scratch file (and fuzz_config an effective config,
# with fsync): on tmpfs that costs nothing.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
objs=""
for f in $(sources); do
  o="$build/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')"
  if [ ! -f "$o" ] || [ "$src/$f" -nt "$o" ]; then
    $cc $cflags $san -fsanitize=fuzzer-no-link -c "$src/$f" -o "$o" || exit 1
  fi
  objs="$objs $o"
done

failed=0
for n in $names; do
  h="$src/tests/fuzz/fuzz_$n.c"
  [ -f "$h" ] || { echo "no harness $h" >&2; exit 2; }
  $cc $cflags $san -fsanitize=fuzzer "$h" $objs $libs -o "$build/bin/fuzz_$n" || exit 1
  corpus="$build/corpus/$n"
  mkdir -p "$corpus" "$build/artifacts/$n"
  [ -d "$src/tests/fuzz/corpus/$n" ] && cp -n "$src/tests/fuzz/corpus/$n"/* "$corpus"/ 2>/dev/null
  log="$build/fuzz_$n.log"
  # Inputs up to 64 KB (checkpoint seeds are a few KB); 10 s per input is a hang.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions="$src/tests/fuzz/lsan.supp" \
  UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/bin/fuzz_$n" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$build/artifacts/$n/" "$corpus" > "$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  if [ $rc -ne 0 ]; then
    failed=$((failed + 1))
    echo "FAIL: fuzz_$n (exit $rc): $(ls "$build/artifacts/$n" | head -3 | tr '\n' ' ')"
    grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -5 | sed 's/^/  /'
  else
    echo "PASS: fuzz_$n: ${runs:-?} executions in ${secs} s (${speed:-?} exec/s), coverage ${cov:-?}"
  fi
done
[ $failed -eq 0 ]

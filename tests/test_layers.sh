#!/bin/sh
# The core's layers depend one way only (docs/architecture.md draws the graph): every
# symbol an object file of core/<layer>/ takes from another object of the core, and
# every header it includes (internal ones as "<layer>/x.h", public ones as
# "intrus/x.h", each of which belongs to one layer: public_layer below), must come
# from a layer listed for it below. A new dependency that breaks the direction fails here, naming the file
# and the symbol; if it is meant, change the table here and the picture in the doc.
# Also: the sources the fuzzers build without config.h include it only under HAVE_CONFIG_H.
set -u
build=${INTRUS_TEST_BUILDDIR:-.}
src=${INTRUS_TEST_SRCDIR:-.}

allowed() {
  case $1 in
    base)      echo "" ;;
    insertion) echo "base" ;;
    image)     echo "base" ;;
    tensor)    echo "base insertion" ;;
    plugin)    echo "base insertion tensor" ;;
    model)     echo "base tensor insertion plugin image" ;;
    text)      echo "base tensor plugin image" ;;
    search)    echo "base tensor insertion plugin model text image" ;;
    eval)      echo "base plugin" ;;
    viz)       echo "base" ;;
    dist)      echo "base" ;;
    train)     echo "base tensor insertion plugin model text search eval image dist" ;;
    cli)       echo "base tensor insertion plugin model text search eval viz train image dist" ;;
    tools)     echo "base" ;;
    *)         echo "?" ;;
  esac
}

public_layer() { # include/intrus/<name>.h -> the layer that implements it
  case $1 in
    status|rng|fileio|config) echo base ;;
    insertion) echo insertion ;;
    image) echo image ;;
    tensor|blas|params|optim|nn) echo tensor ;;
    plugin) echo plugin ;;
    model|checkpoint) echo model ;;
    text|corpus) echo text ;;
    search) echo search ;;
    eval) echo eval ;;
    trace) echo viz ;;
    train) echo train ;;
    *) echo "?" ;;
  esac
}

objs=$(find "$build/core" -path '*/.libs/*.o' 2>/dev/null | sort)
if [ -z "$objs" ]; then
  # intrus (the CLI) and intrus-mocorpus are not libtool objects: plain .o files.
  echo "test_layers: no objects under $build/core/*/.libs: build first" >&2; exit 1
fi
objs="$objs $(find "$build/core/cli" "$build/core/tools" -name '*.o' ! -path '*/.libs/*' | sort)"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
layer_of() { # path of an object or source -> its layer (the folder under core/)
  echo "$1" | sed -e 's|.*/core/||' -e 's|/.*||'
}
for o in $objs; do
  l=$(layer_of "$o")
  nm -g --defined-only "$o" | awk -v l="$l" -v f="$(basename "$o")" 'NF == 3 {print $3, l, f}'
done | sort -u > "$tmp/defs"
fail=0
for o in $objs; do
  l=$(layer_of "$o"); ok=$(allowed "$l")
  if [ "$ok" = "?" ]; then echo "FAIL: core/$l/ is not a known layer (add it to tests/test_layers.sh)"; fail=1; continue; fi
  nm -u "$o" | awk '{print $NF}' | sort -u > "$tmp/undef"
  join "$tmp/undef" "$tmp/defs" | while read -r sym dl df; do
    [ "$dl" = "$l" ] && continue
    case " $ok " in *" $dl "*) ;; *)
      echo "FAIL: core/$l/$(basename "$o" .o) uses $sym from core/$dl/$df: $l may use only: ${ok:-nothing}" ;;
    esac
  done
done > "$tmp/sym"
for f in $(find "$src/core" -name '*.[ch]' | sort); do
  l=$(layer_of "$f"); ok=$(allowed "$l")
  grep -o '#include "[a-z]*/[a-z_]*\.h"' "$f" | sed 's|#include "||; s|\.h"||' | sort -u |
  while IFS=/ read -r dl name; do
    if [ "$dl" = intrus ]; then dl=$(public_layer "$name"); fi
    [ "$dl" = "$l" ] && continue
    case " $ok " in *" $dl "*) ;; *)
      echo "FAIL: ${f#"$src"/} includes a header of core/$dl/ ($name.h): $l may use only: ${ok:-nothing}" ;;
    esac
  done
done > "$tmp/inc"
# The fuzzers (tests/fuzz/run.sh) compile their sources without ./configure's config.h:
# there it may be included only under #ifdef HAVE_CONFIG_H.
# An empty list would pass unchecked, so it fails too.
fuzz_sources=$(sh "$src/tests/fuzz/run.sh" --sources)
{
  if [ -z "$fuzz_sources" ]; then echo "FAIL: tests/fuzz/run.sh --sources listed no sources"; fi
  for f in $fuzz_sources; do
    awk -v f="$f" '/^#include "config.h"/ && prev != "#ifdef HAVE_CONFIG_H" {
        print "FAIL: " f ":" NR ": includes config.h outside #ifdef HAVE_CONFIG_H (make fuzz builds it without)" }
      { prev = $0 }' "$src/$f"
  done
} > "$tmp/cfg"
cat "$tmp/sym" "$tmp/inc" "$tmp/cfg"
n=$(cat "$tmp/sym" "$tmp/inc" "$tmp/cfg" | wc -l)
nobj=$(echo $objs | wc -w)
if [ "$n" -gt 0 ]; then echo "test_layers: $n violation(s)"; exit 1; fi
echo "test_layers: $nobj objects, every cross-layer use goes downwards"

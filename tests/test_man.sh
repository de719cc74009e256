#!/bin/sh
# intrus(1) (scripts/gen-man.sh, built with intrus): the page the build made is what the
# current binary's help gives; it has a section for every command `intrus --help` lists
# and every subcommand; every option of every help is in the rendered page; groff reads
# it without a warning; and `man -l` renders it.
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
page="$build/intrus.1"

if [ ! -f "$page" ]; then
  bad "$page was not built (make builds it with intrus)"
  finish test_man.sh
  exit 1
fi
sh "$src/scripts/gen-man.sh" "$intrus" > "$tmp/intrus.1"
expect "intrus.1 is the current binary's help (make rebuilds it when intrus changes)" \
  cmp -s "$page" "$tmp/intrus.1"

commands=$("$intrus" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit }
  on && /^  [a-z]/ { print $1 }')
missing=""
for c in $commands; do
  grep -qx ".SS \"intrus $c\"" "$page" || missing="$missing $c"
done
for sub in "eval bleu" "eval cider" "eval bootstrap" "analyze order" "analyze time" \
  "analyze states"; do
  grep -qx ".SS \"intrus $sub\"" "$page" || missing="$missing '$sub'"
done
expect "a section for each of the $(echo $commands | wc -w) commands and 6 subcommands${missing:+ (missing:$missing)}" \
  test -z "$missing"

if ! command -v groff > /dev/null 2>&1; then
  echo "groff is not installed: the rendering checks are skipped"
  finish test_man.sh
  exit
fi
groff -man -ww -z "$page" > "$tmp/warn" 2>&1
expect "groff -man -ww reads it without a warning" test ! -s "$tmp/warn"
[ -s "$tmp/warn" ] && cat "$tmp/warn" >&2

# Every option named in a help is in the rendered page: nothing was lost converting.
groff -man -Tutf8 -P-cbou "$page" 2> /dev/null | sed 's/‐/-/g' > "$tmp/page.txt"
lost=""
for c in "" $commands "eval bleu" "eval cider" "eval bootstrap" "analyze order" \
  "analyze time" "analyze states"; do
  # shellcheck disable=SC2086
  for opt in $("$intrus" $c --help 2>&1 | grep -oE -- '(^|[ ,[])--?[a-zA-Z][a-zA-Z0-9-]*' |
    sed 's/^[ ,[]//' | sort -u); do
    grep -qF -- "$opt" "$tmp/page.txt" || lost="$lost ${c:-intrus}:$opt"
  done
done
expect "every option of every --help is in the rendered page${lost:+ (lost:$lost)}" test -z "$lost"

if command -v man > /dev/null 2>&1; then
  expect "man -l renders it (NAME, COMMANDS, intrus config)" sh -c \
    "MANWIDTH=80 man -l '$page' 2>/dev/null | grep -q '^COMMANDS' &&
     MANWIDTH=80 man -l '$page' 2>/dev/null | grep -q 'intrus config'"
fi
finish test_man.sh

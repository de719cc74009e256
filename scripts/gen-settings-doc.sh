#!/bin/sh
# The settings reference, docs/settings.md: `intrus config --reference` over every shipped
# experiment and results table file (experiments/**/*.cfg but the @include'd pieces:
# files under a common/ directory and files named common.cfg or base.cfg) and the files of
# tests/data/settings/ (settings no shipped experiment sets).
#
#   scripts/gen-settings-doc.sh [INTRUS]           rewrite docs/settings.md
#   scripts/gen-settings-doc.sh --check [INTRUS]   check that every setting read is
#       described (intrus config --check) and that docs/settings.md is what this script
#       would write; exit 1 naming what to do otherwise (tests/test_settings.sh)
#   scripts/gen-settings-doc.sh --files            the files it reads, one per line
#
# INTRUS: the intrus binary (default ./intrus). The sources are the tree this script is
# in (a build directory elsewhere: give its intrus). Meanings are edited in
# core/cli/settings_doc.c, never in docs/settings.md.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
mode=write
case ${1:-} in
  --check) mode=check; shift ;;
  --files) mode=files; shift ;;
esac
intrus=${1:-./intrus}

files() {
  (cd "$src" &&
    find experiments -name '*.cfg' ! -path '*/common/*' ! -name common.cfg ! -name base.cfg &&
    find tests/data/settings -name '*.cfg') | LC_ALL=C sort
}
if [ $mode = files ]; then files; exit 0; fi

list=$(files)
# Paths relative to the sources: the reference and the messages name them so.
cd "$src" || exit 1
case $intrus in /*) ;; *) intrus="$OLDPWD/$intrus" ;; esac
[ -x "$intrus" ] || { echo "gen-settings-doc.sh: no intrus binary at $intrus" >&2; exit 2; }

if [ $mode = write ]; then
  tmp="docs/settings.md.tmp.$$"
  # shellcheck disable=SC2086
  "$intrus" config --reference $list > "$tmp" || { rm -f "$tmp"; exit 1; }
  mv "$tmp" docs/settings.md
  echo "wrote docs/settings.md ($(echo "$list" | wc -l) files)"
  exit 0
fi

status=0
# shellcheck disable=SC2086
"$intrus" config --check $list || status=1
tmp=$(mktemp) || exit 1
# shellcheck disable=SC2086
if ! "$intrus" config --reference $list > "$tmp" 2>/dev/null; then
  echo "gen-settings-doc.sh: intrus config --reference failed" >&2
  status=1
elif ! cmp -s "$tmp" docs/settings.md; then
  echo "docs/settings.md is out of date (or edited by hand): run scripts/gen-settings-doc.sh" >&2
  diff -u docs/settings.md - < "$tmp" | head -20 >&2
  status=1
fi
rm -f "$tmp"
exit $status

#!/bin/sh
# Scores a results table from the cells committed under docs/ (each a folder holding the
# results.json, test.hyp, effective.cfg, train.log and tokenizer.txt its run left), not
# from runs/: the table of a fresh clone, or after a new cell, on a machine that kept no
# run directories.
# The folders are copied into a temporary runs directory under their experiments' names
# (effective.cfg's `name`), then `intrus table --no-train` scores the finished cells
# against the corpora (which must be built: docs/guide.md, "Data") and writes the table.
#
#   scripts/score-committed.sh [-d DOCS_DIR]... TABLE.cfg OUT_DIR
#
# DOCS_DIR: a folder of cell folders, DOCS_DIR/*/ (repeatable; default: every
# docs/small-*). A cell folder whose experiment also has a run under runs/ is taken from
# docs/ all the same: what is committed is what is scored. Run from the top of a built
# tree (./intrus; $INTRUS names another binary), e.g.
#   scripts/score-committed.sh experiments/small/table1.cfg docs/small-table1
set -u
dirs=
while getopts d: opt; do
  case $opt in
    d) dirs="$dirs $OPTARG" ;;
    *) echo "usage: $0 [-d DOCS_DIR]... TABLE.cfg OUT_DIR" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -ne 2 ]; then
  echo "usage: $0 [-d DOCS_DIR]... TABLE.cfg OUT_DIR" >&2
  exit 2
fi
table=$1 out=$2
intrus=${INTRUS:-./intrus}
[ -x "$intrus" ] || { echo "$0: no $intrus here: run from the top of a built tree" >&2; exit 2; }
[ -f "$table" ] || { echo "$0: $table: no such table file" >&2; exit 2; }
[ -n "$dirs" ] || dirs=$(ls -d docs/small-* 2>/dev/null | grep -v "^docs/small-table")
top=$(pwd)
abs() { case $1 in /*) echo "$1" ;; *) echo "$top/$1" ;; esac; }
# The table names each cell's run as -r gives it: runs/NAME, as a table of runs/ would.
root=$(mktemp -d) || exit 1
trap 'rm -rf "$root"' 0
runs=$root/runs
mkdir "$runs" || exit 1
n=0
for d in $dirs; do
  for cell in "$d"/*/; do
    [ -f "$cell/results.json" ] && [ -f "$cell/effective.cfg" ] || continue
    name=$(sed -n 's/^name = "\(.*\)";$/\1/p' "$cell/effective.cfg" | head -1)
    [ -n "$name" ] || { echo "$0: $cell/effective.cfg: no name line" >&2; exit 1; }
    if [ -e "$runs/$name" ]; then
      echo "$0: $cell and another folder are both runs of $name" >&2
      exit 1
    fi
    mkdir "$runs/$name" || exit 1
    # The cell's files; a folder inside it (a teacher's distilled corpus) is not the cell's.
    for f in "$cell"*; do
      [ -f "$f" ] || continue
      cp "$f" "$runs/$name/" || exit 1
    done
    n=$((n + 1))
  done
done
echo "$0: $n committed cells" >&2
intrus=$(abs "$intrus")
cd "$root" && "$intrus" table --no-train -q -r runs -O "$(abs "$out")" "$(abs "$table")"

#!/bin/bash
# Builds an image-to-LaTeX data set from Debian packages: formulas harvested from TeX
# documentation, LyX manuals and scientific Python docstrings, rendered with latex and
# dvipng, tokenised im2latex-style, split deterministically, with a MANIFEST. --help.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/build-im2latex-data.sh [options]

Downloads the source packages (apt-get download, no install), extracts their .tex,
.tex.gz, .lyx and .py files, harvests the formulas ($..$, $$..$$, \(..\), \[..\] and
equation/align/gather/multline/eqnarray bodies; comments and verbatim removed; LyX
Formula insets; `:math:` and `.. math::` in Python strings), tokenises them
(scripts/data/latex_tokenize.py), keeps one of each token sequence, and renders the
token string with latex + the preview package (one page per formula, ~200 formulas a
run, a failing run split in halves to isolate bad formulas) and one dvipng -D DPI -T
tight per batch, as 8-bit grayscale PNG. Formulas that do not compile, render empty, or
are wider than --max-width or higher than --max-height pixels are dropped.

Writes OUT/images/<sha256(tokens)[0:16]>.png, and for S in train valid test: S.img
(image paths relative to OUT) and S.tex (space-separated LaTeX tokens), aligned by
line; about 5% valid and 5% test by a hash of the token string; MANIFEST and README.md.
Re-running with the same --work reuses downloads, extraction and rendered batches and
writes byte-identical files (MANIFEST's date line aside).

Options:
  --out DIR          output folder (default: data/im2latex-full)
  --work DIR         scratch folder, reused (default: ${TMPDIR:-/tmp}/intrus-im2latex-work)
  --packages "P..."  source packages, in order of precedence (default: the TeX doc
                     packages, lyx-common, python3-scipy, python3-sympy, python3-statsmodels)
  --small N          only the first N renderable formulas in hash order (renders only
                     the batches needed); the bundled data/im2latex uses --small 1200
  --jobs N           parallel latex runs (default: 2)
  --batch N          formulas per latex run (default: 200)
  --dpi N            dvipng resolution (default: 100)
  --max-width PX     drop wider images (default: 800)
  --max-height PX    drop higher images (default: 200)
  --offline          use only the .debs already in the work folder
  -h, --help         show this help

Needs: apt-get (unless --offline), dpkg-deb, tar, sha256sum, latex and dvipng
(Debian: texlive-latex-base texlive-latex-recommended texlive-fonts-recommended dvipng
preview-latex-style), and python3 with PIL (python3-pil).
EOF
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=data/im2latex-full
work="${TMPDIR:-/tmp}/intrus-im2latex-work"
packages="texlive-latex-base-doc texlive-latex-recommended-doc texlive-science-doc texlive-publishers-doc texlive-latex-extra-doc lyx-common python3-scipy python3-sympy python3-statsmodels"
small=0
jobs=2
batch=200
dpi=100
max_w=800
max_h=200
offline=0

me=build-im2latex-data
. "$here/data/build-common.sh"
cmdline="scripts/build-im2latex-data.sh $*"

while [ "$#" -gt 0 ]; do
  case "$1" in
    --out) need_arg "$@"; out=$2; shift 2 ;;
    --work) need_arg "$@"; work=$2; shift 2 ;;
    --packages) need_arg "$@"; packages=$2; shift 2 ;;
    --small) need_arg "$@"; small=$2; shift 2 ;;
    --jobs) need_arg "$@"; jobs=$2; shift 2 ;;
    --batch) need_arg "$@"; batch=$2; shift 2 ;;
    --dpi) need_arg "$@"; dpi=$2; shift 2 ;;
    --max-width) need_arg "$@"; max_w=$2; shift 2 ;;
    --max-height) need_arg "$@"; max_h=$2; shift 2 ;;
    --offline) offline=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
for v in "$small" "$jobs" "$batch" "$dpi" "$max_w" "$max_h"; do
  [[ $v =~ ^[0-9]+$ ]] || die "'$v' is not a count (see --help)"
done
[ "$jobs" -ge 1 ] && [ "$batch" -ge 1 ] || die "--jobs and --batch want at least 1"
read -ra pkg_list <<<"$packages"
[ "${#pkg_list[@]}" -gt 0 ] || die "--packages is empty"

for cmd in dpkg-deb tar sha256sum gzip timeout; do need_cmd "$cmd"; done
need_cmd latex "texlive-latex-base texlive-latex-recommended texlive-fonts-recommended"
need_cmd dvipng dvipng
need_tex preview.sty preview-latex-style
need_tex amssymb.sty "texlive-base texlive-latex-recommended"
[ "$offline" = 1 ] || need_cmd apt-get   # (or --offline)
need_python PIL.Image "python3 python3-pil"
check_needs

export LC_ALL=C
mkdir -p "$work/debs" "$work/tree" "$out"
work=$(cd "$work" && pwd)

# 1. Download.
declare -A deb_of
download_debs "${pkg_list[@]}"

# 2. Extract the source files (stamp per package), then the formulas per package.
i=0
for p in "${pkg_list[@]}"; do
  i=$((i + 1))
  dir="$work/tree/$p"
  stamp="v1 $(basename "${deb_of[$p]}")"
  if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then continue; fi
  say "[$i/${#pkg_list[@]}] extracting $p"
  rm -rf "$dir" "$work/formulas.$p.tsv"
  mkdir -p "$dir"
  dpkg-deb --fsys-tarfile "${deb_of[$p]}" >"$work/pkg.tar"
  tar -tf "$work/pkg.tar" |
    grep -E "\.(tex|tex\.gz|lyx|py)$|^(\./)?usr/share/doc/$p/copyright$" >"$work/members" || true
  if [ -s "$work/members" ]; then tar -xf "$work/pkg.tar" -C "$dir" -T "$work/members"; fi
  rm -f "$work/pkg.tar"
  echo "$stamp" >"$dir/.stamp"
done
i=0
for p in "${pkg_list[@]}"; do
  i=$((i + 1))
  f="$work/formulas.$p.tsv"
  stamp="v1 $(basename "${deb_of[$p]}") $(sha256sum "$here/data/latex_extract.py" | cut -c1-16)"
  if [ -f "$f" ] && [ -f "$f.stamp" ] && [ "$(cat "$f.stamp")" = "$stamp" ]; then continue; fi
  say "[$i/${#pkg_list[@]}] harvesting formulas of $p"
  (cd "$work/tree/$p" && find . -type f \( -name '*.tex' -o -name '*.tex.gz' -o -name '*.lyx' -o -name '*.py' \) |
    sed 's|^\./||' | sort) >"$work/files.$p"
  (cd "$work/tree/$p" && "$py" "$here/data/latex_extract.py" --files-from "$work/files.$p") |
    awk -v p="$p" -F'\t' 'BEGIN { OFS = "\t" } { print p, $0 }' >"$f.tmp"
  mv "$f.tmp" "$f"
  echo "$stamp" >"$f.stamp"
  say "  $(wc -l <"$f") formulas in $(wc -l <"$work/files.$p") files"
done
: >"$work/formulas.tsv.tmp"
for p in "${pkg_list[@]}"; do cat "$work/formulas.$p.tsv" >>"$work/formulas.tsv.tmp"; done
mv "$work/formulas.tsv.tmp" "$work/formulas.tsv"

# 3. Filter, tokenise, de-duplicate, render, write the folder.
args=(--formulas "$work/formulas.tsv" --work "$work/render" --out "$out" --jobs "$jobs"
  --batch "$batch" --dpi "$dpi" --max-width "$max_w" --max-height "$max_h")
[ "$small" = 0 ] || args+=(--small "$small")
"$py" "$here/data/im2latex_build.py" "${args[@]}"
stats="$work/render/stats.tsv"
stat() { awk -F'\t' -v k="$1" '$1 == k { print $2; exit }' "$stats"; }
statrow() { awk -F'\t' -v k="$1" '$1 == k { print $2 " / " $3 " / " $4 " / " $5; exit }' "$stats"; }

# 4. MANIFEST and README.
licence_of() {
  local c="$work/tree/$1/usr/share/doc/$1/copyright" lic=""
  if [ -f "$c" ]; then
    if head -n 1 "$c" | grep -q '^Format:'; then
      lic=$(awk 'BEGIN { RS = "" } /(^|\n)Files:[ \t]*\*[ \t]*(\n|$)/ { print; exit }' "$c" |
        sed -n 's/^License:[[:space:]]*//p' | head -n 1)
      n=$(grep -c '^License:' "$c" || true)
      [ "$n" -le 1 ] || lic="$lic (Files: *; $n License fields in all, per-file terms differ)"
    else
      lic=$(grep -o '/usr/share/common-licenses/[A-Za-z0-9.+-]*[A-Za-z0-9+]' "$c" |
        sed 's|.*/||' | sort -u | paste -sd',' | sed 's/,/, /g')
    fi
  fi
  echo "${lic:-see its copyright file}"
}
os=$(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"')
{
  echo "# Image-to-LaTeX pairs: formulas from Debian packages' documentation, rendered."
  echo "# Built by scripts/build-im2latex-data.sh on $(date -u +%Y-%m-%d) from ${os:-an unknown system}"
  echo "# command: $cmdline"
  echo "# latex: $(latex --version | head -n 1); dvipng: $(dvipng --version | head -n 1)"
  echo "# Versions drift (the archive keeps only the newest): these are the ones used."
  echo "#"
  echo "# package version deb-sha256[0:16] formulas-found pairs-credited (first package wins)"
  for p in "${pkg_list[@]}"; do
    ver=$(dpkg-deb -f "${deb_of[$p]}" Version)
    sha=$(sha256sum <"${deb_of[$p]}" | cut -c1-16)
    counts=$(awk -F'\t' -v p="$p" '$1 == "package" && $2 == p { print $3 " " $4 }' "$stats")
    echo "package $p $ver $sha ${counts:-0 0}"
  done
  echo "#"
  grep -v '^package' "$stats" | sed 's/^/# stat /; s/\t/ /g'
  echo "#"
  echo "# file lines sha256[0:16]"
  for s in train valid test; do
    for e in img tex; do
      echo "file $s.$e $(wc -l <"$out/$s.$e") $(sha256sum <"$out/$s.$e" | cut -c1-16)"
    done
  done
  echo "file images/*.png $(find "$out/images" -name '*.png' | wc -l) $(cd "$out" && find images -name '*.png' | sort | xargs cat | sha256sum | cut -c1-16)"
} >"$out/MANIFEST.tmp"
mv "$out/MANIFEST.tmp" "$out/MANIFEST"

rebuild="scripts/build-im2latex-data.sh"
[ "$small" = 0 ] || rebuild+=" --small $small"
[ "$dpi" = 100 ] || rebuild+=" --dpi $dpi"
[ "$max_w" = 800 ] || rebuild+=" --max-width $max_w"
[ "$max_h" = 200 ] || rebuild+=" --max-height $max_h"
[ "$batch" = 200 ] || rebuild+=" --batch $batch"
rebuild+=" --out $out"
du_k=$(du -sk "$out/images" | cut -f1)
{
  echo "# Image-to-LaTeX data: real formulas, rendered"
  echo
  echo "Formulas written by people in the documentation of TeX packages, the LyX manuals"
  echo "and the docstrings of scientific Python libraries (Debian packages, listed below),"
  echo "each rendered to a grayscale PNG and paired with its LaTeX tokens. Built by"
  echo
  echo "    $rebuild"
  echo
  echo "(MANIFEST records the package versions and sha256, what each contributed, and"
  echo "the line counts and sha256 of the files; versions drift, so a later rebuild may"
  echo "differ.)"
  echo
  echo "## Files"
  echo
  echo "- \`images/\`: one PNG per formula, 8-bit grayscale, black on white, rendered by"
  echo "  latex (article class, 10pt, amsmath, amssymb, bm, \`\\displaystyle\`) and"
  echo "  \`dvipng -D $dpi -T tight\`; named by the first 16 hex digits of the sha256 of"
  echo "  the token string."
  echo "- \`{train,valid,test}.img\`: image paths relative to this folder, one per line;"
  echo "  \`{train,valid,test}.tex\`: the formula on the same line of the .img file, as"
  echo "  LaTeX tokens separated by single spaces (what was rendered: the tokens joined"
  echo "  by spaces are valid LaTeX)."
  echo
  echo "Pairs: train $(stat split-train), valid $(stat split-valid), test $(stat split-test)"
  echo "($(stat pairs) in all, from $(stat candidates) unique candidate formulas among $(stat raw) found)."
  if [ "$small" != 0 ]; then
    echo "This is the \`--small $small\` subset: the first $small formulas, in name (hash) order,"
    echo "that render ($(stat rendered) candidates were tried for it)."
  fi
  echo "Image width min / median / p95 / max: $(statrow width) px; height: $(statrow height) px."
  echo "Tokens per formula min / median / p95 / max: $(statrow tokens). The images take"
  echo "$du_k KiB on disk (du -sk images)."
  echo
  echo "Split: by the sha256 of the token string (hex digits 8..15 mod 100: 0-4 valid,"
  echo "5-9 test), so a formula is in one split only; files are in name (hash) order."
  echo
  echo "## Processing"
  echo
  echo "Extraction (scripts/data/latex_extract.py): comments and verbatim-like blocks"
  echo "removed; \`\$..\$\`, \`\$\$..\$\$\`, \`\\(..\\)\`, \`\\[..\\]\`, and the bodies of equation, align,"
  echo "gather, multline, eqnarray, flalign, displaymath, math (align/eqnarray bodies with"
  echo "\`\\\\\\\\\` or \`&\` wrapped in aligned/array); \`\\label\`, \`\\tag\`, \`\\nonumber\` dropped. Formulas"
  echo "with macro definitions, file or output commands, \`#\`, \`@\`, \`\$\` or unbalanced braces,"
  echo "\`\\left\`/\`\\right\` or environments are dropped, as are those over 400 tokens."
  echo "Tokenisation (scripts/data/latex_tokenize.py): im2latex-style (control words and"
  echo "symbols one token each, every other character one token, text commands as their"
  echo "math twins with \`~\` for spaces, script arguments in braces). Duplicates (the same"
  echo "token string) kept once, the first package in the list credited. Rendering drops"
  echo "formulas that do not compile ($(stat render-fail) here), render empty ($(stat render-empty)), or are"
  echo "wider than $max_w or higher than $max_h px ($(stat render-big))."
  echo
  echo "## Packages and licences"
  echo
  echo "The formulas are short excerpts of these packages' documentation, distributed under"
  echo "their free licences as declared in each package's copyright file (Debian's summary"
  echo "of the \"Files: *\" paragraph; the TeX documentation packages collect many works"
  echo "under many licences, mostly LPPL, GPL and public domain; see the copyright files):"
  echo
  for p in "${pkg_list[@]}"; do
    echo "- $p $(dpkg-deb -f "${deb_of[$p]}" Version): $(licence_of "$p")"
  done
} >"$out/README.md.tmp"
mv "$out/README.md.tmp" "$out/README.md"

say "done: $out: train $(stat split-train), valid $(stat split-valid), test $(stat split-test)"

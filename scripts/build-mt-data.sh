#!/bin/bash
# Rebuilds the machine-translation data from Debian packages: downloads the packages
# that ship gettext catalogs, extracts their .mo files (no install), turns them into
# English/translation pairs with intrus-mocorpus, and writes deterministic splits with a
# MANIFEST. See --help.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/build-mt-data.sh [options]

Downloads the Debian packages named in a package list (apt-get download, no install),
extracts usr/share/locale/<lang>/LC_MESSAGES/*.mo and the like, extracts sentence pairs
with intrus-mocorpus and writes, per language L, the folder OUT/en-L with
train.en train.L valid.en valid.L test.en test.L (one segment per line, aligned by line).
Valid and test (about 2,000 pairs each) are chosen by a hash of the normalised English
source, so no English source of valid or test is in train. Reverse directions (L-en)
read the same files the other way. OUT/MANIFEST records each package's version, sha256
and contribution, and the line counts and sha256 of the files; OUT/README.md describes
the set. Packages that cannot be downloaded are recorded in the MANIFEST and skipped.

Options:
  --langs "L..."          target languages (default: "de ru ja ar")
  --out DIR               output folder (default: data/mt-full)
  --packages-from FILE    package list, one per line, '#' comments, {lang} expands to
                          each language (default: scripts/mt-packages.txt)
  --work DIR              scratch folder for .debs and extracted catalogs; .debs found
                          there are reused (default: ${TMPDIR:-/tmp}/intrus-mt-work)
  --tool PATH             intrus-mocorpus to run (default: $INTRUS_MOCORPUS, then PATH,
                          then ./intrus-mocorpus)
  --valid N, --test N     pairs in valid and test (default: 2000 each)
  --gzip                  store the split files gzip-compressed (.gz, reproducible -n)
  --flat                  one language only: write the files into OUT itself, not OUT/en-L
  --offline               use only the .debs already in the work folder
  -h, --help              show this help
EOF
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
langs="de ru ja ar"
out=data/mt-full
packages_from="$here/mt-packages.txt"
work="${TMPDIR:-/tmp}/intrus-mt-work"
tool="${INTRUS_MOCORPUS:-}"
nvalid=2000
ntest=2000
gzip_out=0
flat=0
offline=0

die() { echo "build-mt-data: $*" >&2; exit 1; }
say() { echo "build-mt-data: $*" >&2; }
need_arg() { [ "$#" -ge 2 ] || die "$1 needs a value (see --help)"; }

while [ "$#" -gt 0 ]; do
  case "$1" in
    --langs) need_arg "$@"; langs=$2; shift 2 ;;
    --out) need_arg "$@"; out=$2; shift 2 ;;
    --packages-from) need_arg "$@"; packages_from=$2; shift 2 ;;
    --work) need_arg "$@"; work=$2; shift 2 ;;
    --tool) need_arg "$@"; tool=$2; shift 2 ;;
    --valid) need_arg "$@"; nvalid=$2; shift 2 ;;
    --test) need_arg "$@"; ntest=$2; shift 2 ;;
    --gzip) gzip_out=1; shift ;;
    --flat) flat=1; shift ;;
    --offline) offline=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

read -ra lang_list <<<"$langs"
[ "${#lang_list[@]}" -gt 0 ] || die "--langs is empty"
for l in "${lang_list[@]}"; do
  [[ $l =~ ^[a-z]{2,3}(_[A-Z]{2})?$ ]] || die "'$l' is not a language code such as de or pt_BR"
done
langs="${lang_list[*]}"
[ "$flat" = 0 ] || [ "${#lang_list[@]}" = 1 ] || die "--flat wants exactly one language"
[[ $nvalid =~ ^[0-9]+$ && $ntest =~ ^[0-9]+$ ]] || die "--valid and --test want counts"
[ -r "$packages_from" ] || die "$packages_from: cannot read the package list"
if [ -z "$tool" ]; then
  tool=$(command -v intrus-mocorpus || true)
  [ -n "$tool" ] || tool=./intrus-mocorpus
fi
[ -x "$tool" ] || die "intrus-mocorpus not found (build it, then pass --tool PATH)"
for cmd in dpkg-deb tar sha256sum gzip; do
  command -v "$cmd" >/dev/null || die "$cmd is missing"
done
[ "$offline" = 1 ] || command -v apt-get >/dev/null || die "apt-get is missing (try --offline)"

# The package list in order ({lang} expanded): this order is the file order in which
# the first translation of a duplicated English source wins.
packages=()
while IFS= read -r line || [ -n "$line" ]; do
  line=${line%%#*}
  for word in $line; do
    if [[ $word == *"{lang}"* ]]; then
      for l in "${lang_list[@]}"; do packages+=("${word//\{lang\}/$l}"); done
    else
      packages+=("$word")
    fi
  done
done <"$packages_from"
[ "${#packages[@]}" -gt 0 ] || die "$packages_from names no packages"

mkdir -p "$work/debs" "$work/tree" "$out"
work=$(cd "$work" && pwd)

# The newest cached .deb of a package (none: empty). Names are PKG_VERSION_ARCH.deb.
cached_deb() {
  find "$work/debs" -maxdepth 1 -name "$1_*.deb" | sort -V | tail -n 1
}

# 1. Download (per package, so that one missing package does not stop the others).
declare -A deb_of missing_why
i=0
for p in "${packages[@]}"; do
  i=$((i + 1))
  deb=$(cached_deb "$p")
  if [ -z "$deb" ] && [ "$offline" = 0 ]; then
    say "[$i/${#packages[@]}] downloading $p"
    if ! (cd "$work/debs" && apt-get download -q=2 "$p" >"$work/apt.log" 2>&1); then
      missing_why[$p]="download failed: $(grep -m1 '^E:' "$work/apt.log" | cut -c1-100 || true)"
    fi
    deb=$(cached_deb "$p")
  fi
  if [ -n "$deb" ]; then
    deb_of[$p]=$deb
  else
    [ -n "${missing_why[$p]:-}" ] || missing_why[$p]="not in $work/debs (offline)"
    say "[$i/${#packages[@]}] skipping $p: ${missing_why[$p]}"
  fi
done

# 2. Extract the languages' catalogs. The .deb is unpacked to a plain tar once, listed,
# and only the wanted members are extracted; a stamp skips packages already done.
lang_re=$(printf '%s\n' "${lang_list[@]}" | paste -sd'|')
i=0
for p in "${packages[@]}"; do
  i=$((i + 1))
  [ -n "${deb_of[$p]:-}" ] || continue
  dir="$work/tree/$p"
  stamp="v2 $(basename "${deb_of[$p]}") $langs" # v2: with the copyright file
  if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then continue; fi
  say "[$i/${#packages[@]}] extracting $p"
  rm -rf "$dir"
  mkdir -p "$dir"
  dpkg-deb --fsys-tarfile "${deb_of[$p]}" >"$work/pkg.tar"
  # The catalogs, and the copyright file for the licence summary in the README.
  tar -tf "$work/pkg.tar" |
    grep -E "(^|/)($lang_re)/LC_MESSAGES/[^/]+\.mo$|^(\./)?usr/share/doc/$p/copyright$" \
      >"$work/members" || true
  if [ -s "$work/members" ]; then
    tar -xf "$work/pkg.tar" -C "$dir" -T "$work/members"
  fi
  rm -f "$work/pkg.tar"
  echo "$stamp" >"$dir/.stamp"
done

# 3. Pairs and splits per language.
direction_dirs=()
for l in "${lang_list[@]}"; do
  list="$work/files.$l"
  : >"$list"
  for p in "${packages[@]}"; do
    [ -d "$work/tree/$p" ] || continue
    find "$work/tree/$p" -type f -path "*/$l/LC_MESSAGES/*.mo" | LC_ALL=C sort >>"$list"
  done
  say "en-$l: $(wc -l <"$list") catalogs"
  [ -s "$list" ] || { say "en-$l: no catalogs, skipped"; continue; }
  if [ "$flat" = 1 ]; then
    d="$out"
    rm -f "$d"/{train,valid,test}.{en,"$l"}{,.gz}
  else
    d="$out/en-$l"
    rm -rf "$d"
  fi
  "$tool" --lang "$l" --keep-going --valid "$nvalid" --test "$ntest" \
    --stats "$work/stats.$l" --split "$d" --files-from "$list"
  if [ "$gzip_out" = 1 ]; then
    for f in "$d"/*; do gzip -n -9 -f "$f"; done
  fi
  if [ "$flat" = 1 ]; then direction_dirs+=("."); else direction_dirs+=("en-$l"); fi
done

# 4. MANIFEST: packages (with the pairs each contributed per language), then files.
# Pairs per package come from the per-catalog stats: the path names the package.
declare -A pairs_of
for l in "${lang_list[@]}"; do
  [ -f "$work/stats.$l" ] || continue
  while IFS=$'\t' read -r pkg n; do
    pairs_of["$pkg/$l"]=$n
  done < <(awk -F'\t' -v root="$work/tree/" '
      { p = substr($1, length(root) + 1); sub(/\/.*/, "", p); kept[p] += $3 }
      END { for (p in kept) print p "\t" kept[p] }' "$work/stats.$l")
done

text_sha() { # sha256 of the text, decompressed for .gz
  case "$1" in
    *.gz) gzip -dc "$1" | sha256sum | cut -c1-16 ;;
    *) sha256sum <"$1" | cut -c1-16 ;;
  esac
}
text_lines() {
  case "$1" in
    *.gz) gzip -dc "$1" | wc -l ;;
    *) wc -l <"$1" ;;
  esac
}

manifest="$out/MANIFEST"
{
  echo "# Machine-translation pairs from gettext catalogs of Debian packages."
  os=$(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"')
  echo "# Built by scripts/build-mt-data.sh on $(date -u +%Y-%m-%d) from ${os:-an unknown system}"
  echo "# with --langs \"$langs\" --valid $nvalid --test $ntest, package list $(basename "$packages_from")."
  echo "# Versions drift (the archive keeps only the newest): these are the ones used."
  echo "#"
  echo "# package version deb-sha256[0:16] pairs-per-language (pairs first contributed by it)"
  for p in "${packages[@]}"; do
    if [ -n "${deb_of[$p]:-}" ]; then
      ver=$(dpkg-deb -f "${deb_of[$p]}" Version)
      sha=$(sha256sum <"${deb_of[$p]}" | cut -c1-16)
      counts=""
      for l in "${lang_list[@]}"; do counts+=" $l=${pairs_of["$p/$l"]:-0}"; done
      echo "package $p $ver $sha$counts"
    else
      echo "missing $p (${missing_why[$p]})"
    fi
  done
  echo "#"
  echo "# file lines text-sha256[0:16] (of the decompressed text for .gz)"
  for dd in "${direction_dirs[@]}"; do
    for f in "$out/$dd"/{train,valid,test}.*; do
      [ -f "$f" ] || continue
      name=$(basename "$f")
      [ "$dd" = . ] || name="$dd/$name"
      echo "file $name $(text_lines "$f") $(text_sha "$f")"
    done
  done
} >"$manifest"

# 5. README of the output folder, with the licences the packages declare.
licences_of() {
  # Machine-readable copyright files: the licence of the "Files: *" paragraph; others:
  # the /usr/share/common-licenses files they point to.
  local c="$work/tree/$1/usr/share/doc/$1/copyright" lic=""
  if [ -f "$c" ]; then
    if head -n 1 "$c" | grep -q '^Format:'; then
      lic=$(awk 'BEGIN { RS = "" } /(^|\n)Files:[ \t]*\*[ \t]*(\n|$)/ { print; exit }' "$c" |
        sed -n 's/^License:[[:space:]]*//p' | head -n 1)
    else
      lic=$(grep -o '/usr/share/common-licenses/[A-Za-z0-9.+-]*[A-Za-z0-9+]' "$c" |
        sed 's|.*/||' | sort -u | paste -sd',' | sed 's/,/, /g')
    fi
  fi
  echo "${lic:-see its copyright file}"
}
shown_list=$packages_from
[[ $packages_from != "$here/"* ]] || shown_list="scripts/${packages_from#"$here/"}"
rebuild="scripts/build-mt-data.sh --langs \"$langs\" --packages-from $shown_list"
[ "$nvalid" = 2000 ] || rebuild+=" --valid $nvalid"
[ "$ntest" = 2000 ] || rebuild+=" --test $ntest"
[ "$gzip_out" = 0 ] || rebuild+=" --gzip"
[ "$flat" = 0 ] || rebuild+=" --flat"
rebuild+=" --out $out"
{
  echo "# Machine-translation data from software localisation"
  echo
  echo "English/translation pairs from the gettext catalogs (.mo) of Debian packages:"
  echo "messages, menus and help texts of free software, and the story dialogue of the"
  echo "game Wesnoth where its packages are listed. Built by"
  echo
  echo "    $rebuild"
  echo
  echo "(\`--work DIR\` keeps the downloads for a rebuild; package versions drift, so a"
  echo "rebuild later may differ: MANIFEST records the versions and sha256 used here, the"
  echo "pairs each package contributed, and the line counts and sha256 of the files)."
  echo
  echo "## Files and directions"
  echo
  for dd in "${direction_dirs[@]}"; do
    for l in "${lang_list[@]}"; do
      { [ "$dd" = . ] || [ "$dd" = "en-$l" ]; } || continue
      where="\`$dd/\`"
      [ "$dd" != . ] || where="This folder"
      ext=""
      [ "$gzip_out" = 0 ] || ext=".gz"
      echo "- $where: \`{train,valid,test}.en$ext\` and \`{train,valid,test}.$l$ext\`, one"
      echo "  segment per line, aligned by line, UTF-8, no tabs. Used for en-$l and, read the"
      echo "  other way (source \`.$l\`, target \`.en\`), for $l-en: the reverse direction is"
      echo "  the same files."
    done
  done
  echo
  echo "Valid and test (about $nvalid and $ntest pairs) are the pairs whose normalised English"
  echo "source (case-folded letters and digits) hashes lowest, whole groups at a time, so no"
  echo "English source of valid or test appears in train, even in another case or with"
  echo "other punctuation."
  if [[ " $langs " == *" ja "* ]]; then
    echo
    echo "Japanese is not segmented here: training needs word segmentation (MeCab), and"
    echo "scoring uses character-level BLEU."
  fi
  echo
  echo "## Cleaning (intrus-mocorpus)"
  echo
  echo "Contexts dropped, first plural form kept; UI accelerators (\`_X\`, \`&X\` with \`&&\`"
  echo "for \`&\`, \`~X\`, \`(_X)\`) and, in Wesnoth's catalogs, \`context^\` prefixes stripped;"
  echo "whitespace collapsed; empty, identical, format-only (\`%s\`, \`{0}\`, tags...) and"
  echo "translator-credit entries dropped, as are catalogs not in UTF-8; for ru, ja and ar"
  echo "the translation must contain that script; 3 to 80 English words; deduplicated by"
  echo "English source, the first package in the list winning."
  echo
  echo "## Packages and licences"
  echo
  echo "The catalogs are parts of these packages and are distributed under their free"
  echo "licences (as declared in each package's copyright file; mostly GPL, LGPL and MPL):"
  echo
  for p in "${packages[@]}"; do
    if [ -n "${deb_of[$p]:-}" ]; then
      echo "- $p $(dpkg-deb -f "${deb_of[$p]}" Version): $(licences_of "$p")"
    else
      echo "- $p: not available when this set was built (${missing_why[$p]})"
    fi
  done
} >"$out/README.md"

say "done: $out"
for dd in "${direction_dirs[@]}"; do
  counts=""
  for part in train valid test; do
    counts+=" $part $(text_lines "$(find "$out/$dd" -maxdepth 1 -name "$part.en*" | head -n 1)")"
  done
  say "  $dd:$counts"
done

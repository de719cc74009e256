#!/bin/bash
# Builds an image-captioning data set from Debian packages: Noto colour emoji with their
# CLDR names and Tux Paint stamps with their written descriptions, deterministic splits,
# and a MANIFEST. See --help.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/build-caption-data.sh [options]

Downloads fonts-noto-color-emoji, unicode-cldr-core and tuxpaint-stamps-default
(apt-get download, no install) and extracts them. Images and captions:

- emoji: the colour PNG bitmaps of NotoColorEmoji.ttf's CBDT table, mapped to their
  code-point sequences by the cmap and the GSUB ligatures; captioned by the CLDR name
  (the type="tts" annotation of annotations/ and annotationsDerived/). English
  references: the distinct names of en, en_001, en_GB, en_AU, en_CA, en_IN. CLDR's
  keyword lists ("face | grin | ...") are not captions and are not used. Emoji without
  an English name are left out.
- Tux Paint stamps: each stamp's .png (else its .svg, drawn with rsvg-convert) with the
  English sentence of its .txt description; en_GB/en_AU/en_CA variants that differ are
  further references.

de, ru, ja and ar names/translations go to S.de S.ru S.ja S.ar (empty where missing).
Images are RGB PNG (alpha composited over white), fitted into --max-side pixels, named
by sha256 of their identity ("emoji:1F44B-1F3FC", "tuxpaint:animals/amphibians/frog").

Writes OUT/images/, train.img + train.en (one line per image and English caption, the
image repeated), {valid,test}.img with {valid,test}.en.0, .en.1, ... (each image once,
its K-th reference or an empty line), train/valid/test .de .ru .ja .ar (first name,
aligned with the .img file), sources.tsv (image, split, source), MANIFEST, README.md.
Splits (about 5% valid, 5% test) by a hash of the image's group: the emoji without
skin-tone modifiers, the stamp path without a trailing -N, so variants share a split.
Re-running with the same --work reuses downloads and converted images.

Options:
  --out DIR        output folder (default: data/caption-full)
  --work DIR       scratch folder, reused (default: ${TMPDIR:-/tmp}/intrus-caption-work)
  --max-side PX    fit images into PX x PX, never enlarging (default: 256; --small: 64)
  --small N        only the first N images in name (hash) order; the bundled
                   data/caption uses --small 1000 (64 px)
  --offline        use only the .debs already in the work folder
  -h, --help       show this help

Needs: apt-get (unless --offline), dpkg-deb, tar, sha256sum, rsvg-convert
(librsvg2-bin), and python3 with fontTools and PIL (python3-fonttools python3-pil).
EOF
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=data/caption-full
work="${TMPDIR:-/tmp}/intrus-caption-work"
max_side=""
small=0
offline=0
packages=(fonts-noto-color-emoji unicode-cldr-core tuxpaint-stamps-default)

me=build-caption-data
. "$here/data/build-common.sh"
cmdline="scripts/build-caption-data.sh $*"

while [ "$#" -gt 0 ]; do
  case "$1" in
    --out) need_arg "$@"; out=$2; shift 2 ;;
    --work) need_arg "$@"; work=$2; shift 2 ;;
    --max-side) need_arg "$@"; max_side=$2; shift 2 ;;
    --small) need_arg "$@"; small=$2; shift 2 ;;
    --offline) offline=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
if [ -z "$max_side" ]; then
  if [ "$small" = 0 ]; then max_side=256; else max_side=64; fi
fi
for v in "$small" "$max_side"; do
  [[ $v =~ ^[0-9]+$ ]] || die "'$v' is not a count (see --help)"
done
[ "$max_side" -ge 8 ] || die "--max-side wants at least 8"

for cmd in dpkg-deb tar sha256sum; do need_cmd "$cmd"; done
need_cmd rsvg-convert librsvg2-bin
[ "$offline" = 1 ] || need_cmd apt-get   # (or --offline)
need_python "PIL.Image, fontTools.ttLib" "python3 python3-pil python3-fonttools"
check_needs

export LC_ALL=C
mkdir -p "$work/debs" "$work/tree" "$out"
work=$(cd "$work" && pwd)
# 1. Download, then extract (stamp per package: the .deb's name).
declare -A deb_of
download_debs "${packages[@]}"
i=0
for p in "${packages[@]}"; do
  i=$((i + 1))
  deb=${deb_of[$p]}
  dir="$work/tree/$p"
  stamp="v1 $(basename "$deb")"
  if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then continue; fi
  say "[$i/${#packages[@]}] extracting $p"
  rm -rf "$dir"
  mkdir -p "$dir"
  case "$p" in
    fonts-noto-color-emoji) pat='NotoColorEmoji\.ttf$' ;;
    unicode-cldr-core) pat='/annotations(Derived)?/(en|en_[0-9A-Z]+|de|ru|ja|ar)\.xml$' ;;
    tuxpaint-stamps-default) pat='/stamps/.*\.(txt|png|svg)$' ;;
  esac
  dpkg-deb --fsys-tarfile "$deb" >"$work/pkg.tar"
  tar -tf "$work/pkg.tar" | grep -E "$pat|^(\./)?usr/share/doc/$p/copyright$" >"$work/members" || true
  [ -s "$work/members" ] && tar -xf "$work/pkg.tar" -C "$dir" -T "$work/members"
  rm -f "$work/pkg.tar"
  echo "$stamp" >"$dir/.stamp"
done
font=$(find "$work/tree/fonts-noto-color-emoji" -name NotoColorEmoji.ttf | sort | head -n 1)
[ -n "$font" ] || die "fonts-noto-color-emoji: NotoColorEmoji.ttf not found in the package"
cldr=$(find "$work/tree/unicode-cldr-core" -type d -name annotations | sort | head -n 1)
[ -n "$cldr" ] || die "unicode-cldr-core: no annotations/ folder in the package"
cldr=$(dirname "$cldr")
stamps=$(find "$work/tree/tuxpaint-stamps-default" -type d -name stamps | sort | head -n 1)
[ -n "$stamps" ] || die "tuxpaint-stamps-default: no stamps/ folder in the package"

# 2. Images and captions.
args=(--font "$font" --cldr "$cldr" --stamps "$stamps" --work "$work/build" --out "$out"
  --max-side "$max_side" --rsvg "$(command -v rsvg-convert)")
[ "$small" = 0 ] || args+=(--small "$small")
"$py" "$here/data/caption_build.py" "${args[@]}"
stats="$work/build/stats.tsv"
stat() { awk -F'\t' -v k="$1" '$1 == k { print $2; exit }' "$stats"; }
stat3() { awk -F'\t' -v k="$1" '$1 == k { print $3; exit }' "$stats"; }
statrow() { awk -F'\t' -v k="$1" '$1 == k { print $2 " / " $3 " / " $4 " / " $5; exit }' "$stats"; }

# 3. MANIFEST and README.
os=$(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"')
files=$(cd "$out" && ls | grep -E '^(train|valid|test)\.' | sort)
{
  echo "# Image-captioning pairs: Noto colour emoji with CLDR names, Tux Paint stamps with"
  echo "# their descriptions. Built by scripts/build-caption-data.sh on $(date -u +%Y-%m-%d)"
  echo "# from ${os:-an unknown system}"
  echo "# command: $cmdline"
  echo "# Versions drift (the archive keeps only the newest): these are the ones used."
  echo "#"
  echo "# package version deb-sha256[0:16] contribution"
  for p in "${packages[@]}"; do
    ver=$(dpkg-deb -f "${deb_of[$p]}" Version)
    sha=$(sha256sum <"${deb_of[$p]}" | cut -c1-16)
    case "$p" in
      fonts-noto-color-emoji) what="images=$(stat images-emoji) (of $(stat emoji-bitmaps) bitmaps)" ;;
      unicode-cldr-core) what="captions for $(stat images-emoji) images" ;;
      tuxpaint-stamps-default) what="images=$(stat images-stamps) (of $(stat stamps) stamps, $(stat stamps-svg) from SVG)" ;;
    esac
    echo "package $p $ver $sha $what"
  done
  echo "#"
  sed 's/^/# stat /; s/\t/ /g' "$stats"
  echo "#"
  echo "# file lines sha256[0:16]"
  for f in $files sources.tsv; do
    echo "file $f $(wc -l <"$out/$f") $(sha256sum <"$out/$f" | cut -c1-16)"
  done
  echo "file images/*.png $(find "$out/images" -name '*.png' | wc -l) $(cd "$out" && find images -name '*.png' | sort | xargs cat | sha256sum | cut -c1-16)"
} >"$out/MANIFEST.tmp"
mv "$out/MANIFEST.tmp" "$out/MANIFEST"

licence_of() {
  local c="$work/tree/$1/usr/share/doc/$1/copyright"
  [ -f "$c" ] || { echo "see its copyright file"; return; }
  # every "Files:" paragraph but debian/*: "files: licence", joined by "; "
  awk 'BEGIN { RS = "" } /(^|\n)Files:/ {
      f = ""; l = ""; n = split($0, ln, "\n")
      for (i = 1; i <= n; i++) {
        if (ln[i] ~ /^Files:/) { f = ln[i]; sub(/^Files:[ \t]*/, "", f) }
        if (ln[i] ~ /^License:/ && l == "") { l = ln[i]; sub(/^License:[ \t]*/, "", l) }
      }
      if (f !~ /^debian\//) print f ": " l
    }' "$c" | paste -sd';' | sed 's/;/; /g'
}
rebuild="scripts/build-caption-data.sh"
[ "$small" = 0 ] || rebuild+=" --small $small"
{ [ "$small" = 0 ] && [ "$max_side" = 256 ]; } || { [ "$small" != 0 ] && [ "$max_side" = 64 ]; } ||
  rebuild+=" --max-side $max_side"
rebuild+=" --out $out"
du_k=$(du -sk "$out/images" | cut -f1)
refs=$(stat refs)
{
  echo "# Image-captioning data: emoji and Tux Paint stamps"
  echo
  echo "Small real images with human-written descriptions, from Debian packages: the"
  echo "colour emoji of Noto Color Emoji named by Unicode CLDR (\"waving hand: medium-light"
  echo "skin tone\"), and the stamps of the children's drawing program Tux Paint with the"
  echo "sentence that describes each (\"A frog.\"). Built by"
  echo
  echo "    $rebuild"
  echo
  echo "(MANIFEST records the package versions and sha256 and the line counts and sha256"
  echo "of the files; versions drift, so a later rebuild may differ.)"
  echo
  echo "## Files"
  echo
  echo "- \`images/\`: RGB PNG, alpha composited over white, fitted into ${max_side}x${max_side}"
  echo "  (never enlarged); named by the first 16 hex digits of the sha256 of the image's"
  echo "  identity (\`emoji:1F44B-1F3FC\`, \`tuxpaint:animals/amphibians/frog\`)."
  echo "- \`train.img\` + \`train.en\`: one line per (image, English caption) pair, the"
  echo "  image repeated when it has several captions."
  echo "- \`valid.img\`, \`test.img\`: each image once; \`valid.en.0\` ... \`valid.en.$((refs - 1))\`"
  echo "  (and test): the image's K-th English reference on its line, an empty line where it"
  echo "  has fewer (the shape the CIDEr evaluator's \`--ref\` files take)."
  echo "- \`S.de\`, \`S.ru\`, \`S.ja\`, \`S.ar\`: the image's name or description in that"
  echo "  language, aligned with \`S.img\` (empty where the source has none)."
  echo "- \`sources.tsv\`: image name, split, and where it comes from."
  echo
  echo "Images: $(stat images) ($(stat images-emoji) emoji, $(stat images-stamps) stamps)$([ "$small" = 0 ] || echo ", the \`--small $small\` subset: the first $small in name (hash) order")."
  echo "Splits (images / English captions): train $(stat split-train) / $(stat3 split-train),"
  echo "valid $(stat split-valid) / $(stat3 split-valid), test $(stat split-test) / $(stat3 split-test)."
  echo "Images with a name in de $(stat lang-de), ru $(stat lang-ru), ja $(stat lang-ja), ar $(stat lang-ar)."
  echo "English caption words min / median / p95 / max: $(statrow words) (mean $(stat words-mean))."
  echo "Image width min / median / p95 / max: $(statrow width) px; height: $(statrow height) px."
  echo "The images take $du_k KiB on disk (du -sk images)."
  echo
  echo "Split: by a hash of the image's group (sha256, first 8 hex digits mod 100: 0-4"
  echo "valid, 5-9 test): an emoji without its skin-tone modifiers, a stamp's path without a"
  echo "trailing \`-N\`, so skin-tone variants and numbered variants of one stamp are in one"
  echo "split, and all captions of an image with it."
  echo
  echo "## Captions"
  echo
  echo "Emoji: CLDR's \`type=\"tts\"\` name only (annotations/ and annotationsDerived/ of en,"
  echo "with the distinct names of en_001, en_GB, en_AU, en_CA, en_IN as further references,"
  echo "e.g. British spellings); CLDR's keyword lists are search terms, not descriptions, and"
  echo "are not used. Stamps: the English sentence of the stamp's .txt, with its en_GB,"
  echo "en_AU, en_CA lines as further references where they differ. Text is as the sources"
  echo "write it (CLDR names in lower case, stamp sentences capitalised with a full stop),"
  echo "whitespace collapsed."
  echo
  echo "## Packages and licences"
  echo
  echo "As declared in each package's copyright file (files: licence, Debian's packaging aside):"
  echo
  for p in "${packages[@]}"; do
    echo "- $p $(dpkg-deb -f "${deb_of[$p]}" Version): $(licence_of "$p")"
  done
} >"$out/README.md.tmp"
mv "$out/README.md.tmp" "$out/README.md"

say "done: $out: $(stat images) images; train $(stat split-train), valid $(stat split-valid), test $(stat split-test)"

#!/bin/sh
# Installs the Debian 12 packages intrus needs to build, test and run (as root); clang
# and libclang-rt-14-dev are for `make fuzz` (libFuzzer) only, openmpi-bin and
# libopenmpi-dev for the data-parallel build (./configure --with-mpi) only, python3 for
# the image data scripts' test (scripts/data/*.py use its standard library), apertium,
# apertium-eng-spa and apertium-bel-rus for `intrus analyze order --pos` (English and
# Russian parts of speech) only. With --data, also what the full image corpora's builders
# need (scripts/build-im2latex-data.sh: LaTeX, dvipng, the preview package, PIL;
# scripts/build-caption-data.sh: rsvg-convert, PIL, fontTools); scripts/build-mt-data.sh
# needs nothing more.
#   sudo scripts/install-deps.sh [--data]
set -eu
PACKAGES="build-essential autoconf automake libtool libltdl-dev pkg-config \
libopenblas-dev libconfig-dev libutf8proc-dev zlib1g-dev libmecab-dev mecab-ipadic-utf8 \
libcairo2-dev libpng-dev valgrind clang libclang-rt-14-dev openmpi-bin libopenmpi-dev python3 \
apertium apertium-eng-spa apertium-bel-rus"
DATA_PACKAGES="texlive-latex-base texlive-latex-recommended texlive-fonts-recommended \
dvipng preview-latex-style librsvg2-bin python3-pil python3-fonttools"
case "${1:-}" in
  "") ;;
  --data) PACKAGES="$PACKAGES $DATA_PACKAGES" ;;
  -h|--help) sed -n '2,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "install-deps.sh: unknown argument '$1' (--data or --help)" >&2; exit 1 ;;
esac
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: run as root (sudo $0)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $PACKAGES

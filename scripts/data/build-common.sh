# Shared by scripts/build-im2latex-data.sh and scripts/build-caption-data.sh (sourced,
# bash). The sourcing script sets `me` (its name in messages) first, and `work` and
# `offline` before calling download_debs.

die() { echo "$me: $*" >&2; exit 1; }
say() { echo "$me: $*" >&2; }
need_arg() { [ "$#" -ge 2 ] || die "$1 needs a value (see --help)"; }

# find_python MODULES HINT: sets py to the first of $PYTHON, python3 on PATH and Debian's
# /usr/bin/python3 that can import MODULES (a comma-separated import list); dies naming
# the Debian packages in HINT otherwise.
find_python() {
  py=""
  local c
  for c in "${PYTHON:-}" python3 /usr/bin/python3; do
    [ -n "$c" ] || continue
    if command -v "$c" >/dev/null && "$c" -c "import $1" 2>/dev/null; then
      py=$c
      return 0
    fi
  done
  die "no python3 that imports $1 found (Debian: $2; or set PYTHON)"
}

# The newest cached .deb of package $1 in $work/debs (empty when there is none).
cached_deb() { find "$work/debs" -maxdepth 1 -name "$1_*.deb" | sort -V | tail -n 1; }

# download_debs PACKAGE...: fills the associative array deb_of (declare -A deb_of
# first) with each package's .deb, downloading (apt-get download) what $work/debs does
# not hold yet; with offline=1 only the cache counts.
download_debs() {
  local i=0 p deb
  for p in "$@"; do
    i=$((i + 1))
    deb=$(cached_deb "$p")
    if [ -z "$deb" ] && [ "$offline" = 0 ]; then
      say "[$i/$#] downloading $p"
      (cd "$work/debs" && apt-get download -q=2 "$p" >"$work/apt.log" 2>&1) ||
        die "cannot download package $p: $(grep -m1 '^E:' "$work/apt.log" || true)"
      deb=$(cached_deb "$p")
    fi
    [ -n "$deb" ] || die "package $p: no .deb in $work/debs (offline)"
    deb_of[$p]=$deb
  done
}

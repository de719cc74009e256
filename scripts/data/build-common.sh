# Shared by scripts/build-im2latex-data.sh and scripts/build-caption-data.sh (sourced,
# bash). The sourcing script sets `me` (its name in messages) first, and `work` and
# `offline` before calling download_debs.

die() { echo "$me: $*" >&2; exit 1; }
say() { echo "$me: $*" >&2; }
need_arg() { [ "$#" -ge 2 ] || die "$1 needs a value (see --help)"; }

# Requirements are gathered, then reported together, so that a fresh machine learns
# every package it lacks from one run rather than one per run:
#   need_cmd CMD PKGS; need_tex FILE PKGS; need_python MODULES PKGS; check_needs
# (PKGS: the Debian packages that provide it; MODULES: a comma-separated import list).
missing=()
missing_pkgs=()
need_missing() { missing+=("$1"); [ -z "$2" ] || missing_pkgs+=($2); }
need_cmd() { command -v "$1" >/dev/null 2>&1 || need_missing "the command $1" "${2:-}"; }
need_tex() { kpsewhich "$1" >/dev/null 2>&1 || need_missing "the LaTeX file $1" "$2"; }
# need_python MODULES PKGS: sets py to the first of $PYTHON, python3 on PATH and Debian's
# /usr/bin/python3 that can import MODULES (a Python other than Debian's may not see
# Debian's python3-* modules).
need_python() {
  py=""
  local c
  for c in "${PYTHON:-}" python3 /usr/bin/python3; do
    [ -n "$c" ] || continue
    if command -v "$c" >/dev/null && "$c" -c "import $1" 2>/dev/null; then
      py=$c
      return 0
    fi
  done
  need_missing "a python3 that imports $1 (or set PYTHON)" "$2"
}
# check_needs: dies listing everything missing and one command that installs it.
check_needs() {
  [ "${#missing[@]}" -gt 0 ] || return 0
  local m pkgs
  for m in "${missing[@]}"; do echo "$me: missing: $m" >&2; done
  if [ "${#missing_pkgs[@]}" -gt 0 ]; then
    pkgs=$(printf '%s\n' "${missing_pkgs[@]}" | sort -u | tr '\n' ' ')
    echo "$me: install with: apt-get install ${pkgs% } (or: scripts/install-deps.sh --data)" >&2
  fi
  exit 1
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

#!/bin/sh
# The image data scripts' parts that need no Debian source package: the LaTeX tokenizer
# on hand-worked formulas, the formula extractor on small .tex/.lyx/.py fixtures
# (tests/data/latex/), and the bundled sets data/im2latex and data/caption (every .img
# line names a PNG that exists, line counts of a split's files agree, no image in two
# splits). Needs python3 (standard library only; Debian: python3).
set -u
. "${INTRUS_TEST_SRCDIR:-.}/tests/testlib.sh"

need_python test_data_scripts "scripts/data/*.py"
src=$(cd "$src" && pwd) || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' 0
LC_ALL=C
export LC_ALL

# 1. Tokenizer: input line, then the exact expected tokens.
cat >"$tmp/tok.in" <<'EOF'
\frac{a}{b}
x^{2}_i
\left( x \right)
a \\ b
\{ x \}
a\,b\;c\!d\quad e\ f~g
x^\frac12 + y_\alpha + z^\hat a'
\text{if } x>0
\mathbf{v}_{12}
\begin{array}{rcl} a & = & b \end{array}
\sqrt[3]{x}
a \\[2pt] b \hspace{1em} c
\operatorname*{arg\,max}_x f(x)
\left\{ \frac{1}{2} \right.
EOF
cat >"$tmp/tok.want" <<'EOF'
\frac { a } { b }
x ^ { 2 } _ { i }
\left ( x \right )
a \\ b
\{ x \}
a \, b \; c \! d \quad e ~ f ~ g
x ^ { \frac 1 2 } + y _ { \alpha } + z ^ { \hat a } '
\mathrm { i f ~ } x > 0
\mathbf { v } _ { 1 2 }
\begin{array} { r c l } a & = & b \end{array}
\sqrt [ 3 ] { x }
a \\ [ 2 pt ] b \hspace { 1 em } c
\operatorname* { a r g \, m a x } _ { x } f ( x )
\left \{ \frac { 1 } { 2 } \right .
EOF
if "$py" "$src/scripts/data/latex_tokenize.py" "$tmp/tok.in" >"$tmp/tok.got" 2>"$tmp/err"; then
  n=0
  while IFS= read -r want; do
    n=$((n + 1))
    got=$(sed -n "${n}p" "$tmp/tok.got")
    in=$(sed -n "${n}p" "$tmp/tok.in")
    if [ "$got" = "$want" ]; then ok "tokenize $in"; else bad "tokenize $in: got '$got', want '$want'"; fi
  done <"$tmp/tok.want"
else
  bad "latex_tokenize.py failed: $(cat "$tmp/err")"
fi

# 2. Extractor on the fixtures: exact formulas, in file order.
cat >"$tmp/ext.want" <<'EOF'
sample.tex	a+b
sample.tex	\frac{x}{y}
sample.tex	x^2
sample.tex	\sum_{i=1}^n i
sample.tex	E = mc^2
sample.tex	\begin{aligned} a &= b \\ c &= d \end{aligned}
sample.tex	\begin{array}{rcl} x & = & y \end{array}
sample.tex	x + y
sample.lyx	\alpha_{1}
sample.lyx	\int_{0}^{1}f(x)\,dx
sample.py	\lambda
sample.py	e^{x}
sample.py	\frac{1}{2}
sample.py	y = \sqrt{x}
sample.py	\beta
EOF
if (cd "$src/tests/data/latex" && "$py" "$src/scripts/data/latex_extract.py" \
  sample.tex sample.lyx sample.py) >"$tmp/ext.got" 2>"$tmp/err"; then
  if cmp -s "$tmp/ext.got" "$tmp/ext.want"; then
    ok "latex_extract.py on tests/data/latex/sample.{tex,lyx,py}"
  else
    bad "latex_extract.py on tests/data/latex: $(diff "$tmp/ext.want" "$tmp/ext.got")"
  fi
else
  bad "latex_extract.py failed: $(cat "$tmp/err")"
fi

# 3. The bundled sets.
is_png() { # FILE: starts with the PNG signature
  [ "$(od -An -tx1 -N8 "$1" 2>/dev/null | tr -d ' \n')" = 89504e470d0a1a0a ]
}
lines() { wc -l <"$1" | tr -d ' '; }
check_set() { # DIR, then for each split the text files beside S.img ({S} for the split)
  d=$1
  shift
  if [ ! -d "$d" ]; then
    bad "$d: no such folder (the bundled set is missing)"
    return
  fi
  [ -f "$d/MANIFEST" ] && [ -f "$d/README.md" ] && ok "$d: MANIFEST and README.md" ||
    bad "$d: MANIFEST or README.md missing"
  : >"$tmp/all"
  for s in train valid test; do
    img="$d/$s.img"
    if [ ! -s "$img" ]; then
      bad "$img: missing or empty"
      continue
    fi
    n=$(lines "$img")
    for pat in "$@"; do
      f="$d/$(echo "$pat" | sed "s/{S}/$s/")"
      case $f in *"{S}"*) continue ;; esac
      if [ ! -f "$f" ]; then
        bad "$f: missing"
      elif [ "$(lines "$f")" != "$n" ]; then
        bad "$f: $(lines "$f") lines, $img has $n"
      else
        ok "$f: $n lines, as $s.img"
      fi
    done
    missing=0
    notpng=0
    sort -u "$img" >"$tmp/$s.u"
    while IFS= read -r p; do
      if [ ! -f "$d/$p" ]; then
        missing=$((missing + 1))
        [ "$missing" -gt 3 ] || echo "  $img: $p does not exist" >&2
      elif ! is_png "$d/$p"; then
        notpng=$((notpng + 1))
        [ "$notpng" -gt 3 ] || echo "  $img: $p is not a PNG" >&2
      fi
      case $p in images/*.png) ;; *) bad "$img: '$p' is not images/NAME.png" ;; esac
    done <"$tmp/$s.u"
    [ "$missing" = 0 ] && ok "$img: every image exists" || bad "$img: $missing images missing"
    [ "$notpng" = 0 ] && ok "$img: every image has the PNG signature" ||
      bad "$img: $notpng files without the PNG signature"
    cat "$tmp/$s.u" >>"$tmp/all"
  done
  dup=$(sort "$tmp/all" | uniq -d | head -n 3)
  [ -z "$dup" ] && ok "$d: no image in two splits" || bad "$d: images in two splits: $dup"
  sort -u "$tmp/all" >"$tmp/all.s"
  extra=$( (cd "$d" && find images -name "*.png" | sort) | comm -23 - "$tmp/all.s" | head -n 3)
  [ -z "$extra" ] && ok "$d: every image is in a split" || bad "$d: images in no split: $extra"
}
check_set "$src/data/im2latex" "{S}.tex"
check_set "$src/data/caption" "{S}.de" "{S}.ru" "{S}.ja" "{S}.ar"
c="$src/data/caption"
if [ -f "$c/train.img" ]; then
  [ "$(lines "$c/train.en")" = "$(lines "$c/train.img")" ] && ok "caption train.en as train.img" ||
    bad "caption: train.en and train.img differ in length"
  for s in valid test; do
    k=0
    while [ -f "$c/$s.en.$k" ]; do
      [ "$(lines "$c/$s.en.$k")" = "$(lines "$c/$s.img")" ] && ok "$s.en.$k: as $s.img" ||
        bad "$c/$s.en.$k: $(lines "$c/$s.en.$k") lines, $s.img has $(lines "$c/$s.img")"
      k=$((k + 1))
    done
    [ "$k" -ge 1 ] && ok "$s.en.0..$((k - 1))" || bad "$c/$s.en.0 missing"
    # every image has a first reference
    [ "$(grep -c '^$' "$c/$s.en.0")" = 0 ] && ok "$s.en.0: no empty reference" ||
      bad "$c/$s.en.0 has empty lines"
  done
fi
if [ -f "$src/data/im2latex/train.tex" ]; then
  grep -q '^$' "$src/data/im2latex/train.tex" && bad "data/im2latex/train.tex has empty lines" ||
    ok "data/im2latex/train.tex: no empty formula"
fi

# The builders report every missing requirement in one run, with one install command,
# before writing anything: a PATH of this machine's commands without the TeX, dvipng and
# rsvg-convert ones stands for a fresh machine.
if command -v bash >/dev/null 2>&1; then
  mkdir "$tmp/bin"
  for d in /usr/local/bin /usr/bin /bin; do
    [ -d "$d" ] || continue
    for f in "$d"/*; do
      n=${f##*/}
      case "$n" in latex|dvipng|kpsewhich|rsvg-convert) continue ;; esac
      [ -e "$tmp/bin/$n" ] || ln -s "$f" "$tmp/bin/$n"
    done
  done
  PATH="$tmp/bin" bash "$src/scripts/build-im2latex-data.sh" --offline --out "$tmp/tex-out" \
    --work "$tmp/tex-work" >"$tmp/need.out" 2>&1
  rc=$?
  [ "$rc" = 1 ] && ok "im2latex builder: exit 1 on missing tools" || bad "im2latex builder: exit $rc on missing tools"
  for want in "missing: the command latex" "missing: the command dvipng" \
    "missing: the LaTeX file preview.sty" "missing: the LaTeX file amssymb.sty"; do
    grep -qF "$want" "$tmp/need.out" && ok "im2latex builder: $want" ||
      bad "im2latex builder: no '$want' in: $(cat "$tmp/need.out")"
  done
  line=$(grep "install with: apt-get install" "$tmp/need.out")
  case " $line " in
    *" dvipng "*texlive-latex-base*) ok "im2latex builder: one install line" ;;
    *) bad "im2latex builder: install line '$line'" ;;
  esac
  [ ! -e "$tmp/tex-out" ] && [ ! -e "$tmp/tex-work" ] && ok "im2latex builder: nothing written" ||
    bad "im2latex builder: wrote folders before failing"
  PATH="$tmp/bin" bash "$src/scripts/build-caption-data.sh" --offline --out "$tmp/cap-out" \
    --work "$tmp/cap-work" >"$tmp/need.out" 2>&1
  rc=$?
  [ "$rc" = 1 ] && grep -qF "missing: the command rsvg-convert" "$tmp/need.out" &&
    grep -q "install with: apt-get install.* librsvg2-bin" "$tmp/need.out" &&
    [ ! -e "$tmp/cap-out" ] && ok "caption builder: rsvg-convert named with its package" ||
    bad "caption builder: exit $rc, $(cat "$tmp/need.out")"
fi

finish test_data_scripts

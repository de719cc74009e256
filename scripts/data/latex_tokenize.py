#!/usr/bin/env python3
"""Tokenise LaTeX math into im2latex-style tokens, one formula per line.

The output is what im2latex-100k's preprocessing produces in spirit: a control word
(`\\frac`) is one token, a control symbol (`\\{`, `\\\\`, `\\,`) is one token, every
other character (letters and digits too) is its own token, and tokens are separated by
single spaces. Normalisations, chosen so that the tokens joined by spaces render the
same as the source (the build scripts render the token string itself, so image and
target always agree):

- whitespace is dropped; a control space `\\ ` becomes `~` (the same interword space);
- text-mode commands become their math-mode twins, with spaces as `~` (spaces in text
  mode would otherwise be lost): `\\text`, `\\mbox`, `\\hbox`, `\\textrm`, `\\textnormal`,
  `\\textup` -> `\\mathrm`; `\\textbf` -> `\\mathbf`; `\\textit`, `\\emph` -> `\\mathit`;
  `\\textsf` -> `\\mathsf`; `\\texttt` -> `\\mathtt`;
- a sub/superscript whose argument is not a brace group gets braces: `x^2_i` ->
  `x ^ { 2 } _ { i }` (a command with known arguments is taken whole: `x^\\frac12` ->
  `x ^ { \\frac 1 2 }`);
- `\\begin{array}` and `\\end{array}` (any environment) are one token each;
- `\\operatorname*`, `\\hspace*`, `\\vspace*` keep their star; a length unit (`pt`, `em`,
  `cm`...) right after a number in a dimension argument (`\\\\[2pt]`, `\\hspace{1em}`,
  `\\kern`/`\\mkern`/`\\hskip`/`\\mskip`) is one token, so `2 pt` still parses.

Usage: latex_tokenize.py [FILE...]   (stdin when no file; one formula per line)
"""
import re
import sys

TEXT_TO_MATH = {
    "text": "\\mathrm", "mbox": "\\mathrm", "hbox": "\\mathrm", "textrm": "\\mathrm",
    "textnormal": "\\mathrm", "textup": "\\mathrm", "textbf": "\\mathbf",
    "textit": "\\mathit", "emph": "\\mathit", "textsf": "\\mathsf", "texttt": "\\mathtt",
}
STARRED = {"operatorname", "hspace", "vspace"}
# Commands whose arguments a script takes with them (x^\hat a -> x ^ { \hat a }).
ARITY = {}
for _n in ("sqrt mathbf mathrm mathit mathcal mathbb mathfrak mathsf mathtt mathscr "
           "mathnormal boldsymbol bm pmb hat bar vec tilde dot ddot dddot check breve "
           "acute grave mathring widehat widetilde overline underline overbrace "
           "underbrace overrightarrow overleftarrow operatorname operatorname* "
           "mathop mathbin mathrel mathord boxed phantom vphantom hphantom "
           "underbar utilde lVert").split():
    ARITY[_n] = 1
for _n in "frac dfrac tfrac cfrac binom dbinom tbinom stackrel overset underset genfrac".split():
    ARITY[_n] = 2
ARITY.pop("lVert")
ARITY["genfrac"] = 6
ENV_NAME_RE = re.compile(r"\s*\{([A-Za-z]+\*?)\}")
UNITS = ("pt", "em", "ex", "cm", "mm", "in", "mu", "bp", "pc", "dd", "cc", "sp")
DIM_BRACE = {"\\hspace", "\\hspace*", "\\vspace", "\\vspace*", "\\rule", "\\raisebox",
             "\\mspace", "\\makebox", "\\rule"}
DIM_NOARG = {"\\kern", "\\mkern", "\\hskip", "\\mskip", "\\vskip", "\\hspace", "\\mspace"}


def _lex(s):
    """Raw tokens: (token, kind) with kind in cmd, sym, char, space."""
    out = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            if i + 1 >= n:
                out.append(("\\", "char"))
                i += 1
                continue
            d = s[i + 1]
            if d.isascii() and d.isalpha():
                j = i + 1
                while j < n and s[j].isascii() and s[j].isalpha():
                    j += 1
                name = s[i + 1:j]
                if name in ("begin", "end"):
                    m = ENV_NAME_RE.match(s, j)
                    if m:  # \begin{array} is one token
                        out.append(("\\%s{%s}" % (name, m.group(1)), "cmd"))
                        i = m.end()
                        continue
                if j < n and s[j] == "*" and name in STARRED:
                    name += "*"
                    j += 1
                out.append(("\\" + name, "cmd"))
                i = j
            elif d in " \t\n\r":
                out.append(("~", "char"))
                i += 2
            else:
                out.append(("\\" + d, "sym"))
                i += 2
        elif c == "%":
            while i < n and s[i] != "\n":
                i += 1
        elif c in " \t\n\r\f\v":
            j = i
            while j < n and s[j] in " \t\n\r\f\v":
                j += 1
            out.append((" ", "space"))
            i = j
        else:
            out.append((c, "char"))
            i += 1
    return out


def _normalise(raw):
    """Drop spaces (text-mode spaces become ~), map text commands, join units."""
    toks = []
    # Stack of brace kinds: 'text' (inside a text-mode argument) or 'math'; also
    # 'dim' for a dimension argument.
    stack = []
    pending = None  # kind for the next '{' (text / dim), set by a command
    bracket_dim = False  # inside \\[...]
    prev_cmd = False  # the last token was a control word (its trailing space is eaten)
    i = 0
    while i < len(raw):
        t, kind = raw[i]
        in_text = bool(stack) and stack[-1] == "text"
        in_dim = (bool(stack) and stack[-1] == "dim") or bracket_dim or pending == "dimnoarg"
        if kind == "space":
            if in_text and not prev_cmd and toks and toks[-1] != "~":
                toks.append("~")  # a space in text mode (not one after a control word)
            i += 1
            continue
        prev_cmd = kind == "cmd"
        if t != "{" and pending in ("text", "dim"):
            pending = None
        if kind == "cmd":
            name = t[1:]
            if name in TEXT_TO_MATH:
                toks.append(TEXT_TO_MATH[name])
                pending = "text"
                i += 1
                continue
            toks.append(t)
            if t in DIM_BRACE:
                pending = "dim"
            elif t in DIM_NOARG:
                pending = "dimnoarg"
            elif t == "\\left" or t == "\\right":
                pass
            i += 1
            continue
        if t == "{":
            stack.append(pending if pending in ("text", "dim") else
                         ("text" if in_text else "math"))
            pending = None
            toks.append(t)
        elif t == "}":
            if stack:
                stack.pop()
            toks.append(t)
        elif t == "[" and toks and toks[-1] == "\\\\":
            bracket_dim = True
            toks.append(t)
        elif t == "]" and bracket_dim:
            bracket_dim = False
            toks.append(t)
        elif in_dim and t.isascii() and t.isalpha() and toks and (
                toks[-1].isdigit() or toks[-1] == "."):
            # a unit after a number: join its letters
            word = t
            j = i + 1
            while j < len(raw) and raw[j][1] == "char" and raw[j][0].isascii() and raw[j][0].isalpha():
                word += raw[j][0]
                j += 1
            if word in UNITS or word == "fill" or word == "fil":
                toks.append(word)
                i = j
                if pending == "dimnoarg":
                    pending = None
                continue
            toks.append(t)
        else:
            if pending == "dimnoarg" and not (t.isdigit() or t in ".-+"):
                pending = None
            toks.append(t)
        i += 1
    return toks


def _group_end(toks, i):
    """Index after the argument starting at toks[i] (a brace group or one token)."""
    if i >= len(toks):
        return i
    if toks[i] == "{":
        depth = 0
        j = i
        while j < len(toks):
            if toks[j] == "{":
                depth += 1
            elif toks[j] == "}":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return len(toks)
    if toks[i].startswith("\\") and len(toks[i]) > 2:
        name = toks[i][1:]
        j = i + 1
        if name == "sqrt" and j < len(toks) and toks[j] == "[":
            while j < len(toks) and toks[j] != "]":
                j += 1
            j += 1
        for _ in range(ARITY.get(name, 0)):
            j = _group_end(toks, j)
        return j
    return i + 1


def _brace_scripts(toks):
    out = []
    i = 0
    while i < len(toks):
        t = toks[i]
        out.append(t)
        i += 1
        if t in ("^", "_") and i < len(toks) and toks[i] not in ("{", "}", "^", "_", "&"):
            j = _group_end(toks, i)
            out.append("{")
            out.extend(_brace_scripts(toks[i:j]))
            out.append("}")
            i = j
    return out


def tokenize(formula):
    """The token list of one formula (a string of LaTeX math)."""
    return _brace_scripts(_normalise(_lex(formula)))


def main(argv):
    files = argv[1:] or ["-"]
    w = sys.stdout
    for f in files:
        fh = sys.stdin if f == "-" else open(f, encoding="utf-8")
        for line in fh:
            w.write(" ".join(tokenize(line.rstrip("\n"))) + "\n")
        if fh is not sys.stdin:
            fh.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Extract math formulas from LaTeX (.tex, .tex.gz), LyX (.lyx) and Python (.py) files.

LaTeX: comments and verbatim-like material (verbatim, listings, minted, code/example
environments, macrocode, \\verb, \\lstinline...) are removed, then `$..$`, `$$..$$`,
`\\(..\\)`, `\\[..\\]` and the bodies of equation, align, gather, multline, eqnarray,
flalign, displaymath and math environments (starred too) are taken. Bodies of align,
flalign and eqnarray become self-contained math as `\\begin{aligned}..\\end{aligned}`
(`\\begin{array}{rcl}` for eqnarray), gather and multline as `\\begin{gathered}`, when
they hold `\\\\` or `&`. `\\label{..}`, `\\tag{..}`, `\\nonumber` and `\\notag` are dropped.
LyX: the contents of `\\begin_inset Formula .. \\end_inset`, read as LaTeX math.
Python: every string constant (docstrings and add_newdoc() texts alike, decoded by the
parser, so raw and escaped backslashes both work) is searched for `:math:` roles and
`.. math::` directives (each blank-line-separated block of a directive is a formula).

Output: one line per formula occurrence, `SOURCE<TAB>FORMULA`, whitespace in the
formula collapsed to single spaces, in file order.

Usage: latex_extract.py [--label L] FILE...   (--files-from LIST: one path per line)
"""
import ast
import gzip
import re
import sys
import warnings

MATH_ENVS = ("equation", "align", "gather", "multline", "eqnarray", "flalign",
             "displaymath", "math")
ENV_RE = re.compile(r"\\begin\s*\{(" + "|".join(MATH_ENVS) + r")(\*?)\}")
VERB_ENV_RE = re.compile(
    r"\\begin\s*\{([A-Za-z]*(?:[Vv]erbatim|listing|[Ll]isting|minted|[Cc]ode|[Ee]xample|"
    r"filecontents|comment|macrocode|alltt|sourcecode|LTXexample|tcblisting|"
    r"[Ss]ource|shell|console|demo|ltxcode|latexcode|tabbing)[A-Za-z]*\*?)\}")
VERB_CMD_RE = re.compile(r"\\(?:verb|lstinline|mintinline\{[^}]*\}|url|path)(?![A-Za-z])\*?")
LABEL_RE = re.compile(r"\\(?:label|tag\*?)\s*\{[^{}]*\}|\\nonumber\b|\\notag\b")


def strip_comments(text):
    out = []
    for line in text.split("\n"):
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if c == "\\":
                i += 2
                continue
            if c == "%":
                break
            i += 1
        out.append(line[:i] if i < n else line)
    return "\n".join(out)


def strip_verbatim(text):
    # environments: everything from \begin{env} to the matching \end{env}
    pos = 0
    out = []
    while True:
        m = VERB_ENV_RE.search(text, pos)
        if not m:
            out.append(text[pos:])
            break
        out.append(text[pos:m.start()] + "\n\n")
        end = text.find("\\end{" + m.group(1) + "}", m.end())
        if end < 0:
            break  # unterminated: drop the rest
        pos = end + len("\\end{" + m.group(1) + "}")
    text = "".join(out)
    # inline verbatim and code-like commands: \verb|..|, \lstinline{..}, \cs{..}...
    out = []
    pos = 0
    while True:
        m = VERB_CMD_RE.search(text, pos)
        if not m:
            out.append(text[pos:])
            break
        out.append(text[pos:m.start()] + " ")
        j = m.end()
        if j >= len(text):
            pos = j
            continue
        d = text[j]
        if d == "{":
            depth, k = 0, j
            while k < len(text):
                if text[k] == "\\":
                    k += 2
                    continue
                if text[k] == "{":
                    depth += 1
                elif text[k] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            pos = k + 1
        elif m.group(0).startswith(("\\verb", "\\lstinline")) and not d.isalpha() and d not in " \n":
            k = text.find(d, j + 1)
            nl = text.find("\n", j + 1)
            if k < 0 or (0 <= nl < k):
                pos = j + 1
            else:
                pos = k + 1
        else:
            pos = j
    return "".join(out)


def clean(f):
    f = LABEL_RE.sub(" ", f)
    return " ".join(f.split())


def wrap_env(env, body):
    if "\\\\" not in body and "&" not in body:
        return body
    if env == "eqnarray":
        return "\\begin{array}{rcl}" + body + "\\end{array}"
    if env in ("align", "flalign"):
        return "\\begin{aligned}" + body + "\\end{aligned}"
    if env in ("gather", "multline"):
        return "\\begin{gathered}" + body + "\\end{gathered}"
    return body


def find_closing(text, i, delim):
    """Index of the unescaped delimiter at or after i, or -1 (stops at a blank line
    for inline math, which TeX does not allow)."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            if text.startswith(delim, i):
                return i
            i += 2
            continue
        if text.startswith(delim, i):
            if delim == "$" and text.startswith("$$", i):
                return -1
            return i
        if c == "\n" and text.startswith("\n\n", i) or (c == "\n" and re.match(r"\n[ \t]*\n", text[i:i + 40])):
            return -1
        i += 1
    return -1


def math_in_latex(text):
    """Formulas of a LaTeX text (comments and verbatim already removed)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            if text.startswith("\\(", i) or text.startswith("\\[", i):
                close = "\\)" if text[i + 1] == "(" else "\\]"
                j = find_closing(text, i + 2, close)
                if j >= 0:
                    out.append(text[i + 2:j])
                    i = j + 2
                    continue
                i += 2
                continue
            if text.startswith("\\begin", i):
                m = ENV_RE.match(text, i)
                if m:
                    env = m.group(1)
                    end = "\\end{" + env + m.group(2) + "}"
                    j = text.find(end, m.end())
                    if j >= 0:
                        out.append(wrap_env(env, text[m.end():j]))
                        i = j + len(end)
                        continue
            i += 2
            continue
        if c == "$":
            if text.startswith("$$", i):
                j = find_closing(text, i + 2, "$$")
                if j >= 0:
                    out.append(text[i + 2:j])
                    i = j + 2
                    continue
                i += 2
                continue
            j = find_closing(text, i + 1, "$")
            if j >= 0:
                out.append(text[i + 1:j])
                i = j + 1
                continue
        i += 1
    return out


def from_tex(text):
    return math_in_latex(strip_comments(strip_verbatim(strip_comments_keep_verb(text))))


def strip_comments_keep_verb(text):
    # comments are removed after verbatim; but a \begin{verbatim} inside a comment must
    # not start a verbatim block: drop whole-line comments first
    return re.sub(r"(?m)^[ \t]*%.*$", "", text)


LYX_RE = re.compile(r"\\begin_inset Formula (.*?)\n?\\end_inset", re.S)


def from_lyx(text):
    out = []
    for m in LYX_RE.finditer(text):
        out.extend(math_in_latex(strip_comments(m.group(1))))
    return out


MATH_ROLE_RE = re.compile(r":math:`([^`]+)`")


def math_in_rst(s):
    out = [m.group(1) for m in MATH_ROLE_RE.finditer(s)]
    lines = s.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^(\s*)\.\.\s+math::(.*)$", line)
        if not m:
            i += 1
            continue
        indent = len(m.group(1))
        blocks = []
        cur = []
        if m.group(2).strip():
            cur.append(m.group(2).strip())
        i += 1
        while i < len(lines):
            l = lines[i]
            if not l.strip():
                if cur:
                    blocks.append(cur)
                    cur = []
                i += 1
                continue
            ind = len(l) - len(l.lstrip())
            if ind <= indent:
                break
            if re.match(r"^\s*:[a-z-]+:", l) and not cur and not blocks:
                i += 1  # a directive option such as :label:
                continue
            cur.append(l.strip())
            i += 1
        if cur:
            blocks.append(cur)
        out.extend(" ".join(b) for b in blocks)
    return out


def from_py(text):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes such as "\l" in old code
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "math:" in node.value:
            out.append((getattr(node, "lineno", 0), math_in_rst(node.value)))
    out.sort(key=lambda x: x[0])
    return [f for _, fs in out for f in fs]


def read_text(path):
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            data = fh.read()
    else:
        with open(path, "rb") as fh:
            data = fh.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def extract(path):
    text = read_text(path).replace("\r\n", "\n").replace("\r", "\n")
    base = path[:-3] if path.endswith(".gz") else path
    if base.endswith(".lyx"):
        fs = from_lyx(text)
    elif base.endswith(".py"):
        fs = from_py(text)
    else:
        fs = from_tex(text)
    return [c for c in (clean(f) for f in fs) if c]


def main(argv):
    label = None
    files = []
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--label":
            label = args.pop(0)
        elif a == "--files-from":
            with open(args.pop(0), encoding="utf-8") as fh:
                files.extend(l.rstrip("\n") for l in fh if l.strip())
        else:
            files.append(a)
    w = sys.stdout
    for f in files:
        try:
            fs = extract(f)
        except OSError as e:
            print("latex_extract: %s: %s" % (f, e.strerror), file=sys.stderr)
            return 1
        for x in fs:
            w.write("%s\t%s\n" % (label or f, x.replace("\t", " ")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

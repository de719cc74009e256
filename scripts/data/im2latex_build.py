#!/usr/bin/env python3
"""The im2latex set from extracted formulas: filter, tokenise, de-duplicate, render
with latex + dvipng in batches, and write the data folder. Driven by
scripts/build-im2latex-data.sh (see its --help); needs python3-pil (PIL).

Usage: im2latex_build.py --formulas TSV --work DIR --out DIR [--small N] [--jobs N]
                         [--batch N] [--max-width PX] [--max-height PX] [--dpi N]

TSV lines are PACKAGE<TAB>FILE<TAB>FORMULA in the order of precedence (the first
package with a formula is the one credited). Writes OUT/images/*.png, OUT/S.img and
OUT/S.tex for S in train valid test, and WORK/stats.tsv (counts for the MANIFEST).
"""
import concurrent.futures
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import latex_tokenize  # noqa: E402

try:
    from PIL import Image
except ImportError:
    sys.exit("im2latex_build: the Python module PIL is missing (Debian: python3-pil)")

RENDER_VERSION = "r1"  # change when the preamble or the image processing changes
PREAMBLE = r"""\documentclass{article}
\usepackage{amsmath}
\usepackage{amssymb}
\usepackage{bm}
\usepackage[active,tightpage]{preview}
\pagestyle{empty}
\begin{document}
"""
FORBIDDEN = re.compile(
    r"\\(?:def|gdef|edef|xdef|let|futurelet|newcommand|renewcommand|providecommand|"
    r"DeclareMathOperator|newenvironment|renewenvironment|catcode|input|include|"
    r"write|immediate|openout|openin|read|csname|endcsname|expandafter|makeatletter|"
    r"makeatother|usepackage|documentclass|special|jobname|endinput|loop|repeat|"
    r"everymath|everypar|output|shipout|afterassignment|aftergroup|begingroup|"
    r"endgroup|global|outer|long|uppercase|lowercase|end|begin\{document\}|"
    r"newline|par|item|section|label|ref|cite|index|footnote|marginpar|"
    r"include)(?![A-Za-z])|#|@|\$|\\\[|\\\]|\\\(|\\\)")
MAX_TOKENS = 400


def say(msg):
    print("build-im2latex-data: " + msg, file=sys.stderr, flush=True)


def balanced(tokens):
    depth = 0
    lr = 0
    envs = []
    for i, t in enumerate(tokens):
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if depth < 0:
                return False
        elif t == "\\left":
            lr += 1
        elif t == "\\right":
            lr -= 1
            if lr < 0:
                return False
    return depth == 0 and lr == 0


def envs_balanced(s):
    stack = []
    for m in re.finditer(r"\\(begin|end)\s*\{([^{}]*)\}", s):
        if m.group(1) == "begin":
            stack.append(m.group(2))
        elif not stack or stack.pop() != m.group(2):
            return False
    return not stack


def sha16(s):
    return hashlib.sha256(s.encode("utf-8")).hexdigest()[:16]


def split_of(name):
    v = int(name[8:16], 16) % 100
    return "valid" if v < 5 else "test" if v < 10 else "train"


# ---------------------------------------------------------------------------------
# Rendering


def run_latex(d, names, forms, halt):
    """latex on a document with one preview page per formula. Returns
    (ok, bad_indices, pages): ok when the run succeeded (halt) or finished (no halt)."""
    lines = [PREAMBLE]
    first = PREAMBLE.count("\n") + 1
    for f in forms:
        lines.append("\\begin{preview}$\\displaystyle " + f + "$\\end{preview}\n")
    lines.append("\\end{document}\n")
    with open(os.path.join(d, "b.tex"), "w", encoding="utf-8") as fh:
        fh.write("".join(lines))
    for ext in ("dvi", "log"):
        try:
            os.remove(os.path.join(d, "b." + ext))
        except FileNotFoundError:
            pass
    # A batch compiles in about a second (1.6 ms a formula); a formula that sends TeX into
    # a loop (one in the TeX documentation's harvest does) costs the timeout once per
    # halving of its batch, so the timeout is a few seconds a formula, not minutes.
    cmd = ["timeout", str(30 + len(forms) // 10), "latex", "-no-shell-escape",
           "-interaction=" + ("batchmode" if halt else "nonstopmode")]
    if halt:
        cmd.append("-halt-on-error")
    cmd.append("b.tex")
    r = subprocess.run(cmd, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       stdin=subprocess.DEVNULL)
    try:
        with open(os.path.join(d, "b.log"), encoding="latin-1") as fh:
            log = fh.read()
    except FileNotFoundError:
        log = ""
    bad = set()
    errors = log.count("\n! ") + log.startswith("! ")
    for m in re.finditer(r"^! .*?^l\.(\d+)", log, re.S | re.M):
        k = int(m.group(1)) - first
        if 0 <= k < len(forms):
            bad.add(k)
        else:
            bad.add(-1)
    m = re.search(r"Output written on b\.dvi \((\d+) pages?", log)
    pages = int(m.group(1)) if m else 0
    if halt:
        return r.returncode == 0 and errors == 0 and pages == len(forms), bad, pages
    return r.returncode in (0, 1), bad, pages


def dvipng(d, n, dpi):
    for f in os.listdir(d):
        if f.startswith("p") and f.endswith(".png"):
            os.remove(os.path.join(d, f))
    r = subprocess.run(["dvipng", "-q", "-D", str(dpi), "-T", "tight", "-bg", "White",
                        "-fg", "Black", "-z", "9", "-o", "p%d.png", "b.dvi"], cwd=d,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode != 0:
        return None
    return [os.path.join(d, "p%d.png" % (i + 1)) for i in range(n)]


def render_good(d, names, forms, dpi, max_w, max_h, pngdir, status):
    """Render formulas known (or hoped) to compile; split on failure."""
    if not forms:
        return
    ok, _, pages = run_latex(d, names, forms, True)
    if not ok:
        if len(forms) == 1:
            status[names[0]] = "fail"
            return
        h = len(forms) // 2
        render_good(d, names[:h], forms[:h], dpi, max_w, max_h, pngdir, status)
        render_good(d, names[h:], forms[h:], dpi, max_w, max_h, pngdir, status)
        return
    files = dvipng(d, len(forms), dpi)
    if files is None:
        for n in names:
            status[n] = "fail"
        return
    for n, f in zip(names, files):
        try:
            im = Image.open(f)
            im.load()
        except (OSError, FileNotFoundError):
            status[n] = "fail"
            continue
        im = im.convert("L")
        w, h = im.size
        lo, _ = im.getextrema()
        if lo >= 250 or w < 2 or h < 2:
            status[n] = "empty"
            continue
        if w > max_w or h > max_h:
            status[n] = "big %dx%d" % (w, h)
            continue
        tmp = os.path.join(pngdir, "." + n + ".tmp")
        im.save(tmp, format="PNG", optimize=True)
        os.replace(tmp, os.path.join(pngdir, n + ".png"))
        status[n] = "ok %dx%d" % (w, h)


def render_batch(args):
    bid, items, workdir, dpi, max_w, max_h = args
    pngdir = os.path.join(workdir, "png")
    done = os.path.join(workdir, "batches", bid + ".status")
    if os.path.exists(done):
        return bid, read_status(done)
    d = tempfile.mkdtemp(prefix="b" + bid + ".", dir=os.path.join(workdir, "tmp"))
    names = [n for n, _ in items]
    forms = [f for _, f in items]
    status = {}
    # 1. One forgiving run names the formulas with errors (by line); 2. the rest must
    # compile with -halt-on-error, or the batch is split in halves until they do.
    # The forgiving run is repeated (at most 4 times) while it names new culprits.
    keep = list(range(len(forms)))
    for _ in range(4):
        finished, bad, _ = run_latex(d, [names[i] for i in keep], [forms[i] for i in keep], False)
        culprits = set(keep[k] for k in bad if k >= 0) if finished else set()
        if not culprits:
            break
        for i in culprits:
            status[names[i]] = "fail"
        keep = [i for i in keep if i not in culprits]
    render_good(d, [names[i] for i in keep], [forms[i] for i in keep], dpi, max_w, max_h,
                pngdir, status)
    shutil.rmtree(d, ignore_errors=True)
    tmp = done + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        for n in names:
            fh.write("%s\t%s\n" % (n, status.get(n, "fail")))
    os.replace(tmp, done)
    return bid, read_status(done)


def read_status(path):
    st = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            n, s = line.rstrip("\n").split("\t", 1)
            st[n] = s
    return st


# ---------------------------------------------------------------------------------


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    os.replace(tmp, path)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--formulas", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--small", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--dpi", type=int, default=100)
    ap.add_argument("--max-width", type=int, default=800)
    ap.add_argument("--max-height", type=int, default=200)
    a = ap.parse_args(argv[1:])

    # 1. Candidates: filtered, tokenised, unique by token string, first package wins.
    seen = {}
    order = []
    raw = 0
    dropped = {"forbidden": 0, "unbalanced": 0, "tokens": 0, "duplicate": 0}
    per_pkg_raw = {}
    with open(a.formulas, encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t", 2)
            if len(parts) != 3:
                continue
            pkg, _, f = parts
            raw += 1
            per_pkg_raw[pkg] = per_pkg_raw.get(pkg, 0) + 1
            if FORBIDDEN.search(f.replace("\\begin{", "\\BEGIN{").replace("\\end{", "\\END{")
                                .replace("\\\\", "  ")):
                dropped["forbidden"] += 1
                continue
            if not envs_balanced(f):
                dropped["unbalanced"] += 1
                continue
            toks = latex_tokenize.tokenize(f)
            if not toks or len(toks) > MAX_TOKENS:
                dropped["tokens"] += 1
                continue
            if not balanced(toks):
                dropped["unbalanced"] += 1
                continue
            s = " ".join(toks)
            if s in seen:
                dropped["duplicate"] += 1
                continue
            seen[s] = pkg
            order.append(s)
    names = {}
    for s in order:
        n = sha16(s)
        if n in names and names[n] != s:
            sys.exit("im2latex_build: sha256 prefix collision: %s" % n)
        names[n] = s
    say("%d formulas read, %d unique candidates (dropped: %s)" % (
        raw, len(names), ", ".join("%s %d" % kv for kv in sorted(dropped.items()))))
    cand = sorted(names)  # render and selection order: by name (a content hash)

    # 2. Render batch by batch (cached under WORK/batches), two at a time.
    for sub in ("batches", "png", "tmp"):
        os.makedirs(os.path.join(a.work, sub), exist_ok=True)
    batches = []
    for i in range(0, len(cand), a.batch):
        chunk = cand[i:i + a.batch]
        items = [(n, names[n]) for n in chunk]
        bid = hashlib.sha256(("%s %d %d %d\n" % (RENDER_VERSION, a.dpi, a.max_width, a.max_height)
                              + "\n".join(names[n] for n in chunk))
                             .encode("utf-8")).hexdigest()[:16]
        batches.append((bid, items, a.work, a.dpi, a.max_width, a.max_height))
    status = {}
    good = 0
    nb = 0
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        pending = []
        it = iter(batches)
        results = {}
        next_needed = 0

        def enough():
            return a.small and good >= a.small

        # Keep 4 x jobs batches queued (jobs run at once); consume results in batch order (so --small
        # stops at the same place however the work is scheduled).
        while True:
            while len(pending) < 4 * a.jobs and not enough():
                b = next(it, None)
                if b is None:
                    break
                pending.append((b[0], ex.submit(render_batch, b)))
            if not pending:
                break
            bid, fut = pending.pop(0)
            _, st = fut.result()
            status.update(st)
            nb += 1
            good += sum(1 for v in st.values() if v.startswith("ok"))
            if nb % 5 == 0 or nb == len(batches):
                say("rendered %d/%d batches: %d images so far" % (nb, len(batches), good))
            if enough():
                # batches queued beyond this one are not used (their results, when
                # they finish, stay cached in WORK/batches)
                for _, f in pending:
                    f.cancel()
                pending = []
                break
    rendered = [n for n in cand if n in status]
    ok = [n for n in rendered if status[n].startswith("ok")]
    if a.small:
        ok = ok[:a.small]
    kinds = {}
    for n in rendered:
        k = status[n].split(" ")[0]
        kinds[k] = kinds.get(k, 0) + 1
    say("%d rendered: %s" % (len(rendered), ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))

    # 3. The data folder.
    img = os.path.join(a.out, "images")
    os.makedirs(img, exist_ok=True)
    keep = set(n + ".png" for n in ok)
    for f in os.listdir(img):
        if f not in keep:
            os.remove(os.path.join(img, f))
    for n in ok:
        dst = os.path.join(img, n + ".png")
        src = os.path.join(a.work, "png", n + ".png")
        if not os.path.exists(dst) or os.path.getsize(dst) != os.path.getsize(src):
            shutil.copyfile(src, dst + ".tmp")
            os.replace(dst + ".tmp", dst)
    by_split = {"train": [], "valid": [], "test": []}
    for n in ok:
        by_split[split_of(n)].append(n)
    for s, ns in by_split.items():
        write_atomic(os.path.join(a.out, s + ".img"), "".join("images/%s.png\n" % n for n in ns))
        write_atomic(os.path.join(a.out, s + ".tex"), "".join(names[n] + "\n" for n in ns))
    # Stats for the MANIFEST and README.
    pkg_count = {}
    for n in ok:
        p = seen[names[n]]
        pkg_count[p] = pkg_count.get(p, 0) + 1
    sizes = sorted((int(status[n].split()[1].split("x")[0]), int(status[n].split()[1].split("x")[1]))
                   for n in ok)
    lines = ["raw\t%d" % raw, "candidates\t%d" % len(names), "rendered\t%d" % len(rendered)]
    lines += ["dropped-%s\t%d" % kv for kv in sorted(dropped.items())]
    lines += ["render-%s\t%d" % kv for kv in sorted(kinds.items())]
    lines += ["pairs\t%d" % len(ok)]
    lines += ["split-%s\t%d" % (s, len(ns)) for s, ns in by_split.items()]
    for p in sorted(per_pkg_raw):
        lines.append("package\t%s\t%d\t%d" % (p, per_pkg_raw[p], pkg_count.get(p, 0)))
    ws = sorted(w for w, _ in sizes)
    hs = sorted(h for _, h in sizes)
    if ws:
        def q(v, p):
            return v[min(len(v) - 1, int(p * len(v)))]
        lines.append("width\t%d\t%d\t%d\t%d" % (ws[0], q(ws, 0.5), q(ws, 0.95), ws[-1]))
        lines.append("height\t%d\t%d\t%d\t%d" % (hs[0], q(hs, 0.5), q(hs, 0.95), hs[-1]))
        toks = sorted(len(names[n].split()) for n in ok)
        lines.append("tokens\t%d\t%d\t%d\t%d" % (toks[0], q(toks, 0.5), q(toks, 0.95), toks[-1]))
    write_atomic(os.path.join(a.work, "stats.tsv"), "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Length ratio of a decode by reference length (issue 44's four bins).

  scripts/length-by-bins.py [--chars] [--bleu] REF HYP [REF2 HYP2 ...] [--labels A,B,...]

REF and HYP are plain or .gz text files, one sentence per line, aligned. For each
bin of reference length in words (whitespace-separated): the sentences in it, the
reference and output words, and their ratio. Words, not BLEU's 13a tokens, so the
numbers read as "the output is x of the reference length" for each kind of sentence.
--chars counts characters other than whitespace instead, in bins of 1-10, 11-20, 21-40
and 41+ (for Japanese, written without spaces and scored by character BLEU).
--bleu adds a second table: each bin's corpus BLEU, computed by `intrus eval bleu` on
that bin's lines (with --chars, `--tok char`); the binary is $INTRUS, or ./intrus from
the top of a built tree. It says where in the length range a gap in BLEU lies.
"""
import gzip
import os
import subprocess
import sys
import tempfile

WORD_BINS = [(1, 5), (6, 10), (11, 20), (21, 10**9)]
CHAR_BINS = [(1, 10), (11, 20), (21, 40), (41, 10**9)]


def words(line):
    return len(line.split())


def chars(line):
    return sum(1 for c in line if not c.isspace())


def read(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def bin_bleu(ref, hyp, tok):
    """Corpus BLEU of the aligned lines by `intrus eval bleu` (sacreBLEU's)."""
    intrus = os.environ.get("INTRUS", "./intrus")
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for name, lines in (("ref", ref), ("hyp", hyp)):
            paths.append(os.path.join(d, name))
            with open(paths[-1], "w", encoding="utf-8") as f:
                f.write("".join(line + "\n" for line in lines))
        try:
            out = subprocess.run([intrus, "eval", "bleu", "--ref", paths[0], "--hyp",
                                  paths[1], "--tok", tok], capture_output=True, text=True)
        except OSError as e:
            sys.exit(f"--bleu: {intrus}: {e.strerror} (set INTRUS, or run from the top of "
                     "a built tree)")
        if out.returncode != 0 or not out.stdout.startswith("BLEU = "):
            sys.exit(f"--bleu: {intrus} eval bleu failed: {out.stderr.strip()}")
        return float(out.stdout.split()[2])


def main(argv):
    labels = None
    length, bins, tok = words, WORD_BINS, "13a"
    if "--chars" in argv:
        argv = [a for a in argv if a != "--chars"]
        length, bins, tok = chars, CHAR_BINS, "char"
    bleu = "--bleu" in argv
    argv = [a for a in argv if a != "--bleu"]
    if "--labels" in argv:
        i = argv.index("--labels")
        labels = argv[i + 1].split(",")
        argv = argv[:i] + argv[i + 2:]
    if len(argv) < 2 or len(argv) % 2:
        sys.exit(__doc__)
    pairs = [(argv[i], argv[i + 1]) for i in range(0, len(argv), 2)]
    names = labels or [h for _, h in pairs]
    head = "| system | " + " | ".join(
        f"{a}-{b}" if b < 10**9 else f"{a}+" for a, b in bins) + " | all |"
    print(head)
    print("|" + "---|" * (len(bins) + 2))
    scores = []
    for name, (rp, hp) in zip(names, pairs):
        ref, hyp = read(rp), read(hp)
        if len(ref) != len(hyp):
            sys.exit(f"{rp}: {len(ref)} lines but {hp}: {len(hyp)}")
        # Each line's length once (--chars walks every character), then the bins.
        lens = [(length(x), length(y)) for x, y in zip(ref, hyp)]
        if bleu:
            row = []
            for a, b in bins:
                idx = [i for i, (lx, _) in enumerate(lens) if a <= lx <= b]
                row.append(f"{bin_bleu([ref[i] for i in idx], [hyp[i] for i in idx], tok):.2f}"
                           if idx else "-")
            row.append(f"{bin_bleu(ref, hyp, tok):.2f}")
            scores.append((name, row))
        cells = []
        tot_r = tot_h = 0
        for a, b in bins:
            r = h = n = 0
            for lx, ly in lens:
                if a <= lx <= b:
                    r += lx
                    h += ly
                    n += 1
            tot_r += r
            tot_h += h
            cells.append(f"{h / r:.2f} ({n})" if r else "- (0)")
        print(f"| {name} | " + " | ".join(cells) + f" | {tot_h / tot_r:.2f} |")
    if bleu:
        print()
        print(head.replace("| system |", "| BLEU |", 1))
        print("|" + "---|" * (len(bins) + 2))
        for name, row in scores:
            print(f"| {name} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/env python3
"""Length ratio of a decode by reference length (issue 44's four bins).

  scripts/length-by-bins.py [--chars] REF HYP [REF2 HYP2 ...] [--labels A,B,...]

REF and HYP are plain or .gz text files, one sentence per line, aligned. For each
bin of reference length in words (whitespace-separated): the sentences in it, the
reference and output words, and their ratio. Words, not BLEU's 13a tokens, so the
numbers read as "the output is x of the reference length" for each kind of sentence.
--chars counts characters other than whitespace instead, in bins of 1-10, 11-20, 21-40
and 41+ (for Japanese, written without spaces and scored by character BLEU).
"""
import gzip
import sys

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


def main(argv):
    labels = None
    length, bins = words, WORD_BINS
    if "--chars" in argv:
        argv = [a for a in argv if a != "--chars"]
        length, bins = chars, CHAR_BINS
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
    for name, (rp, hp) in zip(names, pairs):
        ref, hyp = read(rp), read(hp)
        if len(ref) != len(hyp):
            sys.exit(f"{rp}: {len(ref)} lines but {hp}: {len(hyp)}")
        # Each line's length once (--chars walks every character), then the bins.
        lens = [(length(x), length(y)) for x, y in zip(ref, hyp)]
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


if __name__ == "__main__":
    main(sys.argv[1:])

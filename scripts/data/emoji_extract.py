#!/usr/bin/env python3
"""The colour bitmaps of a CBDT emoji font (Noto Color Emoji) with their code points.

Each bitmap glyph of the font's CBDT table is mapped to the code-point sequence that
produces it: the cmap for single code points, the ligature (GSUB type 4) lookups for
sequences (flags, keycaps, skin tones, ZWJ sequences). Needs python3-fonttools.

Usage (library): emoji_bitmaps(path) -> list of (codepoints tuple, png bytes), sorted
by code points; glyphs no sequence reaches (and bitmaps that are not PNG) are left out.
As a program: emoji_extract.py FONT  prints "HEX-HEX<TAB>width x height" per emoji.
"""
import sys

try:
    from fontTools.ttLib import TTFont
except ImportError:
    sys.exit("emoji_extract: the Python module fontTools is missing (Debian: python3-fonttools)")


def emoji_bitmaps(path):
    font = TTFont(path)
    if "CBDT" not in font:
        raise ValueError("%s: no CBDT table (not a colour bitmap font)" % path)
    seq = {}
    for cp, g in sorted(font.getBestCmap().items()):
        seq.setdefault(g, (cp,))
    # Ligatures may be built of glyphs that are themselves ligatures: repeat until no
    # new glyph gets a sequence.
    ligs = []
    for lk in font["GSUB"].table.LookupList.Lookup:
        if lk.LookupType != 4:
            continue
        for st in lk.SubTable:
            for first, lst in st.ligatures.items():
                for lig in lst:
                    ligs.append((lig.LigGlyph, [first] + list(lig.Component)))
    changed = True
    while changed:
        changed = False
        for out, comps in ligs:
            if out in seq or not all(c in seq for c in comps):
                continue
            seq[out] = tuple(cp for c in comps for cp in seq[c])
            changed = True
    res = {}
    for strike in font["CBDT"].strikeData:
        for g, bm in strike.items():
            if g not in seq:
                continue
            if not hasattr(bm, "imageData"):
                bm.decompile()
            data = bm.imageData
            if not data.startswith(b"\x89PNG\r\n\x1a\n"):
                continue
            s = seq[g]
            # keep the shortest sequence (one without FE0F) if two reach one glyph
            if s not in res:
                res[s] = data
    return sorted(res.items())


def main(argv):
    import io
    from PIL import Image
    for s, data in emoji_bitmaps(argv[1]):
        im = Image.open(io.BytesIO(data))
        print("%s\t%dx%d" % ("-".join("%X" % c for c in s), im.size[0], im.size[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

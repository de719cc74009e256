#!/usr/bin/env python3
"""The image-captioning set: Noto colour emoji with their CLDR names, and Tux Paint
stamps with their descriptions. Driven by scripts/build-caption-data.sh (see its
--help); needs python3-pil and python3-fonttools, and rsvg-convert for SVG stamps.

Usage: caption_build.py --font TTF --cldr DIR --stamps DIR --work DIR --out DIR
                        [--max-side PX] [--small N] [--rsvg PATH]

Writes OUT/images/*.png (RGB, alpha composited over white, fitted into max-side x
max-side, never enlarged), OUT/train.{img,en,de,ru,ja,ar} (one line per image and
English caption), OUT/{valid,test}.{img,de,ru,ja,ar} and {valid,test}.en.K (one line
per image, its K-th English reference or an empty line), OUT/sources.tsv, and
WORK/stats.tsv for the MANIFEST.
"""
import argparse
import hashlib
import io
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    from PIL import Image
except ImportError:
    sys.exit("caption_build: the Python module PIL is missing (Debian: python3-pil)")
import emoji_extract  # noqa: E402  (exits with a message without fontTools)

IMAGE_VERSION = "i1"  # change when the image processing changes
LANGS = ("de", "ru", "ja", "ar")
EN_VARIANTS = ("en", "en_001", "en_GB", "en_AU", "en_CA", "en_IN")
SKIN = set(range(0x1F3FB, 0x1F400))


def say(msg):
    print("build-caption-data: " + msg, file=sys.stderr, flush=True)


def norm(s):
    return " ".join(s.split())


def sha16(s):
    return hashlib.sha256(s.encode("utf-8")).hexdigest()[:16]


def key_of(cps):
    return tuple(c for c in cps if c != 0xFE0F)


def cldr_names(cldr, locale):
    """Emoji (code points without FE0F) -> tts name, from annotations and
    annotationsDerived of one locale (the file alone, no inheritance)."""
    names = {}
    for sub in ("annotations", "annotationsDerived"):
        p = os.path.join(cldr, sub, locale + ".xml")
        if not os.path.exists(p):
            continue
        for a in ET.parse(p).getroot().iter("annotation"):
            if a.get("type") != "tts" or not a.text:
                continue
            t = norm(a.text)
            if not t or t == "↑↑↑":
                continue
            names.setdefault(key_of(tuple(ord(c) for c in a.get("cp"))), t)
    return names


def read_stamp_txt(path):
    """English (first line) and 'xx.utf8=' translations of a Tux Paint description."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = [l.rstrip("\n") for l in fh]
    en = None
    tr = {}
    for l in lines:
        m = re.match(r"^([A-Za-z_@]+)\.utf8=(.*)$", l)
        if m:
            tr.setdefault(m.group(1), norm(m.group(2)))
        elif en is None and l.strip():
            en = norm(l)
    return en, tr


def to_rgb(im, side):
    im.load()
    if im.mode in ("P", "LA", "L", "I", "I;16") or "transparency" in im.info:
        im = im.convert("RGBA")
    if im.mode == "RGBA":
        bg = Image.new("RGBA", im.size, (255, 255, 255, 255))
        bg.alpha_composite(im)
        im = bg
    im = im.convert("RGB")
    w, h = im.size
    if max(w, h) > side:
        s = side / max(w, h)
        im = im.resize((max(1, round(w * s)), max(1, round(h * s))), Image.LANCZOS)
    return im


def save_png(im, path):
    tmp = path + ".tmp"
    im.save(tmp, format="PNG", optimize=True)
    os.replace(tmp, path)


def write_atomic(path, lines):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        fh.write("".join(l + "\n" for l in lines))
    os.replace(tmp, path)


def split_of(group):
    v = int(hashlib.sha256(group.encode("utf-8")).hexdigest()[:8], 16) % 100
    return "valid" if v < 5 else "test" if v < 10 else "train"


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--font", required=True)
    ap.add_argument("--cldr", required=True)
    ap.add_argument("--stamps", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-side", type=int, default=256)
    ap.add_argument("--small", type=int, default=0)
    ap.add_argument("--rsvg", default="rsvg-convert")
    a = ap.parse_args(argv[1:])

    items = []  # dicts: ident, group, kind, en (list), tr (lang -> text), load()
    stats = {}

    # 1. Emoji: bitmaps with an English CLDR name.
    en_names = [(loc, cldr_names(a.cldr, loc)) for loc in EN_VARIANTS]
    tr_names = {l: cldr_names(a.cldr, l) for l in LANGS}
    bitmaps = emoji_extract.emoji_bitmaps(a.font)
    stats["emoji-bitmaps"] = len(bitmaps)
    n_emoji = 0
    for cps, data in bitmaps:
        k = key_of(cps)
        refs = []
        for _, names in en_names:
            t = names.get(k)
            if t and t not in refs:
                refs.append(t)
        if not refs or not en_names[0][1].get(k):
            continue
        hexs = "-".join("%04X" % c for c in k)
        items.append({
            "ident": "emoji:" + hexs,
            "group": "emoji:" + "-".join("%04X" % c for c in k if c not in SKIN),
            "source": "fonts-noto-color-emoji U+" + hexs.replace("-", " U+"),
            "en": refs,
            "tr": {l: tr_names[l].get(k, "") for l in LANGS},
            "load": (lambda d=data: Image.open(io.BytesIO(d))),
        })
        n_emoji += 1
    stats["emoji-named"] = n_emoji

    # 2. Tux Paint stamps: a .txt description and a .png (else a .svg) beside it.
    n_stamp = 0
    n_svg = 0
    stamp_files = []
    for root, _, files in os.walk(a.stamps):
        for f in files:
            if f.endswith(".txt"):
                stamp_files.append(os.path.join(root, f))
    for txt in sorted(stamp_files):
        base = txt[:-4]
        rel = os.path.relpath(base, a.stamps)
        en, tr = read_stamp_txt(txt)
        if not en:
            continue
        refs = [en]
        for v in ("en_GB", "en_AU", "en_CA"):
            t = tr.get(v)
            if t and t not in refs:
                refs.append(t)
        if os.path.exists(base + ".png"):
            load = (lambda p=base + ".png": Image.open(p))
        elif os.path.exists(base + ".svg"):
            load = ("svg", base + ".svg")
            n_svg += 1
        else:
            continue
        items.append({
            "ident": "tuxpaint:" + rel,
            "group": "tuxpaint:" + re.sub(r"-\d+$", "", rel),
            "source": "tuxpaint-stamps-default " + rel,
            "en": refs,
            "tr": {l: tr.get(l, "") for l in LANGS},
            "load": load,
        })
        n_stamp += 1
    stats["stamps"] = n_stamp
    stats["stamps-svg"] = n_svg

    for it in items:
        it["name"] = sha16(it["ident"])
        it["split"] = split_of(it["group"])
    items.sort(key=lambda it: it["name"])
    if len(set(it["name"] for it in items)) != len(items):
        sys.exit("caption_build: sha256 prefix collision among image names")
    if a.small:
        items = items[:a.small]

    # 3. Images (cached in WORK/img-SIDE, keyed by identity and source bytes' name).
    cache = os.path.join(a.work, "img-%s-%d" % (IMAGE_VERSION, a.max_side))
    os.makedirs(cache, exist_ok=True)
    img = os.path.join(a.out, "images")
    os.makedirs(img, exist_ok=True)
    sizes = []
    for i, it in enumerate(items):
        c = os.path.join(cache, it["name"] + ".png")
        if not os.path.exists(c):
            if isinstance(it["load"], tuple):
                side = max(a.max_side, 256)
                r = subprocess.run([a.rsvg, "--keep-aspect-ratio", "-w", str(side), "-h", str(side),
                                    it["load"][1]], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                if r.returncode != 0:
                    sys.exit("caption_build: rsvg-convert failed on %s: %s" % (
                        it["load"][1], r.stderr.decode("utf-8", "replace").strip()[:200]))
                src = Image.open(io.BytesIO(r.stdout))
            else:
                src = it["load"]()
            save_png(to_rgb(src, a.max_side), c)
        with Image.open(c) as im:
            sizes.append(im.size)
        dst = os.path.join(img, it["name"] + ".png")
        with open(c, "rb") as fh:
            data = fh.read()
        if not os.path.exists(dst) or open(dst, "rb").read() != data:
            with open(dst + ".tmp", "wb") as fh:
                fh.write(data)
            os.replace(dst + ".tmp", dst)
        if (i + 1) % 500 == 0:
            say("%d/%d images" % (i + 1, len(items)))
    keep = set(it["name"] + ".png" for it in items)
    for f in os.listdir(img):
        if f not in keep:
            os.remove(os.path.join(img, f))

    # 4. Text files.
    nref = max(len(it["en"]) for it in items)
    by = {"train": [], "valid": [], "test": []}
    for it in items:
        by[it["split"]].append(it)
    out = a.out
    for f in os.listdir(out):  # reference files of an earlier build with more refs
        if re.match(r"^(valid|test)\.en\.\d+$", f) and int(f.rsplit(".", 1)[1]) >= nref:
            os.remove(os.path.join(out, f))
    tr_lines = []
    for it in by["train"]:
        for c in it["en"]:
            tr_lines.append(it)
    write_atomic(os.path.join(out, "train.img"), ["images/%s.png" % it["name"] for it in tr_lines])
    write_atomic(os.path.join(out, "train.en"),
                 [c for it in by["train"] for c in it["en"]])
    for l in LANGS:
        write_atomic(os.path.join(out, "train." + l), [it["tr"][l] for it in tr_lines])
    for s in ("valid", "test"):
        write_atomic(os.path.join(out, s + ".img"), ["images/%s.png" % it["name"] for it in by[s]])
        for k in range(nref):
            write_atomic(os.path.join(out, "%s.en.%d" % (s, k)),
                         [it["en"][k] if k < len(it["en"]) else "" for it in by[s]])
        for l in LANGS:
            write_atomic(os.path.join(out, "%s.%s" % (s, l)), [it["tr"][l] for it in by[s]])
    write_atomic(os.path.join(out, "sources.tsv"),
                 ["%s\t%s\t%s" % (it["name"], it["split"], it["source"]) for it in items])

    # 5. Stats.
    def q(v, p):
        v = sorted(v)
        return v[min(len(v) - 1, int(p * len(v)))]
    st = ["%s\t%d" % kv for kv in sorted(stats.items())]
    st.append("images\t%d" % len(items))
    st.append("images-emoji\t%d" % sum(1 for it in items if it["ident"].startswith("emoji:")))
    st.append("images-stamps\t%d" % sum(1 for it in items if it["ident"].startswith("tuxpaint:")))
    st.append("captions\t%d" % sum(len(it["en"]) for it in items))
    st.append("refs\t%d" % nref)
    for s in ("train", "valid", "test"):
        st.append("split-%s\t%d\t%d" % (s, len(by[s]), sum(len(it["en"]) for it in by[s])))
    for l in LANGS:
        st.append("lang-%s\t%d" % (l, sum(1 for it in items if it["tr"][l])))
    words = [len(c.split()) for it in items for c in it["en"]]
    st.append("words\t%d\t%d\t%d\t%d" % (min(words), q(words, 0.5), q(words, 0.95), max(words)))
    st.append("words-mean\t%.1f" % (sum(words) / len(words)))
    ws = [w for w, _ in sizes]
    hs = [h for _, h in sizes]
    st.append("width\t%d\t%d\t%d\t%d" % (min(ws), q(ws, 0.5), q(ws, 0.95), max(ws)))
    st.append("height\t%d\t%d\t%d\t%d" % (min(hs), q(hs, 0.5), q(hs, 0.95), max(hs)))
    write_atomic(os.path.join(a.work, "stats.tsv"), st)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

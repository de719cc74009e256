#!/usr/bin/python3
"""Independent PyTorch reference of intrus's models, for tests/test_reference.c.

Run by hand (never by the tests), from the top of a configured and built tree:

    make -j2
    /usr/bin/python3 scripts/reference/torch_reference.py

which
  1. trains the two tiny models of tests/data/reference with intrus itself, in a
     temporary directory:
         ./intrus train tests/data/reference/intrus-tiny.cfg -o TMP/intrus-tiny -q
         ./intrus train tests/data/reference/ar-tiny.cfg -o TMP/ar-tiny -q
  2. copies their final checkpoints, parameters only (the Adam moments and the training
     counters dropped, the checksum recomputed), to tests/data/reference/intrus-tiny.ckpt
     and tests/data/reference/ar-tiny.ckpt;
  3. reads those checkpoints back, runs the reference below on hand-picked sentences
     and states, and writes tests/data/reference/insertion.txt and
     tests/data/reference/autoregressive.txt.
With --no-train it skips 1 and 2 and recomputes the fixtures from the checkpoints
already in tests/data/reference.

The reference is written from the specification (DESIGN.md section 4, docs/intrus.md)
and the plugins' documented structure, not from intrus's code paths: plain float64
PyTorch, one sentence at a time (no padding, no packing, no caches), autograd for the
gradients, and the correct insertions by brute force from their definition.

  encoder   x = embed[src] * sqrt(d) + PE; per layer (pre-norm):
            x += SelfAttn(LN(x)); x += FFN(LN(x)); memory = LN_final(x)
  insertion input [NULL(=BOS), y1..yk, EOS], positions 0..k+1, no mask; per layer:
            x += SelfAttn(LN(x)); x += CrossAttn(LN(x), memory); x += FFN(LN(x));
            h = LN_final(x); log p(pos) = log_softmax_rows(h out_pos) over the k+2 rows;
            log p(c | slot i) = log_softmax_V(h_i out_token), i = 0..k;
            log p(i, c) = log p(pos=i) + log p(c | i); log p(finish) = log p(pos=k+1)
            main    L = -log sum_{(i,c) in ref} p(i, c)
            uniform L = -(1/|ref|) sum_{(i,c) in ref} log p(i, c)
            complete state: L = -log p(finish)
  autoregressive  input [BOS, y1..yn], gold [y1..yn, EOS], causal self-attention;
            logits = LN_final(x) proj.w (no bias); per token
            L = (1 - s) (-log p(gold)) + s mean_v(-log p(v)); batch loss = mean over all
            tokens (EOS included) of the batch; r2l reads and predicts the reversed target.
  LN: biased variance, eps 1e-5. Linear: y = x W + b, W stored [in, out]. Attention:
  heads are column blocks of width d/H, scores scaled by 1/sqrt(d/H). FFN: ReLU.
  PE[t, 2i] = sin(t / 10000^(2i/d)), PE[t, 2i+1] = cos(t / 10000^(2i/d)).
"""

import argparse
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import torch

torch.set_default_dtype(torch.float64)

BOS, EOS, NUM_SPECIAL = 2, 3, 4
LN_EPS = 1e-5
SMOOTHING = 0.1

# ---- checkpoints (include/intrus/checkpoint.h) -------------------------------------

MAGIC = b"INTRUSCK"
FNV_INIT, FNV_PRIME, MASK64 = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def fnv1a(data):
    h = FNV_INIT
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & MASK64
    return h


def read_checkpoint(path):
    """(fingerprint, [(name, ('tensor', shape, list of floats) | ('u64', value))])."""
    buf = open(path, "rb").read()
    if buf[:8] != MAGIC:
        sys.exit(f"{path}: not an intrus checkpoint")
    version, fingerprint, count = struct.unpack_from("<IQI", buf, 8)
    if version != 1:
        sys.exit(f"{path}: checkpoint version {version}, this script reads 1")
    (stored,) = struct.unpack_from("<Q", buf, len(buf) - 8)
    if stored != fnv1a(buf[:-8]):
        sys.exit(f"{path}: checksum mismatch")
    at, records = 24, []
    for _ in range(count):
        rtype, nlen = struct.unpack_from("<BI", buf, at)
        at += 5
        name = buf[at:at + nlen].decode()
        at += nlen
        if rtype == 1:
            (ndim,) = struct.unpack_from("<I", buf, at)
            shape = list(struct.unpack_from(f"<{ndim}I", buf, at + 4))
            at += 4 + 4 * ndim
            n = math.prod(shape)
            data = list(struct.unpack_from(f"<{n}f", buf, at))
            at += 4 * n
            records.append((name, ("tensor", shape, data)))
        elif rtype == 2:
            (value,) = struct.unpack_from("<Q", buf, at)
            at += 8
            records.append((name, ("u64", value)))
        else:
            sys.exit(f"{path}: record {name} of unknown type {rtype}")
    if at != len(buf) - 8:
        sys.exit(f"{path}: {len(buf) - 8 - at} bytes after the last record")
    return fingerprint, records


def write_checkpoint(path, fingerprint, records):
    out = bytearray(MAGIC + struct.pack("<IQI", 1, fingerprint, len(records)))
    for name, rec in records:
        nb = name.encode()
        if rec[0] == "tensor":
            _, shape, data = rec
            out += struct.pack("<BI", 1, len(nb)) + nb
            out += struct.pack(f"<I{len(shape)}I", len(shape), *shape)
            out += struct.pack(f"<{len(data)}f", *data)
        else:
            out += struct.pack("<BI", 2, len(nb)) + nb + struct.pack("<Q", rec[1])
    out += struct.pack("<Q", fnv1a(bytes(out)))
    with open(path, "wb") as f:
        f.write(out)


def strip_checkpoint(src, dst):
    """The parameters of a training checkpoint ("param/<name>") and nothing else."""
    fingerprint, records = read_checkpoint(src)
    write_checkpoint(dst, fingerprint, [r for r in records if r[0].startswith("param/")])


def load_params(path):
    """name -> float64 leaf tensor requiring grad, in checkpoint order."""
    _, records = read_checkpoint(path)
    params = {}
    for name, rec in records:
        if name.startswith("param/") and rec[0] == "tensor":
            t = torch.tensor(rec[2], dtype=torch.float64).reshape(rec[1])
            params[name[len("param/"):]] = t.requires_grad_(True)
    return params


# ---- the model, from the specification ------------------------------------------


def positions(T, d):
    pe = torch.zeros(T, d)
    for t in range(T):
        for i in range(0, d, 2):
            angle = t * math.exp(-math.log(10000.0) * i / d)
            pe[t, i] = math.sin(angle)
            if i + 1 < d:
                pe[t, i + 1] = math.cos(angle)
    return pe


class Model:
    def __init__(self, params, heads):
        self.p = params
        self.heads = heads
        self.d = params["encoder.embed"].shape[1]
        self.enc_layers = self.count_layers("encoder.")
        self.dec_layers = self.count_layers("decoder.")

    def count_layers(self, prefix):
        n = 0
        while f"{prefix}layer{n}.ffn.in.w" in self.p:
            n += 1
        return n

    def linear(self, name, x):
        y = x @ self.p[name + ".w"]
        b = self.p.get(name + ".b")
        return y if b is None else y + b

    def norm(self, name, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        xhat = (x - mean) / torch.sqrt(var + LN_EPS)
        return xhat * self.p[name + ".gain"] + self.p[name + ".bias"]

    def attention(self, name, xq, xkv, causal):
        Tq, Tk, H = xq.shape[0], xkv.shape[0], self.heads
        Dh = self.d // H
        q = self.linear(name + ".q", xq).reshape(Tq, H, Dh).transpose(0, 1)
        k = self.linear(name + ".k", xkv).reshape(Tk, H, Dh).transpose(0, 1)
        v = self.linear(name + ".v", xkv).reshape(Tk, H, Dh).transpose(0, 1)
        scores = q @ k.transpose(1, 2) / math.sqrt(Dh)  # [H, Tq, Tk]
        if causal:
            future = torch.triu(torch.ones(Tq, Tk, dtype=torch.bool), diagonal=1)
            scores = scores.masked_fill(future, float("-inf"))
        att = torch.softmax(scores, dim=-1) @ v  # [H, Tq, Dh]
        return self.linear(name + ".o", att.transpose(0, 1).reshape(Tq, self.d))

    def ffn(self, name, x):
        return self.linear(name + ".out", torch.relu(self.linear(name + ".in", x)))

    def embed(self, table, ids):
        return self.p[table][torch.tensor(ids)] * math.sqrt(self.d) + positions(len(ids), self.d)

    def encode(self, src):
        x = self.embed("encoder.embed", src)
        for i in range(self.enc_layers):
            n = f"encoder.layer{i}"
            h = self.norm(n + ".norm_attn", x)
            x = x + self.attention(n + ".attn", h, h, False)
            x = x + self.ffn(n + ".ffn", self.norm(n + ".norm_ffn", x))
        return self.norm("encoder.final_norm", x)

    def decode(self, ids, memory, causal):
        x = self.embed("decoder.embed", ids)
        for i in range(self.dec_layers):
            n = f"decoder.layer{i}"
            h = self.norm(n + ".norm_self", x)
            x = x + self.attention(n + ".self", h, h, causal)
            x = x + self.attention(n + ".cross", self.norm(n + ".norm_cross", x), memory, False)
            x = x + self.ffn(n + ".ffn", self.norm(n + ".norm_ffn", x))
        return self.norm("decoder.final_norm", x)

    # insertion: (log p(pos) [k+2], log p(c | slot) [k+1, V])
    def insertion(self, memory, part):
        h = self.decode([BOS] + list(part) + [EOS], memory, causal=False)
        pos = torch.log_softmax((h @ self.p["decoder.out_pos"]).reshape(-1), dim=0)
        tok = torch.log_softmax(h[: len(part) + 1] @ self.p["decoder.out_token"], dim=-1)
        return pos, tok

    # autoregressive: log p(. | prefix) [n+1, V] for target y read in the given order
    def autoregressive(self, memory, y):
        h = self.decode([BOS] + list(y), memory, causal=True)
        return torch.log_softmax(h @ self.p["decoder.proj.w"], dim=-1)


# ---- correct insertions, from the definition -----------------------------------


def is_subsequence(a, y):
    it = iter(y)
    return all(any(t == u for u in it) for t in a)


def correct_brute(y, part):
    """Every (slot, token) whose insertion keeps part a subsequence of y, each pair once,
    slot-major, tokens in order of first occurrence in y; [] when part == y."""
    assert is_subsequence(part, y)
    pairs = []
    for i in range(len(part) + 1):
        seen = []
        for c in y:
            if c not in seen and is_subsequence(part[:i] + [c] + part[i:], y):
                seen.append(c)
        pairs += [(i, c) for c in seen]
    return pairs


def state_losses(pos, tok, pairs):
    """(main, uniform) losses of one state as tensors."""
    if not pairs:
        finish = pos[-1]
        return -finish, -finish
    lp = torch.stack([pos[i] + tok[i, c] for i, c in pairs])
    return -torch.logsumexp(lp, dim=0), -lp.mean()


# ---- the hand-picked cases --------------------------------------------------------
# Real tokens are 4..11 (vocab 12, ids 0..3 special). Sources equal targets (the copy
# task the models were trained on) except where noted.

A = [5, 6, 5, 5, 7]              # "a b a a c": a token repeated, twice in one gap
B = [4, 8, 9, 10, 11, 6]         # six distinct tokens: long gaps
C = [9, 9, 9]                    # one token only, source longer than the target

INS_SENTENCES = [(A, A), (B, B), ([9, 4, 9, 11], C)]
INS_STATES = [  # (sentence, partial output)
    (0, []),                     # empty output
    (0, [6, 5]),                 # middle state: slots 0, 1, 2 take {5}, {5}, {5, 7}
    (0, [5, 7]),                 # "b a a" in one gap: slots 0 and 1 take {5, 6}, each once
    (0, [5, 5, 5]),              # repeated tokens in the partial output itself
    (0, A),                      # complete: only finish
    (1, []),
    (1, [11]),                   # a long gap before the only token
    (1, [4, 9, 6]),
    (1, B),
    (2, [9]),                    # every slot takes the same token
    (2, C),
]

AR_SENTENCES = [(A, A), (B, B), ([9, 4, 9, 11], C), ([10, 7], [7])]


def write_values(f, head, values, digits=9):
    f.write(head + " " + " ".join(f"{float(v):.{digits}g}" for v in values) + "\n")


def write_grads(f, kind, params, loss):
    grads = torch.autograd.grad(loss, list(params.values()), retain_graph=True,
                                allow_unused=True)
    for (name, p), g in zip(params.items(), grads):
        g = torch.zeros_like(p) if g is None else g
        # 7 significant digits: rounding 5e-7 relative, far below the test's 1e-4
        write_values(f, f"grad {kind} {name} {p.numel()}", g.reshape(-1).tolist(), digits=7)


def insertion_fixture(ckpt, path):
    params = load_params(ckpt)
    model = Model(params, heads=2)
    V = params["decoder.out_token"].shape[1]
    with open(path, "w") as f:
        f.write("# Made by scripts/reference/torch_reference.py from intrus-tiny.ckpt "
                "(float64 PyTorch reference); do not edit.\n")
        f.write(f"model intrus-tiny.cfg intrus-tiny.ckpt\nvocab {V}\n")
        for b, (src, tgt) in enumerate(INS_SENTENCES):
            f.write(f"sentence {b} {len(src)} {' '.join(map(str, src))} {len(tgt)} "
                    f"{' '.join(map(str, tgt))}\n")
        memories = [model.encode(src) for src, _ in INS_SENTENCES]
        mains, uniforms = [], []
        for s, (b, part) in enumerate(INS_STATES):
            tgt = INS_SENTENCES[b][1]
            pos, tok = model.insertion(memories[b], part)
            pairs = correct_brute(tgt, part)
            main, uniform = state_losses(pos, tok, pairs)
            mains.append(main)
            uniforms.append(uniform)
            f.write(f"state {s} {b} {len(part)} {' '.join(map(str, part))}\n")
            write_values(f, f"pos {s} {len(part) + 2}", pos.tolist())
            write_values(f, f"finish {s}", [pos[-1].item()])
            for i in range(len(part) + 1):
                write_values(f, f"tok {s} {i} {V}", tok[i].tolist())
            f.write(f"ref {s} {len(pairs)} " + " ".join(f"{i} {c}" for i, c in pairs) + "\n")
            write_values(f, f"loss {s}", [main.item(), uniform.item()])
        main_mean, uniform_mean = torch.stack(mains).mean(), torch.stack(uniforms).mean()
        write_values(f, "mean", [main_mean.item(), uniform_mean.item()])
        trajectory_chosen = []
        # The training loss of the batch of all sentences under the l2r / r2l order
        # policies, every state of each trajectory (prefixes / suffixes of the target):
        # main and uniform, and loss = "chosen", the order's own insertion only (the
        # next token at the end / the previous one at the front; finish when complete).
        for order in ("l2r", "r2l"):
            losses, chosen = [], []
            for (src, tgt), mem in zip(INS_SENTENCES, memories):
                n = len(tgt)
                for k in range(n + 1):
                    part = tgt[:k] if order == "l2r" else tgt[n - k:]
                    pos, tok = model.insertion(mem, part)
                    losses.append(state_losses(pos, tok, correct_brute(tgt, part)))
                    if k == n:
                        chosen.append(-pos[-1])
                    else:
                        i, c = (k, tgt[k]) if order == "l2r" else (0, tgt[n - k - 1])
                        chosen.append(-(pos[i] + tok[i, c]))
            write_values(f, f"trajectory {order}",
                         [torch.stack([m for m, _ in losses]).mean().item(),
                          torch.stack([u for _, u in losses]).mean().item()])
            trajectory_chosen.append((order, torch.stack(chosen).mean().item()))
        for order, value in trajectory_chosen:
            write_values(f, f"chosen {order}", [value])
        write_grads(f, "main", params, main_mean)
        write_grads(f, "uniform", params, uniform_mean)


def ar_batch_loss(model, memories, smoothing, reverse):
    total, count = 0.0, 0
    for (src, tgt), mem in zip(AR_SENTENCES, memories):
        y = list(reversed(tgt)) if reverse else list(tgt)
        logp = model.autoregressive(mem, y)
        gold = torch.tensor(y + [EOS])
        nll = -logp[torch.arange(len(gold)), gold]
        per = (1 - smoothing) * nll + smoothing * (-logp.mean(dim=-1))
        # the formula above is PyTorch's own label smoothing
        torch_ce = torch.nn.functional.cross_entropy(logp, gold, reduction="sum",
                                                     label_smoothing=smoothing)
        assert torch.allclose(per.sum(), torch_ce, rtol=1e-12, atol=0)
        total = total + per.sum()
        count += len(gold)
    return total / count


def ar_fixture(ckpt, path):
    params = load_params(ckpt)
    model = Model(params, heads=2)
    V = params["decoder.proj.w"].shape[1]
    with open(path, "w") as f:
        f.write("# Made by scripts/reference/torch_reference.py from ar-tiny.ckpt "
                "(float64 PyTorch reference); do not edit.\n")
        f.write(f"model ar-tiny.cfg ar-tiny.ckpt\nvocab {V}\nsmoothing {SMOOTHING}\n")
        memories = [model.encode(src) for src, _ in AR_SENTENCES]
        for b, (src, tgt) in enumerate(AR_SENTENCES):
            f.write(f"sentence {b} {len(src)} {' '.join(map(str, src))} {len(tgt)} "
                    f"{' '.join(map(str, tgt))}\n")
            logp = model.autoregressive(memories[b], tgt)
            for t in range(len(tgt) + 1):
                write_values(f, f"logp {b} {t} {V}", logp[t].tolist())
            gold = tgt + [EOS]
            nll = [-logp[t, g].item() for t, g in enumerate(gold)]
            smooth = [-logp[t].mean().item() for t in range(len(gold))]
            sl = [(1 - SMOOTHING) * a + SMOOTHING * c for a, c in zip(nll, smooth)]
            write_values(f, f"sent_loss {b}", [sum(nll) / len(nll), sum(sl) / len(sl)])
        losses = {}
        for direction, reverse in (("l2r", False), ("r2l", True)):
            for smoothing in (0.0, SMOOTHING):
                losses[direction, smoothing] = ar_batch_loss(model, memories, smoothing, reverse)
            write_values(f, f"batch_loss {direction}",
                         [losses[direction, 0.0].item(), losses[direction, SMOOTHING].item()])
        write_grads(f, "plain", params, losses["l2r", 0.0])
        write_grads(f, "smoothed", params, losses["l2r", SMOOTHING])


def main():
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--intrus", default=os.path.join(top, "intrus"), help="the built binary")
    ap.add_argument("--out", default=os.path.join(top, "tests", "data", "reference"))
    ap.add_argument("--no-train", action="store_true",
                    help="reuse the checkpoints already in --out")
    args = ap.parse_args()
    models = (("intrus-tiny", insertion_fixture, "insertion.txt"),
              ("ar-tiny", ar_fixture, "autoregressive.txt"))
    if not args.no_train:
        work = tempfile.mkdtemp(prefix="intrus-reference-")
        try:
            for name, _, _ in models:
                run = os.path.join(work, name)
                subprocess.run([args.intrus, "train", os.path.join(args.out, name + ".cfg"),
                                "-o", run, "-q"], check=True)
                strip_checkpoint(os.path.join(run, "checkpoint.ckpt"),
                                 os.path.join(args.out, name + ".ckpt"))
        finally:
            shutil.rmtree(work)
    for name, make, fixture in models:
        make(os.path.join(args.out, name + ".ckpt"), os.path.join(args.out, fixture))
        print(f"wrote {os.path.join(args.out, fixture)} from {name}.ckpt")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""PyTorch reference ("peer") of intrus's benchmark workloads, to put beside the C numbers.

    peer.py train-base [steps] [B L]     bench_train (a) / bench_intrus (a) "left-to-right"
    peer.py train-intrus [steps] [random|sampled|both]
                                         bench_intrus (a) "INTRUS random order" / "sampled"
    peer.py decode BATCH BEAM L          bench_intrus b BATCH BEAM L
    peer.py decode-table                 bench_intrus b (the whole table)
    peer.py check                        the batched float32 model against the float64
                                         per-sentence reference scripts/reference/torch_reference.py

The model is the one intrus builds and scripts/reference/torch_reference.py specifies:
pre-norm Transformer, sinusoidal positions added to embed * sqrt(d), LN (biased variance,
eps 1e-5) before every sublayer and a final LN, ReLU feed-forward, biases on every
attention / feed-forward projection, untied weights everywhere (encoder.embed,
decoder.embed and the output layer are three tables, as in the C model whose
tie_embeddings defaults to false). Baseline output decoder.proj.w [d, V] without bias;
insertion output decoder.out_token [d, V] and decoder.out_pos [d, 1] (the column V of
the d -> V+1 output layer). Dropout where the C engine puts it: after the embedding,
on the attention weights, after every sublayer, and on the feed-forward hidden layer.
Initialisation as the C model: embeddings N(0, 1/d), weights Glorot-uniform, biases 0,
LN gain 1; the numbers differ (another generator), the distributions do not.

Float32 and batched: sentences, states and hypotheses are processed together, the linear
layers on packed rows (no padding); see the comments at each place where the work
differs from the C code's. Environment: PEER_THREADS (default 2: torch and OpenBLAS
threads), PEER_WARMUP (default 2 warm-up steps / untimed batches), PEER_BATCH / PEER_LEN
(the training batch, default 200 x 20; for quick trials only), PEER_DROPOUT=rand (dropout
masks from rand_like instead of F.dropout; default: F.dropout, what a PyTorch model uses).
Like the C benchmarks, it runs itself again with OPENBLAS_CORETYPE set when OpenBLAS
falls back to an old core (see restart_better).
"""

import ctypes
import math
import os
import sys
import time
import warnings

import torch
import torch.nn.functional as F

PAD, UNK, BOS, EOS, NUM_SPECIAL = 0, 1, 2, 3, 4
LN_EPS = 1e-5
F32 = torch.float32
NEG = float("-inf")
# PEER_DROPOUT=rand: dropout masks from torch.rand_like instead of F.dropout (see drop()).
FAST_DROPOUT = os.environ.get("PEER_DROPOUT", "") == "rand"
warnings.filterwarnings("ignore", message="scatter_reduce")  # "in beta" (torch 1.13)

# ---- environment ---------------------------------------------------------------------


def openblas():
    """The OpenBLAS library PyTorch calls (Debian: through libblas.so.3), or None."""
    torch.ones(8, 8) @ torch.ones(8, 8)  # make sure it is loaded
    try:
        for line in open("/proc/self/maps"):
            path = line.split()[-1]
            if "libopenblas" in path:
                return ctypes.CDLL(path)
    except OSError:
        pass
    return None


# The cores OpenBLAS's dynamic build falls back to when it does not know the CPU's model
# (0.3.21 on these VMs' Xeons: "Prescott", SSE3 kernels at a third of the speed).
FALLBACK_CORES = {"prescott", "core2", "penryn", "dunnington", "nehalem", "katmai",
                  "coppermine", "northwood", "banias", "atom"}


def restart_better(lib):
    """As intrus_blas_restart_better (core/tensor/blas.c), which every C bench calls first:
    when OpenBLAS fell back to an old core, run again with OPENBLAS_CORETYPE naming the
    best core the CPU supports (SkylakeX with AVX-512, else Haswell with AVX2 + FMA)."""
    if lib is None or os.environ.get("OPENBLAS_CORETYPE") or os.environ.get("PEER_BLAS_RESTARTED"):
        return
    lib.openblas_get_corename.restype = ctypes.c_char_p
    if lib.openblas_get_corename().decode().lower() not in FALLBACK_CORES:
        return
    flags = set()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        return
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        better = "SkylakeX"
    elif {"avx2", "fma"} <= flags:
        better = "Haswell"
    else:
        return
    os.environ["OPENBLAS_CORETYPE"] = better
    os.environ["PEER_BLAS_RESTARTED"] = lib.openblas_get_corename().decode()
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable] + sys.argv)


def setup_threads():
    n = int(os.environ.get("PEER_THREADS", 2))
    torch.set_num_threads(n)
    lib = openblas()
    restart_better(lib)
    core = "?"
    if lib is not None:
        # PyTorch's set_num_threads sets its OpenMP pool only; the pthreads OpenBLAS of
        # Debian keeps its own count (all cores unless told): use the same number.
        lib.openblas_set_num_threads(ctypes.c_int(n))
        lib.openblas_get_corename.restype = ctypes.c_char_p
        core = lib.openblas_get_corename().decode()
    return core


def header(mode):
    core = setup_threads()
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    env = " ".join(f"{k}={os.environ.get(k, 'unset')}"
                   for k in ("OPENBLAS_CORETYPE", "OMP_WAIT_POLICY", "LD_PRELOAD"))
    if os.environ.get("PEER_BLAS_RESTARTED"):
        env += f" (restarted: OpenBLAS chose {os.environ['PEER_BLAS_RESTARTED']})"
    print(f"peer {mode}: torch {torch.__version__} threads {torch.get_num_threads()} "
          f"openblas-core {core} {env} cpu {cpu}", flush=True)


# ---- the model ------------------------------------------------------------------------

_PE = {}


def positions(T, d):
    """PE[t, 2i] = sin(t / 10000^(2i/d)), PE[t, 2i+1] = cos(...), computed in double as the
    C engine does, then float32."""
    key = d
    if key not in _PE or _PE[key].shape[0] < T:
        n = max(T, 256)
        t = torch.arange(n, dtype=torch.float64)[:, None]
        i = torch.arange(0, d, 2, dtype=torch.float64)
        ang = t * torch.exp(-math.log(10000.0) * i / d)
        pe = torch.zeros(n, d, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(ang)
        pe[:, 1::2] = torch.cos(ang)[:, : d // 2]
        _PE[key] = pe.to(F32)
    return _PE[key][:T]


class Model:
    """kind "ar" (the left-to-right baseline) or "ins" (INTRUS). Parameters are a dict
    named as the C model's (and torch_reference.py's), W stored [in, out]."""

    def __init__(self, kind, d, heads, ff, enc_layers, dec_layers, src_vocab, tgt_vocab,
                 dropout=0.1, seed=1):
        self.kind, self.d, self.H, self.ff = kind, d, heads, ff
        self.Dh = d // heads
        self.enc_layers, self.dec_layers = enc_layers, dec_layers
        self.V = tgt_vocab
        self.dropout = dropout
        g = torch.Generator().manual_seed(seed)
        p = {}

        def normal(name, shape, std):
            p[name] = torch.randn(*shape, generator=g, dtype=F32) * std

        def glorot(name, shape):
            a = math.sqrt(6.0 / (shape[0] + shape[-1]))
            p[name] = (torch.rand(*shape, generator=g, dtype=F32) * 2 - 1) * a

        def linear(name, i, o, bias=True):
            glorot(name + ".w", (i, o))
            if bias:
                p[name + ".b"] = torch.zeros(o, dtype=F32)

        def norm(name):
            p[name + ".gain"] = torch.ones(d, dtype=F32)
            p[name + ".bias"] = torch.zeros(d, dtype=F32)

        def attn(name):
            for x in "qkvo":
                linear(f"{name}.{x}", d, d)

        def ffn(name):
            linear(name + ".in", d, ff)
            linear(name + ".out", ff, d)

        normal("encoder.embed", (src_vocab, d), 1.0 / math.sqrt(d))
        for i in range(enc_layers):
            n = f"encoder.layer{i}"
            norm(n + ".norm_attn"), attn(n + ".attn"), norm(n + ".norm_ffn"), ffn(n + ".ffn")
        norm("encoder.final_norm")
        normal("decoder.embed", (tgt_vocab, d), 1.0 / math.sqrt(d))
        for i in range(dec_layers):
            n = f"decoder.layer{i}"
            norm(n + ".norm_self"), attn(n + ".self"), norm(n + ".norm_cross")
            attn(n + ".cross"), norm(n + ".norm_ffn"), ffn(n + ".ffn")
        norm("decoder.final_norm")
        if kind == "ar":
            linear("decoder.proj", d, tgt_vocab, bias=False)
        else:
            glorot("decoder.out_token", (d, tgt_vocab))
            glorot("decoder.out_pos", (d, 1))
        self.p = p
        for t in p.values():
            t.requires_grad_(True)
        self._fused = None

    def parameters(self):
        return list(self.p.values())

    # Fused projections: q/k/v of a self-attention in one GEMM, k/v of a cross-attention
    # in one (the C engine also packs them). Rebuilt every training step (a copy of
    # 3 d^2 floats a layer, through which the gradients flow); kept while decoding.
    def fused(self, name, parts):
        if self._fused is not None and (name, parts) in self._fused:
            return self._fused[name, parts]
        w = torch.cat([self.p[f"{name}.{x}.w"] for x in parts], 1)
        b = torch.cat([self.p[f"{name}.{x}.b"] for x in parts], 0)
        if self._fused is not None:
            self._fused[name, parts] = (w, b)
        return w, b

    def freeze_fused(self, on):
        """While decoding (no gradients): build each fused weight once."""
        self._fused = {} if on else None

    def lin(self, name, x):
        b = self.p.get(name + ".b")
        return torch.addmm(b, x, self.p[name + ".w"]) if b is not None else x @ self.p[name + ".w"]

    def norm(self, name, x):
        return F.layer_norm(x, (self.d,), self.p[name + ".gain"], self.p[name + ".bias"], LN_EPS)

    def drop(self, x, train):
        if not train or self.dropout <= 0:
            return x
        if FAST_DROPOUT:
            # Same Bernoulli(1 - p) mask and 1/(1-p) scale, drawn with rand_like (about
            # 2.5x faster than the bernoulli_ of F.dropout on this MKL-less build).
            return x * (torch.rand_like(x) >= self.dropout) * (1.0 / (1.0 - self.dropout))
        return F.dropout(x, self.dropout, True)

    def embed(self, table, ids, pos, train):
        """ids, pos: [N] -> [N, d] = embed[ids] * sqrt(d) + PE[pos], dropout."""
        x = F.embedding(ids, self.p[table]) * math.sqrt(self.d)
        x = x + positions(int(pos.max()) + 1, self.d)[pos]
        return self.drop(x, train)

    def heads(self, x, G, T):
        """[G*T, d] -> [G, H, T, Dh]."""
        return x.view(G, T, self.H, self.Dh).transpose(1, 2)

    def merge(self, a):
        """[G, H, T, Dh] -> [G*T, d]."""
        G, H, T, Dh = a.shape
        return a.transpose(1, 2).reshape(G * T, H * Dh)

    def attend(self, q, k, v, mask, train):
        """q [G,H,Tq,Dh], k/v [G,H,Tk,Dh], mask additive (broadcast to [G,H,Tq,Tk])."""
        s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.Dh))
        if mask is not None:
            s = s + mask
        a = torch.softmax(s, -1)
        return torch.matmul(self.drop(a, train), v)

    def self_attn_qkv(self, name, h):
        w, b = self.fused(name, ("q", "k", "v"))
        return torch.addmm(b, h, w)  # [N, 3d]

    def split_qkv(self, qkv, G, T):
        t = qkv.view(G, T, 3, self.H, self.Dh).permute(2, 0, 3, 1, 4)
        return t[0], t[1], t[2]

    # -- encoder ----------------------------------------------------------------------
    def encode(self, src, src_lens, train):
        """src [B, S] -> memory [B*S, d] and the additive key mask [B,1,1,S] (None when
        no source is padded)."""
        B, S = src.shape
        pos = torch.arange(S).repeat(B)
        x = self.embed("encoder.embed", src.reshape(-1), pos, train)
        mask = None
        if src_lens is not None and bool((src_lens < S).any()):
            pad = torch.arange(S)[None, :] >= src_lens[:, None]
            mask = torch.zeros(B, 1, 1, S, dtype=F32).masked_fill(pad[:, None, None, :], NEG)
        for i in range(self.enc_layers):
            n = f"encoder.layer{i}"
            h = self.norm(n + ".norm_attn", x)
            q, k, v = self.split_qkv(self.self_attn_qkv(n + ".attn", h), B, S)
            a = self.lin(n + ".attn.o", self.merge(self.attend(q, k, v, mask, train)))
            x = x + self.drop(a, train)
            h = self.norm(n + ".norm_ffn", x)
            f = self.lin(n + ".ffn.out", self.drop(torch.relu(self.lin(n + ".ffn.in", h)), train))
            x = x + self.drop(f, train)
        return self.norm("encoder.final_norm", x), mask

    def memory_kv(self, mem, B, S):
        """Every decoder layer's cross-attention keys and values of the memory, once per
        sentence: [(k, v)] each [B, H, S, Dh]."""
        out = []
        for i in range(self.dec_layers):
            w, b = self.fused(f"decoder.layer{i}.cross", ("k", "v"))
            kv = torch.addmm(b, mem, w).view(B, S, 2, self.H, self.Dh).permute(2, 0, 3, 1, 4)
            out.append((kv[0], kv[1]))
        return out

    # -- decoder over packed rows -------------------------------------------------------
    def decode_rows(self, x, groups, memkv, mmask, train, causal=None):
        """x [N, d] packed rows. groups: (r0, G, T, per, sidx): rows r0 .. r0+G*T hold G
        sequences of T rows each (self-attention within a sequence); the sequences come
        in blocks of `per` that read the same memory sentence, sidx[block] (None: block
        b reads sentence b). causal: an additive [T, T] mask (one group only) or None."""
        for i in range(self.dec_layers):
            n = f"decoder.layer{i}"
            h = self.norm(n + ".norm_self", x)
            qkv = self.self_attn_qkv(n + ".self", h)
            outs = []
            for r0, G, T, per, sidx in groups:
                q, k, v = self.split_qkv(qkv[r0:r0 + G * T], G, T)
                outs.append(self.merge(self.attend(q, k, v, causal, train)))
            a = outs[0] if len(outs) == 1 else torch.cat(outs, 0)
            x = x + self.drop(self.lin(n + ".self.o", a), train)
            h = self.norm(n + ".norm_cross", x)
            qc = self.lin(n + ".cross.q", h)
            mk, mv = memkv[i]
            outs = []
            for r0, G, T, per, sidx in groups:
                nb = G // per
                k, v, m = mk, mv, mmask
                if sidx is not None:  # a subset of the sentences: gather their memory
                    k, v = mk[sidx], mv[sidx]
                    m = None if mmask is None else mmask[sidx]
                # Every row of a block reads the same memory: [blocks, H, per*T, Dh].
                q = self.heads(qc[r0:r0 + G * T], nb, per * T)
                outs.append(self.merge(self.attend(q, k, v, m, train)))
            a = outs[0] if len(outs) == 1 else torch.cat(outs, 0)
            x = x + self.drop(self.lin(n + ".cross.o", a), train)
            h = self.norm(n + ".norm_ffn", x)
            f = self.lin(n + ".ffn.out", self.drop(torch.relu(self.lin(n + ".ffn.in", h)), train))
            x = x + self.drop(f, train)
        return self.norm("decoder.final_norm", x)


def make_model(kind, seed=1, V=8000, d=256, heads=4, ff=1024, layers=3, dropout=0.1):
    return Model(kind, d, heads, ff, layers, layers, V, V, dropout, seed)


# ---- the left-to-right baseline: loss ----------------------------------------------------


def ar_loss(model, src, src_lens, tgt, tgt_lens, smoothing, train):
    """Teacher-forced loss: input [BOS, y], gold [y, EOS], causal self-attention, label
    smoothing as PyTorch's (the C engine's is the same formula), mean over all real
    tokens (EOS included). tgt [B, n] padded with PAD. Returns (loss, tokens)."""
    B, n = tgt.shape
    T = n + 1
    S = src.shape[1]
    mem, mmask = model.encode(src, src_lens, train)
    memkv = model.memory_kv(mem, B, S)
    inp = torch.cat([torch.full((B, 1), BOS), tgt], 1)
    ar = torch.arange(T)[None, :]
    inp = inp.masked_fill(ar > tgt_lens[:, None], PAD)
    gold = torch.cat([tgt, torch.full((B, 1), PAD)], 1)
    gold = gold.masked_fill(ar == tgt_lens[:, None], EOS).masked_fill(ar > tgt_lens[:, None], PAD)
    x = model.embed("decoder.embed", inp.reshape(-1), torch.arange(T).repeat(B), train)
    causal = torch.full((T, T), NEG).triu(1)
    h = model.decode_rows(x, [(0, B, T, 1, None)], memkv, mmask, train, causal)
    logits = h @ model.p["decoder.proj.w"]
    loss = F.cross_entropy(logits, gold.reshape(-1), ignore_index=PAD,
                           label_smoothing=smoothing)
    return loss, int((tgt_lens + 1).sum())


# ---- INTRUS: correct insertions, losses, trajectories --------------------------------


def prev_same(Y):
    """[A, n]: the latest j' < j with Y[j'] == Y[j], or -1."""
    n = Y.shape[1]
    ar = torch.arange(n)
    eq = (Y[:, :, None] == Y[:, None, :]) & (ar[None, :] < ar[:, None])[None]
    return torch.where(eq, ar[None, None, :], torch.tensor(-1)).max(-1).values


def correct_mask(Y, ylen, part, plen, prev=None):
    """Correct insertions (DESIGN.md section 4), batched over A states:
    Y [A, n] the targets (padded), ylen [A]; part [A, m] the partial outputs (padded),
    plen [A]. Returns mask [A, m+1, n]: slot i may receive the token Y[j] (j < ylen), each
    token once per slot (its first occurrence in the slot's window Y[start_i:end_i], with
    start from the greedy left-to-right match and end from the right-to-left one). All
    false for a complete state."""
    A, n = Y.shape
    m = part.shape[1]
    ar = torch.arange(n)
    inY = ar[None, :] < ylen[:, None]
    left = torch.full((A, m), -1, dtype=torch.long)
    prev_j = torch.full((A,), -1, dtype=torch.long)
    for j in range(m):
        cand = (Y == part[:, j:j + 1]) & (ar[None, :] > prev_j[:, None]) & inY
        idx = cand.to(torch.uint8).argmax(1)
        prev_j = torch.where(plen > j, idx, prev_j)
        left[:, j] = prev_j
    right = torch.empty((A, m + 1), dtype=torch.long)
    nxt = ylen.clone()
    right[:, m] = ylen
    for j in reversed(range(m)):
        cand = (Y == part[:, j:j + 1]) & (ar[None, :] < nxt[:, None])
        idx = n - 1 - cand.flip(1).to(torch.uint8).argmax(1)
        nxt = torch.where(plen > j, idx, nxt)
        right[:, j] = nxt
    start = torch.cat([torch.zeros((A, 1), dtype=torch.long), left + 1], 1)  # [A, m+1]
    slot_ok = torch.arange(m + 1)[None, :] <= plen[:, None]
    if prev is None:
        prev = prev_same(Y)
    return (slot_ok[:, :, None] & inY[:, None, :] & (ar[None, None, :] >= start[:, :, None])
            & (ar[None, None, :] < right[:, :, None]) & (prev[:, None, :] < start[:, :, None]))


def insert(part, t, slot, tok):
    """part [A, n] with t tokens each; inserts tok[a] at slot[a]."""
    n = part.shape[1]
    ar = torch.arange(n)[None, :]
    shifted = torch.cat([torch.full((part.shape[0], 1), PAD), part[:, :-1]], 1)
    s = slot[:, None]
    return torch.where(ar < s, part, torch.where(ar == s, tok[:, None], shifted))


def state_groups(st_sent, st_len, B):
    """Orders the states by length: returns the permutation and, per length, the
    (row0, G, T, per, sidx) group of decode_rows plus the states' first rows."""
    lens, order = torch.sort(st_len, stable=True)
    groups, row0 = [], torch.empty(len(order), dtype=torch.long)
    r, s0 = 0, 0
    for k, G in zip(*torch.unique_consecutive(lens, return_counts=True)):
        k, G = int(k), int(G)
        T = k + 2
        sent = st_sent[order[s0:s0 + G]]
        full = G == B and bool((sent == torch.arange(B)).all())
        groups.append((r, G, T, 1, None if full else sent))
        row0[s0:s0 + G] = r + torch.arange(G) * T
        r += G * T
        s0 += G
    return order, groups, row0


def ins_inputs(part, k):
    """[BOS, part[:, :k], EOS] -> ids [G*(k+2)], positions."""
    G = part.shape[0]
    ids = torch.cat([torch.full((G, 1), BOS), part[:, :k], torch.full((G, 1), EOS)], 1)
    return ids.reshape(-1), torch.arange(k + 2).repeat(G)


class TokenLogProb(torch.autograd.Function):
    """log p(c | slot) = log_softmax(h W)[row, c] for a list of (row, c), h [R, d],
    W [d, V]: the plain composition (logits, logsumexp, gather), with a backward that
    builds the logits' gradient in the saved logits' own buffer instead of three more
    [R, V] tensors (zeros for the gather, the softmax, their sum): the same arithmetic
    in a quarter of the memory (R*V is about 0.5 GB in the benchmark). Its backward runs
    once (it overwrites what it saved)."""

    @staticmethod
    def forward(ctx, h, w, row, tok):
        z = h @ w
        lse = torch.logsumexp(z, 1)
        ctx.save_for_backward(h, w, row, tok, z, lse)
        return z[row, tok] - lse[row]

    @staticmethod
    def backward(ctx, g):
        h, w, row, tok, z, lse = ctx.saved_tensors
        gz = z.sub_(lse[:, None]).exp_()  # softmax, in place
        grow = torch.zeros(z.shape[0], dtype=g.dtype).index_add_(0, row, g)
        gz.mul_(-grow[:, None]).index_put_((row, tok), g, accumulate=True)
        return gz @ w.t(), h.t() @ gz, None, None


def ins_loss(model, src, src_lens, Y, ylen, st_sent, st_part, st_len, train, memo=None):
    """The main loss of a batch of states, -log sum_{(i,c) in ref} p(i, c) (finish at a
    complete state), averaged over states. States: sentence st_sent[s], partial output
    st_part[s, :st_len[s]]. Returns (mean loss, per-state losses in the given order).

    Rows are packed by state length: each length is one group whose self-attention is
    one batched product without padding, and whose cross-attention reads the memory of
    its sentences (all of them in the benchmark: no copy). The token softmax is computed
    only at the slots that have a correct token, as in the C code."""
    B = src.shape[0]
    S = src.shape[1]
    order, groups, row0 = state_groups(st_sent, st_len, B)
    sent, part, plen = st_sent[order], st_part[order], st_len[order]
    ids, pos, s0 = [], [], 0
    for r, G, T, per, sidx in groups:
        i, p = ins_inputs(part[s0:s0 + G], T - 2)
        ids.append(i)
        pos.append(p)
        s0 += G
    mem, mmask = model.encode(src, src_lens, train)
    memkv = model.memory_kv(mem, B, S)
    x = model.embed("decoder.embed", torch.cat(ids), torch.cat(pos), train)
    h = model.decode_rows(x, groups, memkv, mmask, train)
    # log p(pos) over each state's k+2 rows, padded to [states, m+2]
    m = part.shape[1]
    logit = (h @ model.p["decoder.out_pos"]).view(-1)
    lp = [F.pad(torch.log_softmax(logit[r:r + G * T].view(G, T), -1), (0, m + 2 - T), value=NEG)
          for r, G, T, _, _ in groups]
    logpos = torch.cat(lp, 0)  # [S', m+2]
    Yst, ylst = Y[sent], ylen[sent]
    prev = prev_same(Y)[sent]
    mask = correct_mask(Yst, ylst, part, plen, prev)  # [S', m+1, n]
    slot_mask = mask.any(-1)
    s_r, i_r = slot_mask.nonzero(as_tuple=True)
    slot_id = torch.full(slot_mask.shape, -1, dtype=torch.long)
    slot_id[s_r, i_r] = torch.arange(len(s_r))
    ps, pi, pj = mask.nonzero(as_tuple=True)
    sid = slot_id[ps, pi]
    lpair = logpos[ps, pi] + TokenLogProb.apply(h[row0[s_r] + i_r], model.p["decoder.out_token"],
                                                sid, Yst[ps, pj])
    nst = len(order)
    mx = torch.full((nst,), NEG).scatter_reduce(0, ps, lpair.detach(), "amax")
    has = torch.isfinite(mx)
    mxs = torch.where(has, mx, torch.zeros(()))
    ssum = torch.zeros(nst).index_add(0, ps, torch.exp(lpair - mxs[ps]))
    finish = logpos.gather(1, (plen + 1)[:, None])[:, 0]
    ll = torch.where(has, mxs + torch.log(torch.where(has, ssum, torch.ones(()))), finish)
    losses = torch.empty_like(ll)
    losses = losses.scatter(0, order, -ll)  # back to the caller's order
    if memo is not None:
        memo.update(states=nst, rows=int(x.shape[0]), token_rows=int(len(s_r)),
                    pairs=int(len(ps)))
    return losses.mean(), losses


@torch.no_grad()
def trajectories(model, policy, src, src_lens, Y, ylen, gen):
    """One trajectory per sentence: parts [B, n+1, n], state k = the first k steps.
    random: each step uniform over the correct (slot, token) pairs. sampled: each step
    samples a correct pair with probability proportional to the model's p(i, c) (model in
    eval mode, no dropout, as the C scorer), one decoder call per step over the batch's
    unfinished sentences whose choice is not forced (the C code skips forced ones too;
    it also computes the last layer only at the slots it asks about, and the position
    softmax only at those, where this computes every row)."""
    B, n = Y.shape
    parts = torch.full((B, n + 1, n), PAD, dtype=torch.long)
    part = torch.full((B, n), PAD, dtype=torch.long)
    prev = prev_same(Y)
    memkv = mmask = None
    if policy == "sampled":
        mem, mmask = model.encode(src, src_lens, False)
        memkv = model.memory_kv(mem, B, src.shape[1])
    for t in range(int(ylen.max())):
        act = (ylen > t).nonzero()[:, 0]
        A = len(act)
        full = A == B
        cur = part if full else part[act]
        mask = correct_mask(Y if full else Y[act], ylen if full else ylen[act], cur[:, :t],
                            torch.full((A,), t), prev if full else prev[act])  # [A, t+1, n]
        score = torch.zeros(mask.shape).masked_fill_(~mask, NEG)
        if policy == "sampled":
            need = (mask.sum((1, 2)) > 1).nonzero()[:, 0]
            if len(need):
                G, T = len(need), t + 2
                sidx = act[need]
                ids, pos = ins_inputs(cur[need], t)
                x = model.embed("decoder.embed", ids, pos, False)
                grp = [(0, G, T, 1, None if G == B else sidx)]
                h = model.decode_rows(x, grp, memkv, mmask, False)
                logpos = torch.log_softmax((h @ model.p["decoder.out_pos"]).view(G, T), -1)
                mk = mask[need]
                s_r, i_r = mk.any(-1).nonzero(as_tuple=True)
                lt = torch.log_softmax(h[s_r * T + i_r] @ model.p["decoder.out_token"], -1)
                tokc = lt.gather(1, Y[sidx[s_r]])  # log p(Y[j] | slot) [R, n]
                sc = torch.full(mk.shape, NEG)
                sc[s_r, i_r] = tokc + logpos[s_r, i_r][:, None]
                score[need] = sc.masked_fill_(~mk, NEG)
        u = torch.rand(score.shape, generator=gen).clamp_(min=1e-20)
        pick = (score - torch.log(-torch.log(u))).view(A, -1).argmax(1)  # Gumbel-max
        slot, j = pick // n, pick % n
        tok = (Y if full else Y[act]).gather(1, j[:, None])[:, 0]
        new = insert(cur, t, slot, tok)
        if full:
            part = new
        else:
            part[act] = new
        parts[act, t + 1] = new
    return parts


def all_states(parts, ylen):
    """Every state of every trajectory (k = 0..n_b), k-major."""
    B, n1, n = parts.shape
    k = torch.arange(n1)[:, None].expand(n1, B).reshape(-1)
    b = torch.arange(B)[None, :].expand(n1, B).reshape(-1)
    keep = k <= ylen[b]
    b, k = b[keep], k[keep]
    return b, parts[b, k], k


# ---- training benchmarks --------------------------------------------------------------


def bench_batch(B, L, V, seed=3):
    """B sentence pairs of L random tokens from [4, V) each (as bench_batch_make; another
    generator, so other ids)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(NUM_SPECIAL, V, (B, L), generator=g)
    tgt = torch.randint(NUM_SPECIAL, V, (B, L), generator=g)
    return src, tgt, torch.full((B,), L, dtype=torch.long)


def adam_for(model):
    # intrus_adam_defaults: beta2 0.998, eps 1e-9, lr 1.4e-3 * min(sqrt(W/s), s/W), W 16000.
    return torch.optim.Adam(model.parameters(), lr=1.4e-3, betas=(0.9, 0.998), eps=1e-9,
                            foreach=True)


def set_lr(opt, step, base=1.4e-3, warmup=16000):
    s = step + 1.0
    for g in opt.param_groups:
        g["lr"] = base * min(math.sqrt(warmup / s), s / warmup)


def timed_steps(step_fn, steps):
    warm = int(os.environ.get("PEER_WARMUP", 2))
    times = []
    for i in range(warm + steps):
        t0 = time.perf_counter()
        step_fn(i)
        if i >= warm:
            times.append(time.perf_counter() - t0)
    return times


def cmd_train_base(argv):
    steps = int(argv[0]) if argv else 5
    B = int(argv[1]) if len(argv) > 1 else int(os.environ.get("PEER_BATCH", 200))
    L = int(argv[2]) if len(argv) > 2 else int(os.environ.get("PEER_LEN", 20))
    header("train-base")
    V = 8000
    torch.manual_seed(1)
    model = make_model("ar")
    src, tgt, lens = bench_batch(B, L, V)
    opt = adam_for(model)

    def step(i):
        set_lr(opt, i)
        opt.zero_grad(set_to_none=True)
        loss, _ = ar_loss(model, src, lens, tgt, lens, 0.1, True)
        loss.backward()
        opt.step()

    times = timed_steps(step, steps)
    tok = B * L  # target tokens without EOS
    t = sum(times) / len(times)
    # bench_intrus (a) counts target tokens without EOS; bench_train counts them with EOS.
    print(f"train-base d256/4h/ff1024/3+3 V{V} B{B} L{L}+{L}: {1e3 * t / tok:.3f} ms/target token"
          f"  {tok / t:.0f} target tokens/s  ({B * (L + 1) / t:.0f} with EOS; {1e3 * t:.0f} ms/step,"
          f" fastest {1e3 * min(times):.0f}, {steps} steps,"
          f" {sum(p.numel() for p in model.parameters())} params)")


def cmd_train_intrus(argv):
    steps = int(argv[0]) if argv else 2
    which = argv[1] if len(argv) > 1 else "both"
    if which not in ("random", "sampled", "both"):
        sys.exit("usage: peer.py train-intrus [steps] [random|sampled|both]")
    B = int(os.environ.get("PEER_BATCH", 200))
    L = int(os.environ.get("PEER_LEN", 20))
    header("train-intrus")
    V = 8000
    src, tgt, lens = bench_batch(B, L, V)
    res = {}
    for policy in ("random", "sampled"):
        if which not in (policy, "both"):
            continue
        torch.manual_seed(1)
        model = make_model("ins")
        opt = adam_for(model)
        gen = torch.Generator().manual_seed(7)
        memo, traj_t = {}, []

        def step(i):
            set_lr(opt, i)
            opt.zero_grad(set_to_none=True)
            t0 = time.perf_counter()
            parts = trajectories(model, policy, src, lens, tgt, lens, gen)
            traj_t.append(time.perf_counter() - t0)
            b, part, k = all_states(parts, lens)
            loss, _ = ins_loss(model, src, lens, tgt, lens, b, part, k, True, memo)
            loss.backward()
            opt.step()

        times = timed_steps(step, steps)
        warm = len(traj_t) - steps
        t = sum(times) / len(times)
        tr = sum(traj_t[warm:]) / steps
        res[policy] = t
        tok = B * L
        print(f"train-intrus {policy}: {1e3 * t / tok:.3f} ms/target token  {tok / t:.0f} target "
              f"tokens/s  ({1e3 * t:.0f} ms/step, fastest {1e3 * min(times):.0f}, trajectories "
              f"{1e3 * tr:.0f} ms, {steps} steps, {memo['states']} states, {memo['rows']} rows, "
              f"{memo['token_rows']} token-softmax rows)", flush=True)
    if len(res) == 2:
        print(f"sampling pass adds {100 * (res['sampled'] / res['random'] - 1):.1f}%")


# ---- decoding ---------------------------------------------------------------------------


@torch.inference_mode()
def l2r_beam(model, src, L, K, alpha=1.0):
    """Left-to-right beam search with a key/value cache, outputs held to exactly L tokens
    (EOS masked before L, the only choice at L), as intrus_beam_search with min_len =
    max_len = L. Returns (tokens [B, L], scores [B]).
    Work against the C code: step 0 runs one row per sentence (the C code runs all beam
    rows, only the first alive); steps 1..L run B*K rows, as it does. The cache is
    reordered by copying rows (index_select of the first t positions) every step."""
    B, S = src.shape
    d, H, Dh, V = model.d, model.H, model.Dh, model.V
    mem, mmask = model.encode(src, None, False)
    memkv = model.memory_kv(mem, B, S)
    ck = [torch.empty(B * K, H, L + 1, Dh) for _ in range(model.dec_layers)]
    cv = [torch.empty(B * K, H, L + 1, Dh) for _ in range(model.dec_layers)]
    tokens = torch.full((B,), BOS)
    score = torch.zeros(B, 1)
    hist = torch.empty(B, 1, 0, dtype=torch.long)
    ban = torch.tensor([PAD, UNK, BOS, EOS])
    scale = 1.0 / math.sqrt(Dh)
    for t in range(L + 1):
        R = tokens.shape[0]
        kr = R // B
        x = model.embed("decoder.embed", tokens, torch.full((R,), t), False)
        for i in range(model.dec_layers):
            n = f"decoder.layer{i}"
            h = model.norm(n + ".norm_self", x)
            qkv = model.self_attn_qkv(n + ".self", h).view(R, 3, H, Dh)
            ck[i][:R, :, t] = qkv[:, 1]
            cv[i][:R, :, t] = qkv[:, 2]
            q = qkv[:, 0].unsqueeze(2)  # [R, H, 1, Dh]
            s = torch.matmul(q, ck[i][:R, :, :t + 1].transpose(-1, -2)) * scale
            a = torch.matmul(torch.softmax(s, -1), cv[i][:R, :, :t + 1])  # [R, H, 1, Dh]
            x = x + model.lin(n + ".self.o", a.reshape(R, d))
            h = model.norm(n + ".norm_cross", x)
            qc = model.lin(n + ".cross.q", h).view(B, kr, H, Dh).transpose(1, 2)
            mk, mv = memkv[i]
            a = model.attend(qc, mk, mv, mmask, False)  # [B, H, kr, Dh]
            x = x + model.lin(n + ".cross.o", a.transpose(1, 2).reshape(R, d))
            h = model.norm(n + ".norm_ffn", x)
            x = x + model.lin(n + ".ffn.out", torch.relu(model.lin(n + ".ffn.in", h)))
        h = model.norm("decoder.final_norm", x)
        logp = torch.log_softmax(h @ model.p["decoder.proj.w"], -1).view(B, kr, V)
        if t == L:  # only EOS
            fin = (score + logp[:, :, EOS]) / (L + 1) ** alpha
            best = fin.argmax(1)
            return hist[torch.arange(B), best], fin.max(1).values
        logp[:, :, ban] = NEG
        cand = (score[:, :, None] + logp).view(B, kr * V)
        score, idx = cand.topk(K, 1)
        parent, tok = idx // V, idx % V
        hist = torch.cat([hist.gather(1, parent[:, :, None].expand(B, K, t)), tok[:, :, None]], 2)
        rows = (torch.arange(B)[:, None] * kr + parent).reshape(-1)
        for i in range(model.dec_layers):
            ck[i][:B * K, :, :t + 1] = ck[i][rows, :, :t + 1]
            cv[i][:B * K, :, :t + 1] = cv[i][rows, :, :t + 1]
        tokens = tok.reshape(-1)


def fold_runs(tot, hyps):
    """Merges, within each parent, the ways that give the same string: inserting c at any
    slot of a..e, where hyp[a..e) is a run of c, is one string; their values are summed
    (log-add-exp) into the front slot a, the others set to -inf. tot [N, t+1, V] (N
    hypotheses, float32 log p), hyps [N, t]."""
    N, t = hyps.shape
    if t == 0:
        return
    V = tot.shape[2]
    j = torch.arange(t)
    start = torch.ones(N, t, dtype=torch.bool)
    start[:, 1:] = hyps[:, 1:] != hyps[:, :-1]
    front = torch.where(start, j[None, :], torch.zeros((), dtype=torch.long)).cummax(1).values
    base = torch.arange(N)[:, None] * (t + 1)
    flat = tot.view(-1)
    dup = ((base + j[None, :] + 1) * V + hyps).reshape(-1)      # slot j+1, token hyp[j]
    can = ((base + front) * V + hyps).reshape(-1)               # slot front(j), same token
    dv, cv = flat[dup].double(), flat[can].double()
    acc = torch.zeros(N * (t + 1), dtype=torch.float64)
    acc.index_add_(0, (base + front).reshape(-1), torch.exp(dv - cv))
    merged = cv + torch.log1p(acc[(base + front).reshape(-1)])
    flat[dup] = NEG
    flat[can] = merged.float()


def merge_parents(tot, hyps, B, K):
    """Merges the children that two different parents of one sentence share: for an
    ordered pair (p, q) first differing at a, s = p with q[a] inserted at slot a is their
    only possible shared child, shared when s minus one token is q (the rule of
    core/search/insertion_search_merge.c). Each string keeps one way (the best single
    one) holding the log-add-exp of all its ways. tot [B*K, t+1, V], hyps [B*K, t]."""
    t = hyps.shape[1]
    if K < 2 or t == 0:
        return
    V = tot.shape[2]
    hp = hyps.view(B, K, t)
    P = hp[:, :, None, :].expand(B, K, K, t)
    Q = hp[:, None, :, :].expand(B, K, K, t)
    diff = P != Q
    has = diff.any(-1)
    a = diff.to(torch.uint8).argmax(-1)  # first difference
    ar = torch.arange(t + 1)
    Pp = torch.cat([P, torch.zeros_like(P[..., :1])], -1)
    Pm = torch.cat([torch.zeros_like(P[..., :1]), P], -1)
    qa = Q.gather(-1, a[..., None])
    s = torch.where(ar < a[..., None], Pp, torch.where(ar == a[..., None], qa, Pm))  # [B,K,K,t+1]

    def way(X):
        """The canonical (front) slot that turns X into s, and whether one exists."""
        lcp = (s[..., :t] == X).to(torch.long).cumprod(-1).sum(-1)
        lcs = (s[..., 1:] == X).flip(-1).to(torch.long).cumprod(-1).sum(-1)
        return (t - lcs).clamp(min=0), lcp + lcs >= t

    sh, _ = way(P)
    sg, ok = way(Q)
    valid = has & ok
    b, h, g = valid.nonzero(as_tuple=True)
    if len(b) == 0:
        return
    ch = s[b, h, g].gather(1, sh[b, h, g][:, None])[:, 0]
    cg = s[b, h, g].gather(1, sg[b, h, g][:, None])[:, 0]
    fh = ((b * K + h) * (t + 1) + sh[b, h, g]) * V + ch
    fg = ((b * K + g) * (t + 1) + sg[b, h, g]) * V + cg
    flat = tot.view(-1)
    key = torch.cat([fh, fg])              # each way of a shared string ...
    partner = torch.cat([fg, fh])          # ... and one other way of it
    vk, vp = flat[key].double(), flat[partner].double()
    # A way stands for its string unless some other way is better (ties: smaller index).
    beaten = (vp > vk) | ((vp == vk) & (partner < key))
    u, inv = torch.unique(key, return_inverse=True)
    own = torch.zeros(len(u), dtype=torch.float64).scatter_(0, inv, vk)
    acc = torch.zeros(len(u), dtype=torch.float64).index_add_(0, inv, torch.exp(vp - vk))
    lost = torch.zeros(len(u), dtype=torch.long).index_add_(0, inv, beaten.long()) > 0
    flat[u] = torch.where(lost, torch.tensor(NEG, dtype=torch.float64),
                          own + torch.log1p(acc)).float()


@torch.inference_mode()
def ins_beam(model, src, L, K, alpha=1.0, trace=None):
    """Insertion beam search (DESIGN.md "Search"), outputs held to exactly L tokens: every
    hypothesis expands over every (slot, token) pair but the special tokens; children that
    are the same string are merged by log-add-exp (within a parent: fold_runs; across
    parents: merge_parents); the best K of the whole beam survive; at step L only finish
    (log p(pos = L+1)); score log p / (L+1)^alpha. Returns (tokens [B, L], scores [B]).
    Work against the C code: the token softmax is computed at every slot of every
    hypothesis (a [B*K*(t+1), d] x [d, V] product per step); the C code computes it only at
    the slots whose bound log p(h) + log p(pos = i) can still reach the beam (it prints
    the fraction), so it does less. The C code also keeps each hypothesis's trajectory;
    this keeps only the strings. Decoder: self-attention over the t+2 rows of every
    hypothesis recomputed each step, cross-attention keys/values of the memory computed
    once per sentence and read by the K hypotheses without a copy (as the C cache)."""
    B, S = src.shape
    V = model.V
    mem, mmask = model.encode(src, None, False)
    memkv = model.memory_kv(mem, B, S)
    hyps = torch.empty(B, 0, dtype=torch.long)  # [B*kt, t]
    logp = torch.zeros(B, 1)
    for t in range(L + 1):
        kt = hyps.shape[0] // B
        N, T = B * kt, t + 2
        ids, pos = ins_inputs(hyps, t)
        x = model.embed("decoder.embed", ids, pos, False)
        h = model.decode_rows(x, [(0, N, T, kt, None)], memkv, mmask, False)
        logpos = torch.log_softmax((h @ model.p["decoder.out_pos"]).view(B, kt, T), -1)
        if t == L:
            fin = (logp + logpos[:, :, T - 1]) / (L + 1) ** alpha
            best = fin.argmax(1)
            return hyps.view(B, kt, t)[torch.arange(B), best], fin.max(1).values
        hs = h.view(N, T, model.d)[:, :t + 1].reshape(N * (t + 1), model.d)
        tot = torch.log_softmax(hs @ model.p["decoder.out_token"], -1).view(B, kt, t + 1, V)
        tot.add_((logpos[:, :, :t + 1] + logp[:, :, None])[..., None])
        tot[..., :NUM_SPECIAL] = NEG
        tot = tot.view(N, t + 1, V)
        fold_runs(tot, hyps)
        merge_parents(tot, hyps, B, kt)
        logp, idx = tot.view(B, kt * (t + 1) * V).topk(K, 1)
        parent, rem = idx // ((t + 1) * V), idx % ((t + 1) * V)
        slot, tok = rem // V, rem % V
        par = hyps.view(B, kt, t)[torch.arange(B)[:, None], parent].reshape(B * K, t)
        hyps = insert(torch.cat([par, torch.zeros(B * K, 1, dtype=torch.long)], 1), t,
                      slot.reshape(-1), tok.reshape(-1))
        if trace is not None:
            trace.append((hyps.view(B, K, t + 1).clone(), logp.clone()))


def decode_rate(model, kind, L, batch, beam, seed=5):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(NUM_SPECIAL, model.V, (batch, L), generator=g)
    total = 8 if batch == 1 else 32
    warm = int(os.environ.get("PEER_WARMUP", 2))
    fn = ins_beam if kind == "ins" else l2r_beam
    for _ in range(warm):  # untimed, as the C bench's two
        fn(model, src, L, beam)
    t0 = time.perf_counter()
    done = 0
    while done < total:
        fn(model, src, L, beam)
        done += batch
    return done / (time.perf_counter() - t0)


def decode_models():
    torch.manual_seed(1)
    ins, ar = make_model("ins", seed=1), make_model("ar", seed=2)
    for m in (ins, ar):
        for p in m.parameters():
            p.requires_grad_(False)
        m.freeze_fused(True)
    return ins, ar


def decode_line(ins, ar, batch, beam, L):
    ri = decode_rate(ins, "ins", L, batch, beam)
    rl = decode_rate(ar, "ar", L, batch, beam)
    print(f"decode batch {batch} beam {beam} L {L}: insertion {ri:.2f} sent/s  l2r {rl:.2f} "
          f"sent/s  ratio {rl / ri:.2f}x", flush=True)


def cmd_decode(argv):
    if len(argv) != 3:
        sys.exit("usage: peer.py decode BATCH BEAM L")
    batch, beam, L = map(int, argv)
    header("decode")
    ins, ar = decode_models()
    decode_line(ins, ar, batch, beam, L)


def cmd_decode_table(argv):
    header("decode-table")
    ins, ar = decode_models()
    for batch in (1, 32):
        for beam in (1, 4):
            for L in (10, 20, 30):
                decode_line(ins, ar, batch, beam, L)


# ---- check against the float64 reference ------------------------------------------------


def cmd_check(argv):
    header("check")
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    sys.path.insert(0, os.path.join(top, "scripts", "reference"))
    import torch_reference as ref  # sets the default dtype to float64: reset below
    torch.set_default_dtype(torch.float32)

    class f64:
        def __enter__(self):
            torch.set_default_dtype(torch.float64)

        def __exit__(self, *a):
            torch.set_default_dtype(torch.float32)

    worst = {"ar": 0.0, "ins": 0.0, "grad": 0.0}

    def rel(a, b):
        return abs(a - b) / max(abs(b), 1e-12)

    def ref_model(model):
        p64 = {k: v.detach().double().requires_grad_(True) for k, v in model.p.items()}
        return ref.Model(p64, model.H), p64

    def grad_diff(model, p64, loss32, loss64):
        g32 = torch.autograd.grad(loss32, model.parameters(), allow_unused=True)
        g64 = torch.autograd.grad(loss64, list(p64.values()), allow_unused=True)
        d = s = 0.0
        for a, b in zip(g32, g64):
            a = torch.zeros(()) if a is None else a.double()
            b = torch.zeros(()) if b is None else b
            d = max(d, float((a - b).abs().max()))
            s = max(s, float(b.abs().max()))
        return d / s

    def pad(seqs):
        n = max(len(x) for x in seqs)
        return (torch.tensor([list(x) + [PAD] * (n - len(x)) for x in seqs]),
                torch.tensor([len(x) for x in seqs]))

    def randomise(model, g):
        """Non-trivial biases and gains, so that the check reads them all."""
        with torch.no_grad():
            for k, v in model.p.items():
                if k.endswith(".b") or k.endswith(".bias"):
                    v.copy_(torch.randn(v.shape, generator=g) * 0.2)
                elif k.endswith(".gain"):
                    v.copy_(1 + torch.randn(v.shape, generator=g) * 0.2)
                elif k.endswith("out_token") or k.endswith("proj.w") or k.endswith("out_pos"):
                    v.mul_(6.0)  # peaked distributions, as after training

    g = torch.Generator().manual_seed(11)
    # The oracle against the reference's brute force, on random states with repeats.
    nst = 0
    for n in range(0, 8):
        for _ in range(60):
            y = torch.randint(4, 7, (n,), generator=g).tolist()
            keep = sorted(torch.randperm(n, generator=g)[:int(torch.randint(0, n + 1, (1,),
                                                                             generator=g))].tolist())
            part = [y[i] for i in keep]
            mask = correct_mask(torch.tensor([y + [PAD]]), torch.tensor([n]),
                                torch.tensor([part + [PAD]]), torch.tensor([len(part)]))
            # the same set (the brute force lists a slot's tokens in order of first
            # occurrence in y, this one in the slot's window: the loss sums over the set)
            got = sorted((int(i), y[int(j)]) for i, j in zip(*mask[0].nonzero(as_tuple=True)))
            want = sorted(ref.correct_brute(y, part))
            if got != want:
                sys.exit(f"check: correct insertions differ for y={y} part={part}: {got} vs {want}")
            nst += 1
    print(f"check correct-set: {nst} states with repeated tokens equal to correct_brute")

    configs = [("random", dict(d=32, heads=4, ff=48, layers=2, V=12), None)]
    for ck in ("intrus-tiny", "ar-tiny"):
        path = os.path.join(top, "tests", "data", "reference", ck + ".ckpt")
        if os.path.exists(path):
            configs.append((ck, None, path))
    for name, cfg, path in configs:
        for kind in ("ins", "ar"):
            if path is not None:
                if (kind == "ins") != (name == "intrus-tiny"):
                    continue
                with f64():
                    pref = ref.load_params(path)
                d = pref["encoder.embed"].shape[1]
                nl = lambda pre: sum(1 for k in pref if k.startswith(pre) and k.endswith("ffn.in.w"))
                V = pref["decoder.embed"].shape[0]
                model = Model(kind, d, 2, pref["encoder.layer0.ffn.in.w"].shape[1],
                              nl("encoder."), nl("decoder."), pref["encoder.embed"].shape[0], V,
                              dropout=0.0)
                with torch.no_grad():
                    for k, v in model.p.items():
                        v.copy_(pref[k].float())
            else:
                model = Model(kind, cfg["d"], cfg["heads"], cfg["ff"], cfg["layers"],
                              cfg["layers"], cfg["V"], cfg["V"], dropout=0.0, seed=5)
                randomise(model, g)
            with f64():
                rm, p64 = ref_model(model)
            if kind == "ar":
                sents = ref.AR_SENTENCES + [([5, 9, 9, 4, 6, 7, 8], [11, 10, 10, 5, 4, 6])]
                src, sl = pad([s for s, _ in sents])
                tgt, tl = pad([t for _, t in sents])
                for sm in (0.0, 0.1):
                    loss, _ = ar_loss(model, src, sl, tgt, tl, sm, False)
                    with f64():
                        ref.AR_SENTENCES, keep = sents, ref.AR_SENTENCES
                        mems = [rm.encode(s) for s, _ in sents]
                        want = ref.ar_batch_loss(rm, mems, sm, False)
                        ref.AR_SENTENCES = keep
                    r = rel(loss.item(), want.item())
                    gd = grad_diff(model, p64, loss, want)
                    worst["ar"], worst["grad"] = max(worst["ar"], r), max(worst["grad"], gd)
                    print(f"check {name} autoregressive smoothing {sm}: peer {loss.item():.7f} "
                          f"reference {want.item():.7f} rel diff {r:.1e} grad rel diff {gd:.1e}")
            else:
                sents = ref.INS_SENTENCES + [([6, 7, 8, 9, 10, 11, 4, 5], [7, 7, 8, 11, 9, 4, 7])]
                src, sl = pad([s for s, _ in sents])
                Y, yl = pad([t for _, t in sents])
                st = list(ref.INS_STATES)
                for b, (_, y) in enumerate(sents):  # a random trajectory of each sentence
                    perm = torch.randperm(len(y), generator=g).tolist()
                    for k in range(len(y) + 1):
                        st.append((b, [y[i] for i in sorted(perm[:k])]))
                m = int(Y.shape[1])
                sp = torch.tensor([p + [PAD] * (m - len(p)) for _, p in st])
                loss, per = ins_loss(model, src, sl, Y, yl, torch.tensor([b for b, _ in st]), sp,
                                     torch.tensor([len(p) for _, p in st]), False)
                with f64():
                    mems = [rm.encode(s) for s, _ in sents]
                    wl = []
                    for b, p in st:
                        pos, tok = rm.insertion(mems[b], p)
                        wl.append(ref.state_losses(pos, tok, ref.correct_brute(sents[b][1], p))[0])
                    want = torch.stack(wl).mean()
                r = rel(loss.item(), want.item())
                rs = max(rel(a, b.item()) for a, b in zip(per.tolist(), wl))
                gd = grad_diff(model, p64, loss, want)
                worst["ins"] = max(worst["ins"], r, rs)
                worst["grad"] = max(worst["grad"], gd)
                print(f"check {name} insertion main loss ({len(st)} states): peer {loss.item():.7f}"
                      f" reference {want.item():.7f} rel diff {r:.1e} (worst state {rs:.1e}) "
                      f"grad rel diff {gd:.1e}")
    check_trajectories(ref)
    check_search(ref)
    ok = worst["ar"] < 1e-4 and worst["ins"] < 1e-4 and worst["grad"] < 1e-3
    print(f"check {'ok' if ok else 'FAILED'}: worst rel diff autoregressive {worst['ar']:.1e}, "
          f"insertion {worst['ins']:.1e}, gradients {worst['grad']:.1e}")
    if not ok:
        sys.exit(1)


def check_trajectories(ref):
    """Both policies' trajectories, on sentences of several lengths with repeated tokens:
    each step inserts one pair of the correct set (brute force) and each ends at Y."""
    g = torch.Generator().manual_seed(31)
    V = 9
    model = Model("ins", 32, 4, 48, 2, 2, V, V, dropout=0.0, seed=12)
    ys = [torch.randint(NUM_SPECIAL, V, (n,), generator=g).tolist() for n in (7, 3, 0, 6, 7, 1)]
    src, sl = torch.randint(NUM_SPECIAL, V, (len(ys), 5), generator=g), None
    m = max(len(y) for y in ys)
    Y = torch.tensor([y + [PAD] * (m - len(y)) for y in ys])
    yl = torch.tensor([len(y) for y in ys])
    steps = 0
    for policy in ("random", "sampled"):
        for rep in range(5):
            parts = trajectories(model, policy, src, sl, Y, yl, g)
            for b, y in enumerate(ys):
                for k in range(len(y)):
                    a, c = parts[b, k, :k].tolist(), parts[b, k + 1, :k + 1].tolist()
                    ok = any(a[:i] + [t] + a[i:] == c for i, t in ref.correct_brute(y, a))
                    if not ok:
                        sys.exit(f"check: {policy} step {k} of {y}: {a} -> {c} is not correct")
                    steps += 1
                if parts[b, len(y), :len(y)].tolist() != y:
                    sys.exit(f"check: {policy} trajectory of {y} ends elsewhere")
    print(f"check trajectories: {steps} random and sampled steps, each a correct insertion")


def check_search(ref):
    """The batched searches against plain ones on a tiny model: the insertion beam against
    an exact per-hypothesis search that merges children in a dict; the cached
    left-to-right beam's scores against teacher-forced rescoring."""
    g = torch.Generator().manual_seed(21)
    V, K, L, B = 9, 3, 6, 3  # 5 real tokens: many repeats, many shared children
    model = Model("ins", 32, 4, 48, 2, 2, V, V, dropout=0.0, seed=9)
    with torch.no_grad():
        for k, v in model.p.items():
            if k.endswith("out_token") or k.endswith("out_pos"):
                v.mul_(4.0)
    for p in model.parameters():
        p.requires_grad_(False)
    src = torch.randint(NUM_SPECIAL, V, (B, L), generator=g)
    trace = []
    ins_beam(model, src, L, K, trace=trace)
    worst = 0.0
    with torch.inference_mode():
        mem, mmask = model.encode(src, None, False)
        memkv = model.memory_kv(mem, B, L)

        def scores(b, hyp):
            t = len(hyp)
            ids, pos = ins_inputs(torch.tensor([hyp], dtype=torch.long).view(1, t), t)
            x = model.embed("decoder.embed", ids, pos, False)
            kv = [(k[b:b + 1], v[b:b + 1]) for k, v in memkv]
            h = model.decode_rows(x, [(0, 1, t + 2, 1, None)], kv, None, False)
            lpos = torch.log_softmax((h @ model.p["decoder.out_pos"]).view(-1), 0).double()
            ltok = torch.log_softmax(h[:t + 1] @ model.p["decoder.out_token"], -1).double()
            return lpos, ltok

        for b in range(B):
            beam = {(): 0.0}
            for t in range(L):
                kids = {}
                for hyp, lp in beam.items():
                    lpos, ltok = scores(b, list(hyp))
                    for i in range(t + 1):
                        for c in range(NUM_SPECIAL, V):
                            s = hyp[:i] + (c,) + hyp[i:]
                            v = lp + float(lpos[i] + ltok[i, c])
                            kids[s] = float(torch.logaddexp(torch.tensor(kids[s]), torch.tensor(v))) \
                                if s in kids else v
                best = sorted(kids.items(), key=lambda kv: -kv[1])[:K]
                beam = dict(best)
                got_h, got_v = trace[t][0][b], trace[t][1][b]
                got = sorted(zip([tuple(x) for x in got_h.tolist()], got_v.tolist()),
                             key=lambda kv: -kv[1])
                if [s for s, _ in got] != [s for s, _ in best]:
                    sys.exit(f"check: insertion beam differs at sentence {b} step {t}: "
                             f"{got} vs {best}")
                worst = max(worst, max(abs(a[1] - w[1]) / abs(w[1]) for a, w in zip(got, best)))
    print(f"check insertion beam (V {V}, beam {K}, L {L}, {B} sentences): same beams as an "
          f"exact dict-merging search at every step, scores rel diff {worst:.1e}")

    ar = Model("ar", 32, 4, 48, 2, 2, V, V, dropout=0.0, seed=10)
    with torch.no_grad():
        ar.p["decoder.proj.w"].mul_(4.0)
    for p in ar.parameters():
        p.requires_grad_(False)
    toks, sc = l2r_beam(ar, src, L, K)
    with torch.inference_mode():
        mem, mmask = ar.encode(src, None, False)
        kv = ar.memory_kv(mem, B, L)
        inp = torch.cat([torch.full((B, 1), BOS), toks], 1)
        x = ar.embed("decoder.embed", inp.reshape(-1), torch.arange(L + 1).repeat(B), False)
        h = ar.decode_rows(x, [(0, B, L + 1, 1, None)], kv, mmask, False,
                           torch.full((L + 1, L + 1), NEG).triu(1))
        lp = torch.log_softmax(h @ ar.p["decoder.proj.w"], -1).view(B, L + 1, V)
        gold = torch.cat([toks, torch.full((B, 1), EOS)], 1)
        want = lp.gather(2, gold[:, :, None]).sum((1, 2)) / (L + 1)
    r = float(((sc - want).abs() / want.abs()).max())
    print(f"check left-to-right cached beam: scores of its outputs = teacher-forced rescoring, "
          f"rel diff {r:.1e}")
    if r > 1e-4 or worst > 1e-4:
        sys.exit("check: search scores differ")


def main():
    cmds = {"train-base": cmd_train_base, "train-intrus": cmd_train_intrus,
            "decode": cmd_decode, "decode-table": cmd_decode_table, "check": cmd_check}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()

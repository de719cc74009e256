/* Fused multi-head attention over packed segments (intrus_attention in tensor.h).
 *
 * Heads are column blocks of width Dh of q, k, v and of the result, so every product
 * reads its operands in place through a leading dimension d: no split/merge copies.
 * Consecutive segments whose query rows are contiguous and that share one key range
 * (many partial outputs attending to one sentence's memory) are merged into one block,
 * so that they make one taller product instead of many thin ones. Every row of a block
 * sees a prefix of the block's keys: all of them, or with causal masking the first
 * i + 1 for local query i of its segment.
 *
 * Threads: the forward hands out (block, head) pieces, the backward heads, to the OpenMP
 * threads; each piece's small products run single-threaded inside it (intrus_gemm does
 * not split a product from within a parallel region). Softmax rows are summed by one
 * thread start to finish (vectorised, so the order of a sum depends on the ISA level in
 * use, intrus_x86_level(), as sgemm's results do on the CPU), and dropout masks are a
 * pure function of the element index, so results do not depend on the thread count. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "intrus/blas.h"
#include "intrus/rng.h"
#include "intrus/tensor.h"
#include "ops_internal.h"

/* Segments merged into one product: query rows q0 .. q0+rows-1, key rows k0 ..
 * k0+klen-1. Its weights are p_off .. p_off + H*rows*klen - 1 of the weight buffers,
 * laid out [H, rows, klen]. */
struct attn_block {
  long p_off;
  int q0, rows, k0, klen;
};

/* What backward needs (out->aux). */
struct attn_saved {
  int nblocks;
  long np;                  /* weights: sum of H * rows * klen */
  struct attn_block *block; /* [nblocks] */
  int *vis;                 /* [N]: keys seen by each query row of a block (a prefix) */
  float *p;                 /* [np] softmax weights */
  float *pd;                /* [np] the weights after dropout, or p itself */
  uint64_t key;             /* dropout stream */
};

enum { IP_HEADS, IP_DROPOUT_ON };
enum { FP_SCALE, FP_P, FP_KEEP_SCALE };

/* ---- row kernels ----------------------------------------------------------------- */

/* As intrus_dropout over the flat [np] weight buffer: element e is kept when the top 24
 * bits of intrus_hash32(intrus_hash64(key, e >> 32), low 32 bits of e) reach thr. */
ROW_INLINE bool keep_elem(uint64_t bkey, uint32_t c, int32_t thr) {
  return (int32_t)(intrus_hash32(bkey, c) >> 8) >= thr;
}

/* One row of scores s [klen] (flat index e0 of s[0]) becomes the softmax over its first
 * vis entries (vis >= 1), 0 from vis on; with dropout, pd [klen] gets the weights
 * dropped and rescaled (pd may be s: in place). */
ROW_INLINE void softmax_row(float *s, float *pd, int klen, int vis, bool drop, uint64_t key,
                            long e0, int32_t thr, float keep_scale) {
  float mx = s[0];
  SIMD_MAX(mx)
  for (int j = 1; j < vis; j++) mx = s[j] > mx ? s[j] : mx;
  float sum = 0.0f;
  SIMD_REDUCE(+, sum)
  for (int j = 0; j < vis; j++) {
    const float e = intrus_exp_nonpos(s[j] - mx);
    s[j] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
  for (int j = vis; j < klen; j++) s[j] = 0.0f;
  if (!drop) {
    OMP_SIMD
    for (int j = 0; j < vis; j++) s[j] *= inv;
    return;
  }
  if ((e0 >> 32) == ((e0 + klen - 1) >> 32)) {
    const uint64_t bkey = intrus_hash64(key, (uint64_t)e0 >> 32);
    const uint32_t c0 = (uint32_t)e0;
    OMP_SIMD
    for (int j = 0; j < klen; j++) {
      const float w = s[j] * inv;
      s[j] = w;
      pd[j] = intrus_sel(keep_elem(bkey, c0 + (uint32_t)j, thr), w * keep_scale, 0.0f);
    }
  } else { /* the row crosses a multiple of 2^32 in the flat index */
    for (int j = 0; j < klen; j++) {
      const long e = e0 + j;
      const float w = s[j] * inv;
      s[j] = w;
      pd[j] = keep_elem(intrus_hash64(key, (uint64_t)e >> 32), (uint32_t)e, thr)
                  ? w * keep_scale
                  : 0.0f;
    }
  }
}

/* With g [klen] the gradient of the weights after dropout, in place: the gradient of
 * the scores, g = P * (dP - sum_j dP_j P_j) over the visible entries and 0 elsewhere,
 * where dP = g * keep_scale where the entry was kept, 0 where dropped. An entry was
 * dropped exactly when pd is 0 while p is not; where p is 0 its score gradient is 0
 * whichever it was, so testing pd alone is exact. */
ROW_INLINE void softmax_grad_row(float *restrict g, const float *restrict p,
                                 const float *restrict pd, int klen, int vis, bool drop,
                                 float keep_scale) {
  double dot = 0.0;
  if (drop) {
    SIMD_REDUCE(+, dot)
    for (int j = 0; j < vis; j++) {
      const float dp = intrus_sel(pd[j] != 0.0f, g[j] * keep_scale, 0.0f);
      g[j] = dp;
      dot += (double)dp * p[j];
    }
  } else {
    SIMD_REDUCE(+, dot)
    for (int j = 0; j < vis; j++) dot += (double)g[j] * p[j];
  }
  const float dt = (float)dot;
  OMP_SIMD
  for (int j = 0; j < vis; j++) g[j] = p[j] * (g[j] - dt);
  for (int j = vis; j < klen; j++) g[j] = 0.0f;
}

/* The softmax rows of one (block, head) piece, forward and backward, compiled for
 * several ISAs (the hash's 32-bit multiplies and the exp want AVX2 at least). */
ROW_INLINE void forward_piece_body(const struct attn_saved *sv, const struct attn_block *bk,
                                   int h, bool drop, int32_t thr, float keep_scale) {
  const long off = bk->p_off + (long)h * bk->rows * bk->klen;
  for (int i = 0; i < bk->rows; i++) {
    const long o = off + (long)i * bk->klen;
    softmax_row(sv->p + o, sv->pd + o, bk->klen, sv->vis[bk->q0 + i], drop, sv->key, o, thr,
                keep_scale);
  }
}

INTRUS_ISA_VARIANTS_VOID(static, forward_piece,
                         (const struct attn_saved *sv, const struct attn_block *bk, int h,
                          bool drop, int32_t thr, float keep_scale),
                         (sv, bk, h, drop, thr, keep_scale))

ROW_INLINE void backward_piece_body(const struct attn_saved *sv, const struct attn_block *bk,
                                    int h, float *G, bool drop, float keep_scale) {
  const long off = bk->p_off + (long)h * bk->rows * bk->klen;
  for (int i = 0; i < bk->rows; i++) {
    const long o = off + (long)i * bk->klen;
    softmax_grad_row(G + o, sv->p + o, sv->pd + o, bk->klen, sv->vis[bk->q0 + i], drop,
                     keep_scale);
  }
}
INTRUS_ISA_VARIANTS_VOID(static, backward_piece,
                         (const struct attn_saved *sv, const struct attn_block *bk, int h,
                          float *G, bool drop, float keep_scale),
                         (sv, bk, h, G, drop, keep_scale))

/* ---- forward ------------------------------------------------------------------------ */

intrus_tensor *intrus_attention(intrus_ctx *ctx, intrus_tensor *q, intrus_tensor *k,
                                intrus_tensor *v, int heads, const struct intrus_segments *seg,
                                bool causal, float dropout) {
  INTRUS_CHECK(q->ndim == 2 && k->ndim == 2 && v->ndim == 2,
               "attention: q, k, v must be 2-D [rows, d] (got %d, %d, %d dims)", q->ndim,
               k->ndim, v->ndim);
  const int N = q->shape[0], d = q->shape[1], M = k->shape[0];
  INTRUS_CHECK(k->shape[1] == d && v->shape[0] == M && v->shape[1] == d,
               "attention: q [%d,%d], k [%d,%d], v [%d,%d]: k and v must be [M, %d]", N, d,
               M, k->shape[1], v->shape[0], v->shape[1], d);
  INTRUS_CHECK(heads > 0 && d % heads == 0, "attention: d %d not divisible by %d heads", d,
               heads);
  INTRUS_CHECK(dropout >= 0.0f && dropout < 1.0f, "attention: dropout %g outside [0, 1)",
               (double)dropout);
  INTRUS_CHECK(seg && seg->count >= 0, "attention: no segments");
  const int H = heads, Dh = d / H;
  const float scale = 1.0f / sqrtf((float)Dh);

  /* Validate the segments and mark their query rows: 1 = in a segment without keys,
   * 2 = in one with keys. A row in two segments has no single answer: a caller bug. */
  uint8_t *mark = intrus_ctx_calloc(ctx, (size_t)N + 1);
  int *vis = intrus_ctx_alloc(ctx, ((size_t)N + 1) * sizeof(int));
  struct attn_block *block =
      intrus_ctx_alloc(ctx, ((size_t)seg->count + 1) * sizeof(struct attn_block));
  int nblocks = 0;
  long np = 0;
  for (int s = 0; s < seg->count; s++) {
    const int qb = seg->q_begin[s], ql = seg->q_len[s], kb = seg->k_begin[s],
              kl = seg->k_len[s];
    INTRUS_CHECK(ql >= 0 && kl >= 0 && qb >= 0 && kb >= 0 && qb <= N - ql && kb <= M - kl,
                 "attention: segment %d (queries %d+%d, keys %d+%d) outside q [%d rows], "
                 "k [%d rows]",
                 s, qb, ql, kb, kl, N, M);
    for (int i = 0; i < ql; i++) {
      INTRUS_CHECK(!mark[qb + i], "attention: query row %d is in segment %d and an earlier one",
                   qb + i, s);
      mark[qb + i] = kl ? 2 : 1;
      vis[qb + i] = causal ? (i + 1 < kl ? i + 1 : kl) : kl;
    }
    if (ql == 0 || kl == 0) continue;
    struct attn_block *last = nblocks ? &block[nblocks - 1] : NULL;
    if (last && last->q0 + last->rows == qb && last->k0 == kb && last->klen == kl) {
      last->rows += ql;
    } else {
      block[nblocks++] = (struct attn_block){.q0 = qb, .rows = ql, .k0 = kb, .klen = kl};
    }
  }
  for (int b = 0; b < nblocks; b++) {
    block[b].p_off = np;
    np += (long)H * block[b].rows * block[b].klen;
  }

  const int shape[2] = {N, d};
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_ATTENTION, 2, shape, q, k, v);
  const bool drop = intrus_ctx_training(ctx) && dropout > 0.0f;
  struct attn_saved *sv = intrus_ctx_alloc(ctx, sizeof *sv);
  *sv = (struct attn_saved){.nblocks = nblocks, .np = np,
                            .block = block, .vis = vis,
                            .key = drop ? intrus_ctx_next_stream(ctx) : 0};
  sv->p = intrus_ctx_alloc(ctx, (size_t)np * sizeof(float));
  /* Backward needs the weights both before dropout (softmax gradient) and after (value
   * gradient); without a backward, dropout overwrites them. */
  sv->pd = drop && out->requires_grad ? intrus_ctx_alloc(ctx, (size_t)np * sizeof(float))
                                      : sv->p;
  out->aux = sv;
  out->ip[IP_HEADS] = H;
  out->ip[IP_DROPOUT_ON] = drop;
  out->fp[FP_SCALE] = scale;
  out->fp[FP_P] = dropout;
  out->fp[FP_KEEP_SCALE] = drop ? 1.0f / (1.0f - dropout) : 1.0f;

  for (int r = 0; r < N; r++)
    if (mark[r] != 2) memset(out->data + (size_t)r * d, 0, (size_t)d * sizeof(float));

  /* Each (block, head) is one piece of work from scores to output, so its weights are
   * still in cache when the second product reads them, and one parallel region serves
   * the whole op. Pieces are independent: the results do not depend on which thread
   * does which. */
  const int32_t thr = (int32_t)ceilf(dropout * 16777216.0f);
  const float keep_scale = out->fp[FP_KEEP_SCALE];
  const long nwork = (long)nblocks * H;
  /* np * Dh multiply-adds per product kind: threads take pieces from 2^18 of them on.
   * Below that the region stays serial, and a piece's product of 2^18 or more would be
   * cut across the threads by intrus_gemm instead, each half an OpenBLAS call (at
   * batch 1, beam 4 the beam's cross-attention was such a product from L = 31 on and
   * decoding ran 1.4x slower for it). */
  OMP_FOR_DYNAMIC(np * Dh / 8)
  for (long w = 0; w < nwork; w++) {
    const struct attn_block *bk = &block[w / H];
    const int h = (int)(w % H), rows = bk->rows, klen = bk->klen;
    const long off = bk->p_off + (long)h * rows * klen;
    /* scores [rows, klen] = scale * Q_h K_h^T */
    intrus_gemm(false, true, rows, klen, Dh, scale, q->data + (size_t)bk->q0 * d + h * Dh, d,
                k->data + (size_t)bk->k0 * d + h * Dh, d, 0.0f, sv->p + off, klen);
    forward_piece(sv, bk, h, drop, thr, keep_scale);
    /* out_h [rows, Dh] = W_h [rows, klen] V_h [klen, Dh] */
    intrus_gemm(false, false, rows, Dh, klen, 1.0f, sv->pd + off, klen,
                v->data + (size_t)bk->k0 * d + h * Dh, d, 0.0f,
                out->data + (size_t)bk->q0 * d + h * Dh, d);
  }
  return out;
}

/* ---- backward ------------------------------------------------------------------------ */

void intrus_attention_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *q = out->src[0], *k = out->src[1], *v = out->src[2];
  const struct attn_saved *sv = out->aux;
  const int H = out->ip[IP_HEADS], d = q->shape[1], Dh = d / H;
  const bool drop = out->ip[IP_DROPOUT_ON];
  const float scale = out->fp[FP_SCALE], keep_scale = out->fp[FP_KEEP_SCALE];
  const float *dO = out->grad;
  if (sv->nblocks == 0) return;

  /* One thread per head (heads are disjoint column blocks of every gradient), walking
   * the blocks in order: blocks may share key rows (every state of a sentence attends to
   * its memory), and adding their dK, dV in block order keeps the sums reproducible. */
  float *dq = q->requires_grad ? intrus_tensor_grad(ctx, q) : NULL;
  float *dk = k->requires_grad ? intrus_tensor_grad(ctx, k) : NULL;
  float *dv = v->requires_grad ? intrus_tensor_grad(ctx, v) : NULL;
  float *G = dq || dk ? intrus_ctx_alloc(ctx, (size_t)sv->np * sizeof(float)) : NULL;
  OMP_FOR_DYNAMIC(sv->np * Dh / 64)
  for (int h = 0; h < H; h++) {
    for (int b = 0; b < sv->nblocks; b++) {
      const struct attn_block *bk = &sv->block[b];
      const int rows = bk->rows, klen = bk->klen;
      const long off = bk->p_off + (long)h * rows * klen;
      const float *dO_h = dO + (size_t)bk->q0 * d + h * Dh;
      const float *q_h = q->data + (size_t)bk->q0 * d + h * Dh;
      const float *k_h = k->data + (size_t)bk->k0 * d + h * Dh;
      const float *v_h = v->data + (size_t)bk->k0 * d + h * Dh;
      /* dV_h [klen, Dh] += W_h^T dO_h */
      if (dv)
        intrus_gemm(true, false, klen, Dh, rows, 1.0f, sv->pd + off, klen, dO_h, d, 1.0f,
                    dv + (size_t)bk->k0 * d + h * Dh, d);
      if (!G) continue;
      /* dW_h [rows, klen] = dO_h V_h^T, turned into the scores' gradient in place */
      intrus_gemm(false, true, rows, klen, Dh, 1.0f, dO_h, d, v_h, d, 0.0f, G + off, klen);
      backward_piece(sv, bk, h, G, drop, keep_scale);
      /* dQ_h += scale dS_h K_h;  dK_h += scale dS_h^T Q_h */
      if (dq)
        intrus_gemm(false, false, rows, Dh, klen, scale, G + off, klen, k_h, d, 1.0f,
                    dq + (size_t)bk->q0 * d + h * Dh, d);
      if (dk)
        intrus_gemm(true, false, klen, Dh, rows, scale, G + off, klen, q_h, d, 1.0f,
                    dk + (size_t)bk->k0 * d + h * Dh, d);
    }
  }
}

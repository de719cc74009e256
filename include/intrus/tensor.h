/* The tensor engine: float32 row-major contiguous tensors, ops that record onto a tape,
 * and reverse-mode autodiff. Plugins write forward code only; intrus_backward() runs
 * the tape in reverse and calls one backward function per op.
 *
 * Memory: every tensor made by an op lives in the context's arena, which
 * intrus_ctx_reset() rewinds (it keeps its memory, so later steps reuse already-touched
 * pages). Parameters live outside the arena in one block (see params.h).
 *
 * Shapes in comments are written [outer, ..., inner]. Ops check their arguments and
 * panic on a mismatch: a wrong shape is a bug in the calling code, not bad input. */
#ifndef INTRUS_TENSOR_H
#define INTRUS_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "intrus/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define INTRUS_MAX_DIMS 4

/* Every op of the engine. The backward pass is one switch over this enum. */
enum intrus_op {
  INTRUS_OP_NONE = 0,      /* leaf: input or parameter */
  INTRUS_OP_MATMUL,        /* batched matrix product with optional transposes */
  INTRUS_OP_ADD,           /* a + b, b broadcast over a's leading dims */
  INTRUS_OP_MUL,           /* a * b elementwise, b broadcast over a's leading dims */
  INTRUS_OP_SCALE,         /* a * s */
  INTRUS_OP_RELU,
  INTRUS_OP_GELU,          /* exact (erf) GELU, as torch.nn.GELU() */
  INTRUS_OP_ELU,           /* alpha = 1 */
  INTRUS_OP_DROPOUT,       /* inverted dropout, mask from a counter-based RNG */
  INTRUS_OP_EMBEDDING,     /* rows of a table gathered by ids; scatter-add backward */
  INTRUS_OP_LAYER_NORM,    /* over the last dim, with gain and bias */
  INTRUS_OP_SOFTMAX,       /* over the last dim, optional byte mask */
  INTRUS_OP_LOG_SOFTMAX,   /* over the last dim, optional byte mask */
  INTRUS_OP_CROSS_ENTROPY, /* fused log-softmax + NLL, label smoothing, ignore index */
  INTRUS_OP_LOGSUMEXP_MASKED, /* log sum exp over the masked-in entries of each row */
  INTRUS_OP_SUM,           /* sum of all elements -> scalar */
  INTRUS_OP_MEAN,          /* mean of all elements -> scalar */
  INTRUS_OP_RESHAPE,       /* same data, new shape */
  INTRUS_OP_PERMUTE,       /* axes reordered, copied to contiguous memory */
  INTRUS_OP_CONCAT,        /* two tensors joined along one axis */
  INTRUS_OP_CONV2D,        /* [B,C,H,W] * [O,C,kh,kw] via im2col + GEMM */
  INTRUS_OP_MAXPOOL2D,     /* [B,C,H,W] -> [B,C,H',W'] */
  INTRUS_OP_ATTENTION,     /* multi-head attention over packed segments, fused */
  INTRUS_OP_INSERTION_LOSS, /* INTRUS losses of a batch of states, fused */
  INTRUS_OP_WEIGHTED_MEAN, /* sum of w[i] * x[i] over all elements, / a constant -> scalar */
  INTRUS_OP_COUNT
};

typedef struct intrus_tensor intrus_tensor;
struct intrus_tensor {
  float *data;          /* n floats */
  float *grad;          /* n floats, or NULL until backward reaches this tensor */
  int ndim;
  int shape[INTRUS_MAX_DIMS];
  size_t n;             /* product of shape */
  enum intrus_op op;
  bool requires_grad;   /* true for parameters and for anything computed from them */
  intrus_tensor *src[3];
  int32_t ip[8];        /* integer arguments of the op */
  float fp[4];          /* float arguments of the op */
  void *aux;            /* op-private arena memory kept for backward (ids, masks, stats) */
  void *aux2;
  const char *name;     /* for parameters and debugging; may be NULL */
};

typedef struct intrus_ctx intrus_ctx;

/* ---- context ---------------------------------------------------------------- */

/* arena_hint: bytes to reserve up front (0 = a default); the arena grows as needed
 * and, on reset, is consolidated into one block of the peak size. */
intrus_ctx *intrus_ctx_create(size_t arena_hint);
void intrus_ctx_destroy(intrus_ctx *ctx);

/* Forgets every tensor made since the last reset; keeps the memory. */
void intrus_ctx_reset(intrus_ctx *ctx);

/* Training mode turns dropout on. Default: false. */
void intrus_ctx_set_training(intrus_ctx *ctx, bool training);
bool intrus_ctx_training(const intrus_ctx *ctx);

/* With grad off, ops record nothing and results never require grad (inference). */
void intrus_ctx_set_grad(intrus_ctx *ctx, bool enabled);
bool intrus_ctx_grad_enabled(const intrus_ctx *ctx);

/* Packed copies of weights (intrus_weight_packs, nn.h) that no-gradient products with
 * those weights use instead of intrus_gemm; NULL (the default) for none. The caller
 * keeps them alive while they are set. */
struct intrus_weight_packs;
void intrus_ctx_set_packs(intrus_ctx *ctx, const struct intrus_weight_packs *packs);
const struct intrus_weight_packs *intrus_ctx_packs(const intrus_ctx *ctx);

/* Seeds dropout. Each dropout op draws a fresh stream id from a per-context counter
 * (reset to 0 by intrus_ctx_reset), so a step's masks depend on (seed, step, op order,
 * element index) only, never on the thread count. */
void intrus_ctx_set_seed(intrus_ctx *ctx, uint64_t seed, uint64_t step);
uint64_t intrus_ctx_next_stream(intrus_ctx *ctx);
uint64_t intrus_ctx_seed(const intrus_ctx *ctx);

/* Arena memory, 64-byte aligned, valid until the next reset. Never returns NULL. */
void *intrus_ctx_alloc(intrus_ctx *ctx, size_t bytes);
void *intrus_ctx_calloc(intrus_ctx *ctx, size_t bytes);
size_t intrus_ctx_arena_used(const intrus_ctx *ctx);
size_t intrus_ctx_arena_peak(const intrus_ctx *ctx);

/* Process-wide, for programs (the intrus CLI and the benchmarks call it first): asks the
 * C library to serve blocks of up to 32 MB from memory the process keeps, instead of
 * mapping fresh pages for each and unmapping them at free(). Search allocates its
 * buffers per batch; with fresh pages every time, page faults took 15-20% of decoding
 * (bench_intrus b: left-to-right batch 32, beam 4, 68 -> 100 sentences/s with it). A
 * no-op without glibc. A program embedding libintrus decides this for itself. */
void intrus_malloc_keep_pages(void);

/* ---- tensors ---------------------------------------------------------------- */

/* A new leaf in the arena. Data uninitialised / zeroed / copied from src. */
intrus_tensor *intrus_tensor_new(intrus_ctx *ctx, int ndim, const int *shape);
intrus_tensor *intrus_tensor_zeros(intrus_ctx *ctx, int ndim, const int *shape);
intrus_tensor *intrus_tensor_from(intrus_ctx *ctx, int ndim, const int *shape, const float *src);

/* A 2-D leaf [d0, d1], uninitialised. */
intrus_tensor *intrus_tensor_new2(intrus_ctx *ctx, int d0, int d1);

size_t intrus_shape_numel(int ndim, const int *shape);
bool intrus_tensor_same_shape(const intrus_tensor *a, const intrus_tensor *b);

/* Records t on the tape (called by every op constructor). */
void intrus_ctx_record(intrus_ctx *ctx, intrus_tensor *t);

/* Makes an op result: arena tensor of the given shape whose requires_grad is the OR of
 * its sources' (and false when grad is off); records it when it requires grad. */
intrus_tensor *intrus_op_result(intrus_ctx *ctx, enum intrus_op op, int ndim, const int *shape,
                                intrus_tensor *a, intrus_tensor *b, intrus_tensor *c);

/* Returns t->grad, allocating and zeroing it in the arena on first use. */
float *intrus_tensor_grad(intrus_ctx *ctx, intrus_tensor *t);

/* Reverse pass from a scalar (n == 1) loss: seeds d(loss) = 1 and accumulates
 * gradients into every tensor on the tape that requires grad (parameters' grads are
 * accumulated into their block, so zero them before the step). */
void intrus_backward(intrus_ctx *ctx, intrus_tensor *loss);

/* Reverse pass from any tensor t with the given d(objective)/dt (t->n floats), for
 * gradient checks and for callers that combine several outputs themselves. */
void intrus_backward_seed(intrus_ctx *ctx, intrus_tensor *t, const float *dt);

/* ---- ops -------------------------------------------------------------------- */

/* a: [..., M, K] (or [..., K, M] when trans_a), b: [..., K, N] (or [..., N, K] when
 * trans_b). b is either 2-D (shared by every batch entry of a) or has the same leading
 * dims as a. Result [..., M, N]. All products go through intrus_gemm (blas.h). */
intrus_tensor *intrus_matmul(intrus_ctx *ctx, intrus_tensor *a, intrus_tensor *b,
                             bool trans_a, bool trans_b);

/* a + b / a * b, where b has a's shape or equals a's trailing dims (bias, gain). */
intrus_tensor *intrus_add(intrus_ctx *ctx, intrus_tensor *a, intrus_tensor *b);
intrus_tensor *intrus_mul(intrus_ctx *ctx, intrus_tensor *a, intrus_tensor *b);
intrus_tensor *intrus_scale(intrus_ctx *ctx, intrus_tensor *a, float s);

intrus_tensor *intrus_relu(intrus_ctx *ctx, intrus_tensor *a);
intrus_tensor *intrus_gelu(intrus_ctx *ctx, intrus_tensor *a);
intrus_tensor *intrus_elu(intrus_ctx *ctx, intrus_tensor *a);

/* Drops each element with probability p and scales the rest by 1/(1-p); the identity
 * (returns a itself) when not training or p == 0. */
intrus_tensor *intrus_dropout(intrus_ctx *ctx, intrus_tensor *a, float p);

/* table: [V, d]; ids: ndim/shape (ids are copied). Result [shape..., d]. An id outside
 * [0, V) panics: data loaders validate ids against the vocabulary first. */
intrus_tensor *intrus_embedding(intrus_ctx *ctx, intrus_tensor *table, const int32_t *ids,
                                int ndim, const int *shape);

/* x: [..., d]; gain, bias: [d]. */
intrus_tensor *intrus_layer_norm(intrus_ctx *ctx, intrus_tensor *x, intrus_tensor *gain,
                                 intrus_tensor *bias, float eps);

/* x viewed as [R, C] (C = last dim). mask: NULL or R*C bytes (copied), 1 = keep.
 * Masked entries get probability 0 (softmax) and -INFINITY (log-softmax) and no
 * gradient; a row with every entry masked gives all zeros (softmax) / -INFINITY. */
intrus_tensor *intrus_softmax(intrus_ctx *ctx, intrus_tensor *x, const uint8_t *mask);
intrus_tensor *intrus_log_softmax(intrus_ctx *ctx, intrus_tensor *x, const uint8_t *mask);

/* logits viewed as [R, V]; targets: R ids (copied). Rows whose target equals
 * ignore_index (use -1 for none) are skipped. Loss per row, with s = smoothing:
 * (1-s) * -log p(target) + s * mean_v(-log p(v)) (torch's label_smoothing).
 * Result: scalar mean over the rows not skipped (0 if none). */
intrus_tensor *intrus_cross_entropy(intrus_ctx *ctx, intrus_tensor *logits,
                                    const int32_t *targets, float smoothing,
                                    int32_t ignore_index);

/* x viewed as [R, C]; mask R*C bytes (copied). Result [R]: log sum_{c: mask} exp(x).
 * An empty row gives -INFINITY and no gradient. */
intrus_tensor *intrus_logsumexp_masked(intrus_ctx *ctx, intrus_tensor *x, const uint8_t *mask);

intrus_tensor *intrus_sum(intrus_ctx *ctx, intrus_tensor *x);
intrus_tensor *intrus_mean(intrus_ctx *ctx, intrus_tensor *x);
/* sum_i w[i] * x[i] / denom over all x->n elements; w (x->n constants, copied) and
 * denom > 0 take no gradient. In double like intrus_sum: with every w[i] = 1 and
 * denom = x->n it is intrus_mean bit for bit, forward and backward. */
intrus_tensor *intrus_weighted_mean(intrus_ctx *ctx, intrus_tensor *x, const double *w,
                                    double denom);

/* Same elements, new shape (numel must match). Shares x's data. */
intrus_tensor *intrus_reshape(intrus_ctx *ctx, intrus_tensor *x, int ndim, const int *shape);

/* Result axis i is x's axis perm[i]. Copies. */
intrus_tensor *intrus_permute(intrus_ctx *ctx, intrus_tensor *x, const int *perm);

/* a and b equal except along axis. */
intrus_tensor *intrus_concat(intrus_ctx *ctx, intrus_tensor *a, intrus_tensor *b, int axis);

/* x: [B, C, H, W]; w: [O, C, kh, kw]; bias: [O] or NULL. Zero padding pad on every
 * side. Result [B, O, (H + 2 pad - kh) / stride + 1, (W + 2 pad - kw) / stride + 1]. */
intrus_tensor *intrus_conv2d(intrus_ctx *ctx, intrus_tensor *x, intrus_tensor *w,
                             intrus_tensor *bias, int stride, int pad);

/* x: [B, C, H, W]. Window k, stride s, no padding; floor division of the size. */
intrus_tensor *intrus_maxpool2d(intrus_ctx *ctx, intrus_tensor *x, int k, int stride);

/* Multi-head scaled dot-product attention over packed (ragged) sequences; heads are
 * column blocks of d (no permute copies), H heads of Dh = d / H.
 * q: [N, d]; k, v: [M, d]. Segment s: query rows q_begin[s] .. q_begin[s]+q_len[s]-1
 * attend to key rows k_begin[s] .. k_begin[s]+k_len[s]-1 (several segments may share
 * key rows: many states attending to one sentence's memory). causal: local query i
 * sees local keys j <= i only. Query rows outside every segment, and segments with
 * k_len 0, get zeros. Dropout p on the attention weights when training (streams as
 * intrus_dropout). The arrays are copied. Result [N, d]. */
struct intrus_segments {
  int count;
  const int *q_begin, *q_len, *k_begin, *k_len;
};
intrus_tensor *intrus_attention(intrus_ctx *ctx, intrus_tensor *q, intrus_tensor *k,
                                intrus_tensor *v, int heads, const struct intrus_segments *seg,
                                bool causal, float dropout);

/* The INTRUS losses of a batch of states (DESIGN.md section 4), fused.
 * pos: [P] position logits, state s owning pos rows row0[s] .. row0[s]+k_s+1 (slots
 * 0..k_s, then finish; len[s] = k_s + 2). tok: [R, V] token logits of the slot rows
 * that have correct insertions. Correct pairs of state s: pair_off[s] ..
 * pair_off[s+1]-1, pair p at slot pair_slot[p] (0..k_s) with token pair_tok[p], whose
 * token logits are row pair_row[p] of tok. A state without pairs is complete: its loss
 * is -log p(finish). Otherwise, with log p(i, c) = log_softmax(pos of s)[i] +
 * log_softmax(tok row)[c]:
 *   INTRUS_INS_LOSS_MAIN:     -log sum_{pairs} p(i, c)
 *   INTRUS_INS_LOSS_UNIFORM:  -(1/|pairs|) sum_{pairs} log p(i, c)
 * With label smoothing s (0 for none), log p(c | i) is replaced in both by
 * (1-s) log p(c | i) + s mean_v log p(v | i) (for the uniform loss exactly torch's label
 * smoothing of each pair's token term; the finish term is not smoothed).
 * Result [count]: each state's loss. The arrays are copied. */
enum intrus_ins_loss_kind { INTRUS_INS_LOSS_MAIN = 0, INTRUS_INS_LOSS_UNIFORM = 1 };
struct intrus_ins_targets {
  int count;                 /* states */
  const int *row0, *len;     /* [count] */
  const int *pair_off;       /* [count + 1] */
  const int *pair_slot, *pair_row;
  const int32_t *pair_tok;
};
intrus_tensor *intrus_insertion_loss(intrus_ctx *ctx, intrus_tensor *pos, intrus_tensor *tok,
                                     const struct intrus_ins_targets *tg,
                                     enum intrus_ins_loss_kind kind, float smoothing);

#ifdef __cplusplus
}
#endif
#endif

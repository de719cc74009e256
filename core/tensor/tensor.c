/* Context, arena, tape and the backward pass. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "intrus/tensor.h"
#include "ops_internal.h"

const char *intrus_shape_str(const intrus_tensor *t, char *buf, size_t size) {
  size_t len = 0;
  len += (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < t->ndim && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, i ? ",%d" : "%d", t->shape[i]);
  if (len < size) snprintf(buf + len, size - len, "]");
  return buf;
}

#define ARENA_ALIGN 64
#define HUGE_PAGE ((size_t)2 << 20)
#define ARENA_DEFAULT (64u << 20)

struct arena_chunk {
  char *base;
  size_t size, used;
};

struct intrus_ctx {
  struct arena_chunk *chunks;
  int nchunks, cap_chunks;
  size_t used_total, peak;
  intrus_tensor **tape;
  size_t ntape, cap_tape;
  bool training, grad_enabled;
  uint64_t seed, step, stream;
  const struct intrus_weight_packs *packs;
};

static void *xmalloc_aligned(size_t size) {
  void *p = NULL;
  size_t align = size >= HUGE_PAGE ? HUGE_PAGE : ARENA_ALIGN;
  if (posix_memalign(&p, align, size ? size : ARENA_ALIGN) != 0)
    intrus_panic("out of memory allocating %zu bytes", size);
#ifdef MADV_HUGEPAGE
  if (size >= HUGE_PAGE) (void)madvise(p, size & ~(size_t)(HUGE_PAGE - 1), MADV_HUGEPAGE);
#endif
  return p;
}

static void arena_add_chunk(intrus_ctx *ctx, size_t size) {
  if (ctx->nchunks == ctx->cap_chunks) {
    ctx->cap_chunks = ctx->cap_chunks ? 2 * ctx->cap_chunks : 4;
    ctx->chunks = realloc(ctx->chunks, ctx->cap_chunks * sizeof *ctx->chunks);
    if (!ctx->chunks) intrus_panic("out of memory");
  }
  struct arena_chunk *c = &ctx->chunks[ctx->nchunks++];
  c->base = xmalloc_aligned(size);
  c->size = size;
  c->used = 0;
}

intrus_ctx *intrus_ctx_create(size_t arena_hint) {
  intrus_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) intrus_panic("out of memory");
  arena_add_chunk(ctx, arena_hint ? arena_hint : ARENA_DEFAULT);
  ctx->grad_enabled = true;
  return ctx;
}

void intrus_ctx_destroy(intrus_ctx *ctx) {
  if (!ctx) return;
  for (int i = 0; i < ctx->nchunks; i++) free(ctx->chunks[i].base);
  free(ctx->chunks);
  free(ctx->tape);
  free(ctx);
}

void intrus_ctx_reset(intrus_ctx *ctx) {
  /* A step that overflowed the first chunk gets one chunk of the peak size (and some),
   * so the next steps allocate from memory that is already mapped and touched. */
  if (ctx->nchunks > 1) {
    size_t total = 0;
    for (int i = 0; i < ctx->nchunks; i++) {
      total += ctx->chunks[i].size;
      free(ctx->chunks[i].base);
    }
    ctx->nchunks = 0;
    /* Headroom: batches vary in size, and every regrowth costs fresh, untouched pages. */
    arena_add_chunk(ctx, total + total / 4);
  }
  ctx->chunks[0].used = 0;
  ctx->used_total = 0;
  ctx->ntape = 0;
  ctx->stream = 0;
}

void intrus_malloc_keep_pages(void) {
#ifdef __GLIBC__
  /* 32 MB is the largest threshold glibc accepts on 64-bit systems; freed memory at the
   * top of the heap is given back only beyond 1 GB. */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

void intrus_ctx_set_training(intrus_ctx *ctx, bool training) { ctx->training = training; }
void intrus_ctx_set_packs(intrus_ctx *ctx, const struct intrus_weight_packs *packs) {
  ctx->packs = packs;
}
const struct intrus_weight_packs *intrus_ctx_packs(const intrus_ctx *ctx) { return ctx->packs; }
bool intrus_ctx_training(const intrus_ctx *ctx) { return ctx->training; }
void intrus_ctx_set_grad(intrus_ctx *ctx, bool enabled) { ctx->grad_enabled = enabled; }
bool intrus_ctx_grad_enabled(const intrus_ctx *ctx) { return ctx->grad_enabled; }

void intrus_ctx_set_seed(intrus_ctx *ctx, uint64_t seed, uint64_t step) {
  ctx->seed = seed;
  ctx->step = step;
  ctx->stream = 0;
}

uint64_t intrus_ctx_seed(const intrus_ctx *ctx) { return ctx->seed; }

uint64_t intrus_ctx_next_stream(intrus_ctx *ctx) {
  /* Mixes seed, step and the op's index in the step into one key. */
  uint64_t s = ctx->stream++;
  uint64_t key = ctx->seed * 0x9e3779b97f4a7c15ULL ^ (ctx->step + 1) * 0xc2b2ae3d27d4eb4fULL;
  return key ^ (s + 1) * 0x165667b19e3779f9ULL;
}

void *intrus_ctx_alloc(intrus_ctx *ctx, size_t bytes) {
  size_t need = (bytes + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (need == 0) need = ARENA_ALIGN;
  struct arena_chunk *c = &ctx->chunks[ctx->nchunks - 1];
  if (c->used + need > c->size) {
    size_t size = c->size * 2;
    if (size < need) size = need;
    arena_add_chunk(ctx, size);
    c = &ctx->chunks[ctx->nchunks - 1];
  }
  void *p = c->base + c->used;
  c->used += need;
  ctx->used_total += need;
  if (ctx->used_total > ctx->peak) ctx->peak = ctx->used_total;
  return p;
}

void *intrus_ctx_calloc(intrus_ctx *ctx, size_t bytes) {
  void *p = intrus_ctx_alloc(ctx, bytes);
  memset(p, 0, bytes);
  return p;
}

size_t intrus_ctx_arena_used(const intrus_ctx *ctx) { return ctx->used_total; }
size_t intrus_ctx_arena_peak(const intrus_ctx *ctx) { return ctx->peak; }

size_t intrus_shape_numel(int ndim, const int *shape) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  return n;
}

bool intrus_tensor_same_shape(const intrus_tensor *a, const intrus_tensor *b) {
  if (a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

intrus_tensor *intrus_tensor_new(intrus_ctx *ctx, int ndim, const int *shape) {
  INTRUS_CHECK(ndim >= 1 && ndim <= INTRUS_MAX_DIMS, "tensor of %d dims", ndim);
  intrus_tensor *t = intrus_ctx_calloc(ctx, sizeof *t);
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    INTRUS_CHECK(shape[i] >= 0, "negative dimension %d", shape[i]);
    t->shape[i] = shape[i];
  }
  t->n = intrus_shape_numel(ndim, shape);
  t->data = intrus_ctx_alloc(ctx, t->n * sizeof(float));
  return t;
}

intrus_tensor *intrus_tensor_zeros(intrus_ctx *ctx, int ndim, const int *shape) {
  intrus_tensor *t = intrus_tensor_new(ctx, ndim, shape);
  memset(t->data, 0, t->n * sizeof(float));
  return t;
}

intrus_tensor *intrus_tensor_from(intrus_ctx *ctx, int ndim, const int *shape, const float *src) {
  intrus_tensor *t = intrus_tensor_new(ctx, ndim, shape);
  memcpy(t->data, src, t->n * sizeof(float));
  return t;
}

intrus_tensor *intrus_tensor_new2(intrus_ctx *ctx, int d0, int d1) {
  int shape[2] = {d0, d1};
  return intrus_tensor_new(ctx, 2, shape);
}

void intrus_ctx_record(intrus_ctx *ctx, intrus_tensor *t) {
  if (ctx->ntape == ctx->cap_tape) {
    ctx->cap_tape = ctx->cap_tape ? 2 * ctx->cap_tape : 1024;
    ctx->tape = realloc(ctx->tape, ctx->cap_tape * sizeof *ctx->tape);
    if (!ctx->tape) intrus_panic("out of memory");
  }
  ctx->tape[ctx->ntape++] = t;
}

intrus_tensor *intrus_op_result(intrus_ctx *ctx, enum intrus_op op, int ndim, const int *shape,
                                intrus_tensor *a, intrus_tensor *b, intrus_tensor *c) {
  intrus_tensor *t = intrus_tensor_new(ctx, ndim, shape);
  t->op = op;
  t->src[0] = a;
  t->src[1] = b;
  t->src[2] = c;
  if (ctx->grad_enabled)
    t->requires_grad = (a && a->requires_grad) || (b && b->requires_grad) ||
                       (c && c->requires_grad);
  if (t->requires_grad) intrus_ctx_record(ctx, t);
  return t;
}

float *intrus_tensor_grad(intrus_ctx *ctx, intrus_tensor *t) {
  if (!t->grad) t->grad = intrus_ctx_calloc(ctx, t->n * sizeof(float));
  return t->grad;
}

float *intrus_grad_take(intrus_ctx *ctx, intrus_tensor *t, intrus_tensor *out, bool *taken) {
  *taken = !t->grad && t != out && t->n == out->n && out->grad;
  if (*taken) t->grad = out->grad;
  return intrus_tensor_grad(ctx, t);
}

static void backward_one(intrus_ctx *ctx, intrus_tensor *t) {
  switch (t->op) {
  case INTRUS_OP_NONE: break;
  case INTRUS_OP_MATMUL: intrus_matmul_backward(ctx, t); break;
  case INTRUS_OP_ADD: intrus_add_backward(ctx, t); break;
  case INTRUS_OP_MUL: intrus_mul_backward(ctx, t); break;
  case INTRUS_OP_SCALE: intrus_scale_backward(ctx, t); break;
  case INTRUS_OP_RELU: intrus_relu_backward(ctx, t); break;
  case INTRUS_OP_GELU: intrus_gelu_backward(ctx, t); break;
  case INTRUS_OP_ELU: intrus_elu_backward(ctx, t); break;
  case INTRUS_OP_DROPOUT: intrus_dropout_backward(ctx, t); break;
  case INTRUS_OP_EMBEDDING: intrus_embedding_backward(ctx, t); break;
  case INTRUS_OP_LAYER_NORM: intrus_layer_norm_backward(ctx, t); break;
  case INTRUS_OP_SOFTMAX: intrus_softmax_backward(ctx, t); break;
  case INTRUS_OP_LOG_SOFTMAX: intrus_log_softmax_backward(ctx, t); break;
  case INTRUS_OP_CROSS_ENTROPY: intrus_cross_entropy_backward(ctx, t); break;
  case INTRUS_OP_LOGSUMEXP_MASKED: intrus_logsumexp_masked_backward(ctx, t); break;
  case INTRUS_OP_SUM: intrus_sum_backward(ctx, t); break;
  case INTRUS_OP_MEAN: intrus_mean_backward(ctx, t); break;
  case INTRUS_OP_RESHAPE: intrus_reshape_backward(ctx, t); break;
  case INTRUS_OP_PERMUTE: intrus_permute_backward(ctx, t); break;
  case INTRUS_OP_CONCAT: intrus_concat_backward(ctx, t); break;
  case INTRUS_OP_CONV2D: intrus_conv2d_backward(ctx, t); break;
  case INTRUS_OP_MAXPOOL2D: intrus_maxpool2d_backward(ctx, t); break;
  case INTRUS_OP_ATTENTION: intrus_attention_backward(ctx, t); break;
  case INTRUS_OP_INSERTION_LOSS: intrus_insertion_loss_backward(ctx, t); break;
  case INTRUS_OP_WEIGHTED_MEAN: intrus_weighted_mean_backward(ctx, t); break;
  case INTRUS_OP_COUNT: intrus_panic("tensor with op INTRUS_OP_COUNT");
  }
}

void intrus_backward(intrus_ctx *ctx, intrus_tensor *loss) {
  INTRUS_CHECK(loss->n == 1, "backward from a tensor of %zu elements (need a scalar)", loss->n);
  const float one = 1.0f;
  intrus_backward_seed(ctx, loss, &one);
}

void intrus_backward_seed(intrus_ctx *ctx, intrus_tensor *t, const float *dt) {
  if (!t->requires_grad) return;
  float *g = intrus_tensor_grad(ctx, t);
  for (size_t i = 0; i < t->n; i++) g[i] += dt[i];
  /* The tape is in creation order, which is a topological order. */
  for (size_t i = ctx->ntape; i-- > 0;) {
    intrus_tensor *node = ctx->tape[i];
    if (node->grad) backward_one(ctx, node);
  }
}

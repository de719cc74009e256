/* Elementwise ops: add and mul with trailing-dims broadcast, scale, activations and
 * dropout. Every loop is either elementwise or reduces in a fixed order, so results do
 * not depend on the OpenMP thread count. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "intrus/rng.h"
#include "intrus/tensor.h"
#include "ops_internal.h"

/* Without OpenMP the pragmas would be unknown ones and fail -Werror builds, so they go
 * through a macro that vanishes there. OMP_FOR(n) parallelises the next loop only when
 * it covers more than INTRUS_OMP_MIN elements. */
#ifdef _OPENMP
#define OMP_PRAGMA(x) _Pragma(#x)
#define OMP_FOR(n) OMP_PRAGMA(omp parallel for schedule(static) if ((n) > INTRUS_OMP_MIN))
#define OMP_FOR2(n) \
  OMP_PRAGMA(omp parallel for collapse(2) schedule(static) if ((n) > INTRUS_OMP_MIN))
#else
#define OMP_FOR(n)
#define OMP_FOR2(n)
#endif

/* Columns per task in the broadcast-gradient reduction (see reduce_rows). */
#define REDUCE_COLS 64

static const char *shape_str(const intrus_tensor *t, char *buf, size_t size) {
  size_t len = 0;
  len += (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < t->ndim && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, i ? ",%d" : "%d", t->shape[i]);
  if (len < size) snprintf(buf + len, size - len, "]");
  return buf;
}

/* ---- add / mul ------------------------------------------------------------------ */

/* b broadcasts when its shape equals a's trailing dims; a is then viewed as
 * [rows, inner] with inner = b->n (rows = 1 when the shapes are equal). */
static long broadcast_rows(const char *op, const intrus_tensor *a, const intrus_tensor *b) {
  char sa[64], sb[64];
  bool ok = b->ndim <= a->ndim;
  for (int i = 0; ok && i < b->ndim; i++)
    ok = b->shape[i] == a->shape[a->ndim - b->ndim + i];
  INTRUS_CHECK(ok, "%s: b %s is neither a's shape %s nor its trailing dims", op,
               shape_str(b, sb, sizeof sb), shape_str(a, sa, sizeof sa));
  return b->n ? (long)(a->n / b->n) : 0;
}

static intrus_tensor *binary(intrus_ctx *ctx, enum intrus_op op, const char *name,
                             intrus_tensor *a, intrus_tensor *b) {
  long rows = broadcast_rows(name, a, b), inner = (long)b->n;
  intrus_tensor *out = intrus_op_result(ctx, op, a->ndim, a->shape, a, b, NULL);
  const float *x = a->data, *y = b->data;
  float *z = out->data;
  if (op == INTRUS_OP_ADD) {
    OMP_FOR2(a->n)
    for (long r = 0; r < rows; r++)
      for (long j = 0; j < inner; j++) z[r * inner + j] = x[r * inner + j] + y[j];
  } else {
    OMP_FOR2(a->n)
    for (long r = 0; r < rows; r++)
      for (long j = 0; j < inner; j++) z[r * inner + j] = x[r * inner + j] * y[j];
  }
  return out;
}

intrus_tensor *intrus_add(intrus_ctx *ctx, intrus_tensor *a, intrus_tensor *b) {
  return binary(ctx, INTRUS_OP_ADD, "add", a, b);
}

intrus_tensor *intrus_mul(intrus_ctx *ctx, intrus_tensor *a, intrus_tensor *b) {
  return binary(ctx, INTRUS_OP_MUL, "mul", a, b);
}

/* db[j] += sum_r g[r, j] * (f ? f[r, j] : 1) over g, f: [rows, inner]. Each task owns
 * a block of columns and sums its rows in ascending order, in double because rows can
 * run to batch * length, so the result does not depend on the thread count. */
static void reduce_rows(float *db, const float *g, const float *f, long rows, long inner) {
  long nblocks = (inner + REDUCE_COLS - 1) / REDUCE_COLS;
  OMP_FOR(rows * inner)
  for (long blk = 0; blk < nblocks; blk++) {
    long j0 = blk * REDUCE_COLS, j1 = j0 + REDUCE_COLS < inner ? j0 + REDUCE_COLS : inner;
    double acc[REDUCE_COLS] = {0};
    for (long r = 0; r < rows; r++) {
      const float *gr = g + r * inner;
      if (f) {
        const float *fr = f + r * inner;
        for (long j = j0; j < j1; j++) acc[j - j0] += (double)gr[j] * fr[j];
      } else {
        for (long j = j0; j < j1; j++) acc[j - j0] += gr[j];
      }
    }
    for (long j = j0; j < j1; j++) db[j] += (float)acc[j - j0];
  }
}

void intrus_add_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0], *b = out->src[1];
  const float *g = out->grad;
  long n = (long)out->n, inner = (long)b->n, rows = inner ? n / inner : 0;
  if (a->requires_grad) {
    float *da = intrus_tensor_grad(ctx, a);
    OMP_FOR(n)
    for (long i = 0; i < n; i++) da[i] += g[i];
  }
  if (b->requires_grad) reduce_rows(intrus_tensor_grad(ctx, b), g, NULL, rows, inner);
}

void intrus_mul_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0], *b = out->src[1];
  const float *g = out->grad, *x = a->data, *y = b->data;
  long n = (long)out->n, inner = (long)b->n, rows = inner ? n / inner : 0;
  if (a->requires_grad) {
    float *da = intrus_tensor_grad(ctx, a);
    OMP_FOR2(n)
    for (long r = 0; r < rows; r++)
      for (long j = 0; j < inner; j++) da[r * inner + j] += g[r * inner + j] * y[j];
  }
  if (b->requires_grad) reduce_rows(intrus_tensor_grad(ctx, b), g, x, rows, inner);
}

/* ---- scale ---------------------------------------------------------------------- */

intrus_tensor *intrus_scale(intrus_ctx *ctx, intrus_tensor *a, float s) {
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_SCALE, a->ndim, a->shape, a, NULL, NULL);
  out->fp[0] = s;
  const float *x = a->data;
  float *z = out->data;
  long n = (long)a->n;
  OMP_FOR(n)
  for (long i = 0; i < n; i++) z[i] = x[i] * s;
  return out;
}

void intrus_scale_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0];
  if (!a->requires_grad) return;
  float *da = intrus_tensor_grad(ctx, a);
  const float *g = out->grad;
  float s = out->fp[0];
  long n = (long)out->n;
  OMP_FOR(n)
  for (long i = 0; i < n; i++) da[i] += g[i] * s;
}

/* ---- activations ---------------------------------------------------------------- */

intrus_tensor *intrus_relu(intrus_ctx *ctx, intrus_tensor *a) {
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_RELU, a->ndim, a->shape, a, NULL, NULL);
  const float *x = a->data;
  float *z = out->data;
  long n = (long)a->n;
  OMP_FOR(n)
  for (long i = 0; i < n; i++) z[i] = x[i] > 0.0f ? x[i] : 0.0f;
  return out;
}

void intrus_relu_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0];
  if (!a->requires_grad) return;
  float *da = intrus_tensor_grad(ctx, a);
  const float *g = out->grad, *x = a->data;
  long n = (long)out->n;
  /* The subgradient at 0 is 0, as torch's. */
  OMP_FOR(n)
  for (long i = 0; i < n; i++)
    if (x[i] > 0.0f) da[i] += g[i];
}

#define INV_SQRT2 0.70710678118654752440f
#define INV_SQRT_2PI 0.39894228040143267794f

/* x * Phi(x) with Phi the standard normal CDF. */
intrus_tensor *intrus_gelu(intrus_ctx *ctx, intrus_tensor *a) {
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_GELU, a->ndim, a->shape, a, NULL, NULL);
  const float *x = a->data;
  float *z = out->data;
  long n = (long)a->n;
  OMP_FOR(n)
  for (long i = 0; i < n; i++) z[i] = 0.5f * x[i] * (1.0f + erff(x[i] * INV_SQRT2));
  return out;
}

/* d/dx x Phi(x) = Phi(x) + x phi(x). */
void intrus_gelu_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0];
  if (!a->requires_grad) return;
  float *da = intrus_tensor_grad(ctx, a);
  const float *g = out->grad, *x = a->data;
  long n = (long)out->n;
  OMP_FOR(n)
  for (long i = 0; i < n; i++) {
    float v = x[i];
    float cdf = 0.5f * (1.0f + erff(v * INV_SQRT2));
    float pdf = INV_SQRT_2PI * expf(-0.5f * v * v);
    da[i] += g[i] * (cdf + v * pdf);
  }
}

intrus_tensor *intrus_elu(intrus_ctx *ctx, intrus_tensor *a) {
  intrus_tensor *out = intrus_op_result(ctx, INTRUS_OP_ELU, a->ndim, a->shape, a, NULL, NULL);
  const float *x = a->data;
  float *z = out->data;
  long n = (long)a->n;
  /* expm1 keeps small negative inputs accurate, as torch's kernel does. */
  OMP_FOR(n)
  for (long i = 0; i < n; i++) z[i] = x[i] > 0.0f ? x[i] : expm1f(x[i]);
  return out;
}

/* For x <= 0 the derivative exp(x) equals out + 1, which saves recomputing exp. */
void intrus_elu_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0];
  if (!a->requires_grad) return;
  float *da = intrus_tensor_grad(ctx, a);
  const float *g = out->grad, *x = a->data, *y = out->data;
  long n = (long)out->n;
  OMP_FOR(n)
  for (long i = 0; i < n; i++) da[i] += x[i] > 0.0f ? g[i] : g[i] * (y[i] + 1.0f);
}

/* ---- dropout -------------------------------------------------------------------- */

/* Element i is dropped when its counter-based uniform falls below p, so the mask is a
 * pure function of (key, i): the same for any thread count, and recomputable in
 * backward from the 8-byte key instead of an n-byte mask. */
static inline bool dropout_keep(uint64_t key, long i, float p) {
  return intrus_hash_uniform(key, (uint64_t)i) >= p;
}

intrus_tensor *intrus_dropout(intrus_ctx *ctx, intrus_tensor *a, float p) {
  INTRUS_CHECK(p >= 0.0f && p < 1.0f, "dropout: p = %g outside [0, 1)", (double)p);
  if (!intrus_ctx_training(ctx) || p == 0.0f) return a;
  intrus_tensor *out =
      intrus_op_result(ctx, INTRUS_OP_DROPOUT, a->ndim, a->shape, a, NULL, NULL);
  uint64_t *key = intrus_ctx_alloc(ctx, sizeof *key);
  *key = intrus_ctx_next_stream(ctx);
  out->aux = key;
  float scale = 1.0f / (1.0f - p);
  out->fp[0] = p;
  out->fp[1] = scale;
  const float *x = a->data;
  float *z = out->data;
  uint64_t k = *key;
  long n = (long)a->n;
  OMP_FOR(n)
  for (long i = 0; i < n; i++) z[i] = dropout_keep(k, i, p) ? x[i] * scale : 0.0f;
  return out;
}

void intrus_dropout_backward(intrus_ctx *ctx, intrus_tensor *out) {
  intrus_tensor *a = out->src[0];
  if (!a->requires_grad) return;
  float *da = intrus_tensor_grad(ctx, a);
  const float *g = out->grad;
  uint64_t k = *(const uint64_t *)out->aux;
  float p = out->fp[0], scale = out->fp[1];
  long n = (long)out->n;
  OMP_FOR(n)
  for (long i = 0; i < n; i++)
    if (dropout_keep(k, i, p)) da[i] += g[i] * scale;
}

/* The correct-insertion oracle against brute force, hand-worked examples, trajectory
 * replay; then the fused insertion losses against a double-precision computation from
 * their definitions (values, gradients by the closed form, thread-count independence,
 * argument checks). */
#include <math.h>
#include <stdint.h>
#include <sys/wait.h>

#include "intrus/insertion.h"
#include "intrus/rng.h"
#include "intrus/tensor.h"
#include "tensor/ops_internal.h"
#include "testutil.h"

/* ---- oracle ------------------------------------------------------------------ */

#define MAXN 640
#define MAXPAIRS (MAXN * MAXN / 4 + MAXN + 1) /* >= (k+1)(n-k) for n <= MAXN */

static int pair_slot[2][MAXPAIRS];
static int32_t pair_tok[2][MAXPAIRS];
static int64_t keys[2][MAXPAIRS];

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Sorted (slot, token) keys of pair list w. */
static void sort_keys(int w, int cnt) {
  for (int p = 0; p < cnt; p++)
    keys[w][p] = (int64_t)pair_slot[w][p] * ((int64_t)1 << 32) + pair_tok[w][p];
  qsort(keys[w], (size_t)cnt, sizeof(int64_t), cmp_i64);
}

static long n_compared, n_nonsub;

/* The oracle against brute force as sets, its documented order, the count bound, and
 * intrus_ins_ranges against the brute set of each slot. Returns false on a mismatch
 * (after reporting) so callers can stop a loop that would repeat it. */
static bool check_one(const int32_t *y, int n, const int32_t *part, int k) {
  const int fails0 = tu_failures;
  const int co = intrus_ins_correct(y, n, part, k, pair_slot[0], pair_tok[0], MAXPAIRS);
  const int cb = intrus_ins_correct_brute(y, n, part, k, pair_slot[1], pair_tok[1], MAXPAIRS);
  int start[MAXN + 1], end[MAXN + 1];
  const bool rok = intrus_ins_ranges(y, n, part, k, start, end);
  EXPECT(co == cb, "n %d k %d: oracle count %d, brute %d", n, k, co, cb);
  EXPECT(rok == (cb >= 0), "n %d k %d: ranges say %d, brute count %d", n, k, rok, cb);
  n_compared++;
  if (co != cb || cb < 0 || !rok) {
    n_nonsub += cb < 0;
    return tu_failures == fails0;
  }
  EXPECT(cb <= (k + 1) * (n - k), "n %d k %d: count %d over (k+1)(n-k)", n, k, cb);
  EXPECT((cb == 0) == (k == n), "n %d k %d: count %d", n, k, cb);
  sort_keys(0, co);
  sort_keys(1, cb);
  bool same = true;
  for (int p = 0; p < co; p++) same = same && keys[0][p] == keys[1][p];
  EXPECT(same, "n %d k %d: oracle and brute pair sets differ", n, k);
  for (int p = 1; p < co; p++)
    EXPECT(keys[0][p] != keys[0][p - 1], "n %d k %d: duplicate pair", n, k);
  /* Slot-major, and within a slot by first occurrence in the slot's range. */
  for (int p = 1; p < co; p++) {
    const int i = pair_slot[0][p];
    EXPECT(i >= pair_slot[0][p - 1], "n %d k %d: slots not in order at %d", n, k, p);
    if (i != pair_slot[0][p - 1]) continue;
    int fa = -1, fb = -1;
    for (int q = end[i] - 1; q >= start[i]; q--) {
      if (y[q] == pair_tok[0][p - 1]) fa = q;
      if (y[q] == pair_tok[0][p]) fb = q;
    }
    EXPECT(fa >= 0 && fa < fb, "n %d k %d: pairs %d, %d not by first occurrence", n, k,
           p - 1, p);
  }
  /* Canonical pairs: of the brute pairs that give one string, exactly the one at the
   * leftmost slot (inserting c at slots a..e of a run of c gives one string). */
  {
    static int cs[MAXPAIRS];
    static int32_t ct[MAXPAIRS];
    memcpy(cs, pair_slot[0], (size_t)co * sizeof *cs);
    memcpy(ct, pair_tok[0], (size_t)co * sizeof *ct);
    const int cc = intrus_ins_canonical(part, k, cs, ct, co);
    int want = 0;
    for (int p = 0; p < cb; p++) {
      /* (i, c) and (i', c) with i' < i give one string exactly when part[i'..i) are all c. */
      const int i = pair_slot[1][p];
      const int32_t c = pair_tok[1][p];
      bool leftmost = true;
      for (int q = 0; q < cb && leftmost; q++) {
        if (pair_tok[1][q] != c || pair_slot[1][q] >= i) continue;
        bool run = true;
        for (int r = pair_slot[1][q]; r < i; r++) run = run && part[r] == c;
        leftmost = !run;
      }
      if (!leftmost) continue;
      want++;
      bool found = false;
      for (int q = 0; q < cc; q++) found = found || (cs[q] == i && ct[q] == c);
      EXPECT(found, "n %d k %d: canonical pairs lack (%d, %d)", n, k, i, (int)c);
    }
    EXPECT(cc == want, "n %d k %d: %d canonical pairs, brute %d", n, k, cc, want);
    for (int q = 1; q < cc; q++)
      EXPECT(cs[q] >= cs[q - 1], "n %d k %d: canonical pairs out of slot order", n, k);
  }
  /* Each slot's range holds exactly the brute set's tokens of that slot. */
  for (int i = 0; i <= k; i++) {
    EXPECT(start[i] >= 0 && start[i] <= end[i] && end[i] <= n, "slot %d: range [%d, %d)", i,
           start[i], end[i]);
    int distinct = 0, in_brute = 0;
    for (int q = start[i]; q < end[i]; q++) {
      bool seen = false;
      for (int r = start[i]; r < q; r++) seen = seen || y[r] == y[q];
      if (seen) continue;
      distinct++;
      for (int p = 0; p < cb; p++) in_brute += pair_slot[1][p] == i && pair_tok[1][p] == y[q];
    }
    int brute_i = 0;
    for (int p = 0; p < cb; p++) brute_i += pair_slot[1][p] == i;
    EXPECT(distinct == brute_i && in_brute == brute_i,
           "n %d k %d slot %d: range [%d, %d) has %d tokens (%d in brute), brute %d", n, k, i,
           start[i], end[i], distinct, in_brute, brute_i);
  }
  return tu_failures == fails0;
}

/* (a) Every subsequence (by position mask) of random targets over small alphabets, so
 * tokens repeat, and random strings that are mostly not subsequences. */
static void test_exhaustive(void) {
  struct intrus_rng rng;
  intrus_rng_seed(&rng, 20190601);
  long targets = 0;
  for (int alpha = 1; alpha <= 4; alpha++)
    for (int n = 0; n <= 9; n++)
      for (int rep = 0; rep < 10; rep++) {
        int32_t y[9], part[10];
        for (int i = 0; i < n; i++) y[i] = 4 + (int32_t)intrus_rng_below(&rng, alpha);
        targets++;
        bool ok = true;
        for (unsigned mask = 0; mask < (1u << n) && ok; mask++) {
          int k = 0;
          for (int i = 0; i < n; i++)
            if (mask >> i & 1) part[k++] = y[i];
          ok = check_one(y, n, part, k);
        }
        for (int t = 0; t < 6 && ok; t++) {
          const int k = (int)intrus_rng_below(&rng, (uint64_t)n + 2);
          for (int i = 0; i < k; i++) part[i] = 4 + (int32_t)intrus_rng_below(&rng, alpha + 1);
          ok = check_one(y, n, part, k);
        }
      }
  printf("oracle: %ld targets, %ld (target, partial) cases vs brute force (%ld not "
         "subsequences)\n", targets, n_compared, n_nonsub);
  EXPECT(n_nonsub > 100, "only %ld non-subsequence cases", n_nonsub);
}

/* Long targets take the paths for n and k past the oracle's stack buffers. */
static void test_long(void) {
  struct intrus_rng rng;
  intrus_rng_seed(&rng, 77);
  static int32_t y[600], part[600];
  const int n = 600;
  const int alphas[2] = {3, 40};
  const float keep[5] = {0.0f, 0.1f, 0.5f, 0.9f, 0.97f};
  int cases = 0, over = 0;
  for (int a = 0; a < 2; a++) {
    for (int i = 0; i < n; i++) y[i] = 4 + (int32_t)intrus_rng_below(&rng, alphas[a]);
    for (int t = 0; t < 5; t++) {
      int k = 0;
      for (int i = 0; i < n; i++)
        if (intrus_rng_uniform(&rng) < keep[t]) part[k++] = y[i];
      over += k > 512;
      check_one(y, n, part, k);
      cases++;
    }
  }
  EXPECT(over >= 2, "only %d long cases with k > 512", over);
  printf("oracle: %d cases of length 600 vs brute force\n", cases);
}

/* Expects the oracle's exact output (count and pairs in order). */
static void expect_pairs(const char *what, const int32_t *y, int n, const int32_t *part, int k,
                         int want_count, const int *want_slot, const int32_t *want_tok) {
  int s[32];
  int32_t t[32];
  const int c = intrus_ins_correct(y, n, part, k, s, t, 32);
  EXPECT(c == want_count, "%s: count %d, want %d", what, c, want_count);
  for (int p = 0; p < c && p < want_count; p++)
    EXPECT(s[p] == want_slot[p] && t[p] == want_tok[p], "%s: pair %d is (%d, %d), want (%d, %d)",
           what, p, s[p], (int)t[p], want_slot[p], (int)want_tok[p]);
  const int cb = intrus_ins_correct_brute(y, n, part, k, s, t, 32);
  EXPECT(cb == want_count, "%s: brute count %d, want %d", what, cb, want_count);
}

enum { A = 5, B = 6, C = 7 };

/* (b) Worked by hand, y = a b a c:
 *  partial "a": the a matches y[0] (left) or y[2] (right): slot 0 ranges over y[0..2)
 *    = {a, b} ("a a", "b a" embed, "c a" does not), slot 1 over y[1..4) = {b, a, c};
 *  partial "b": b is y[1] either way: slot 0 {a}, slot 1 {a, c};
 *  partial "a c": slot 0 y[0..2) = {a, b}, slot 1 y[1..3) = {b, a}, slot 2 nothing;
 *  partial "": slot 0 is all of y, a b c once each;
 *  y = a a a, partial "a": {a} at both slots, two different pairs. */
static void test_hand(void) {
  const int32_t y[4] = {A, B, A, C};
  const int32_t pa[1] = {A}, pb[1] = {B}, pac[2] = {A, C}, pca[2] = {C, A};
  {
    const int s[5] = {0, 0, 1, 1, 1};
    const int32_t t[5] = {A, B, B, A, C};
    expect_pairs("abac / a", y, 4, pa, 1, 5, s, t);
    int st[2], en[2];
    EXPECT(intrus_ins_ranges(y, 4, pa, 1, st, en), "abac / a: not a subsequence?");
    EXPECT(st[0] == 0 && en[0] == 2 && st[1] == 1 && en[1] == 4,
           "abac / a: ranges [%d,%d) [%d,%d)", st[0], en[0], st[1], en[1]);
  }
  {
    const int s[3] = {0, 1, 1};
    const int32_t t[3] = {A, A, C};
    expect_pairs("abac / b", y, 4, pb, 1, 3, s, t);
  }
  {
    const int s[4] = {0, 0, 1, 1};
    const int32_t t[4] = {A, B, B, A};
    expect_pairs("abac / ac", y, 4, pac, 2, 4, s, t);
    int st[3], en[3];
    intrus_ins_ranges(y, 4, pac, 2, st, en);
    EXPECT(st[2] == 4 && en[2] == 4, "abac / ac: slot 2 range [%d,%d)", st[2], en[2]);
  }
  {
    const int s[3] = {0, 0, 0};
    const int32_t t[3] = {A, B, C};
    expect_pairs("abac / empty", y, 4, pa, 0, 3, s, t);
  }
  {
    const int32_t aaa[3] = {A, A, A};
    const int s[2] = {0, 1};
    const int32_t t[2] = {A, A};
    expect_pairs("aaa / a", aaa, 3, pa, 1, 2, s, t);
  }
  expect_pairs("abac / abac (complete)", y, 4, y, 4, 0, NULL, NULL);
  expect_pairs("abac / ca (not a subsequence)", y, 4, pca, 2, -1, NULL, NULL);
  const int32_t five[5] = {A, B, A, C, C};
  expect_pairs("abac / abacc (too long)", y, 4, five, 5, -1, NULL, NULL);
  expect_pairs("empty / empty", y, 0, pa, 0, 0, NULL, NULL);
  int st[2], en[2];
  EXPECT(!intrus_ins_ranges(y, 4, pca, 2, st, en), "ranges of a non-subsequence");

  /* (c) A cap below the count writes cap pairs and still returns the full count. */
  int s[4] = {-7, -7, -7, -7};
  int32_t t[4] = {-7, -7, -7, -7};
  EXPECT(intrus_ins_correct(y, 4, pa, 1, s, t, 2) == 5, "capped count");
  EXPECT(s[0] == 0 && t[0] == A && s[1] == 0 && t[1] == B, "capped pairs");
  EXPECT(s[2] == -7 && t[2] == -7, "wrote past cap");
  EXPECT(intrus_ins_correct(y, 4, pa, 1, NULL, NULL, 0) == 5, "count-only call");
  s[1] = -7;
  EXPECT(intrus_ins_correct_brute(y, 4, pa, 1, s, t, 1) == 5 && s[0] == 0 && s[1] == -7,
         "brute with cap 1");
}

/* Apply by hand, then random correct trajectories replayed. */
static void test_trajectories(void) {
  int32_t p[5] = {1, 2, 3};
  intrus_ins_apply(p, 3, (struct intrus_ins_step){0, 9});
  EXPECT(p[0] == 9 && p[1] == 1 && p[2] == 2 && p[3] == 3, "apply at the front");
  intrus_ins_apply(p, 4, (struct intrus_ins_step){4, 8});
  EXPECT(p[3] == 3 && p[4] == 8, "apply at the end");
  int32_t q[3] = {1, 2};
  intrus_ins_apply(q, 2, (struct intrus_ins_step){1, 5});
  EXPECT(q[0] == 1 && q[1] == 5 && q[2] == 2, "apply in the middle");

  struct intrus_rng rng;
  intrus_rng_seed(&rng, 99);
  int trajectories = 0;
  for (int rep = 0; rep < 200; rep++) {
    const int n = (int)intrus_rng_below(&rng, 13), alpha = 1 + (int)intrus_rng_below(&rng, 4);
    int32_t y[12], part[12], states[13][12], replay[13 * 12];
    struct intrus_ins_step steps[12];
    for (int i = 0; i < n; i++) y[i] = 4 + (int32_t)intrus_rng_below(&rng, alpha);
    int s[64];
    int32_t t[64];
    bool ok = true;
    for (int k = 0; k < n && ok; k++) {
      memcpy(states[k], part, (size_t)k * sizeof *part);
      const int c = intrus_ins_correct(y, n, part, k, s, t, 64);
      EXPECT(c > 0 && c <= 64, "trajectory step %d: %d pairs", k, c);
      if (c <= 0 || c > 64) ok = false;
      else {
        const int pick = (int)intrus_rng_below(&rng, (uint64_t)c);
        steps[k] = (struct intrus_ins_step){s[pick], t[pick]};
        intrus_ins_apply(part, k, steps[k]);
      }
    }
    if (!ok) continue;
    memcpy(states[n], part, (size_t)n * sizeof *part);
    EXPECT(memcmp(part, y, (size_t)n * sizeof *y) == 0, "trajectory %d does not end at y", rep);
    EXPECT(intrus_ins_correct(y, n, part, n, s, t, 64) == 0, "end state not complete");
    intrus_ins_replay(steps, n, replay);
    for (int k = 0; k <= n; k++)
      EXPECT(memcmp(replay + (size_t)k * n, states[k], (size_t)k * sizeof(int32_t)) == 0,
             "replay row %d of trajectory %d", k, rep);
    trajectories++;
  }
  printf("oracle: %d random trajectories replayed\n", trajectories);
}

/* ---- insertion losses -------------------------------------------------------- */

/* A batch built from (target, partial) pairs with the oracle: pos rows per state (with
 * a gap of `gap` unused rows after each), one token row per slot that has pairs unless
 * share_row[s] >= 0 names a row to reuse for all of state s's pairs. pair arrays start
 * at offset `base` (pair_off[0] = base) to exercise rebasing. */
#define MAXS 8
#define MAXPP 256
struct batch {
  int count, P, R, V;
  int row0[MAXS], len[MAXS], pair_off[MAXS + 1];
  int pair_slot[MAXPP], pair_row[MAXPP];
  int32_t pair_tok[MAXPP];
  struct intrus_ins_targets tg;
};

static void batch_build(struct batch *b, int V, int count, const int32_t *const *ys,
                        const int *ns, const int32_t *const *parts, const int *ks,
                        const int *share_row, int gap, int base) {
  b->count = count;
  b->V = V;
  b->P = 0;
  b->R = 0;
  int np = base;
  for (int i = 0; i < base; i++) b->pair_slot[i] = b->pair_row[i] = -1, b->pair_tok[i] = -1;
  for (int s = 0; s < count; s++) {
    b->row0[s] = b->P;
    b->len[s] = ks[s] + 2;
    b->P += ks[s] + 2 + gap;
    b->pair_off[s] = np;
    const int c = intrus_ins_correct(ys[s], ns[s], parts[s], ks[s], b->pair_slot + np,
                                     b->pair_tok + np, MAXPP - np);
    if (c < 0 || np + c > MAXPP) intrus_panic("test batch: bad state %d (%d pairs)", s, c);
    for (int p = np; p < np + c; p++) {
      if (share_row[s] >= 0) b->pair_row[p] = share_row[s];
      else if (p > np && b->pair_slot[p] == b->pair_slot[p - 1])
        b->pair_row[p] = b->pair_row[p - 1];
      else b->pair_row[p] = b->R++;
    }
    np += c;
  }
  b->pair_off[count] = np;
  b->tg = (struct intrus_ins_targets){.count = count, .row0 = b->row0, .len = b->len,
                                      .pair_off = b->pair_off, .pair_slot = b->pair_slot,
                                      .pair_row = b->pair_row, .pair_tok = b->pair_tok};
}

/* log-softmax of x[0..n) in double. */
static void ref_log_softmax(const float *x, int n, double *out) {
  double mx = -INFINITY, s = 0.0;
  for (int j = 0; j < n; j++) mx = fmax(mx, x[j]);
  for (int j = 0; j < n; j++) s += exp(x[j] - mx);
  for (int j = 0; j < n; j++) out[j] = x[j] - mx - log(s);
}

/* Losses from the definitions, and (when g is given) the gradients by the closed form
 * written out independently of the op: the main loss's pair weights are the posterior
 * p(i, c) / sum_ref p, the uniform loss's 1/|ref|. kind: bit 0 the loss (0 main, 1
 * uniform), bit 1 label smoothing SMOOTH (log p(c) -> (1-s) log p(c) + s mean log p). */
#define SMOOTH 0.1
static void ref_losses(const struct batch *b, const float *pos, const float *tok, int kind,
                       double *loss, const float *g, double *dpos, double *dtok) {
  const int V = b->V;
  const double sm = kind & 2 ? SMOOTH : 0.0;
  kind &= 1;
  double *lt = malloc((size_t)V * sizeof(double));
  if (dpos) memset(dpos, 0, (size_t)b->P * sizeof(double));
  if (dtok) memset(dtok, 0, (size_t)b->R * V * sizeof(double));
  for (int s = 0; s < b->count; s++) {
    const int r0 = b->row0[s], len = b->len[s], p0 = b->pair_off[s], p1 = b->pair_off[s + 1];
    double lp[MAXN + 2], lpair[MAXPP], w[MAXPP];
    ref_log_softmax(pos + r0, len, lp);
    if (p0 == p1) {
      loss[s] = -lp[len - 1];
      if (dpos) {
        for (int j = 0; j < len; j++) dpos[r0 + j] += g[s] * exp(lp[j]);
        dpos[r0 + len - 1] -= g[s];
      }
      continue;
    }
    double sum_p = 0.0, sum_lp = 0.0;
    for (int p = p0; p < p1; p++) {
      ref_log_softmax(tok + (size_t)b->pair_row[p] * V, V, lt);
      double mean = 0.0;
      for (int v = 0; v < V; v++) mean += lt[v] / V;
      lpair[p - p0] = lp[b->pair_slot[p]] + (1.0 - sm) * lt[b->pair_tok[p]] + sm * mean;
      sum_p += exp(lpair[p - p0]);
      sum_lp += lpair[p - p0];
    }
    const int np = p1 - p0;
    loss[s] = kind == INTRUS_INS_LOSS_MAIN ? -log(sum_p) : -sum_lp / np;
    if (!dpos) continue;
    for (int q = 0; q < np; q++)
      w[q] = kind == INTRUS_INS_LOSS_MAIN ? exp(lpair[q]) / sum_p : 1.0 / np;
    for (int j = 0; j < len; j++) dpos[r0 + j] += g[s] * exp(lp[j]);
    for (int p = p0; p < p1; p++) {
      const int row = b->pair_row[p];
      dpos[r0 + b->pair_slot[p]] -= g[s] * w[p - p0];
      ref_log_softmax(tok + (size_t)row * V, V, lt);
      for (int v = 0; v < V; v++)
        dtok[(size_t)row * V + v] += g[s] * w[p - p0] * (exp(lt[v]) - sm / V);
      dtok[(size_t)row * V + b->pair_tok[p]] -= g[s] * w[p - p0] * (1.0 - sm);
    }
  }
  free(lt);
}

/* Runs the op (and backward with per-state gradients g when given). */
static void run_op(const struct batch *b, const float *pos, const float *tok, int kind,
                   float *loss, const float *g, float *dpos, float *dtok) {
  intrus_ctx *ctx = intrus_ctx_create(0);
  const int ps[1] = {b->P}, ts[2] = {b->R, b->V};
  intrus_tensor *pt = intrus_tensor_from(ctx, 1, ps, pos);
  intrus_tensor *tt = b->R ? intrus_tensor_from(ctx, 2, ts, tok) : NULL;
  pt->requires_grad = g != NULL;
  if (tt) tt->requires_grad = g != NULL;
  intrus_tensor *out = intrus_insertion_loss(ctx, pt, tt, &b->tg, kind & 1, kind & 2 ? SMOOTH : 0.0f);
  EXPECT(out->ndim == 1 && out->shape[0] == b->count, "result shape [%d], %d states",
         out->shape[0], b->count);
  memcpy(loss, out->data, (size_t)b->count * sizeof(float));
  if (g) {
    intrus_backward_seed(ctx, out, g);
    memset(dpos, 0, (size_t)b->P * sizeof(float));
    if (pt->grad) memcpy(dpos, pt->grad, (size_t)b->P * sizeof(float));
    if (tt) {
      memset(dtok, 0, (size_t)b->R * b->V * sizeof(float));
      if (tt->grad) memcpy(dtok, tt->grad, (size_t)b->R * b->V * sizeof(float));
    }
  }
  intrus_ctx_destroy(ctx);
}

static void fill(struct intrus_rng *rng, float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * intrus_rng_uniform(rng);
}

/* The small batch: y = a b a c with partials "", "a", "b", "a c", "a b a c" (complete);
 * y' = c c with partial "c", whose pairs reuse token row 1 (a row of state "a"); one
 * unused pos row after each state; pair arrays at offset 3. State "a"'s position
 * logits and token row 0 are shifted by +200, beyond float exp's range unless shifted. */
static void small_batch(struct batch *b) {
  static const int32_t y[4] = {A, B, A, C}, y2[2] = {C, C}, pa[1] = {A}, pb[1] = {B},
                       pac[2] = {A, C}, pc[1] = {C};
  const int32_t *ys[6] = {y, y, y, y, y, y2};
  const int32_t *parts[6] = {pa, pa, pb, pac, y, pc};
  const int ns[6] = {4, 4, 4, 4, 4, 2}, ks[6] = {0, 1, 1, 2, 4, 1},
            share[6] = {-1, -1, -1, -1, -1, 1};
  batch_build(b, 9, 6, ys, ns, parts, ks, share, 1, 3);
}

static void test_loss_values(void) {
  struct batch b;
  small_batch(&b);
  EXPECT(b.pair_off[5] - b.pair_off[4] == 0, "state 4 should be complete");
  EXPECT(b.R == 7, "small batch has %d token rows", b.R);
  struct intrus_rng rng;
  intrus_rng_seed(&rng, 5);
  float pos[64], tok[64 * 9];
  fill(&rng, pos, (size_t)b.P, -3.0f, 3.0f);
  fill(&rng, tok, (size_t)b.R * b.V, -3.0f, 3.0f);
  for (int j = 0; j < b.len[1]; j++) pos[b.row0[1] + j] += 200.0f;
  for (int v = 0; v < b.V; v++) tok[v] += 200.0f;
  int cases = 0;
  for (int kind = 0; kind < 4; kind++) {
    double ref[MAXS];
    float got[MAXS];
    ref_losses(&b, pos, tok, kind, ref, NULL, NULL, NULL);
    run_op(&b, pos, tok, kind, got, NULL, NULL, NULL);
    for (int s = 0; s < b.count; s++) {
      EXPECT(isfinite(got[s]), "kind %d state %d: loss %g", kind, s, (double)got[s]);
      EXPECT_NEAR(got[s], ref[s], 2e-5 * fmax(1.0, fabs(ref[s])));
      cases++;
    }
  }
  /* A state with one pair: both kinds reduce to -log p(i, c). */
  double ref_main[MAXS], ref_uni[MAXS];
  ref_losses(&b, pos, tok, 0, ref_main, NULL, NULL, NULL);
  ref_losses(&b, pos, tok, 1, ref_uni, NULL, NULL, NULL);
  for (int s = 0; s < b.count; s++) {
    const int np = b.pair_off[s + 1] - b.pair_off[s];
    if (np <= 1) EXPECT_NEAR(ref_main[s], ref_uni[s], 1e-12);
    else EXPECT(ref_main[s] < ref_uni[s], "state %d: main %g >= uniform %g", s, ref_main[s],
                ref_uni[s]);
  }
  printf("insertion loss: %d state losses vs definitions\n", cases);
}

/* The closed-form gradients in double, on the small batch and on a batch large enough
 * (V = 6000) for the row loops to go parallel; then 1 and 4 threads bit for bit. */
static void test_loss_grads(void) {
  struct intrus_rng rng;
  intrus_rng_seed(&rng, 11);
  struct batch small, large;
  small_batch(&small);
  {
    static const int32_t y[7] = {40, 41, 40, 42, 43, 41, 40};
    static const int32_t p1[2] = {41, 43}, p2[3] = {40, 40, 40}, p3[1] = {42};
    const int32_t *ys[5] = {y, y, y, y, y}, *parts[5] = {p1, p2, y, p3, p1};
    const int ns[5] = {7, 7, 7, 7, 7}, ks[5] = {2, 3, 7, 1, 2}, share[5] = {-1, -1, -1, -1, 0};
    batch_build(&large, 6000, 5, ys, ns, parts, ks, share, 0, 0);
  }
  EXPECT((long)large.R * large.V > INTRUS_OMP_MIN, "large batch of %d x %d token logits "
         "stays serial", large.R, large.V);
  const struct batch *bs[2] = {&small, &large};
  for (int which = 0; which < 2; which++) {
    const struct batch *b = bs[which];
    const size_t nt = (size_t)b->R * b->V;
    float *pos = malloc((size_t)b->P * sizeof(float)), *tok = malloc(nt * sizeof(float));
    float *dpos = malloc((size_t)b->P * sizeof(float)), *dtok = malloc(nt * sizeof(float));
    float *dpos2 = malloc((size_t)b->P * sizeof(float)), *dtok2 = malloc(nt * sizeof(float));
    double *rdpos = malloc((size_t)b->P * sizeof(double)), *rdtok = malloc(nt * sizeof(double));
    fill(&rng, pos, (size_t)b->P, -3.0f, 3.0f);
    fill(&rng, tok, nt, -4.0f, 4.0f);
    float g[MAXS], loss[MAXS], loss2[MAXS];
    fill(&rng, g, (size_t)b->count, -1.5f, 1.5f);
    for (int kind = 0; kind < 4; kind++) {
      double ref[MAXS];
      ref_losses(b, pos, tok, kind, ref, g, rdpos, rdtok);
      test_set_threads(1);
      run_op(b, pos, tok, kind, loss, g, dpos, dtok);
      double worst = 0.0;
      for (int s = 0; s < b->count; s++)
        worst = fmax(worst, fabs(loss[s] - ref[s]) / fmax(1.0, fabs(ref[s])));
      EXPECT(worst < 2e-5, "batch %d kind %d: loss rel err %g", which, kind, worst);
      double wp = 0.0, wt = 0.0;
      for (int j = 0; j < b->P; j++) wp = fmax(wp, fabs(dpos[j] - rdpos[j]));
      for (size_t j = 0; j < nt; j++) wt = fmax(wt, fabs(dtok[j] - rdtok[j]));
      EXPECT(wp < 1e-5 && wt < 1e-5, "batch %d kind %d: grad errors pos %g tok %g", which,
             kind, wp, wt);
      printf("insertion loss: batch %d (%d states, V %d) kind %d: max grad error pos %.1e "
             "tok %.1e\n", which, b->count, b->V, kind, wp, wt);
      test_set_threads(4);
      run_op(b, pos, tok, kind, loss2, g, dpos2, dtok2);
      EXPECT(memcmp(loss, loss2, (size_t)b->count * sizeof(float)) == 0 &&
                 memcmp(dpos, dpos2, (size_t)b->P * sizeof(float)) == 0 &&
                 memcmp(dtok, dtok2, nt * sizeof(float)) == 0,
             "batch %d kind %d: results differ between 1 and 4 threads", which, kind);
    }
    free(pos), free(tok), free(dpos), free(dtok), free(dpos2), free(dtok2);
    free(rdpos), free(rdtok);
  }
}

static void loss_of(const void *batch) {
  const struct batch *b = batch;
  intrus_ctx *ctx = intrus_ctx_create(1 << 16);
  const int ps[1] = {b->P}, ts[2] = {b->R, b->V};
  intrus_insertion_loss(ctx, intrus_tensor_zeros(ctx, 1, ps), intrus_tensor_zeros(ctx, 2, ts),
                        &b->tg, INTRUS_INS_LOSS_MAIN, 0.0f);
}

/* A malformed target array panics naming the problem (in a child: a panic aborts). */
static void expect_panic(const char *what, const struct batch *b, const char *needle) {
  char buf[1024];
  int st = test_run_child(loss_of, b, buf, sizeof buf);
  EXPECT(st != -1 && WIFSIGNALED(st), "%s: did not abort (status %d)", what, st);
  EXPECT_CONTAINS(buf, needle);
}

static void test_loss_checks(void) {
  struct batch b;
  small_batch(&b);
  struct batch bad = b;
  bad.pair_slot[b.pair_off[1]] = 2; /* state 1 has k = 1: slots 0..1 */
  bad.tg.pair_slot = bad.pair_slot;
  expect_panic("slot past k", &bad, "outside [0, 1]");
  bad = b;
  bad.pair_row[b.pair_off[2]] = b.R;
  bad.tg.pair_row = bad.pair_row;
  char msg[64];
  snprintf(msg, sizeof msg, "token row %d outside [0, %d)", b.R, b.R);
  expect_panic("row past tok", &bad, msg);
  bad = b;
  bad.pair_tok[b.pair_off[3]] = 9;
  bad.tg.pair_tok = bad.pair_tok;
  expect_panic("token past V", &bad, "token 9 outside [0, 9)");
  bad = b;
  bad.row0[5] = b.P - 2; /* len 3 */
  bad.tg.row0 = bad.row0;
  expect_panic("positions past pos", &bad, "outside pos");
}

int main(void) {
  test_hand();
  test_exhaustive();
  test_long();
  test_trajectories();
  test_loss_values();
  test_loss_grads();
  test_loss_checks();
  return test_finish("test_oracle");
}

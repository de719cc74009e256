/* Correctness against an independent reference, the llm.c way: two tiny models trained
 * by intrus (tests/data/reference/{intrus,ar}-tiny.ckpt) and what a float64 PyTorch
 * reimplementation written from the specification computes for them on hand-picked
 * sentences and states (tests/data/reference/{insertion,autoregressive}.txt, made by
 * scripts/reference/torch_reference.py; see tests/data/reference/README). intrus
 * computes the same quantities through its own API and must agree.
 *
 * Insertion model, through the scorer (the cached no-gradient path of search and the
 * order policies: positions() and tokens(), and slot_logits() with the restricted last
 * layer) and through the training path (ins_hidden on the tape):
 *   log p(pos) of every state, log p(finish), log p(c | slot) at every slot (the whole
 *   vocabulary), the correct set (intrus_ins_correct against the reference's brute
 *   force), the per-state main and uniform losses (intrus_insertion_loss), their means
 *   over the batch of states, and the gradients of both means for every parameter;
 *   and the training loss itself (ins_train_loss) under the l2r and r2l order policies.
 * Autoregressive model:
 *   log p(. | prefix) at every target position through incremental decoding
 *   (start/step, teacher forced), per-sentence losses, the batch loss left to right and
 *   right to left with and without label smoothing, and the gradients of the
 *   left-to-right batch loss with and without smoothing for every parameter.
 * Sentences of different lengths share each batch, so padding and masks are exercised.
 *
 * Agreement: |intrus - reference| <= 1e-4 * max(|reference|, floor). The floor keeps
 * values that are zero up to cancellation from demanding digits float32 does not have:
 *  - log-probabilities and losses: 1e-3 (they are mostly of order 1; one near 0 is held
 *    to an absolute error of 1e-7);
 *  - gradients: the larger of 1e-2 times the largest |reference| entry of the same
 *    parameter tensor and 1e-3 times the largest of the whole gradient (an entry is a
 *    sum of float32 terms of about that size; the key biases' gradients are exactly 0,
 *    since softmax ignores a shift shared by all keys, and come out of float32 as
 *    about 1e-8).
 * Measured (two threads or one): at most 2e-6 for log-probabilities and losses, 5e-5 for
 * gradients. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toy_insertion.h"
#include "intrus/checkpoint.h"
#include "intrus/model.h"
#include "intrus/params.h"
#include "testutil.h"

#define REL_TOL 1e-4
#define LOGP_FLOOR 1e-3
#define GRAD_FLOOR_TENSOR 1e-2 /* times the largest |reference| entry of the tensor */
#define GRAD_FLOOR_ALL 1e-3    /* times the largest |reference| entry of the gradient */
#define MAX_SENT 8
#define MAX_STATES 32
#define MAX_LEN 16
#define MAX_V 64
#define MAX_REPORTS 5 /* failures printed per quantity */

/* ---- agreement statistics per quantity ------------------------------------------- */

struct agree {
  const char *what;
  double worst; /* largest |got - want| / max(|want|, floor) */
  double worst_abs; /* largest |got - want| */
  long n, bad;
};

static void agree(struct agree *a, double got, double want, double floor, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void agree(struct agree *a, double got, double want, double floor, const char *fmt, ...) {
  double scale = fabs(want) > floor ? fabs(want) : floor;
  double rel = fabs(got - want) / scale;
  if (isnan(got) || isnan(want)) rel = INFINITY;
  a->n++;
  if (rel > a->worst) a->worst = rel;
  if (!(fabs(got - want) <= a->worst_abs)) a->worst_abs = fabs(got - want);
  tu_checks++;
  if (rel <= REL_TOL) return;
  tu_failures++;
  if (a->bad++ >= MAX_REPORTS) return;
  char where[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(where, sizeof where, fmt, ap);
  va_end(ap);
  fprintf(stderr, "FAIL: %s %s: intrus %.9g, reference %.9g (relative error %.3g)\n", a->what,
          where, got, want, rel);
}

static void agree_report(const struct agree *a) {
  printf("  %-50s %5ld values, max rel err %.2e, max abs err %.2e%s\n", a->what, a->n,
         a->worst, a->worst_abs, a->bad ? "  FAILED" : "");
  EXPECT(a->n > 0, "no values compared for %s", a->what);
}

/* ---- fixtures: lines of whitespace-separated fields ------------------------------ */

struct line {
  int n;
  char **f;
};

struct fixture {
  int nlines;
  struct line *line;
  char *text;
};

static bool fixture_load(struct fixture *fx, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/reference/%s", test_srcdir(), name);
  memset(fx, 0, sizeof *fx);
  if (!(fx->text = test_read_file(path))) {
    EXPECT(0, "cannot read %s", path);
    return false;
  }
  int cap = 0;
  char *save = NULL;
  for (char *l = strtok_r(fx->text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    if (l[0] == '#') continue;
    if (fx->nlines == cap) {
      cap = cap ? 2 * cap : 256;
      fx->line = realloc(fx->line, (size_t)cap * sizeof *fx->line);
    }
    struct line *ln = &fx->line[fx->nlines++];
    ln->n = 0;
    ln->f = NULL;
    int fcap = 0;
    for (char *s2 = NULL, *w = strtok_r(l, " \t", &s2); w; w = strtok_r(NULL, " \t", &s2)) {
      if (ln->n == fcap) {
        fcap = fcap ? 2 * fcap : 16;
        ln->f = realloc(ln->f, (size_t)fcap * sizeof *ln->f);
      }
      ln->f[ln->n++] = w;
    }
  }
  return true;
}

static void fixture_free(struct fixture *fx) {
  for (int i = 0; i < fx->nlines; i++) free(fx->line[i].f);
  free(fx->line);
  free(fx->text);
}

static bool is(const struct line *l, const char *key) { return l->n > 0 && !strcmp(l->f[0], key); }
static int ival(const struct line *l, int i) { return i < l->n ? atoi(l->f[i]) : -1; }
static double dval(const struct line *l, int i) { return i < l->n ? strtod(l->f[i], NULL) : NAN; }
/* "KEY l2r|r2l a b": 0, 1, or -1 for anything else. */
/* "NAME l2r|r2l" and n fields in all: 0 or 1, -1 otherwise. */
static int direction_field(const struct line *l, int n) {
  if (l->n != n) return -1;
  return !strcmp(l->f[1], "l2r") ? 0 : !strcmp(l->f[1], "r2l") ? 1 : -1;
}

/* "sentence b slen src... tlen tgt..." */
struct sentence {
  int slen, tlen;
  int32_t src[MAX_LEN], tgt[MAX_LEN];
};

static bool parse_sentence(const struct line *l, struct sentence *s, int *count) {
  int b = ival(l, 1), slen = ival(l, 2), tlen = ival(l, 3 + slen);
  if (b != *count || b >= MAX_SENT || slen < 1 || slen > MAX_LEN || tlen < 0 || tlen > MAX_LEN ||
      l->n != 4 + slen + tlen)
    return false;
  s[b].slen = slen;
  s[b].tlen = tlen;
  for (int j = 0; j < slen; j++) s[b].src[j] = ival(l, 3 + j);
  for (int j = 0; j < tlen; j++) s[b].tgt[j] = ival(l, 4 + slen + j);
  (*count)++;
  return true;
}

/* The padded source batch of sentences [b0, b0 + n). */
static struct intrus_src_batch src_batch(const struct sentence *s, int b0, int n, int32_t *tok,
                                         int *lens) {
  int L = 0;
  for (int b = 0; b < n; b++) L = s[b0 + b].slen > L ? s[b0 + b].slen : L;
  for (int b = 0; b < n; b++) {
    lens[b] = s[b0 + b].slen;
    for (int j = 0; j < L; j++) tok[b * L + j] = j < lens[b] ? s[b0 + b].src[j] : INTRUS_PAD;
  }
  return (struct intrus_src_batch){.batch = n, .len = L, .tokens = tok, .lens = lens};
}

/* The model of the experiment file cfg_name with the parameters of ckpt_name. */
static struct intrus_model *load_model(const char *cfg_name, const char *ckpt_name, int vocab) {
  char path[1024], ckpt[1024];
  struct intrus_error err = {0};
  snprintf(path, sizeof path, "%s/tests/data/reference/%s", test_srcdir(), cfg_name);
  snprintf(ckpt, sizeof ckpt, "%s/tests/data/reference/%s", test_srcdir(), ckpt_name);
  struct intrus_config *cfg = intrus_config_load_file(path, &err);
  struct intrus_model *m = NULL;
  enum intrus_status st =
      cfg ? test_model_create(cfg, vocab, vocab, 1, ckpt, &m, &err) : INTRUS_ERR_CONFIG;
  EXPECT(st == INTRUS_OK, "loading %s with %s: %s", cfg_name, ckpt_name, err.msg);
  intrus_config_free(cfg);
  return m;
}

/* The parameter gradients just computed against the fixture's "grad <kind>" lines:
 * every parameter must have one. */
static void compare_grads(struct intrus_model *m, const struct fixture *fx, const char *kind,
                          struct agree *a) {
  struct intrus_params *p = intrus_model_params(m);
  const float *values = intrus_params_values(p), *grads = intrus_params_grads(p);
  size_t seen = 0;
  double big = 0.0; /* the largest |reference| entry of the whole gradient */
  for (int i = 0; i < fx->nlines; i++) {
    const struct line *l = &fx->line[i];
    if (!is(l, "grad") || l->n < 4 || strcmp(l->f[1], kind)) continue;
    for (int j = 4; j < l->n; j++) big = fmax(big, fabs(dval(l, j)));
  }
  for (int i = 0; i < fx->nlines; i++) {
    const struct line *l = &fx->line[i];
    if (!is(l, "grad") || l->n < 4 || strcmp(l->f[1], kind)) continue;
    const char *name = l->f[2];
    int n = ival(l, 3);
    const intrus_tensor *t = intrus_params_find(p, name);
    EXPECT(t && (int)t->n == n && l->n == 4 + n, "grad %s %s: no such parameter of %d values",
           kind, name, n);
    if (!t || (int)t->n != n || l->n != 4 + n) continue;
    seen++;
    const float *g = grads + (t->data - values);
    double tbig = 0.0;
    for (int j = 0; j < n; j++) tbig = fmax(tbig, fabs(dval(l, 4 + j)));
    const double floor = fmax(GRAD_FLOOR_TENSOR * tbig, GRAD_FLOOR_ALL * big);
    for (int j = 0; j < n; j++) agree(a, g[j], dval(l, 4 + j), floor, "%s[%d]", name, j);
  }
  EXPECT(seen == intrus_params_count(p), "%s gradients: the fixture has %zu of %zu parameters",
         kind, seen, intrus_params_count(p));
}

/* ---- the insertion model ---------------------------------------------------------- */

struct ins_fixture {
  int V, nsent, nstates;
  struct sentence sent[MAX_SENT];
  struct {
    int sent, k;
    int32_t part[MAX_LEN];
    double pos[MAX_LEN + 2], finish, tok[(MAX_LEN + 1) * MAX_V], loss[2];
    int npairs, pair_slot[(MAX_LEN + 1) * MAX_LEN], pair_tok[(MAX_LEN + 1) * MAX_LEN];
  } st[MAX_STATES];
  double mean[2];
  double trajectory[2][3]; /* [l2r, r2l][main, uniform, chosen] */
  int have_trajectory[2], have_chosen[2];
  const struct fixture *fx;
};

static bool ins_parse(const struct fixture *fx, struct ins_fixture *r) {
  memset(r, 0, sizeof *r);
  r->fx = fx;
  int tok_rows = 0;
  for (int i = 0; i < fx->nlines; i++) {
    const struct line *l = &fx->line[i];
    int s = ival(l, 1);
    bool ok = true;
    if (is(l, "vocab")) {
      r->V = ival(l, 1);
      ok = r->V > INTRUS_NUM_SPECIAL && r->V <= MAX_V;
    } else if (is(l, "sentence")) {
      ok = parse_sentence(l, r->sent, &r->nsent);
    } else if (is(l, "state")) {
      int b = ival(l, 2), k = ival(l, 3);
      ok = s == r->nstates && s < MAX_STATES && b >= 0 && b < r->nsent && k >= 0 &&
           k <= MAX_LEN && l->n == 4 + k;
      if (ok) {
        r->st[s].sent = b;
        r->st[s].k = k;
        for (int j = 0; j < k; j++) r->st[s].part[j] = ival(l, 4 + j);
        r->nstates++;
      }
    } else if (is(l, "pos")) {
      ok = s >= 0 && s < r->nstates && ival(l, 2) == r->st[s].k + 2 && l->n == 3 + r->st[s].k + 2;
      for (int j = 0; ok && j < r->st[s].k + 2; j++) r->st[s].pos[j] = dval(l, 3 + j);
    } else if (is(l, "finish")) {
      ok = s >= 0 && s < r->nstates && l->n == 3;
      if (ok) r->st[s].finish = dval(l, 2);
    } else if (is(l, "tok")) {
      int slot = ival(l, 2);
      ok = s >= 0 && s < r->nstates && slot >= 0 && slot <= r->st[s].k && ival(l, 3) == r->V &&
           l->n == 4 + r->V;
      for (int c = 0; ok && c < r->V; c++) r->st[s].tok[slot * r->V + c] = dval(l, 4 + c);
      tok_rows += ok;
    } else if (is(l, "ref")) {
      int np = ival(l, 2);
      ok = s >= 0 && s < r->nstates && np >= 0 && np <= (MAX_LEN + 1) * MAX_LEN &&
           l->n == 3 + 2 * np;
      if (ok) r->st[s].npairs = np;
      for (int p = 0; ok && p < np; p++) {
        r->st[s].pair_slot[p] = ival(l, 3 + 2 * p);
        r->st[s].pair_tok[p] = ival(l, 4 + 2 * p);
      }
    } else if (is(l, "loss")) {
      ok = s >= 0 && s < r->nstates && l->n == 4;
      if (ok) r->st[s].loss[0] = dval(l, 2), r->st[s].loss[1] = dval(l, 3);
    } else if (is(l, "mean")) {
      ok = l->n == 3;
      if (ok) r->mean[0] = dval(l, 1), r->mean[1] = dval(l, 2);
    } else if (is(l, "trajectory")) {
      int o = direction_field(l, 4);
      ok = o >= 0;
      if (ok) {
        r->trajectory[o][0] = dval(l, 2);
        r->trajectory[o][1] = dval(l, 3);
        r->have_trajectory[o] = 1;
      }
    } else if (is(l, "chosen")) {
      int o = direction_field(l, 3);
      ok = o >= 0;
      if (ok) {
        r->trajectory[o][2] = dval(l, 2);
        r->have_chosen[o] = 1;
      }
    }
    EXPECT(ok, "insertion.txt: bad line %d ('%s')", i + 1, l->n ? l->f[0] : "");
    if (!ok) return false;
  }
  int want_rows = 0;
  for (int s = 0; s < r->nstates; s++) want_rows += r->st[s].k + 1;
  bool ok = r->nstates > 0 && tok_rows == want_rows && r->have_trajectory[0] &&
            r->have_trajectory[1] && r->have_chosen[0] && r->have_chosen[1];
  EXPECT(ok, "insertion.txt: %d states, %d of %d token rows, trajectory lines %d %d, chosen %d %d",
         r->nstates, tok_rows, want_rows, r->have_trajectory[0], r->have_trajectory[1],
         r->have_chosen[0], r->have_chosen[1]);
  return ok;
}

/* The states of the fixture as intrus sees them. */
struct ins_batch {
  int sent[MAX_STATES], off[MAX_STATES + 1];
  int32_t tok[MAX_STATES * MAX_LEN];
  struct intrus_ins_states states;
};

static void ins_batch_make(const struct ins_fixture *r, struct ins_batch *b) {
  b->off[0] = 0;
  for (int s = 0; s < r->nstates; s++) {
    b->sent[s] = r->st[s].sent;
    memcpy(b->tok + b->off[s], r->st[s].part, (size_t)r->st[s].k * sizeof *b->tok);
    b->off[s + 1] = b->off[s] + r->st[s].k;
  }
  b->states = (struct intrus_ins_states){
      .count = r->nstates, .sent = b->sent, .off = b->off, .tok = b->tok};
}

/* intrus's correct set against the reference's brute force, as sets of (slot, token). */
static void ins_check_correct(const struct ins_fixture *r) {
  for (int s = 0; s < r->nstates; s++) {
    const struct sentence *y = &r->sent[r->st[s].sent];
    int slot[(MAX_LEN + 1) * MAX_LEN];
    int32_t tok[(MAX_LEN + 1) * MAX_LEN];
    int n = intrus_ins_correct(y->tgt, y->tlen, r->st[s].part, r->st[s].k, slot, tok,
                               (MAX_LEN + 1) * MAX_LEN);
    bool same = n == r->st[s].npairs;
    for (int p = 0; same && p < n; p++) {
      bool found = false;
      for (int q = 0; q < n && !found; q++)
        found = slot[p] == r->st[s].pair_slot[q] && tok[p] == r->st[s].pair_tok[q];
      same = found;
    }
    EXPECT(same, "state %d: intrus has %d correct pairs, the reference %d, or other ones", s, n,
           r->st[s].npairs);
  }
}

/* Through the scorer: positions() and tokens() at every slot. */
static void ins_scorer_route(struct intrus_model *m, const struct ins_fixture *r) {
  int32_t stok[MAX_SENT * MAX_LEN];
  int slens[MAX_SENT];
  struct intrus_src_batch sb = src_batch(r->sent, 0, r->nsent, stok, slens);
  struct ins_batch b;
  ins_batch_make(r, &b);
  intrus_ctx *ctx = intrus_ctx_create(0);
  struct ins_model_scorer sc;
  struct intrus_error err = {0};
  int N = b.off[r->nstates] + 2 * r->nstates, nq = 0;
  float *pos = malloc((size_t)N * sizeof *pos), *tok = malloc((size_t)N * r->V * sizeof *tok);
  int *qs = malloc((size_t)N * sizeof *qs), *ql = malloc((size_t)N * sizeof *ql);
  for (int s = 0; s < r->nstates; s++)
    for (int i = 0; i <= r->st[s].k; i++) qs[nq] = s, ql[nq++] = i;
  enum intrus_status st = ins_scorer_open(&sc, m, ctx, &sb, &err);
  if (!st) st = sc.sc.positions(sc.sc.user, &b.states, pos, &err);
  if (!st) st = sc.sc.tokens(sc.sc.user, nq, qs, ql, tok, &err);
  EXPECT(st == INTRUS_OK, "scorer: %s", err.msg);
  struct agree ap = {.what = "scorer: log p(pos)"};
  struct agree af = {.what = "scorer: log p(finish)"};
  struct agree at = {.what = "scorer: log p(c | slot)"};
  for (int s = 0, row = 0, q = 0; !st && s < r->nstates; s++) {
    const int k = r->st[s].k;
    for (int j = 0; j < k + 2; j++)
      agree(&ap, pos[row + j], r->st[s].pos[j], LOGP_FLOOR, "state %d position %d", s, j);
    agree(&af, pos[row + k + 1], r->st[s].finish, LOGP_FLOOR, "state %d", s);
    for (int i = 0; i <= k; i++, q++)
      for (int c = 0; c < r->V; c++)
        agree(&at, tok[(size_t)q * r->V + c], r->st[s].tok[i * r->V + c], LOGP_FLOOR,
              "state %d slot %d token %d", s, i, c);
    row += k + 2;
  }
  agree_report(&ap);
  agree_report(&af);
  agree_report(&at);

  /* slot_logits() (the sampled policy's pass: the decoder's last layer only at the asked
   * rows, the position normaliser left out) at every slot: position logits up to a
   * constant per state, so their differences to the state's slot 0 (compared relative
   * to the larger of the two log-probabilities), then the token distributions of those
   * rows. */
  float *logit = malloc((size_t)N * sizeof *logit);
  if (!st) st = sc.sc.slot_logits(sc.sc.user, &b.states, nq, qs, ql, logit, &err);
  if (!st) st = sc.sc.tokens(sc.sc.user, nq, qs, ql, tok, &err);
  EXPECT(st == INTRUS_OK, "scorer, slot_logits: %s", err.msg);
  struct agree ad = {.what = "slot_logits: log p(pos=i) - log p(pos=0)"};
  struct agree ar = {.what = "slot_logits: log p(c | slot)"};
  for (int s = 0, q = 0; !st && s < r->nstates; s++) {
    const int q0 = q;
    for (int i = 0; i <= r->st[s].k; i++, q++) {
      /* A difference of two log-probabilities: relative to the larger of them. */
      const double scale = fmax(fabs(r->st[s].pos[i]), fabs(r->st[s].pos[0]));
      agree(&ad, logit[q] - logit[q0], r->st[s].pos[i] - r->st[s].pos[0],
            fmax(scale, LOGP_FLOOR), "state %d slot %d", s, i);
      for (int c = 0; c < r->V; c++)
        agree(&ar, tok[(size_t)q * r->V + c], r->st[s].tok[i * r->V + c], LOGP_FLOOR,
              "state %d slot %d token %d", s, i, c);
    }
  }
  agree_report(&ad);
  agree_report(&ar);
  free(logit);
  ins_scorer_close(&sc);
  intrus_ctx_destroy(ctx);
  free(pos);
  free(tok);
  free(qs);
  free(ql);
}

/* log-softmax of x[0..n) in double into y. */
static void log_softmax(const double *x, int n, double *y) {
  double mx = -INFINITY, sum = 0.0;
  for (int j = 0; j < n; j++) mx = fmax(mx, x[j]);
  for (int j = 0; j < n; j++) sum += exp(x[j] - mx);
  for (int j = 0; j < n; j++) y[j] = x[j] - mx - log(sum);
}

/* Through the training path: ins_hidden on the tape, the output layer as the training
 * loss builds it (token rows only at slots with a correct pair), intrus_insertion_loss,
 * the mean and its backward. kind 0: main, 1: uniform. */
static void ins_train_route(struct intrus_model *m, const struct ins_fixture *r, int kind) {
  static const char *const names[2] = {"main", "uniform"};
  int32_t stok[MAX_SENT * MAX_LEN];
  int slens[MAX_SENT];
  struct intrus_src_batch sb = src_batch(r->sent, 0, r->nsent, stok, slens);
  struct ins_batch b;
  ins_batch_make(r, &b);
  const int S = r->nstates, V = r->V, N = b.off[S] + 2 * S;
  int row0[MAX_STATES], len[MAX_STATES], pair_off[MAX_STATES + 1];
  int cap = S * (MAX_LEN + 1) * MAX_LEN;
  int *pair_slot = malloc((size_t)cap * sizeof(int)), *pair_row = malloc((size_t)cap * sizeof(int));
  int32_t *pair_tok = malloc((size_t)cap * sizeof(int32_t));
  int32_t *tok_rows = malloc((size_t)cap * sizeof(int32_t));
  int np = 0, ntok = 0;
  pair_off[0] = 0;
  for (int s = 0, row = 0; s < S; s++) {
    const struct sentence *y = &r->sent[r->st[s].sent];
    int k = r->st[s].k;
    row0[s] = row;
    len[s] = k + 2;
    int c = intrus_ins_correct(y->tgt, y->tlen, r->st[s].part, k, pair_slot + np, pair_tok + np,
                               cap - np);
    EXPECT(c >= 0, "state %d is not a subsequence of its target", s);
    for (int p = np; p < np + (c > 0 ? c : 0); p++) {
      if (p == np || pair_slot[p] != pair_slot[p - 1]) tok_rows[ntok++] = row + pair_slot[p];
      pair_row[p] = ntok - 1;
    }
    np += c > 0 ? c : 0;
    pair_off[s + 1] = np;
    row += k + 2;
  }

  struct intrus_params *params = intrus_model_params(m);
  intrus_ctx *ctx = intrus_ctx_create(0);
  intrus_ctx_set_grad(ctx, true);
  intrus_ctx_set_training(ctx, false);
  intrus_params_zero_grad(params);
  struct intrus_error err = {0};
  struct intrus_memory mem;
  void *dself;
  const struct intrus_decoder_vtable *dec = intrus_model_decoder(m, &dself);
  intrus_tensor *hidden = NULL, *w_token, *w_pos;
  enum intrus_status st = intrus_model_encode(m, ctx, &sb, &mem, &err);
  if (!st) st = dec->ins_hidden(dself, ctx, &mem, &b.states, &hidden, &err);
  EXPECT(st == INTRUS_OK, "ins_hidden: %s", err.msg);
  if (st) goto out;
  EXPECT(hidden->ndim == 2 && hidden->shape[0] == N, "hidden has %d rows, not %d",
         hidden->shape[0], N);
  dec->ins_output(dself, &w_token, &w_pos);
  const int d = hidden->shape[1];

  if (kind == 0) {
    /* The log-probabilities from the training path's hidden rows, in double. */
    struct agree ap = {.what = "training path: log p(pos)"};
    struct agree at = {.what = "training path: log p(c | slot)"};
    enum { W = MAX_LEN + 2 > MAX_V ? MAX_LEN + 2 : MAX_V };
    double x[W], y[W];
    for (int s = 0; s < S; s++) {
      const int k = r->st[s].k;
      for (int j = 0; j < k + 2; j++) {
        x[j] = 0.0;
        for (int e = 0; e < d; e++)
          x[j] += (double)hidden->data[(size_t)(row0[s] + j) * d + e] * w_pos->data[e];
      }
      log_softmax(x, k + 2, y);
      for (int j = 0; j < k + 2; j++)
        agree(&ap, y[j], r->st[s].pos[j], LOGP_FLOOR, "state %d position %d", s, j);
      for (int i = 0; i <= k; i++) {
        for (int c = 0; c < V; c++) {
          x[c] = 0.0;
          for (int e = 0; e < d; e++)
            x[c] += (double)hidden->data[(size_t)(row0[s] + i) * d + e] *
                    w_token->data[(size_t)e * V + c];
        }
        log_softmax(x, V, y);
        for (int c = 0; c < V; c++)
          agree(&at, y[c], r->st[s].tok[i * V + c], LOGP_FLOOR, "state %d slot %d token %d", s,
                i, c);
      }
    }
    agree_report(&ap);
    agree_report(&at);
  }

  intrus_tensor *pos = intrus_matmul(ctx, hidden, w_pos, false, false);
  pos = intrus_reshape(ctx, pos, 1, &N);
  int R = ntok ? ntok : 1;
  if (!ntok) tok_rows[0] = 0;
  intrus_tensor *tok = intrus_matmul(ctx, intrus_embedding(ctx, hidden, tok_rows, 1, &R), w_token,
                                     false, false);
  struct intrus_ins_targets tg = {.count = S, .row0 = row0, .len = len, .pair_off = pair_off,
                                  .pair_slot = pair_slot, .pair_row = pair_row,
                                  .pair_tok = pair_tok};
  intrus_tensor *losses = intrus_insertion_loss(
      ctx, pos, tok, &tg, kind == 0 ? INTRUS_INS_LOSS_MAIN : INTRUS_INS_LOSS_UNIFORM, 0.0f);
  intrus_tensor *mean = intrus_mean(ctx, losses);
  char what[3][64];
  snprintf(what[0], sizeof what[0], "%s loss per state", names[kind]);
  snprintf(what[1], sizeof what[1], "%s loss, mean over the states", names[kind]);
  snprintf(what[2], sizeof what[2], "d(mean %s loss)/d(parameters)", names[kind]);
  struct agree al = {.what = what[0]}, am = {.what = what[1]};
  struct agree ag = {.what = what[2]};
  for (int s = 0; s < S; s++)
    agree(&al, losses->data[s], r->st[s].loss[kind], LOGP_FLOOR, "state %d", s);
  agree(&am, mean->data[0], r->mean[kind], LOGP_FLOOR, "batch");
  intrus_backward(ctx, mean);
  compare_grads(m, r->fx, names[kind], &ag);
  agree_report(&al);
  agree_report(&am);
  agree_report(&ag);
out:
  intrus_ctx_destroy(ctx);
  free(pair_slot);
  free(pair_row);
  free(pair_tok);
  free(tok_rows);
}

/* The training loss itself (ins_train_loss, what `intrus train` minimises): every
 * sentence's target under the l2r and r2l order policies, every state of each
 * trajectory, main, uniform and chosen loss (the order's own insertion only). */
static void ins_trajectory_route(struct intrus_model *m, const struct ins_fixture *r,
                                 const struct intrus_plugin_search *search) {
  int32_t stok[MAX_SENT * MAX_LEN], ttok[MAX_SENT * MAX_LEN];
  int slens[MAX_SENT], tlens[MAX_SENT], L = 0;
  struct intrus_src_batch sb = src_batch(r->sent, 0, r->nsent, stok, slens);
  for (int b = 0; b < r->nsent; b++) L = r->sent[b].tlen > L ? r->sent[b].tlen : L;
  for (int b = 0; b < r->nsent; b++) {
    tlens[b] = r->sent[b].tlen;
    for (int j = 0; j < L; j++) ttok[b * L + j] = j < tlens[b] ? r->sent[b].tgt[j] : INTRUS_PAD;
  }
  struct intrus_tgt_batch tb = {.batch = r->nsent, .len = L, .tokens = ttok, .lens = tlens};
  static const char *const orders[2] = {"l2r", "r2l"};
  struct agree a = {.what = "ins_train_loss, l2r and r2l, main, uniform and chosen"};
  intrus_ctx *ctx = intrus_ctx_create(0), *scratch = intrus_ctx_create(0);
  for (int o = 0; o < 2; o++) {
    struct intrus_error err = {0};
    struct toy_order ord;
    enum intrus_status st = toy_order_open(search, orders[o], &ord, &err);
    static const char *const kinds[3] = {"main", "uniform", "chosen"};
    for (int kind = 0; !st && kind < 3; kind++) {
      struct ins_train_spec spec = {
          .order = ord.vt, .order_self = ord.self,
          .loss = kind == 1 ? INTRUS_INS_LOSS_UNIFORM : INTRUS_INS_LOSS_MAIN,
          .chosen = kind == 2, .all_states = true};
      struct intrus_loss_out out;
      intrus_ctx_reset(ctx);
      intrus_ctx_set_grad(ctx, true);
      intrus_ctx_set_training(ctx, false);
      st = ins_train_loss(m, ctx, scratch, &sb, &tb, &spec, 1, &out, &err);
      if (!st)
        agree(&a, out.loss->data[0], r->trajectory[o][kind], LOGP_FLOOR, "%s %s", orders[o],
              kinds[kind]);
    }
    EXPECT(st == INTRUS_OK, "order %s: %s", orders[o], err.msg);
    toy_order_close(&ord);
  }
  agree_report(&a);
  intrus_ctx_destroy(ctx);
  intrus_ctx_destroy(scratch);
}

static void test_insertion(void) {
  struct fixture fx;
  if (!fixture_load(&fx, "insertion.txt")) return;
  struct ins_fixture *r = malloc(sizeof *r);
  struct intrus_plugin_search *search = intrus_plugin_search_create(); /* order plugins */
  intrus_plugin_search_add_defaults(search);
  struct intrus_model *m = NULL;
  if (ins_parse(&fx, r)) m = load_model("intrus-tiny.cfg", "intrus-tiny.ckpt", r->V);
  if (m) {
    printf("insertion model (%zu parameters), %d sentences, %d states:\n",
           intrus_params_numel(intrus_model_params(m)), r->nsent, r->nstates);
    ins_check_correct(r);
    ins_scorer_route(m, r);
    ins_train_route(m, r, 0);
    ins_train_route(m, r, 1);
    ins_trajectory_route(m, r, search);
  }
  intrus_model_destroy(m);
  intrus_plugin_search_free(search);
  free(r);
  fixture_free(&fx);
}

/* ---- the autoregressive model ----------------------------------------------------- */

struct ar_fixture {
  int V, nsent;
  double smoothing;
  struct sentence sent[MAX_SENT];
  double logp[MAX_SENT][(MAX_LEN + 1) * MAX_V];
  int logp_rows[MAX_SENT];
  double sent_loss[MAX_SENT][2], batch_loss[2][2]; /* [l2r, r2l][plain, smoothed] */
  int have_batch[2];
  const struct fixture *fx;
};

static bool ar_parse(const struct fixture *fx, struct ar_fixture *r) {
  memset(r, 0, sizeof *r);
  r->fx = fx;
  r->smoothing = NAN;
  for (int i = 0; i < fx->nlines; i++) {
    const struct line *l = &fx->line[i];
    int b = ival(l, 1);
    bool ok = true;
    if (is(l, "vocab")) {
      r->V = ival(l, 1);
      ok = r->V > INTRUS_NUM_SPECIAL && r->V <= MAX_V;
    } else if (is(l, "smoothing")) {
      r->smoothing = dval(l, 1);
      ok = r->smoothing > 0 && r->smoothing < 1;
    } else if (is(l, "sentence")) {
      ok = parse_sentence(l, r->sent, &r->nsent);
    } else if (is(l, "logp")) {
      int t = ival(l, 2);
      ok = b >= 0 && b < r->nsent && t == r->logp_rows[b] && t <= r->sent[b].tlen &&
           ival(l, 3) == r->V && l->n == 4 + r->V;
      for (int c = 0; ok && c < r->V; c++) r->logp[b][t * r->V + c] = dval(l, 4 + c);
      r->logp_rows[b] += ok;
    } else if (is(l, "sent_loss")) {
      ok = b >= 0 && b < r->nsent && l->n == 4;
      if (ok) r->sent_loss[b][0] = dval(l, 2), r->sent_loss[b][1] = dval(l, 3);
    } else if (is(l, "batch_loss")) {
      int dir = direction_field(l, 4);
      ok = dir >= 0;
      if (ok) {
        r->batch_loss[dir][0] = dval(l, 2);
        r->batch_loss[dir][1] = dval(l, 3);
        r->have_batch[dir] = 1;
      }
    }
    EXPECT(ok, "autoregressive.txt: bad line %d ('%s')", i + 1, l->n ? l->f[0] : "");
    if (!ok) return false;
  }
  bool ok = r->nsent > 0 && !isnan(r->smoothing) && r->have_batch[0] && r->have_batch[1];
  for (int b = 0; ok && b < r->nsent; b++) ok = r->logp_rows[b] == r->sent[b].tlen + 1;
  EXPECT(ok, "autoregressive.txt: incomplete");
  return ok;
}

/* Incremental decoding, teacher forced: row b consumes BOS then its target. */
static void ar_step_route(struct intrus_model *m, const struct ar_fixture *r) {
  int32_t stok[MAX_SENT * MAX_LEN];
  int slens[MAX_SENT];
  struct intrus_src_batch sb = src_batch(r->sent, 0, r->nsent, stok, slens);
  int T = 0;
  for (int b = 0; b < r->nsent; b++) T = r->sent[b].tlen + 1 > T ? r->sent[b].tlen + 1 : T;
  intrus_ctx *ctx = intrus_ctx_create(0);
  intrus_ctx_set_grad(ctx, false);
  struct intrus_error err = {0};
  struct intrus_memory mem;
  void *dself, *state = NULL;
  const struct intrus_decoder_vtable *dec = intrus_model_decoder(m, &dself);
  enum intrus_status st = intrus_model_encode(m, ctx, &sb, &mem, &err);
  if (!st) st = dec->start(dself, ctx, &mem, 1, T, &state, &err);
  float *logp = malloc((size_t)r->nsent * r->V * sizeof *logp);
  struct agree a = {.what = "incremental decoding: log p(. | prefix)"};
  for (int t = 0; !st && t < T; t++) {
    int32_t in[MAX_SENT];
    for (int b = 0; b < r->nsent; b++)
      in[b] = t == 0 ? INTRUS_BOS : t - 1 < r->sent[b].tlen ? r->sent[b].tgt[t - 1] : INTRUS_EOS;
    st = dec->step(dself, state, ctx, NULL, in, logp, &err);
    for (int b = 0; !st && b < r->nsent; b++)
      for (int c = 0; t <= r->sent[b].tlen && c < r->V; c++)
        agree(&a, logp[b * r->V + c], r->logp[b][t * r->V + c], LOGP_FLOOR,
              "sentence %d position %d token %d", b, t, c);
  }
  EXPECT(st == INTRUS_OK, "incremental decoding: %s", err.msg);
  agree_report(&a);
  if (state) dec->finish(dself, state);
  free(logp);
  intrus_ctx_destroy(ctx);
}

/* Teacher-forced loss of sentences [b0, b0 + n) (grad on); NAN on error. */
static double ar_loss(struct intrus_model *m, intrus_ctx *ctx, const struct ar_fixture *r, int b0,
                      int n, int direction, float smoothing, struct intrus_loss_out *out) {
  int32_t stok[MAX_SENT * MAX_LEN], ttok[MAX_SENT * MAX_LEN];
  int slens[MAX_SENT], tlens[MAX_SENT], L = 0;
  struct intrus_src_batch sb = src_batch(r->sent, b0, n, stok, slens);
  for (int b = 0; b < n; b++) L = r->sent[b0 + b].tlen > L ? r->sent[b0 + b].tlen : L;
  for (int b = 0; b < n; b++) {
    tlens[b] = r->sent[b0 + b].tlen;
    for (int j = 0; j < L; j++)
      ttok[b * L + j] = j < tlens[b] ? r->sent[b0 + b].tgt[j] : INTRUS_PAD;
  }
  struct intrus_tgt_batch tb = {.batch = n, .len = L, .tokens = ttok, .lens = tlens};
  struct intrus_train_opts opts = {.direction = direction, .label_smoothing = smoothing};
  struct intrus_error err = {0};
  intrus_ctx_reset(ctx);
  intrus_ctx_set_grad(ctx, true);
  intrus_ctx_set_training(ctx, false);
  enum intrus_status st = intrus_model_loss(m, ctx, &sb, &tb, &opts, out, &err);
  EXPECT(st == INTRUS_OK, "loss: %s", err.msg);
  return st ? NAN : out->loss->data[0];
}

static void ar_loss_route(struct intrus_model *m, const struct ar_fixture *r) {
  intrus_ctx *ctx = intrus_ctx_create(0);
  struct intrus_loss_out out;
  const float s = (float)r->smoothing;
  struct agree as = {.what = "loss per sentence (with and without smoothing)"};
  for (int b = 0; b < r->nsent; b++)
    for (int v = 0; v < 2; v++)
      agree(&as, ar_loss(m, ctx, r, b, 1, 1, v ? s : 0.0f, &out), r->sent_loss[b][v], LOGP_FLOOR,
            "sentence %d smoothing %d", b, v);
  agree_report(&as);
  struct agree ab = {.what = "batch loss (l2r, r2l; with and without smoothing)"};
  for (int dir = 0; dir < 2; dir++)
    for (int v = 0; v < 2; v++)
      agree(&ab, ar_loss(m, ctx, r, 0, r->nsent, dir ? -1 : 1, v ? s : 0.0f, &out),
            r->batch_loss[dir][v], LOGP_FLOOR, "%s smoothing %d", dir ? "r2l" : "l2r", v);
  agree_report(&ab);
  static const char *const kinds[2] = {"plain", "smoothed"};
  for (int v = 0; v < 2; v++) {
    char what[64];
    snprintf(what, sizeof what, "d(%s batch loss)/d(parameters)", kinds[v]);
    struct agree ag = {.what = what};
    intrus_params_zero_grad(intrus_model_params(m));
    if (!isnan(ar_loss(m, ctx, r, 0, r->nsent, 1, v ? s : 0.0f, &out))) {
      intrus_backward(ctx, out.loss);
      compare_grads(m, r->fx, kinds[v], &ag);
    }
    agree_report(&ag);
  }
  intrus_ctx_destroy(ctx);
}

static void test_autoregressive(void) {
  struct fixture fx;
  if (!fixture_load(&fx, "autoregressive.txt")) return;
  struct ar_fixture *r = malloc(sizeof *r);
  struct intrus_model *m = NULL;
  if (ar_parse(&fx, r)) m = load_model("ar-tiny.cfg", "ar-tiny.ckpt", r->V);
  if (m) {
    printf("autoregressive model (%zu parameters), %d sentences, smoothing %g:\n",
           intrus_params_numel(intrus_model_params(m)), r->nsent, r->smoothing);
    ar_step_route(m, r);
    ar_loss_route(m, r);
  }
  intrus_model_destroy(m);
  free(r);
  fixture_free(&fx);
}

int main(void) {
  printf("agreement: |intrus - reference| <= %.0e * max(|reference|, floor); floor %.0e for "
         "log-probabilities and losses; for gradients the larger of %.0e * max |reference| of "
         "the tensor and %.0e * max |reference| of the whole gradient\n",
         REL_TOL, LOGP_FLOOR, GRAD_FLOOR_TENSOR, GRAD_FLOOR_ALL);
  test_insertion();
  test_autoregressive();
  return test_finish("test_reference");
}

/* eval_bleu: corpus BLEU computed exactly as sacreBLEU 2.3.1 computes it
 * (sacrebleu.metrics.BLEU with max_ngram_order 4), so scores from intrus can be put in
 * the same table as published sacreBLEU numbers.
 *
 * What is reproduced, step by step (the sacreBLEU function in brackets):
 *   - preprocessing [BLEU._preprocess_segment]: optional lowercasing with Python's
 *     str.lower(), then rstrip() with Python's whitespace set, then the tokenizer;
 *   - tokenizers [tokenizer_13a.py + tokenizer_re.py, tokenizer_char.py,
 *     tokenizer_none.py], then str.split() [helpers.extract_all_word_ngrams];
 *   - n-gram matches clipped by the maximum count over the references, and the closest
 *     reference length with ties going to the shorter [BLEU._compute_segment_statistics,
 *     BLEU._get_closest_ref_len]; absent references (NULL, sacreBLEU's None) are left out
 *     of a segment, for a variable number of references, while an empty one ("") is a
 *     reference of length 0 [Metric._cache_references];
 *   - the score from summed statistics, with its smoothing methods, brevity penalty,
 *     the log floor for zero precisions and the early exit without any match
 *     [BLEU.compute_bleu, utils.my_log], and the signature [BLEUSignature].
 *
 * Python semantics matter in three places and are implemented here rather than
 * approximated: Python's whitespace (str.split / str.rstrip / str.isspace), the code
 * point (not byte) granularity of the regexes and of the char tokenizer, and
 * str.lower(), including its two context rules that a per-code-point mapping misses
 * (U+0130 -> "i" U+0307, and the final sigma).
 *
 * Statistics per segment (13 doubles; sums of them score a corpus):
 *   [0..3] clipped matches of 1..4-grams   [4..7] hypothesis 1..4-grams
 *   [8] hypothesis length   [9] closest reference length
 *   [10] 1 (segments)   [11] references used   [12] references used, squared
 * The last three only feed the signature's nrefs field: sacreBLEU prints "var" when
 * segments have different numbers of references, and that is known from the sums
 * alone (all counts equal exactly when n * sum(r^2) == sum(r)^2), so score() stays a
 * function of the summed statistics, which the core's bootstrap relies on.
 *
 * Settings (all optional): tokenize = "13a" | "char" | "none"; lowercase = bool;
 * smooth = "exp" | "none" | "floor" | "add-k"; effective_order = bool. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "intrus/plugin.h"
#include "intrus/rng.h"
#include "bleu_text.h"

/* The sacreBLEU release whose behaviour this file reproduces; it is what the
 * signature's version field says, so a signature from intrus matches one from
 * sacreBLEU 2.3.1 for the same settings. */
#define BLEU_SACREBLEU_VERSION "2.3.1"
#define MAX_ORDER 4

enum { TOK_13A, TOK_CHAR, TOK_NONE };
enum { SMOOTH_EXP, SMOOTH_NONE, SMOOTH_FLOOR, SMOOTH_ADDK };
static const char *const tok_names[] = {"13a", "char", "none", NULL};
static const char *const smooth_names[] = {"exp", "none", "floor", "add-k", NULL};

/* sacreBLEU's SMOOTH_DEFAULTS: floor 0.1 and add-k 1 (Chen & Cherry 2014). */
#define FLOOR_VALUE 0.1
#define ADDK_VALUE 1.0

enum {
  ST_MATCH = 0,
  ST_TOTAL = ST_MATCH + MAX_ORDER,
  ST_HYP_LEN = ST_TOTAL + MAX_ORDER,
  ST_REF_LEN,
  ST_SEGS,
  ST_NREFS,
  ST_NREFS_SQ,
  ST_SIZE
};

struct bleu {
  int tok, smooth;
  bool lowercase, effective_order;
};

/* ---- one preprocessed string -------------------------------------------------------- */

/* A line after preprocessing: its tokens as runs of code points in text, and their ids
 * (equal ids <=> equal tokens, within one segment). */
struct toks {
  struct cps text;
  size_t *off, *len;
  uint32_t *id;
  size_t n;
};

static void toks_free(struct toks *t) {
  cps_free(&t->text);
  free(t->off);
  free(t->len);
  free(t->id);
  memset(t, 0, sizeof *t);
}

/* Decodes UTF-8, which must be valid (Python would not have a str otherwise). */
static enum intrus_status decode(const char *s, const char *what, struct cps *out,
                                 struct intrus_error *err) {
  const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
  size_t len = strlen(s), i = 0;
  out->n = 0;
  while (i < len) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate(p + i, (utf8proc_ssize_t)(len - i), &c);
    if (k < 0)
      return intrus_error_set(err, INTRUS_ERR_DATA, "BLEU: %s: invalid UTF-8 at byte %zu",
                              what, i + 1);
    cps_push(out, (uint32_t)c);
    i += (size_t)k;
  }
  return INTRUS_OK;
}

/* sacreBLEU's _preprocess_segment and the split of extract_all_word_ngrams:
 * lowercase (optional), rstrip, tokenize, split on whitespace. */
static enum intrus_status preprocess(const struct bleu *b, const char *line, const char *what,
                                     struct toks *t, struct cps *tmp,
                                     struct intrus_error *err) {
  enum intrus_status st = decode(line, what, &t->text, err);
  if (st != INTRUS_OK) return st;
  if (b->lowercase) {
    py_lower(&t->text, tmp);
    cps_swap(&t->text, tmp);
  }
  while (t->text.n > 0 && py_space(t->text.v[t->text.n - 1])) t->text.n--;
  /* tokenizer_char joins every code point with spaces; after split() that is every
   * code point that is not whitespace, which the split below yields when each such
   * code point is its own token. tokenizer_none leaves the line as it is. */
  if (b->tok == TOK_13A) tokenize_13a(&t->text, tmp);
  if (t->text.oom || tmp->oom)
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "BLEU: out of memory");

  size_t cap = t->text.n / 2 + 1; /* at most one token per two code points, or one */
  if (b->tok == TOK_CHAR) cap = t->text.n + 1;
  t->off = malloc(cap * sizeof *t->off);
  t->len = malloc(cap * sizeof *t->len);
  t->id = malloc(cap * sizeof *t->id);
  if (!t->off || !t->len || !t->id)
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "BLEU: out of memory");
  t->n = 0;
  for (size_t i = 0; i < t->text.n;) {
    if (py_space(t->text.v[i])) {
      i++;
      continue;
    }
    size_t j = i + 1;
    if (b->tok != TOK_CHAR)
      while (j < t->text.n && !py_space(t->text.v[j])) j++;
    t->off[t->n] = i;
    t->len[t->n++] = j - i;
    i = j;
  }
  return INTRUS_OK;
}

/* ---- token ids and n-gram matching -------------------------------------------------- */

struct intern_slot {
  const uint32_t *p;  /* NULL: empty slot */
  size_t len;
  uint32_t id;
};

/* Gives every token of the segment's strings an id, equal for equal code point runs,
 * so n-grams become fixed-size integer keys. Open addressing, at most half full. */
static enum intrus_status intern(struct toks *strs, int nstr, struct intrus_error *err) {
  size_t total = 0;
  for (int s = 0; s < nstr; s++) total += strs[s].n;
  size_t cap = 16;
  while (cap < 2 * total) cap *= 2;
  struct intern_slot *tab = calloc(cap, sizeof *tab);
  if (!tab) return intrus_error_set(err, INTRUS_ERR_NOMEM, "BLEU: out of memory");
  uint32_t next = 1;
  for (int s = 0; s < nstr; s++) {
    struct toks *t = &strs[s];
    for (size_t k = 0; k < t->n; k++) {
      const uint32_t *p = t->text.v + t->off[k];
      size_t len = t->len[k];
      size_t h = (size_t)intrus_fnv1a(INTRUS_FNV_INIT, p, len * sizeof *p) & (cap - 1);
      while (tab[h].p &&
             (tab[h].len != len || memcmp(tab[h].p, p, len * sizeof *p) != 0))
        h = (h + 1) & (cap - 1);
      if (!tab[h].p) {
        tab[h].p = p;
        tab[h].len = len;
        tab[h].id = next++;
      }
      t->id[k] = tab[h].id;
    }
  }
  free(tab);
  return INTRUS_OK;
}

struct ngram {
  uint32_t w[MAX_ORDER]; /* unused positions 0, so memcmp orders any n consistently */
};

static int ngram_cmp(const void *a, const void *b) {
  return memcmp(a, b, sizeof(struct ngram));
}

/* The distinct n-grams of order n of ids (sorted) and how often each occurs, i.e. the
 * Counter of extract_all_word_ngrams for one order. keys and counts need room for
 * max(n_ids - n + 1, 0) entries. Returns the number of distinct n-grams. */
static size_t count_ngrams(const uint32_t *ids, size_t n_ids, int n, struct ngram *keys,
                           uint32_t *counts) {
  if (n_ids < (size_t)n) return 0;
  size_t m = n_ids - (size_t)n + 1;
  for (size_t i = 0; i < m; i++) {
    memset(&keys[i], 0, sizeof keys[i]);
    for (int k = 0; k < n; k++) keys[i].w[k] = ids[i + (size_t)k];
  }
  qsort(keys, m, sizeof *keys, ngram_cmp);
  size_t d = 0;
  for (size_t i = 0; i < m; i++) {
    if (d > 0 && ngram_cmp(&keys[d - 1], &keys[i]) == 0) {
      counts[d - 1]++;
    } else {
      keys[d] = keys[i];
      counts[d++] = 1;
    }
  }
  return d;
}

/* _get_closest_ref_len: the reference length nearest the hypothesis length; on a tie
 * the shorter one. */
static size_t closest_ref_len(size_t hyp_len, const struct toks *refs, int nrefs) {
  size_t best = 0, best_diff = SIZE_MAX;
  for (int r = 0; r < nrefs; r++) {
    size_t len = refs[r].n;
    size_t diff = len > hyp_len ? len - hyp_len : hyp_len - len;
    if (diff < best_diff || (diff == best_diff && len < best)) {
      best_diff = diff;
      best = len;
    }
  }
  return best;
}

/* Clipped matches for every order: each hypothesis n-gram counts at most as often as
 * it occurs in the reference where it occurs most often. */
static enum intrus_status match_counts(const struct toks *hyp, const struct toks *refs,
                                       int nrefs, double *stats, struct intrus_error *err) {
  size_t longest = hyp->n;
  for (int r = 0; r < nrefs; r++)
    if (refs[r].n > longest) longest = refs[r].n;
  size_t room = longest ? longest : 1;
  struct ngram *hk = malloc(room * sizeof *hk), *rk = malloc(room * sizeof *rk);
  uint32_t *hc = malloc(room * sizeof *hc), *rc = malloc(room * sizeof *rc);
  uint32_t *best = malloc(room * sizeof *best);
  if (!hk || !rk || !hc || !rc || !best) {
    free(hk);
    free(rk);
    free(hc);
    free(rc);
    free(best);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "BLEU: out of memory");
  }
  for (int n = 1; n <= MAX_ORDER; n++) {
    size_t hd = count_ngrams(hyp->id, hyp->n, n, hk, hc);
    memset(best, 0, hd * sizeof *best);
    for (int r = 0; r < nrefs; r++) {
      size_t rd = count_ngrams(refs[r].id, refs[r].n, n, rk, rc);
      for (size_t i = 0; i < rd; i++) {
        struct ngram *hit = bsearch(&rk[i], hk, hd, sizeof *hk, ngram_cmp);
        if (hit) {
          size_t at = (size_t)(hit - hk);
          if (rc[i] > best[at]) best[at] = rc[i];
        }
      }
    }
    double matches = 0;
    for (size_t i = 0; i < hd; i++) matches += hc[i] < best[i] ? hc[i] : best[i];
    stats[ST_MATCH + n - 1] = matches;
    stats[ST_TOTAL + n - 1] = hyp->n >= (size_t)n ? (double)(hyp->n - (size_t)n + 1) : 0.0;
  }
  free(hk);
  free(rk);
  free(hc);
  free(rc);
  free(best);
  return INTRUS_OK;
}

/* ---- the evaluator vtable ------------------------------------------------------------ */

static enum intrus_status bleu_create(const intrus_cfg *cfg, void **self,
                                      struct intrus_error *err) {
  int tok = TOK_13A, smooth = SMOOTH_EXP;
  bool lowercase = false, effective_order = false;
  if (cfg) {
    enum intrus_status st;
    if ((st = intrus_cfg_choice(cfg, "tokenize", "13a", tok_names, &tok, err)) ||
        (st = intrus_cfg_bool(cfg, "lowercase", false, &lowercase, err)) ||
        (st = intrus_cfg_choice(cfg, "smooth", "exp", smooth_names, &smooth, err)) ||
        (st = intrus_cfg_bool(cfg, "effective_order", false, &effective_order, err)) ||
        (st = intrus_cfg_check_unknown(cfg, err)))
      return st;
  }
  struct bleu *b = malloc(sizeof *b);
  if (!b) return intrus_error_set(err, INTRUS_ERR_NOMEM, "BLEU: out of memory");
  b->tok = tok;
  b->smooth = smooth;
  b->lowercase = lowercase;
  b->effective_order = effective_order;
  *self = b;
  return INTRUS_OK;
}

static void bleu_destroy(void *self) { free(self); }

static int bleu_stats_size(void *self) {
  (void)self;
  return ST_SIZE;
}

static enum intrus_status bleu_segment_stats(void *self, const char *hyp,
                                             const char *const *refs, int nrefs,
                                             double *stats, struct intrus_error *err) {
  const struct bleu *b = self;
  if (!hyp || !refs || nrefs < 1)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "BLEU: a segment needs a hypothesis and at least one reference");
  /* NULL marks a reference this segment does not have (sacreBLEU's None: a variable
   * number of references); "" is a reference of length 0, kept as sacreBLEU 2.3.1 keeps
   * it. A segment needs at least one reference. */
  int used = 0;
  for (int r = 0; r < nrefs; r++)
    if (refs[r]) used++;
  if (used == 0)
    return intrus_error_set(err, INTRUS_ERR_DATA,
                            "BLEU: the segment has no reference (every one is absent)");

  struct toks *strs = calloc((size_t)used + 1, sizeof *strs);
  struct cps tmp = {0};
  if (!strs) return intrus_error_set(err, INTRUS_ERR_NOMEM, "BLEU: out of memory");
  enum intrus_status st = preprocess(b, hyp, "hypothesis", &strs[0], &tmp, err);
  for (int r = 0, k = 1; st == INTRUS_OK && r < nrefs; r++) {
    if (!refs[r]) continue;
    char what[32];
    snprintf(what, sizeof what, "reference %d", r + 1);
    st = preprocess(b, refs[r], what, &strs[k++], &tmp, err);
  }
  if (st == INTRUS_OK) st = intern(strs, used + 1, err);
  if (st == INTRUS_OK) st = match_counts(&strs[0], &strs[1], used, stats, err);
  if (st == INTRUS_OK) {
    stats[ST_HYP_LEN] = (double)strs[0].n;
    stats[ST_REF_LEN] = (double)closest_ref_len(strs[0].n, &strs[1], used);
    stats[ST_SEGS] = 1;
    stats[ST_NREFS] = used;
    stats[ST_NREFS_SQ] = (double)used * used;
  }
  for (int s = 0; s <= used; s++) toks_free(&strs[s]);
  free(strs);
  cps_free(&tmp);
  return st;
}

/* utils.my_log: log with log(0) floored to -9999999999, which makes a zero precision
 * give a BLEU of exactly 0 without a domain error. */
static double my_log(double x) { return x == 0.0 ? -9999999999.0 : log(x); }

static const char *const score_names[] = {"BLEU", "P1", "P2", "P3", "P4",
                                          "BP", "ratio", "hyp_len", "ref_len"};

/* BLEU.compute_bleu, operation for operation (the same floating-point expressions in
 * the same order), so the result agrees with sacreBLEU to the last bit. */
static enum intrus_status bleu_score(void *self, const double *sum,
                                     struct intrus_eval_scores *out,
                                     struct intrus_error *err) {
  const struct bleu *b = self;
  (void)err;
  double correct[MAX_ORDER], total[MAX_ORDER], prec[MAX_ORDER] = {0};
  bool any = false;
  for (int n = 0; n < MAX_ORDER; n++) {
    correct[n] = sum[ST_MATCH + n];
    total[n] = sum[ST_TOTAL + n];
    if (correct[n] != 0) any = true;
  }
  double sys_len = sum[ST_HYP_LEN], ref_len = sum[ST_REF_LEN];

  double bp;
  if (sys_len < ref_len) bp = sys_len > 0 ? exp(1.0 - ref_len / sys_len) : 0.0;
  else bp = 1.0;

  double score = 0.0;
  /* Without a single match sacreBLEU stops early: score 0 and all precisions 0 (#141),
   * even under smoothing. */
  if (any) {
    double smooth_mteval = 1.0;
    int eff_order = MAX_ORDER;
    for (int n = 1; n <= MAX_ORDER; n++) {
      if (b->smooth == SMOOTH_ADDK && n > 1) {
        correct[n - 1] += ADDK_VALUE;
        total[n - 1] += ADDK_VALUE;
      }
      if (total[n - 1] == 0) break;
      if (b->effective_order) eff_order = n;
      if (correct[n - 1] == 0) {
        if (b->smooth == SMOOTH_EXP) {
          smooth_mteval *= 2;
          prec[n - 1] = 100. / (smooth_mteval * total[n - 1]);
        } else if (b->smooth == SMOOTH_FLOOR) {
          prec[n - 1] = 100. * FLOOR_VALUE / total[n - 1];
        }
      } else {
        prec[n - 1] = 100. * correct[n - 1] / total[n - 1];
      }
    }
    double logsum = 0.0;
    for (int n = 0; n < eff_order; n++) logsum += my_log(prec[n]);
    score = bp * exp(logsum / eff_order);
  }

  out->count = (int)(sizeof score_names / sizeof score_names[0]);
  for (int i = 0; i < out->count; i++) out->names[i] = score_names[i];
  out->values[0] = score;
  for (int n = 0; n < MAX_ORDER; n++) out->values[1 + n] = prec[n];
  out->values[5] = bp;
  out->values[6] = ref_len != 0 ? sys_len / ref_len : 0.0;
  out->values[7] = sys_len;
  out->values[8] = ref_len;

  /* nrefs: the common number of references, or "var" (see the file comment). */
  char nrefs[32];
  double segs = sum[ST_SEGS], r1 = sum[ST_NREFS], r2 = sum[ST_NREFS_SQ];
  if (segs > 0 && segs * r2 != r1 * r1) snprintf(nrefs, sizeof nrefs, "var");
  else snprintf(nrefs, sizeof nrefs, "%.0f", segs > 0 ? r1 / segs : 0.0);
  /* floor and add-k carry their value, formatted as sacreBLEU's f'{value:.2f}'. */
  char smooth[32];
  if (b->smooth == SMOOTH_FLOOR) snprintf(smooth, sizeof smooth, "floor[%.2f]", FLOOR_VALUE);
  else if (b->smooth == SMOOTH_ADDK) snprintf(smooth, sizeof smooth, "add-k[%.2f]", ADDK_VALUE);
  else snprintf(smooth, sizeof smooth, "%s", smooth_names[b->smooth]);
  snprintf(out->signature, sizeof out->signature,
           "nrefs:%s|case:%s|eff:%s|tok:%s|smooth:%s|version:%s", nrefs,
           b->lowercase ? "lc" : "mixed", b->effective_order ? "yes" : "no",
           tok_names[b->tok], smooth, BLEU_SACREBLEU_VERSION);
  return INTRUS_OK;
}

static const struct intrus_evaluator_vtable bleu_vtable = {
    .create = bleu_create,
    .destroy = bleu_destroy,
    .stats_size = bleu_stats_size,
    .prepare = NULL, /* BLEU has no corpus-level reference weights */
    .segment_stats = bleu_segment_stats,
    .score = bleu_score,
};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(eval_bleu) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "bleu",
    .version = "1.0.0",
    .kind = INTRUS_KIND_EVALUATOR,
    .summary = "corpus BLEU identical to sacreBLEU 2.3.1 (tokenizers 13a, char, none)",
    .vtable = &bleu_vtable,
};

/* eval_cider: CIDEr-D computed as the MSCOCO caption evaluation (tylin/coco-caption,
 * pycocoevalcap/cider/cider_scorer.py, the "CIDEr" of its results) computes it, so
 * caption scores from intrus can stand next to published ones.
 *
 * What is reproduced (the coco-caption function in brackets):
 *   - tokenisation [tokenizer/ptbtokenizer.py]: Stanford PTBTokenizer 3.4.1 with
 *     -preserveLines -lowerCase and the PUNCTUATIONS filter, re-implemented in C in
 *     ptb_tokenize.c (its header says exactly how, and where it may differ from Java);
 *   - n-grams of orders 1..4 with their counts [precook];
 *   - document frequencies: df(g) = the number of images whose references (the union
 *     over the image's references) contain g, over the whole test set, computed in
 *     prepare() [compute_doc_freq]; ref_len = log(number of images);
 *   - a sentence's vector: each n-gram g with count tf has weight
 *     tf * (ref_len - log(max(1, df(g)))), one vector and one norm (sqrt of the sum of
 *     squares) per order; its `length` is the number of BIGRAMS, not of words, as coco's
 *     counts2vec computes it (`if n == 1` tests the 0-based order index) [counts2vec].
 *     For a non-empty sentence that is its word count minus one, so the length
 *     difference below is the same as with word counts; only an empty sentence differs,
 *     and its similarities are 0 anyway: the quirk is kept, but no score depends on it;
 *   - sim(hyp, ref) per order: sum over the hypothesis n-grams of
 *     min(v_hyp, v_ref) * v_ref (CIDEr-D's clipping), divided by norm_hyp * norm_ref when
 *     both are non-zero, times exp(-(len_hyp - len_ref)^2 / (2 sigma^2)) [sim];
 *   - an image's score: the sims summed over its references per order, the mean of the
 *     4 orders, divided by the number of references, times 10; the corpus score is the
 *     mean over images [compute_cider, compute_score]. Reported x 100, as papers do
 *     ("CIDEr 113.5" is coco-caption's 1.135).
 * Consequences worth knowing: an empty hypothesis scores 0; with a single image every
 * weight is log(1) - log(1) = 0 and CIDEr-D is 0; a score depends on the whole test set
 * through df, so scores of different test sets (or subsets) do not compare.
 *
 * References: a NULL entry in refs (an empty line of a reference file in `intrus eval
 * cider`) is a reference the image does not have, left out of the image (for a varying
 * number of references per image); "" passed to the API is a reference with no tokens
 * (it counts in the number of references, as an empty caption does in coco). An image
 * needs at least one reference. segment_stats must get the same references as
 * prepare() was given for that image, or its weights are not coco's.
 *
 * Statistics per segment (4 doubles; sums of them score a corpus, which the core's
 * paired bootstrap relies on; df stays that of the whole test set, as is usual):
 *   [0] the image's CIDEr-D (coco's scale)   [1] 1 (images)
 *   [2] references used   [3] references used, squared
 * The last two only feed the signature's nrefs field ("var" when images have
 * different numbers of references, known from the sums as in eval-bleu).
 *
 * Settings (optional): sigma = the Gaussian penalty's standard deviation (default 6.0).
 * An evaluator instance is not thread-safe (its tokenizer has scratch memory). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/plugin.h"
#include "intrus/rng.h"
#include "ptb_tokenize.h"

#define MAX_ORDER 4
#define DEFAULT_SIGMA 6.0

enum { ST_SCORE, ST_IMAGES, ST_NREFS, ST_NREFS_SQ, ST_SIZE };

/* An n-gram of token ids (ids start at 1; unused positions 0). */
struct ngram {
  uint32_t w[MAX_ORDER];
};

static int ngram_cmp(const void *a, const void *b) {
  const struct ngram *x = a, *y = b;
  for (int k = 0; k < MAX_ORDER; k++)
    if (x->w[k] != y->w[k]) return x->w[k] < y->w[k] ? -1 : 1;
  return 0;
}

static uint64_t ngram_hash(const struct ngram *g) {
  return intrus_fnv1a(INTRUS_FNV_INIT, g->w, sizeof g->w);
}

static int ngram_order(const struct ngram *g) {
  int n = 0;
  while (n < MAX_ORDER && g->w[n]) n++;
  return n;
}

/* ---- token ids ------------------------------------------------------------------------ */

/* A string -> id table (open addressing, at most half full); strings in one arena. */
struct vocab {
  char *arena;
  size_t alen, acap;
  struct vocab_slot {
    size_t off, len;
    uint32_t id; /* 0: empty slot */
  } *slot;
  size_t cap, count;
};

static void vocab_free(struct vocab *v) {
  free(v->arena);
  free(v->slot);
  memset(v, 0, sizeof *v);
}

static bool vocab_grow(struct vocab *v) {
  size_t cap = v->cap ? 2 * v->cap : 1024;
  struct vocab_slot *s = calloc(cap, sizeof *s);
  if (!s) return false;
  for (size_t i = 0; i < v->cap; i++) {
    if (!v->slot[i].id) continue;
    size_t h = (size_t)intrus_fnv1a(INTRUS_FNV_INIT, v->arena + v->slot[i].off, v->slot[i].len) &
               (cap - 1);
    while (s[h].id) h = (h + 1) & (cap - 1);
    s[h] = v->slot[i];
  }
  free(v->slot);
  v->slot = s;
  v->cap = cap;
  return true;
}

/* The id of tok; a new one (count + 1) when add, else 0 if it is not in the table.
 * Returns false when out of memory. */
static bool vocab_id(struct vocab *v, const char *tok, bool add, uint32_t *id) {
  size_t len = strlen(tok);
  *id = 0;
  if (v->cap == 0 || 2 * (v->count + 1) > v->cap) {
    if (!add && v->cap == 0) return true;
    if (add && !vocab_grow(v)) return false;
  }
  size_t h = (size_t)intrus_fnv1a(INTRUS_FNV_INIT, tok, len) & (v->cap - 1);
  while (v->slot[h].id) {
    if (v->slot[h].len == len && !memcmp(v->arena + v->slot[h].off, tok, len)) {
      *id = v->slot[h].id;
      return true;
    }
    h = (h + 1) & (v->cap - 1);
  }
  if (!add) return true;
  if (v->alen + len > v->acap) {
    size_t cap = v->acap ? v->acap : 4096;
    while (cap < v->alen + len) cap *= 2;
    char *a = realloc(v->arena, cap);
    if (!a) return false;
    v->arena = a;
    v->acap = cap;
  }
  memcpy(v->arena + v->alen, tok, len);
  v->slot[h] = (struct vocab_slot){v->alen, len, (uint32_t)++v->count};
  v->alen += len;
  *id = v->slot[h].id;
  return true;
}

/* ---- document frequencies ----------------------------------------------------------- */

struct df_table {
  struct df_slot {
    struct ngram g; /* g.w[0] == 0: empty */
    uint32_t count;
  } *slot;
  size_t cap, count;
};

static void df_free(struct df_table *t) {
  free(t->slot);
  memset(t, 0, sizeof *t);
}

static uint32_t df_get(const struct df_table *t, const struct ngram *g) {
  if (!t->cap) return 0;
  size_t h = (size_t)ngram_hash(g) & (t->cap - 1);
  while (t->slot[h].g.w[0]) {
    if (!ngram_cmp(&t->slot[h].g, g)) return t->slot[h].count;
    h = (h + 1) & (t->cap - 1);
  }
  return 0;
}

static bool df_add(struct df_table *t, const struct ngram *g) {
  if (2 * (t->count + 1) > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 4096;
    struct df_slot *s = calloc(cap, sizeof *s);
    if (!s) return false;
    for (size_t i = 0; i < t->cap; i++) {
      if (!t->slot[i].g.w[0]) continue;
      size_t h = (size_t)ngram_hash(&t->slot[i].g) & (cap - 1);
      while (s[h].g.w[0]) h = (h + 1) & (cap - 1);
      s[h] = t->slot[i];
    }
    free(t->slot);
    t->slot = s;
    t->cap = cap;
  }
  size_t h = (size_t)ngram_hash(g) & (t->cap - 1);
  while (t->slot[h].g.w[0]) {
    if (!ngram_cmp(&t->slot[h].g, g)) {
      t->slot[h].count++;
      return true;
    }
    h = (h + 1) & (t->cap - 1);
  }
  t->slot[h].g = *g;
  t->slot[h].count = 1;
  t->count++;
  return true;
}

/* ---- the evaluator ------------------------------------------------------------------ */

struct cider {
  double sigma;
  struct ptb_lexer *lx;
  struct ptb_tokens toks;
  bool prepared;
  int images;
  double ref_len; /* log(images) */
  struct vocab vocab;
  struct df_table df;
  /* every distinct reference text of prepare() -> its token ids (refs_ids[refs_off[k - 1]
   * ..] for the text's id k in refs), so segment_stats does not tokenize it again */
  struct vocab refs;
  uint32_t *refs_ids;
  size_t *refs_off, *refs_len, nids, capids, caprefs;
  /* tokens of this segment that are not in the references' vocabulary get ids above
   * vocab.count, from this table (emptied per segment) */
  struct vocab local;
};

/* A sentence as counts2vec sees it: its distinct n-grams (sorted) with their counts and
 * weights, the norm per order and the bigram "length". */
struct vec {
  struct ngram *g;
  uint32_t *count;
  double *v;
  size_t n;
  double norm[MAX_ORDER];
  long length;
};

static void vec_free(struct vec *s) {
  free(s->g);
  free(s->count);
  free(s->v);
  memset(s, 0, sizeof *s);
}

/* The distinct n-grams (orders 1..4) of ids[0..n) and their counts, sorted [precook]. */
static bool count_ngrams(const uint32_t *ids, size_t n, struct vec *s) {
  size_t total = 0;
  for (int k = 1; k <= MAX_ORDER; k++) total += n >= (size_t)k ? n - (size_t)k + 1 : 0;
  s->g = malloc((total ? total : 1) * sizeof *s->g);
  s->count = malloc((total ? total : 1) * sizeof *s->count);
  s->v = malloc((total ? total : 1) * sizeof *s->v);
  if (!s->g || !s->count || !s->v) return false;
  size_t m = 0;
  for (int k = 1; k <= MAX_ORDER; k++)
    for (size_t i = 0; i + (size_t)k <= n; i++) {
      memset(&s->g[m], 0, sizeof s->g[m]);
      for (int j = 0; j < k; j++) s->g[m].w[j] = ids[i + (size_t)j];
      m++;
    }
  qsort(s->g, m, sizeof *s->g, ngram_cmp);
  s->n = 0;
  for (size_t i = 0; i < m; i++) {
    if (s->n > 0 && !ngram_cmp(&s->g[s->n - 1], &s->g[i])) {
      s->count[s->n - 1]++;
    } else {
      s->g[s->n] = s->g[i];
      s->count[s->n++] = 1;
    }
  }
  return true;
}

/* Weights, norms and length of a counted sentence [counts2vec]. */
static void weigh(const struct cider *c, struct vec *s) {
  double sq[MAX_ORDER] = {0};
  s->length = 0;
  for (size_t i = 0; i < s->n; i++) {
    double df = log(fmax(1.0, (double)df_get(&c->df, &s->g[i])));
    int n = ngram_order(&s->g[i]) - 1;
    s->v[i] = (double)s->count[i] * (c->ref_len - df);
    sq[n] += pow(s->v[i], 2);
    if (n == 1) s->length += s->count[i]; /* coco's quirk: bigrams, not words */
  }
  for (int n = 0; n < MAX_ORDER; n++) s->norm[n] = sqrt(sq[n]);
}

/* [sim]: val[n] for every order n. */
static void sim(const struct cider *c, const struct vec *h, const struct vec *r,
                double val[MAX_ORDER]) {
  double delta = (double)(h->length - r->length);
  for (int n = 0; n < MAX_ORDER; n++) val[n] = 0.0;
  for (size_t i = 0; i < h->n; i++) {
    const struct ngram *hit = bsearch(&h->g[i], r->g, r->n, sizeof *r->g, ngram_cmp);
    if (!hit) continue; /* vec_ref[ngram] == 0 */
    double vr = r->v[hit - r->g], vh = h->v[i];
    val[ngram_order(&h->g[i]) - 1] += (vh < vr ? vh : vr) * vr;
  }
  for (int n = 0; n < MAX_ORDER; n++) {
    if (h->norm[n] != 0 && r->norm[n] != 0) val[n] /= (h->norm[n] * r->norm[n]);
    val[n] *= pow(M_E, -(delta * delta) / (2 * c->sigma * c->sigma));
  }
}

/* The tokens of text as ids: from the references' vocabulary, or (add == false) local
 * ids above it for tokens it does not have. *ids is malloc'd. */
static enum intrus_status text_ids(struct cider *c, const char *text, const char *what,
                                   bool add, uint32_t **ids, size_t *n,
                                   struct intrus_error *err) {
  size_t bad = 0;
  int st = ptb_coco_tokens(c->lx, text, strlen(text), &c->toks, &bad);
  if (st == PTB_BAD_UTF8)
    return intrus_error_set(err, INTRUS_ERR_DATA, "CIDEr-D: %s: invalid UTF-8 at byte %zu",
                            what, bad + 1);
  if (st != PTB_OK) return intrus_error_set(err, INTRUS_ERR_NOMEM, "CIDEr-D: out of memory");
  *ids = malloc((c->toks.n ? c->toks.n : 1) * sizeof **ids);
  if (!*ids) return intrus_error_set(err, INTRUS_ERR_NOMEM, "CIDEr-D: out of memory");
  for (size_t i = 0; i < c->toks.n; i++) {
    uint32_t id;
    if (!vocab_id(&c->vocab, ptb_token(&c->toks, i), add, &id)) goto oom;
    if (!id) {
      if (!vocab_id(&c->local, ptb_token(&c->toks, i), true, &id)) goto oom;
      id += (uint32_t)c->vocab.count;
    }
    (*ids)[i] = id;
  }
  *n = c->toks.n;
  return INTRUS_OK;
oom:
  free(*ids);
  *ids = NULL;
  return intrus_error_set(err, INTRUS_ERR_NOMEM, "CIDEr-D: out of memory");
}

static void refs_free(struct cider *c) {
  vocab_free(&c->refs);
  free(c->refs_ids);
  free(c->refs_off);
  free(c->refs_len);
  c->refs_ids = NULL;
  c->refs_off = c->refs_len = NULL;
  c->nids = c->capids = c->caprefs = 0;
}

/* The ids of a reference text (prepare: tokenized once per distinct text and kept;
 * segment_stats: from that cache, or tokenized with local ids for unknown tokens).
 * *ids points into the cache (*owned false) or is malloc'd (*owned true). */
static enum intrus_status ref_ids(struct cider *c, const char *text, const char *what,
                                  bool add, const uint32_t **ids, size_t *n, bool *owned,
                                  struct intrus_error *err) {
  uint32_t k;
  size_t before = c->refs.count;
  *owned = false;
  if (!vocab_id(&c->refs, text, add, &k)) goto oom;
  if (k && c->refs.count == before) { /* seen before */
    *ids = c->refs_ids + c->refs_off[k - 1];
    *n = c->refs_len[k - 1];
    return INTRUS_OK;
  }
  uint32_t *fresh = NULL;
  enum intrus_status st = text_ids(c, text, what, add, &fresh, n, err);
  if (st != INTRUS_OK) return st; /* (prepare then fails as a whole) */
  if (!k) { /* not a reference prepare() saw */
    *ids = fresh;
    *owned = true;
    return INTRUS_OK;
  }
  size_t cap = c->caprefs;
  if (k > cap) {
    cap = cap ? 2 * cap : 1024;
    size_t *off = realloc(c->refs_off, cap * sizeof *off);
    if (off) c->refs_off = off;
    size_t *len = off ? realloc(c->refs_len, cap * sizeof *len) : NULL;
    if (len) c->refs_len = len;
    if (!off || !len) {
      free(fresh);
      goto oom;
    }
    c->caprefs = cap;
  }
  if (c->nids + *n > c->capids) {
    size_t capids = c->capids ? c->capids : 4096;
    while (capids < c->nids + *n) capids *= 2;
    uint32_t *a = realloc(c->refs_ids, capids * sizeof *a);
    if (!a) {
      free(fresh);
      goto oom;
    }
    c->refs_ids = a;
    c->capids = capids;
  }
  memcpy(c->refs_ids + c->nids, fresh, *n * sizeof *fresh);
  free(fresh);
  c->refs_off[k - 1] = c->nids;
  c->refs_len[k - 1] = *n;
  c->nids += *n;
  *ids = c->refs_ids + c->refs_off[k - 1];
  return INTRUS_OK;
oom:
  return intrus_error_set(err, INTRUS_ERR_NOMEM, "CIDEr-D: out of memory");
}

static enum intrus_status cider_create(const intrus_cfg *cfg, void **self,
                                       struct intrus_error *err) {
  double sigma = DEFAULT_SIGMA;
  if (cfg) {
    enum intrus_status st;
    if ((st = intrus_cfg_double(cfg, "sigma", DEFAULT_SIGMA, &sigma, err))) return st;
    if (!(sigma > 0) || !isfinite(sigma))
      return intrus_cfg_error(cfg, "sigma", err, "must be a positive number, got %g", sigma);
    if ((st = intrus_cfg_check_unknown(cfg, err))) return st;
  }
  struct cider *c = calloc(1, sizeof *c);
  if (!c || !(c->lx = ptb_lexer_create())) {
    free(c);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "CIDEr-D: out of memory");
  }
  c->sigma = sigma;
  *self = c;
  return INTRUS_OK;
}

static void cider_destroy(void *self) {
  struct cider *c = self;
  if (!c) return;
  ptb_lexer_free(c->lx);
  ptb_tokens_free(&c->toks);
  vocab_free(&c->vocab);
  vocab_free(&c->local);
  df_free(&c->df);
  refs_free(c);
  free(c);
}

static int cider_stats_size(void *self) {
  (void)self;
  return ST_SIZE;
}

/* [compute_doc_freq]: df over the references of every image; ref_len. */
static enum intrus_status cider_prepare(void *self, int nseg, const char *const *const *refs,
                                        int nrefs, struct intrus_error *err) {
  struct cider *c = self;
  if (nseg < 1 || !refs || nrefs < 1)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "CIDEr-D: prepare needs at least one image with references");
  vocab_free(&c->vocab);
  df_free(&c->df);
  refs_free(c);
  c->prepared = false;
  enum intrus_status st = INTRUS_OK;
  struct ngram *all = NULL;
  size_t nall = 0, capall = 0;
  for (int i = 0; i < nseg && st == INTRUS_OK; i++) {
    nall = 0;
    for (int r = 0; r < nrefs && st == INTRUS_OK; r++) {
      if (!refs[i] || !refs[i][r]) continue;
      char what[64];
      snprintf(what, sizeof what, "image %d, reference %d", i + 1, r + 1);
      const uint32_t *ids = NULL;
      size_t n = 0;
      bool owned;
      struct vec s = {0};
      if ((st = ref_ids(c, refs[i][r], what, true, &ids, &n, &owned, err))) break;
      if (!count_ngrams(ids, n, &s)) {
        st = intrus_error_set(err, INTRUS_ERR_NOMEM, "CIDEr-D: out of memory");
      } else if (nall + s.n > capall) {
        size_t cap = capall ? capall : 256;
        while (cap < nall + s.n) cap *= 2;
        struct ngram *a = realloc(all, cap * sizeof *a);
        if (!a) st = intrus_error_set(err, INTRUS_ERR_NOMEM, "CIDEr-D: out of memory");
        else {
          all = a;
          capall = cap;
        }
      }
      if (st == INTRUS_OK) {
        memcpy(all + nall, s.g, s.n * sizeof *all);
        nall += s.n;
      }
      if (owned) free((void *)ids);
      vec_free(&s);
    }
    if (st != INTRUS_OK) break;
    /* every n-gram of the image's references counts once */
    qsort(all, nall, sizeof *all, ngram_cmp);
    for (size_t k = 0; k < nall; k++)
      if ((k == 0 || ngram_cmp(&all[k - 1], &all[k])) && !df_add(&c->df, &all[k])) {
        st = intrus_error_set(err, INTRUS_ERR_NOMEM, "CIDEr-D: out of memory");
        break;
      }
  }
  free(all);
  if (st != INTRUS_OK) {
    vocab_free(&c->vocab);
    df_free(&c->df);
    refs_free(c);
    return st;
  }
  c->images = nseg;
  c->ref_len = log((double)nseg);
  c->prepared = true;
  return INTRUS_OK;
}

static enum intrus_status cider_segment_stats(void *self, const char *hyp,
                                              const char *const *refs, int nrefs,
                                              double *stats, struct intrus_error *err) {
  struct cider *c = self;
  if (!c->prepared)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "CIDEr-D: prepare() must see the test set's references first "
                            "(its document frequencies weight every n-gram)");
  if (!hyp || !refs || nrefs < 1)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "CIDEr-D: a segment needs a hypothesis and at least one reference");
  int used = 0;
  for (int r = 0; r < nrefs; r++)
    if (refs[r]) used++;
  if (used == 0)
    return intrus_error_set(err, INTRUS_ERR_DATA,
                            "CIDEr-D: the image has no reference (every one is absent)");

  vocab_free(&c->local);
  struct vec h = {0}, s = {0};
  uint32_t *ids = NULL;
  size_t n = 0;
  double score[MAX_ORDER] = {0}, val[MAX_ORDER];
  enum intrus_status st = text_ids(c, hyp, "hypothesis", false, &ids, &n, err);
  if (st == INTRUS_OK && !count_ngrams(ids, n, &h))
    st = intrus_error_set(err, INTRUS_ERR_NOMEM, "CIDEr-D: out of memory");
  free(ids);
  ids = NULL;
  if (st == INTRUS_OK) weigh(c, &h);
  for (int r = 0; r < nrefs && st == INTRUS_OK; r++) {
    if (!refs[r]) continue;
    char what[32];
    snprintf(what, sizeof what, "reference %d", r + 1);
    const uint32_t *rids;
    bool owned;
    if ((st = ref_ids(c, refs[r], what, false, &rids, &n, &owned, err))) break;
    if (!count_ngrams(rids, n, &s)) {
      st = intrus_error_set(err, INTRUS_ERR_NOMEM, "CIDEr-D: out of memory");
    } else {
      weigh(c, &s);
      sim(c, &h, &s, val);
      for (int k = 0; k < MAX_ORDER; k++) score[k] += val[k];
    }
    if (owned) free((void *)rids);
    vec_free(&s);
  }
  vec_free(&h);
  if (st != INTRUS_OK) return st;
  /* np.mean over the orders, / number of references, * 10 */
  double avg = 0.0;
  for (int k = 0; k < MAX_ORDER; k++) avg += score[k];
  avg /= MAX_ORDER;
  avg /= used;
  avg *= 10.0;
  stats[ST_SCORE] = avg;
  stats[ST_IMAGES] = 1;
  stats[ST_NREFS] = used;
  stats[ST_NREFS_SQ] = (double)used * used;
  return INTRUS_OK;
}

static const char *const score_names[] = {"CIDEr", "images"};

static enum intrus_status cider_score(void *self, const double *sum,
                                      struct intrus_eval_scores *out,
                                      struct intrus_error *err) {
  const struct cider *c = self;
  (void)err;
  double images = sum[ST_IMAGES];
  out->count = (int)(sizeof score_names / sizeof score_names[0]);
  for (int i = 0; i < out->count; i++) out->names[i] = score_names[i];
  out->values[0] = images > 0 ? sum[ST_SCORE] / images * 100.0 : 0.0;
  out->values[1] = images;
  char nrefs[32];
  double r1 = sum[ST_NREFS], r2 = sum[ST_NREFS_SQ];
  if (images > 0 && images * r2 != r1 * r1) snprintf(nrefs, sizeof nrefs, "var");
  else snprintf(nrefs, sizeof nrefs, "%.0f", images > 0 ? r1 / images : 0.0);
  snprintf(out->signature, sizeof out->signature,
           "nrefs:%s|tok:ptb|sigma:%g|version:coco-caption", nrefs, c->sigma);
  return INTRUS_OK;
}

static const struct intrus_evaluator_vtable cider_vtable = {
    .create = cider_create,
    .destroy = cider_destroy,
    .stats_size = cider_stats_size,
    .prepare = cider_prepare,
    .segment_stats = cider_segment_stats,
    .score = cider_score,
};

INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(eval_cider) = {
    .abi_major = INTRUS_ABI_MAJOR,
    .abi_minor = INTRUS_ABI_MINOR,
    .name = "cider",
    .version = "1.0.0",
    .kind = INTRUS_KIND_EVALUATOR,
    .summary = "CIDEr-D as the MSCOCO caption evaluation (coco-caption) computes it",
    .vtable = &cider_vtable,
};

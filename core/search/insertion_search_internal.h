/* Internal to the insertion beam search: the per-sentence state that both the search
 * loop (insertion_search.c) and the bookkeeping of equal children
 * (insertion_search_merge.c) work on, and what the loop calls in the latter. */
#ifndef INTRUS_SEARCH_INSERTION_SEARCH_INTERNAL_H
#define INTRUS_SEARCH_INSERTION_SEARCH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "intrus/insertion.h"

/* A special way: the row of slot `sid` is read at `token` into val. */
struct way {
  int sid, str;
  int32_t token;
  float val;
};

/* What the rounds so far know about one special string. */
struct str_info {
  double lo, hi;      /* log-sum-exp over scored ways / plus unscored ways' slot bounds */
  double lo_sum, hi_sum;
  int best;           /* the best scored way: the merged string keeps its trajectory */
  bool open;          /* some way with a finite bound is still unscored */
};

struct sentence {
  int ms;                            /* most insertions */
  int live;                          /* hypotheses in the beam, each of t tokens */
  bool active;                       /* still searching */
  int cur;                           /* which half of the double buffers is the beam */
  int32_t *tok[2];                   /* [K * ms], hypothesis h at h * ms */
  struct intrus_ins_step *traj[2];   /* [K * ms] */
  double *logp[2];                   /* [K] merged log p of each hypothesis */
  int *state;                        /* [K] its index in this step's positions() batch */

  /* This step's expansion; slot id sid = h * (t + 1) + i. */
  bool expand, slots_finished;
  int nslot, cursor, scored;
  double *bound;                     /* [K * (ms + 1)] logp(h) + log p(pos = i) */
  unsigned char *done;               /* requested from tokens() */
  struct oslot *order;               /* pruning: slots by bound, best first */
  int *way_off, *way_idx;            /* special ways of each slot */
  struct way *ways;
  size_t nway, way_cap, idx_cap;
  struct str_info *str;              /* special strings; ids merged away keep no ways */
  size_t str_cap;
  int nstr;
  struct cand *top;                  /* best `beam` non-special children, sorted */
  int ntop;
  double floor;                      /* the finish bound: no child below it matters
                                        (insertion_search_finish.c) */
  struct cand *pick;                 /* final candidates */
  size_t pick_cap;
  double *kth;                       /* [K] scratch for theta */

  double *fin;                       /* [K] log p of each hypothesis finished this step */

  /* The best finished hypothesis so far. */
  bool have;
  int flen;
  double flogp, fscore;
  int32_t *ftok;
  struct intrus_ins_step *ftraj;
};

/* Per normalisation step, how far above 1 a float distribution from a scorer may sum;
 * keeps the early stop a proof rather than a float coincidence. */
#define NORM_SLACK 1e-5

/* dst = src (t tokens) with token inserted at slot. */
static inline void ins_search_copy(int32_t *dst, const int32_t *src, int t, int slot,
                                   int32_t token) {
  memcpy(dst, src, (size_t)slot * sizeof *dst);
  dst[slot] = token;
  memcpy(dst + slot + 1, src + slot, (size_t)(t - slot) * sizeof *dst);
}

/* Names this step's special ways of sentence S (t tokens per hypothesis): the ways
 * that share their string with another way. */
void ins_search_build_special(struct sentence *S, int t, bool canonical, int32_t *scratch);
/* Bounds (lo, hi) and best way of every special string from the ways scored so far. */
void ins_search_string_bounds(struct sentence *S);
/* Indexes the special ways by slot (way_off, way_idx). */
void ins_search_index_ways(struct sentence *S);

/* The finish bound of sentence S's expansion at step t (beam K; the search's min_len,
 * finish_in_beam and (len + 1)^alpha table): a value below which none of the step's
 * children can change the search's result, -inf where there is none. Call once the
 * step's finishes (S->fin, penalised by finish_penalty, and without finish_in_beam
 * their offers) and slot bounds are known. */
double ins_search_finish_floor(const struct sentence *S, int t, int K, int min_len,
                               bool finish_in_beam, double finish_penalty,
                               const double *denom);

#endif

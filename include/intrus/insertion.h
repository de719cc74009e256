/* INTRUS: generation by insertion (DESIGN.md section 4).
 *
 * A state is a partial output y1..yk. The insertion decoder reads [NULL, y1..yk, EOS]
 * (k+2 positions). Position i in 0..k is slot i: inserting there puts a token after
 * position i (slot 0 = at the front, slot k = at the end). Position k+1 is "finish".
 * log p(insert i, c) = log p(pos = i) + log p(c | slot i); insertions and finish share
 * one distribution.
 *
 * This header holds what the search, the order policies and the training loop share:
 * the correct-insertion oracle, trajectories, the model as a scorer of states, and the
 * insertion beam search. */
#ifndef INTRUS_INSERTION_H
#define INTRUS_INSERTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "intrus/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the correct-insertion oracle -------------------------------------------- */

/* Slot ranges of a partial output part[0..k) that is a subsequence of y[0..n): slot i
 * (0..k) may receive any token of y[start[i] .. end[i]-1] (greedy left-to-right matching
 * gives the starts, greedy right-to-left matching the ends). start and end have k+1
 * entries. Returns false (and writes nothing useful) when part is not a subsequence. */
bool intrus_ins_ranges(const int32_t *y, int n, const int32_t *part, int k, int *start,
                       int *end);

/* The correct (slot, token) pairs, slot-major; within a slot each distinct token once
 * (set semantics), in order of first occurrence in the slot's range. Returns the count:
 * 0 when part equals y (finish is the only correct action), -1 when part is not a
 * subsequence of y. Writes at most cap pairs (the count may exceed cap: then call again
 * with more room); the count never exceeds (k+1)*(n-k). */
int intrus_ins_correct(const int32_t *y, int n, const int32_t *part, int k, int *slot,
                       int32_t *token, int cap);

/* The same set by brute force, for tests: every token of y inserted at every slot, kept
 * when the result is still a subsequence of y. Same return convention; pairs slot-major,
 * tokens within a slot by first occurrence in y (compare with intrus_ins_correct as
 * sets). */
int intrus_ins_correct_brute(const int32_t *y, int n, const int32_t *part, int k, int *slot,
                             int32_t *token, int cap);

/* Canonical insertions (model.canonical): inserting c right after a c gives the same
 * string as inserting it before that run of c, so a canonical model never inserts a
 * copy of the token to a slot's left (slot i >= 1 with part[i-1] == c). Removes such
 * pairs from n pairs in place, keeping the order; returns how many are left. */
int intrus_ins_canonical(const int32_t *part, int k, int *slot, int32_t *token, int n);

/* ---- trajectories ---------------------------------------------------------------- */

/* One insertion: `slot` counts in the partial output the insertion applies to. */
struct intrus_ins_step {
  int32_t slot, token;
};

/* Applies one insertion to part[0..k) in place (part has room for k+1). */
void intrus_ins_apply(int32_t *part, int k, struct intrus_ins_step step);

/* The partial outputs along a trajectory: states[t] = the output after t insertions.
 * Replays steps[0..n) into out, a [(n+1) * n] row-major buffer whose row t holds
 * t tokens. */
void intrus_ins_replay(const struct intrus_ins_step *steps, int n, int32_t *out);

/* intrus_ins_replay for the first upto steps only (0 <= upto <= n): rows 0..upto of out
 * (row stride n), the rest untouched. */
void intrus_ins_replay_upto(const struct intrus_ins_step *steps, int n, int upto,
                            int32_t *out);

/* ---- the model as search and order policies see it ---------------------------- */

/* A batch of states: state s belongs to sentence sent[s] (a row of the encoder memory)
 * and its partial output is tok[off[s] .. off[s+1]-1]. */
struct intrus_ins_states {
  int count;
  const int *sent;
  const int *off;      /* [count + 1] */
  const int32_t *tok;
};

/* positions() runs the decoder over a batch of states; one or more tokens() calls then
 * read token distributions at slots of those states (the expensive V-wide softmax,
 * asked for only where it is needed, each slot at most once, in rounds of
 * intrus_ins_token_round_rows()). */
struct intrus_ins_scorer {
  int vocab;  /* V: token ids 0..V-1 (ids below INTRUS_NUM_SPECIAL are special) */
  /* log p(pos) of each state's k_s + 2 positions (slots 0..k_s, then finish), packed in
   * state order: state s's positions start at pos_logp[off[s] + 2 s]. */
  enum intrus_status (*positions)(void *user, const struct intrus_ins_states *states,
                                  float *pos_logp, struct intrus_error *err);
  /* log p(c | slot) over the V tokens, [n, V], for n (state, slot) pairs of the
   * states of the last positions() call. */
  enum intrus_status (*tokens)(void *user, int n, const int *state, const int *slot,
                               float *tok_logp, struct intrus_error *err);
  void *user;
  /* Optional (may be NULL; ABI 1.5): positions() for callers that compare slots within a
   * state only. Runs the decoder over the states but finishes it only at the Q slots
   * (qstate[j], qslot[j]), ascending by state and then slot, and writes each one's
   * position logit: log p(pos = slot) plus a constant of its state (the normaliser,
   * which would need every position of the state, is left out). tokens() may then be
   * asked for these slots only. */
  enum intrus_status (*slot_logits)(void *user, const struct intrus_ins_states *states, int Q,
                                    const int *qstate, const int *qslot, float *logit,
                                    struct intrus_error *err);
};

/* Callers ask tokens() in rounds of at most this many bytes of output (512 rows of
 * 8,000 tokens), whatever the batch, beam and lengths: a buffer this small is reused by
 * glibc from call to call (intrus_malloc_keep_pages), while a fresh one sized for a
 * whole step (70 MB for a training batch) is mapped anew each time, and its page faults
 * cost more than the softmax written into it. A round of 512 rows is still a large
 * product. */
#define INTRUS_INS_TOKEN_ROUND_BYTES ((size_t)16 << 20)

/* Rows per tokens() round for a vocabulary of V: at least 1, at most `slots` (1 if
 * none). */
static inline size_t intrus_ins_token_round_rows(int V, size_t slots) {
  size_t rows = INTRUS_INS_TOKEN_ROUND_BYTES / ((size_t)(V > 0 ? V : 1) * sizeof(float));
  if (rows < 1) rows = 1;
  if (rows > slots) rows = slots ? slots : 1;
  return rows;
}

/* The tokens() queries of one state's np correct pairs, slot-major (pslot[0..np)): a
 * query (state, slot) per distinct slot, appended to qstate/qslot from index Q, and
 * pq[j] = the query of pair j. Returns the new query count. */
int intrus_ins_pair_queries(int state, const int *pslot, int np, int *qstate, int *qslot,
                            int Q, int *pq);
/* For the P correct pairs of the states of the last positions() call, plogp[j] =
 * log p(ptok[j] | the slot of query pq[j]): asks tokens() for the Q queries (qstate,
 * qslot) in rounds of `round` rows into buf [round * V]. pq must be ascending (a
 * query's pairs consecutive), so each round's pairs are the next ones. */
enum intrus_status intrus_ins_pair_token_logp(const struct intrus_ins_scorer *sc, int Q,
                                              const int *qstate, const int *qslot,
                                              size_t round, int P, const int *pq,
                                              const int32_t *ptok, float *buf, float *plogp,
                                              struct intrus_error *err);

/* ---- insertion beam search ------------------------------------------------------ */

struct intrus_ins_search_opts {
  int beam;          /* hypotheses kept per sentence (default 4) */
  float alpha;       /* final score = log p / (len + 1)^alpha, len = output tokens (1) */
  bool prune;        /* compute token distributions only at slots whose position
                        probability can still beat the beam's current worst and, where
                        the best finish so far ends the search after this step, keep it
                        going; exact: the same result as without (true) */
  int min_len;       /* no hypothesis finishes with fewer tokens (0; benchmarks use it to
                        decode outputs of a fixed length) */
  bool canonical;     /* a slot never receives a copy of the token to its left (the
                        model's `canonical` setting: see intrus_ins_canonical; false) */
  bool finish_in_beam; /* a hypothesis's finished version counts only when its log p is at
                        least that of the worst child kept in the new beam at that step
                        (the reference code's eos_in_beam; false) */
  int slots;         /* > 0: the token softmax only at each hypothesis's `slots` most
                        probable slots (ties: the leftmost), an approximate search; at
                        least `beam`. 0: every slot (exact; 0) */
  double finish_penalty; /* >= 0, subtracted from every log p(finish) the search compares
                        (the Insertion Transformer's EOS penalty): a finished hypothesis
                        scores (logp - finish_penalty) / (len + 1)^alpha, and with
                        finish_in_beam the penalised log p meets the kept child (0) */
};
struct intrus_ins_search_opts intrus_ins_search_defaults(void);

/* A finished hypothesis: the output and how it was written. */
struct intrus_ins_hyp {
  int len;
  int32_t *tokens;                /* [len], malloc'd */
  struct intrus_ins_step *steps;  /* [len] insertions in order, malloc'd */
  double logp;                    /* log p(output) including finish (merged paths summed) */
  double score;                   /* (logp - finish_penalty) / (len + 1)^alpha */
};
void intrus_ins_hyp_free(struct intrus_ins_hyp *h);

/* Where search time went (accumulated over calls). */
struct intrus_ins_search_stats {
  double positions_s, tokens_s, select_s;  /* wall seconds in each part */
  long states, slots_total, slots_scored;  /* slots_scored < slots_total when pruning */
  long slots_finish;  /* of the slots not scored, those only the finish bound skipped
                         (theta, the beam-th best child, would have scored them) */
};

/* Beam search for nsent sentences together (sentence b is memory row b of the scorer):
 * each step expands every live hypothesis over all (slot, token) pairs (special tokens
 * excluded), offers every hypothesis's finished version, merges identical strings by
 * log-add-exp, keeps the best `beam` per sentence. Sentence b inserts at most
 * max_steps[b] tokens. out[b]: the best finished hypothesis by score. stats may be
 * NULL. */
enum intrus_status intrus_ins_beam_search(const struct intrus_ins_scorer *sc, int nsent,
                                          const int *max_steps,
                                          const struct intrus_ins_search_opts *opts,
                                          struct intrus_ins_hyp *out,
                                          struct intrus_ins_search_stats *stats,
                                          struct intrus_error *err);

/* ---- order policies: shared machinery (the plugins are in plugins/order-*) ------- */

/* A batch of targets: sentence b's target is tok[off[b] .. off[b+1]-1]. */
struct intrus_order_batch {
  int count;
  const int *off;       /* [count + 1] */
  const int32_t *tok;
  uint64_t seed;        /* randomness of this batch; per-sentence streams derive from
                           (seed, first + b), so a trajectory does not depend on batch-mates */
  int first;            /* ABI 1.7: index of sentence 0 within the step's whole batch (a
                           micro-batch's first sentence; 0 otherwise) */
  const int *need;      /* ABI 1.8: [count] insertions of sentence b the caller reads
                           (steps[off[b] .. off[b] + need[b])), or NULL for all. A policy
                           may fill more; the greedy driver stops a sentence there, which
                           leaves that prefix as it would be for need = NULL */
};

/* Picks one of npairs correct pairs for sentence b. logp: the model's log p(i, c) of
 * each pair, or NULL when the greedy driver was given no scorer. rng: sentence b's
 * stream. Returns the index of the chosen pair. */
struct intrus_rng;
typedef int (*intrus_order_choose_fn)(void *user, int b, int npairs, const int *slot,
                                      const int32_t *token, const float *logp,
                                      struct intrus_rng *rng);

/* Builds trajectories one insertion at a time for all sentences together: at step t
 * the states of every unfinished sentence form one batch; with a scorer, one
 * positions() call and tokens() in rounds give log p(i, c) of their correct pairs; choose()
 * picks an insertion per sentence. steps[off[b] + t] receives sentence b's t-th
 * insertion. */
enum intrus_status intrus_order_greedy(const struct intrus_order_batch *batch,
                                       const struct intrus_ins_scorer *scorer,
                                       intrus_order_choose_fn choose, void *user,
                                       struct intrus_ins_step *steps,
                                       struct intrus_error *err);

/* intrus_order_greedy for choices that compare a sentence's pairs with each other only
 * (sampling in proportion to p(i, c)): logp[j] is log p(i, c) plus a constant of the
 * sentence and step, which lets the scorer skip the position normaliser
 * (scorer->slot_logits, when it has one), and a sentence whose step has a single
 * correct pair is not scored at all (its logp reads 0). choose() is called for every
 * sentence and step as in intrus_order_greedy, so its random draws are the same. */
enum intrus_status intrus_order_greedy_relative(const struct intrus_order_batch *batch,
                                                const struct intrus_ins_scorer *scorer,
                                                intrus_order_choose_fn choose, void *user,
                                                struct intrus_ins_step *steps,
                                                struct intrus_error *err);

/* The fixed orders of the plugins l2r and r2l. Left to right (right_to_left false):
 * step k appends y[k] at the end, slot k. Right to left: step k prepends y[n-1-k] at
 * the front, slot 0. Written directly rather than through intrus_order_greedy: such an
 * insertion is always correct, and the driver's oracle calls would only confirm it.
 * steps[off[b] + k] receives sentence b's k-th insertion; a sentence of negative length
 * is an INTRUS_ERR_INVALID naming the order ("order l2r: ..." / "order r2l: ..."). */
enum intrus_status intrus_order_fixed(const struct intrus_order_batch *batch,
                                      bool right_to_left, struct intrus_ins_step *steps,
                                      struct intrus_error *err);

#ifdef __cplusplus
}
#endif
#endif

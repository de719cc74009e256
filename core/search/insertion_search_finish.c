/* The finish bound of the insertion beam search: the children of a step that cannot
 * change the result, because the search stops after that step whichever of them it
 * keeps. insertion_search.c prunes with it on top of theta (its comment at the top).
 *
 * After step t the search goes on only while can_improve() finds a length L in
 * [max(t + 1, min_len), max_steps] with (M - beta + (L - t) NORM_SLACK) / (L + 1)^alpha >
 * fscore, M the log-sum-exp of the new beam, beta the finish penalty, fscore the best
 * finished score (finishes penalised by beta). So a new beam with
 *     M <= dead = min over L of  fscore (L + 1)^alpha - (L - t) NORM_SLACK + beta
 * ends the search. What that allows to skip depends on the beam:
 *
 * Beam 1. The new beam is the best child c*, M = its merged log p v*. A slot whose bound
 * logp(h) + log p(pos = i) is below D (just under dead) is skipped, and so are the
 * unscored ways of a special string whose upper bound hi is below D. If every way of c*
 * is above D, none is skipped for D, theta's proof holds as before, and the pruned
 * search keeps c*. If some way of c* was skipped, v* <= hi (or its slot's bound) < D:
 * the unpruned search keeps c* and stops; the pruned one keeps a child whose known log
 * p is at most v* (part of a string's ways only underrates it), or none, and stops as
 * well. Both return the same finished hypothesis.
 *
 * finish_in_beam offers the step's own finish only when fin >= the kept child's log p,
 * and then compares with fscore including it. So D is also kept below fin: when
 * v* < D <= fin both searches offer the finish and both compare with
 * fscore' = max(fscore, fin / (t + 1)^alpha), which dead is computed from. Without
 * finish_in_beam the step's finishes were offered before its expansion.
 *
 * Beam > 1. Skipping single slots is not safe: a kept child below D does not make the
 * beam dead (M sums K children, the others may be far above), and keeping another in
 * its place changes every later step; merging makes it worse, as a string's value sums
 * ways of several parents by log-add-exp and can exceed every single way. Only the whole
 * step can go: any set of children, each merged over its ways, carries at most the
 * step's child mass, the log-sum-exp of every slot bound (a slot's tokens sum to 1 and
 * distinct strings have disjoint ways). If that mass is below D, no slot is scored: the
 * pruned beam is empty, the unpruned one dead. With finish_in_beam D is kept below every
 * hypothesis's finish, so that each is offered either way.
 *
 * Float slack: dead is lowered by 1e-9 of its size for the rounding of can_improve's
 * division, and D by NORM_SLACK more for a float token distribution that sums a little
 * above 1 (a child a few 1e-7 above its slot's bound). */
#include <math.h>

#include "insertion_search_internal.h"

double ins_search_finish_floor(const struct sentence *S, int t, int K, int min_len,
                               bool finish_in_beam, double finish_penalty,
                               const double *denom) {
  bool have = S->have;
  double fscore = S->fscore, cap = INFINITY;
  if (finish_in_beam)
    for (int h = 0; h < S->live; h++) {
      /* min_len holds this step's finishes back (-inf), or a NaN: no bound. */
      if (!(S->fin[h] > -INFINITY)) return -INFINITY;
      cap = S->fin[h] < cap ? S->fin[h] : cap;
      double score = S->fin[h] / denom[t];
      if (!have || score > fscore) fscore = score;
      have = true;
    }
  if (!have || !(fscore > -INFINITY)) return -INFINITY;
  double dead = INFINITY;
  for (int L = t + 1 > min_len ? t + 1 : min_len; L <= S->ms; L++) {
    double d = fscore * denom[L] - (L - t) * NORM_SLACK + finish_penalty;
    dead = d < dead ? d : dead;
  }
  if (dead < INFINITY) dead -= 1e-9 * (1.0 + fabs(dead));
  double D = (dead < cap ? dead : cap) - NORM_SLACK;
  if (!(D > -INFINITY)) return -INFINITY;
  if (K == 1) return D;
  double mx = -INFINITY, sum = 0.0;
  for (int sid = 0; sid < S->nslot; sid++) mx = S->bound[sid] > mx ? S->bound[sid] : mx;
  if (!(mx > -INFINITY)) return -INFINITY; /* no child at all: nothing to skip */
  for (int sid = 0; sid < S->nslot; sid++)
    if (S->bound[sid] > -INFINITY) sum += exp(S->bound[sid] - mx);
  return mx + log(sum) < D ? INFINITY : -INFINITY;
}

/* The special ways of the insertion beam search: the children that are the same string
 * reached more than one way, found without a table of every child, and what the rounds
 * so far know about each such string. insertion_search.c runs the search and explains
 * how these strings meet pruning.
 *
 * Merging without a table of every child. A parent of t tokens has (t+1) * V' children
 * (V' real tokens); storing them all to find equal strings would cost far more than the
 * softmax itself. Equal children are rare and their shape is known, so they are found
 * up front and everything else streams through a top-`beam` list:
 *  - one parent p, two ways: inserting c at slots i < j gives the same string exactly
 *    when p[i..j) are all c (compare the two strings position by position). So the
 *    ways of one parent to one string are "insert c next to a run of c": a run p[a..e)
 *    of c gives one string reached from the e - a + 1 slots a..e.
 *  - two parents p != p' (same length, first difference at a): if s = p + one token
 *    = p' + one token and the token taken out to get p sits before the one taken out
 *    to get p', then s = p with p'[a] inserted at slot a (the deleted positions span a
 *    run of s ending at a). So each ordered pair has at most one shared child; it is
 *    shared exactly when p' is s minus one token, which one pass checks.
 * Every (parent, slot, token) not named by these two rules is the only way to its
 * string: its merged log p is its own, and it competes in the top list directly. The
 * named ways ("special": tokens equal to a slot's neighbour, plus the shared children)
 * are set aside while a slot's row is read, and summed per string once their rows are
 * in. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "insertion_search_internal.h"
#include "base/xalloc.h"

static void add_way(struct sentence *S, int sid, int32_t token, int str) {
  xgrow((void **)&S->ways, &S->way_cap, S->nway + 1, sizeof *S->ways, 64);
  S->ways[S->nway++] = (struct way){.sid = sid, .str = str, .token = token, .val = -INFINITY};
}

/* The string of way (h, slot, token), making a one-way string when it is not special
 * yet. */
static int way_string(struct sentence *S, int t, int h, int slot, int32_t token) {
  int sid = h * (t + 1) + slot;
  for (size_t w = 0; w < S->nway; w++)
    if (S->ways[w].sid == sid && S->ways[w].token == token) return S->ways[w].str;
  int s = S->nstr++;
  add_way(S, sid, token, s);
  return s;
}

/* The canonical slot of inserting c at slot i of p: the front of the run of c that i
 * ends (the same string). */
static int canonical_slot(const int32_t *p, int i, int32_t c) {
  while (i >= 1 && p[i - 1] == c) i--;
  return i;
}

/* Names this step's special ways of sentence S (see the comment at the top). A
 * canonical search has no ways into a run but its front, so one parent has one way to
 * each string and only shared children are special. */
void ins_search_build_special(struct sentence *S, int t, bool canonical, int32_t *scratch) {
  const int32_t *tok = S->tok[S->cur];
  S->nway = 0;
  S->nstr = 0;
  for (int h = 0; h < S->live && !canonical; h++) {
    const int32_t *p = tok + (size_t)h * S->ms;
    for (int a = 0; a < t;) {
      int e = a;
      while (e < t && p[e] == p[a]) e++;
      int s = S->nstr++;
      for (int i = a; i <= e; i++) add_way(S, h * (t + 1) + i, p[a], s);
      a = e;
    }
  }
  for (int h = 0; h < S->live; h++)
    for (int g = 0; g < S->live; g++) {
      if (g == h) continue;
      const int32_t *p = tok + (size_t)h * S->ms, *q = tok + (size_t)g * S->ms;
      int a = 0;
      while (a < t && p[a] == q[a]) a++;
      if (a == t) continue; /* cannot happen: the beam holds distinct strings */
      ins_search_copy(scratch, p, t, a, q[a]);
      int y = a + 1;
      while (y < t && scratch[y] == q[y]) y++;
      if (memcmp(scratch + y + 1, q + y, (size_t)(t - y) * sizeof *q) != 0) continue;
      int sa = canonical ? canonical_slot(p, a, q[a]) : a;
      int sy = canonical ? canonical_slot(q, y, scratch[y]) : y;
      int s1 = way_string(S, t, h, sa, q[a]);
      int s2 = way_string(S, t, g, sy, scratch[y]);
      /* At most beam * (beam - 1) merges of O(ways) each: cheaper than keeping a
       * union-find in step with the growing way list. */
      if (s1 != s2)
        for (size_t w = 0; w < S->nway; w++)
          if (S->ways[w].str == s2) S->ways[w].str = s1;
    }
  xgrow((void **)&S->str, &S->str_cap, (size_t)S->nstr, sizeof *S->str, 64);
}

/* Bounds of every special string from the ways scored so far. */
void ins_search_string_bounds(struct sentence *S) {
  for (int s = 0; s < S->nstr; s++)
    S->str[s] = (struct str_info){.lo = -INFINITY, .hi = -INFINITY, .best = -1};
  for (size_t w = 0; w < S->nway; w++) {
    const struct way *W = &S->ways[w];
    struct str_info *I = &S->str[W->str];
    double b = S->bound[W->sid];
    if (!(b > -INFINITY)) continue;
    if (S->done[W->sid]) {
      double v = b + W->val;
      if (!(v > -INFINITY)) continue;
      if (v > I->lo) I->lo = v;
      if (v > I->hi) I->hi = v;
    } else {
      I->open = true;
      if (b > I->hi) I->hi = b;
    }
  }
  for (size_t w = 0; w < S->nway; w++) {
    const struct way *W = &S->ways[w];
    struct str_info *I = &S->str[W->str];
    double b = S->bound[W->sid];
    if (!(b > -INFINITY)) continue;
    if (S->done[W->sid]) {
      double v = b + W->val;
      if (!(v > -INFINITY)) continue;
      I->lo_sum += exp(v - I->lo);
      I->hi_sum += exp(v - I->hi);
      if (I->best < 0 || v > S->bound[S->ways[I->best].sid] + S->ways[I->best].val)
        I->best = (int)w;
    } else {
      I->hi_sum += exp(b - I->hi);
    }
  }
  for (int s = 0; s < S->nstr; s++) {
    struct str_info *I = &S->str[s];
    if (I->lo > -INFINITY) I->lo += log(I->lo_sum);
    if (I->hi > -INFINITY) I->hi += log(I->hi_sum);
  }
}

/* Indexes the special ways by slot, so reading a row finds its own. */
void ins_search_index_ways(struct sentence *S) {
  memset(S->way_off, 0, (size_t)(S->nslot + 1) * sizeof *S->way_off);
  for (size_t w = 0; w < S->nway; w++) S->way_off[S->ways[w].sid + 1]++;
  for (int i = 0; i < S->nslot; i++) S->way_off[i + 1] += S->way_off[i];
  xgrow((void **)&S->way_idx, &S->idx_cap, S->nway, sizeof *S->way_idx, 64);
  for (size_t w = 0; w < S->nway; w++) S->way_idx[S->way_off[S->ways[w].sid]++] = (int)w;
  for (int i = S->nslot; i > 0; i--) S->way_off[i] = S->way_off[i - 1];
  S->way_off[0] = 0;
}

/* The correct-insertion oracle (DESIGN.md section 4) and trajectory replay.
 *
 * Slot i of a partial output may receive y[p] exactly when part[0..i) embeds in
 * y[0..p) and part[i..k) in y[p+1..n). The earliest embedding of each prefix (greedy
 * left-to-right) and the latest of each suffix (greedy right-to-left) make those two
 * conditions p > L[i-1] and p < R[i], so each slot's candidates are one contiguous
 * range of y, and both ends of the ranges only move right as i grows. */
#include <string.h>

#include "intrus/insertion.h"

bool intrus_ins_ranges(const int32_t *y, int n, const int32_t *part, int k, int *start,
                       int *end) {
  if (k < 0 || n < 0 || k > n) return false;
  int p = 0;
  start[0] = 0;
  for (int j = 0; j < k; j++) {
    while (p < n && y[p] != part[j]) p++;
    if (p == n) return false;
    start[j + 1] = ++p;
  }
  p = n - 1;
  end[k] = n;
  for (int j = k - 1; j >= 0; j--) {
    while (y[p] != part[j]) p--; /* a match exists: the forward pass found one */
    end[j] = p--;
  }
  return true;
}

/* Targets up to this length get their tables on the stack (8 KiB in all); past it the
 * oracle falls back to scanning back through the slot's range, which stops at the
 * first equal token and so costs little unless the range is long and repetition-free,
 * and to recomputing each slot's right end (O(n) a slot). */
#define PREV_CAP 512
#define HASH_BITS 10 /* 1024 cells, twice PREV_CAP: probe chains stay short */
#define HASH_SIZE (1 << HASH_BITS)

/* prev[p] = the largest q < p with y[q] == y[p], or -1. Open addressing on the
 * token's hash; each cell holds the latest index seen of one token. */
static void prev_occurrence(const int32_t *y, int n, int *prev) {
  int cell[HASH_SIZE];
  for (int h = 0; h < HASH_SIZE; h++) cell[h] = -1;
  for (int p = 0; p < n; p++) {
    uint32_t h = ((uint32_t)y[p] * 2654435761u) >> (32 - HASH_BITS); /* Fibonacci hashing */
    while (cell[h] >= 0 && y[cell[h]] != y[p]) h = (h + 1) & (HASH_SIZE - 1);
    prev[p] = cell[h];
    cell[h] = p;
  }
}

/* R(i): where part[i] sits in the latest embedding of part in y (part must embed). */
static int latest_match(const int32_t *y, int n, const int32_t *part, int k, int i) {
  int p = n;
  for (int j = k - 1; j >= i; j--) {
    p--;
    while (y[p] != part[j]) p--;
  }
  return p;
}

int intrus_ins_correct(const int32_t *y, int n, const int32_t *part, int k, int *slot,
                       int32_t *token, int cap) {
  if (k < 0 || n < 0 || k > n) return -1;
  int lo = 0;
  for (int j = 0; j < k; j++, lo++) {
    while (lo < n && y[lo] != part[j]) lo++;
    if (lo == n) return -1;
  }
  /* A token repeated within a slot's range is emitted at its first occurrence there,
   * i.e. where its previous occurrence in y lies before the range. */
  int prev_buf[PREV_CAP];
  const int *prev = NULL;
  if (n <= PREV_CAP) {
    prev_occurrence(y, n, prev_buf);
    prev = prev_buf;
  }
  /* The right ends R(0..k-1) come out of a right-to-left pass in reverse order, so
   * they are buffered; past the buffer each is recomputed (O(n) per slot). */
  int rbuf[PREV_CAP];
  const bool rstored = k <= PREV_CAP;
  if (rstored) {
    int p = n;
    for (int j = k - 1; j >= 0; j--) {
      p--;
      while (y[p] != part[j]) p--;
      rbuf[j] = p;
    }
  }
  int count = 0, start = 0, fwd = 0;
  for (int i = 0; i <= k; i++) {
    const int end = i == k ? n : rstored ? rbuf[i] : latest_match(y, n, part, k, i);
    for (int p = start; p < end; p++) {
      bool first;
      if (prev) {
        first = prev[p] < start;
      } else {
        int q = p - 1;
        while (q >= start && y[q] != y[p]) q--;
        first = q < start;
      }
      if (!first) continue;
      if (count < cap) {
        slot[count] = i;
        token[count] = y[p];
      }
      count++;
    }
    if (i < k) {
      while (y[fwd] != part[i]) fwd++;
      start = ++fwd;
    }
  }
  return count;
}

/* Whether part[0..i) c part[i..k) is a subsequence of y, without building it. */
static bool embeds_with(const int32_t *y, int n, const int32_t *part, int k, int i,
                        int32_t c) {
  int p = 0;
  for (int j = 0; j <= k; j++) {
    const int32_t want = j < i ? part[j] : j == i ? c : part[j - 1];
    while (p < n && y[p] != want) p++;
    if (p == n) return false;
    p++;
  }
  return true;
}

static bool embeds(const int32_t *y, int n, const int32_t *part, int k) {
  int p = 0;
  for (int j = 0; j < k; j++) {
    while (p < n && y[p] != part[j]) p++;
    if (p == n) return false;
    p++;
  }
  return true;
}

int intrus_ins_correct_brute(const int32_t *y, int n, const int32_t *part, int k, int *slot,
                             int32_t *token, int cap) {
  if (k < 0 || n < 0 || !embeds(y, n, part, k)) return -1;
  int count = 0;
  for (int i = 0; i <= k; i++)
    for (int q = 0; q < n; q++) {
      bool seen = false;
      for (int r = 0; r < q && !seen; r++) seen = y[r] == y[q];
      if (seen || !embeds_with(y, n, part, k, i, y[q])) continue;
      if (count < cap) {
        slot[count] = i;
        token[count] = y[q];
      }
      count++;
    }
  return count;
}

void intrus_ins_apply(int32_t *part, int k, struct intrus_ins_step step) {
  INTRUS_CHECK(k >= 0 && step.slot >= 0 && step.slot <= k,
               "ins_apply: slot %d outside [0, %d]", (int)step.slot, k);
  memmove(part + step.slot + 1, part + step.slot, (size_t)(k - step.slot) * sizeof *part);
  part[step.slot] = step.token;
}

void intrus_ins_replay(const struct intrus_ins_step *steps, int n, int32_t *out) {
  intrus_ins_replay_upto(steps, n, n, out);
}

void intrus_ins_replay_upto(const struct intrus_ins_step *steps, int n, int upto,
                            int32_t *out) {
  INTRUS_CHECK(upto >= 0 && upto <= n, "ins_replay: %d steps of %d", upto, n);
  for (int t = 1; t <= upto; t++) {
    int32_t *row = out + (size_t)t * n;
    memcpy(row, row - n, (size_t)(t - 1) * sizeof *row);
    intrus_ins_apply(row, t - 1, steps[t - 1]);
  }
}

int intrus_ins_canonical(const int32_t *part, int k, int *slot, int32_t *token, int n) {
  int m = 0;
  for (int j = 0; j < n; j++) {
    int i = slot[j];
    if (i >= 1 && i <= k && part[i - 1] == token[j]) continue;
    slot[m] = slot[j];
    token[m++] = token[j];
  }
  return m;
}

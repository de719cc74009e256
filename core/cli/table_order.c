/* The paper's orderings against ours: for each pair of rows that are scored and have
 * the paper's numbers, whether they rank as in the paper, and whether the difference
 * here is significant (table_score's bootstrap between the two). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "table_run.h"

enum table_order table_pair_order(const struct table_state *s, const struct table_pair *p) {
  const struct table_spec *t = s->t;
  if (t->rows[p->hi].cells[p->col].paper == t->rows[p->lo].cells[p->col].paper)
    return ORDER_TIE_PAPER;
  double hi = s->cells[p->hi][p->col].score, lo = s->cells[p->lo][p->col].score;
  return hi > lo ? ORDER_SAME : hi < lo ? ORDER_REVERSED : ORDER_TIE_OURS;
}

bool table_pair_significant(const struct table_state *s, const struct table_pair *p) {
  return p->tested && p->p_value < s->t->p_level &&
         s->cells[p->hi][p->col].score != s->cells[p->lo][p->col].score;
}

bool table_order_summary(const struct table_state *s, int c, char *out, size_t n) {
  int count[4] = {0}, sig[4] = {0}, untested = 0;
  for (int i = 0; i < s->npairs; i++) {
    const struct table_pair *p = &s->pairs[i];
    if (p->col != c) continue;
    enum table_order o = table_pair_order(s, p);
    count[o]++;
    sig[o] += table_pair_significant(s, p);
    untested += !p->tested;
  }
  const int ordered = count[ORDER_SAME] + count[ORDER_REVERSED] + count[ORDER_TIE_OURS];
  if (!ordered && !count[ORDER_TIE_PAPER]) return false;
  int at = snprintf(out, n, "%s: %d of %d pair%s of rows ordered as in the paper (%d "
                    "significantly)", s->t->cols[c].title, count[ORDER_SAME], ordered,
                    ordered == 1 ? "" : "s", sig[ORDER_SAME]);
  if (at >= 0 && (size_t)at < n && count[ORDER_REVERSED])
    at += snprintf(out + at, n - at, ", %d reversed (%d significantly)",
                   count[ORDER_REVERSED], sig[ORDER_REVERSED]);
  if (at >= 0 && (size_t)at < n && count[ORDER_TIE_OURS])
    at += snprintf(out + at, n - at, ", %d tied here", count[ORDER_TIE_OURS]);
  if (at >= 0 && (size_t)at < n && count[ORDER_TIE_PAPER])
    at += snprintf(out + at, n - at, "; %d tied in the paper", count[ORDER_TIE_PAPER]);
  if (at >= 0 && (size_t)at < n && untested)
    snprintf(out + at, n - at, "; %d not tested (other references)", untested);
  return true;
}

static const char *order_text(enum table_order o) {
  switch (o) {
  case ORDER_SAME: return "as in the paper";
  case ORDER_REVERSED: return "reversed";
  case ORDER_TIE_OURS: return "tied here";
  default: return "tied in the paper";
  }
}

void table_order_markdown(const struct table_state *s, FILE *f) {
  const struct table_spec *t = s->t;
  if (!s->npairs) return;
  fprintf(f, "\n## Orderings against the paper\n\n"
             "Every two rows of a column that have a score and the paper's number, the "
             "higher in the paper first; p: paired bootstrap between the two rows (%d "
             "resamples, seed %llu, sacreBLEU's paired-bs p), significant below %g.\n\n",
          t->samples, (unsigned long long)t->seed, t->p_level);
  for (int c = 0; c < t->ncols; c++) {
    char line[512];
    if (table_order_summary(s, c, line, sizeof line)) fprintf(f, "- %s.\n", line);
  }
  fprintf(f, "\n| column | higher in the paper | lower in the paper | paper | ours | p | order "
             "|\n|---|---|---|---:|---:|---:|---|\n");
  for (int i = 0; i < s->npairs; i++) {
    const struct table_pair *p = &s->pairs[i];
    const struct table_cell_state *hi = &s->cells[p->hi][p->col], *lo = &s->cells[p->lo][p->col];
    enum table_order o = table_pair_order(s, p);
    fprintf(f, "| %s | %s | %s | %.2f / %.2f | %.2f / %.2f | ", t->cols[p->col].title,
            t->rows[p->hi].title, t->rows[p->lo].title, t->rows[p->hi].cells[p->col].paper,
            t->rows[p->lo].cells[p->col].paper, hi->score, lo->score);
    if (p->tested) fprintf(f, "%.4f", p->p_value);
    else fputs("not tested", f);
    const bool ordered = o == ORDER_SAME || o == ORDER_REVERSED;
    fprintf(f, " | %s%s |\n", order_text(o),
            !ordered || !p->tested            ? ""
            : table_pair_significant(s, p) ? ", significant"
                                           : ", not significant");
  }
}

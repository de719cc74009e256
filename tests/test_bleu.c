/* The BLEU evaluator plugin (plugins/eval_bleu.la) against values worked out by hand,
 * following sacreBLEU 2.3.1's corpus BLEU step by step; `intrus eval bleu`; and the
 * core's paired bootstrap (core/eval/bootstrap.c).
 *
 * Notation in the comments: m_n / t_n are the clipped n-gram matches and the
 * hypothesis n-grams summed over the corpus, P_n = 100 m_n / t_n, BP the brevity
 * penalty exp(1 - r/c) for hypothesis length c < reference length r (else 1), and
 * BLEU = BP * (P1 P2 P3 P4)^(1/4) with the P as fractions. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "intrus/config.h"
#include "intrus/eval.h"
#include "intrus/plugin.h"
#include "testutil.h"

static struct intrus_plugin *plugin;
static const struct intrus_evaluator_vtable *vt;

/* An evaluator with the given settings group text (NULL: no group, all defaults). */
static void *make_bleu(const char *settings) {
  struct intrus_error err = {0};
  struct intrus_config *cfg = NULL;
  if (settings) {
    cfg = intrus_config_load_string(settings, "test", &err);
    if (!cfg) {
      fprintf(stderr, "bad test settings: %s\n", err.msg);
      exit(99);
    }
  }
  void *self = NULL;
  enum intrus_status st = vt->create(cfg ? intrus_config_root(cfg) : NULL, &self, &err);
  /* create copies what it needs: the group may go right away. */
  intrus_config_free(cfg);
  if (st != INTRUS_OK) {
    fprintf(stderr, "create(%s): %s\n", settings ? settings : "NULL", err.msg);
    exit(99);
  }
  return self;
}

/* Corpus scores of nseg segments; refs holds nseg rows of nrefs strings. */
static void corpus(void *self, int nseg, const char *const *hyps, const char *const *refs,
                   int nrefs, struct intrus_eval_scores *out) {
  int ss = vt->stats_size(self);
  double *sum = calloc((size_t)ss, sizeof *sum), *row = calloc((size_t)ss, sizeof *row);
  struct intrus_error err = {0};
  for (int i = 0; i < nseg; i++) {
    enum intrus_status st = vt->segment_stats(self, hyps[i], refs + (size_t)i * nrefs, nrefs,
                                              row, &err);
    EXPECT(st == INTRUS_OK, "segment %d: %s", i, err.msg);
    for (int k = 0; k < ss; k++) sum[k] += row[k];
  }
  memset(out, 0, sizeof *out);
  EXPECT(vt->score(self, sum, out, &err) == INTRUS_OK, "score: %s", err.msg);
  free(sum);
  free(row);
}

static double value(const struct intrus_eval_scores *sc, const char *name) {
  for (int i = 0; i < sc->count; i++)
    if (!strcmp(sc->names[i], name)) return sc->values[i];
  EXPECT(0, "no score named %s", name);
  return NAN;
}

/* One segment, one reference, under the given settings: the scores. */
static void one(const char *settings, const char *hyp, const char *ref,
                struct intrus_eval_scores *sc) {
  void *b = make_bleu(settings);
  const char *refs[1] = {ref};
  corpus(b, 1, &hyp, refs, 1, sc);
  vt->destroy(b);
}

static double bleu1(const char *settings, const char *hyp, const char *ref) {
  struct intrus_eval_scores sc;
  one(settings, hyp, ref, &sc);
  return value(&sc, "BLEU");
}

static void expect_precisions(const struct intrus_eval_scores *sc, double p1, double p2,
                              double p3, double p4) {
  EXPECT_NEAR(value(sc, "P1"), p1, 0.01);
  EXPECT_NEAR(value(sc, "P2"), p2, 0.01);
  EXPECT_NEAR(value(sc, "P3"), p3, 0.01);
  EXPECT_NEAR(value(sc, "P4"), p4, 0.01);
}

/* ---- scores ------------------------------------------------------------------------ */

static void test_perfect(void) {
  /* 6 tokens, identical: m = t = 6, 5, 4, 3; every P = 100, BP = 1 -> 100. */
  struct intrus_eval_scores sc;
  one(NULL, "the cat sat on the mat", "the cat sat on the mat", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 100.0, 0.01);
  expect_precisions(&sc, 100, 100, 100, 100);
  EXPECT_NEAR(value(&sc, "BP"), 1.0, 1e-12);
  EXPECT_NEAR(value(&sc, "hyp_len"), 6, 0);
  EXPECT(!strcmp(sc.signature, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.3.1"),
         "signature %s", sc.signature);
  EXPECT(!strcmp(sc.names[0], "BLEU"), "primary score first, got %s", sc.names[0]);
}

static void test_two_sentences(void) {
  /* seg 1: hyp "the cat sat on the mat" / ref "the cat is on the mat" (6 / 6 tokens)
   *   1-grams: the x2, cat, on, mat match, sat not            m1 = 5 of 6
   *   2-grams: the-cat, on-the, the-mat                       m2 = 3 of 5
   *   3-grams: on-the-mat                                     m3 = 1 of 4
   *   4-grams: none                                           m4 = 0 of 3
   * seg 2: hyp "a quick brown fox jumps" / ref "the quick brown fox jumps high" (5 / 6)
   *   quick brown fox jumps: m = 4 of 5, 3 of 4, 2 of 3, 1 of 2
   * corpus: m = 9, 6, 3, 1; t = 11, 9, 7, 5; c = 11, r = 12
   *   P = 81.82, 66.67, 42.86, 20.00
   *   (9*6*3*1)/(11*9*7*5) = 162/3465 = 0.046753; ^(1/4) = 0.465005
   *   BP = exp(1 - 12/11) = exp(-0.090909) = 0.913101
   *   BLEU = 100 * 0.913101 * 0.465005 = 42.46 */
  void *b = make_bleu(NULL);
  const char *hyps[] = {"the cat sat on the mat", "a quick brown fox jumps"};
  const char *refs[] = {"the cat is on the mat", "the quick brown fox jumps high"};
  struct intrus_eval_scores sc;
  corpus(b, 2, hyps, refs, 1, &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 42.46, 0.01);
  expect_precisions(&sc, 81.82, 66.67, 42.86, 20.00);
  EXPECT_NEAR(value(&sc, "BP"), 0.913101, 1e-6);
  EXPECT_NEAR(value(&sc, "ratio"), 11.0 / 12.0, 1e-12);
  EXPECT_NEAR(value(&sc, "hyp_len"), 11, 0);
  EXPECT_NEAR(value(&sc, "ref_len"), 12, 0);
  vt->destroy(b);
}

static void test_smoothing(void) {
  const char *hyp = "the cat sat on the mat", *ref = "the cat is on the mat";
  struct intrus_eval_scores sc;
  /* m = 5, 3, 1, 0 of t = 6, 5, 4, 3 (seg 1 above); BP = 1.
   * exp: the first zero precision becomes 1/(2^1 * t4) = 1/6 (16.67%):
   *   (5/6 * 3/5 * 1/4 * 1/6) = 1/48 = 0.020833; ^(1/4) = 0.379918 -> 37.99 */
  one(NULL, hyp, ref, &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 37.99, 0.01);
  expect_precisions(&sc, 83.33, 60.00, 25.00, 16.67);
  /* none: P4 = 0, log floored to -9999999999 -> 0 */
  one("smooth = \"none\";", hyp, ref, &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 0.0, 0.01);
  expect_precisions(&sc, 83.33, 60.00, 25.00, 0.0);
  /* floor: P4 = 0.1/3 (3.33%): 5/6 * 3/5 * 1/4 * 1/30 = 1/240; ^(1/4) = 0.254066 */
  one("smooth = \"floor\";", hyp, ref, &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 25.41, 0.01);
  EXPECT_CONTAINS(sc.signature, "|smooth:floor[0.10]|");
  /* add-k (k = 1, orders 2-4 only): 5/6 * 4/6 * 2/5 * 1/4 = 1/18; ^(1/4) = 0.485492 */
  one("smooth = \"add-k\";", hyp, ref, &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 48.55, 0.01);
  expect_precisions(&sc, 83.33, 66.67, 40.00, 25.00);
  EXPECT_CONTAINS(sc.signature, "|smooth:add-k[1.00]|");

  /* Two zero orders under exp: hyp "the cat sat on a mat" / ref "the cat is on the mat"
   *   m1 = the, cat, on, mat = 4 of 6; m2 = the-cat = 1 of 5; m3 = 0 of 4; m4 = 0 of 3
   *   P3 = 1/(2 * 4) = 12.5%, P4 = 1/(4 * 3) = 8.33% (k doubles per zero)
   *   4/6 * 1/5 * 1/8 * 1/12 = 1/720 = 0.0013889; ^(1/4) = 0.193049 -> 19.30 */
  one(NULL, "the cat sat on a mat", ref, &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 19.30, 0.01);
  expect_precisions(&sc, 66.67, 20.00, 12.50, 8.33);

  /* No match at all: sacreBLEU's early exit, score 0 and all precisions 0, whatever
   * the smoothing. */
  one(NULL, "x y z w", "a b c d", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 0.0, 0.0);
  expect_precisions(&sc, 0, 0, 0, 0);
  one("smooth = \"add-k\";", "x y z w", "a b c d", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 0.0, 0.0);
}

static void test_empty_and_short(void) {
  struct intrus_eval_scores sc;
  /* An empty hypothesis line in a corpus: seg 1 "" / "a b c d" adds c = 0, r = 4 and no
   * n-grams; seg 2 "a b c d" / "a b c d" matches all: m = t = 4, 3, 2, 1.
   * P = 100 each, c = 4, r = 8: BP = exp(1 - 8/4) = exp(-1) = 0.367879 -> 36.79 */
  void *b = make_bleu(NULL);
  const char *hyps[] = {"", "a b c d"};
  const char *refs[] = {"a b c d", "a b c d"};
  corpus(b, 2, hyps, refs, 1, &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 36.79, 0.01);
  EXPECT_NEAR(value(&sc, "BP"), 0.367879, 1e-6);
  vt->destroy(b);

  /* Only an empty hypothesis: c = 0 < r = 2 gives BP 0 (no division), no match -> 0. */
  one(NULL, "", "a b", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 0.0, 0.0);
  EXPECT_NEAR(value(&sc, "BP"), 0.0, 0.0);
  EXPECT_NEAR(value(&sc, "ratio"), 0.0, 0.0);
  EXPECT_NEAR(value(&sc, "hyp_len"), 0, 0);

  /* 1, 2 and 3 tokens, each a perfect match: orders above the length have t_n = 0, the
   * loop stops there and those P stay 0, so corpus BLEU is 0 (no effective order). */
  one(NULL, "cat", "cat", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 0.0, 0.0);
  expect_precisions(&sc, 100, 0, 0, 0);
  one(NULL, "the cat", "the cat", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 0.0, 0.0);
  expect_precisions(&sc, 100, 100, 0, 0);
  one(NULL, "the cat sat", "the cat sat", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 0.0, 0.0);
  expect_precisions(&sc, 100, 100, 100, 0);
  /* With effective_order the mean is over the 3 orders present: 100. */
  one("effective_order = true;", "the cat sat", "the cat sat", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 100.0, 0.01);
  EXPECT_CONTAINS(sc.signature, "|eff:yes|");
  /* A 3-token segment next to a longer one counts normally: m = t = 8, 6, 4, 2 -> 100. */
  b = make_bleu(NULL);
  const char *h2[] = {"a b c", "a b c d e"};
  const char *r2[] = {"a b c", "a b c d e"};
  corpus(b, 2, h2, r2, 1, &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 100.0, 0.01);
  vt->destroy(b);
}

static void test_multiple_refs(void) {
  /* hyp "the cat sat on the mat" (6); ref1 "the cat sat on the big mat" (7);
   * ref2 "the cat sat on mat" (5). Matches clip at the larger count over refs:
   *   1-grams: "the" x2 (ref1 has 2), cat, sat, on, mat   m1 = 6 of 6
   *   2-grams: the-cat, cat-sat, sat-on, on-the            m2 = 4 of 5
   *   3-grams: the-cat-sat, cat-sat-on, sat-on-the         m3 = 3 of 4
   *   4-grams: the-cat-sat-on, cat-sat-on-the              m4 = 2 of 3
   * Closest ref length: |6-7| = |6-5| = 1, a tie, so the shorter: r = 5, BP = 1
   * (r = 7 would give BP = exp(1 - 7/6) and 67.32).
   *   1 * 4/5 * 3/4 * 2/3 = 0.4; ^(1/4) = 0.795271 -> 79.53 */
  void *b = make_bleu(NULL);
  const char *hyp[] = {"the cat sat on the mat"};
  const char *refs[] = {"the cat sat on the big mat", "the cat sat on mat"};
  struct intrus_eval_scores sc;
  corpus(b, 1, hyp, refs, 2, &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 79.53, 0.01);
  expect_precisions(&sc, 100, 80, 75, 66.67);
  EXPECT_NEAR(value(&sc, "ref_len"), 5, 0);
  EXPECT_NEAR(value(&sc, "ratio"), 1.2, 1e-12);
  EXPECT_CONTAINS(sc.signature, "nrefs:2|");

  /* sacreBLEU 2.3.1 keeps an empty reference ("") as one of length 0 (its command line
   * reads empty lines so): seg 2's references are "a b c d" and "", the closest length
   * to 4 is 4, everything matches: 100.00 and nrefs:2, as sacreBLEU 2.3.1 prints. */
  const char *h2[] = {"a b c d", "a b c d"};
  const char *r2[] = {"a b c d", "a b", "a b c d", ""};
  corpus(b, 2, h2, r2, 2, &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 100.0, 0.01);
  EXPECT(!strncmp(sc.signature, "nrefs:2|", 8), "signature %s", sc.signature);

  /* An absent reference (NULL, sacreBLEU's None) is one the segment does not have:
   * a variable number of references, nrefs:var. */
  const char *r3[] = {"a b c d", "a b", "a b c d", NULL};
  corpus(b, 2, h2, r3, 2, &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 100.0, 0.01);
  EXPECT(!strncmp(sc.signature, "nrefs:var|", 10), "signature %s", sc.signature);

  /* No reference at all: refused. */
  struct intrus_error err = {0};
  double row[64];
  const char *none[] = {NULL, NULL};
  EXPECT(vt->segment_stats(b, "a", none, 2, row, &err) == INTRUS_ERR_DATA, "no refs");
  EXPECT_CONTAINS(err.msg, "no reference");
  vt->destroy(b);
}

/* Checks that 13a tokenizes `text` into exactly the space-separated `tokens` (n of
 * them): with tokens as the reference (which 13a leaves as it is), the lengths agree
 * and every order up to n matches completely. */
static void expect_13a(const char *text, const char *tokens, int n) {
  struct intrus_eval_scores sc;
  one(NULL, text, tokens, &sc);
  EXPECT(value(&sc, "hyp_len") == n && value(&sc, "ref_len") == n,
         "13a(\"%s\"): %g tokens, expected %d (%s)", text, value(&sc, "hyp_len"), n, tokens);
  for (int k = 1; k <= 4 && k <= n; k++) {
    char name[4];
    snprintf(name, sizeof name, "P%d", k);
    EXPECT(value(&sc, name) == 100.0, "13a(\"%s\") != \"%s\": %s = %g", text, tokens, name,
           value(&sc, name));
  }
}

static void test_13a(void) {
  /* Punctuation and symbols split off; the apostrophe is not in mteval's class. */
  expect_13a("Hello, world! (It's \"fine\").", "Hello , world ! ( It's \" fine \" ) .", 11);
  /* Entities are unescaped (&quot; &amp; &lt; &gt;, in that order, one pass each), and
   * then split like the characters they stand for. */
  expect_13a("Fish &amp; chips &lt;3 &quot;yum&quot;", "Fish & chips < 3 \" yum \"", 8);
  /* &amp;quot; -> &quot; only: the &quot; pass has already run. */
  expect_13a("&amp;quot;", "& quot ;", 3);
  /* <skipped> is removed; "-\n" joins (hyphenation at a line end); "\n" is a space. */
  expect_13a("a <skipped> b c", "a b c", 3);
  expect_13a("sacre-\nBLEU is good-\nlooking", "sacreBLEU is goodlooking", 3);
  expect_13a("a\nb", "a b", 2);
  /* rstrip comes first, so a trailing "-\n" loses its "\n" and keeps the hyphen. */
  expect_13a("good-\n", "good-", 1);
  /* Periods and commas: split unless between digits. */
  expect_13a("3.14", "3.14", 1);
  expect_13a("3. 14", "3 . 14", 3);
  expect_13a("pi is 3.14.", "pi is 3.14 .", 4);
  expect_13a("1,000.50 euros", "1,000.50 euros", 2);
  expect_13a("a.b", "a . b", 3);
  expect_13a("1.a", "1 . a", 3);
  expect_13a("a,5", "a , 5", 3);       /* preceded by a non-digit: split */
  expect_13a(",5", ", 5", 2);          /* the pad space before it is a non-digit */
  expect_13a("U.S.A.", "U . S . A .", 6);
  expect_13a("e.g., this", "e . g . , this", 6);
  /* A dash splits only after a digit. */
  expect_13a("5-6", "5 - 6", 3);
  expect_13a("10-year a-b 1990s-era", "10 - year a-b 1990s-era", 5);
  /* Non-ASCII digits are not [0-9]. */
  expect_13a("\xd9\xa3.\xd9\xa4", "\xd9\xa3 . \xd9\xa4", 3); /* ٣.٤ */
}

static void test_char(void) {
  const char *ch = "tokenize = \"char\";";
  struct intrus_eval_scores sc;
  /* Japanese, one token per code point. ref 今日は良い天気です。 (10), hyp
   * 今日は良い天気でした。 (11); the two differ in し, た for す:
   *   1-grams: 今日は良い天気で + 。 = 9 of 11
   *   2-grams: 今日 日は は良 良い い天 天気 気で = 7 of 10
   *   3-grams: 6 of 9; 4-grams: 5 of 8 (the prefix 今日は良い天気で only)
   *   c = 11 >= r = 10: BP = 1
   *   9/11 * 7/10 * 6/9 * 5/8 = 0.238636; ^(1/4) = 0.698931 -> 69.89 */
  one(ch, "今日は良い天気でした。", "今日は良い天気です。", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 69.89, 0.01);
  expect_precisions(&sc, 81.82, 70.00, 66.67, 62.50);
  EXPECT_NEAR(value(&sc, "hyp_len"), 11, 0);

  /* Cyrillic: the space is not a token, so n-grams run across it. ref "Привет мир",
   * hyp "привет мир" (9 code points each) differ only in П/п:
   *   m = 8 of 9, 7 of 8, 6 of 7, 5 of 6; product = 5/9; ^(1/4) = 0.863340 -> 86.33 */
  one(ch, "привет мир", "Привет мир", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 86.33, 0.01);
  EXPECT_NEAR(value(&sc, "hyp_len"), 9, 0);
  /* Lowercased, they are the same: 100. */
  EXPECT_NEAR(bleu1("tokenize = \"char\"; lowercase = true;", "привет мир", "Привет мир"),
              100.0, 0.01);

  /* Arabic: مرحبا بالعالم is 5 + 7 = 12 letters. */
  one(ch, "مرحبا بالعالم", "مرحبا بالعالم", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 100.0, 0.01);
  EXPECT_NEAR(value(&sc, "hyp_len"), 12, 0);
  /* كَتَبَ: three letters, each with a fatha (U+064E): 6 code points, 6 tokens. */
  one(ch, "كَتَبَ", "كَتَبَ", &sc);
  EXPECT_NEAR(value(&sc, "hyp_len"), 6, 0);
  /* Signature */
  EXPECT_CONTAINS(sc.signature, "|tok:char|");
}

static void test_lowercase(void) {
  /* Mixed case: no token matches -> 0; lowercased: identical -> 100. */
  EXPECT_NEAR(bleu1(NULL, "The Cat Sat Down", "the cat sat down"), 0.0, 0.0);
  struct intrus_eval_scores sc;
  one("lowercase = true;", "The Cat Sat Down", "the cat sat down", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 100.0, 0.01);
  EXPECT_CONTAINS(sc.signature, "|case:lc|");
  /* Python's str.lower(): a word-final capital sigma becomes ς (U+03C2), not σ; so
   * ΟΔΟΣ lowercases to οδος with a final ς, matching all 4 characters. */
  one("tokenize = \"char\"; lowercase = true;", "ΟΔΟΣ", "οδος", &sc);
  EXPECT_NEAR(value(&sc, "P1"), 100.0, 0.0);
  /* ... and a sigma inside a word stays σ: ΣΟΦΟΣ -> σοφος. */
  one("tokenize = \"char\"; lowercase = true;", "ΣΟΦΟΣ", "σοφος", &sc);
  EXPECT_NEAR(value(&sc, "P1"), 100.0, 0.0);
  /* İ (U+0130) lowercases to i + U+0307: İstanbul has 8 code points, 9 after. */
  one("tokenize = \"char\"; lowercase = true;", "İstanbul", "i\xcc\x87stanbul", &sc);
  EXPECT_NEAR(value(&sc, "hyp_len"), 9, 0);
  EXPECT_NEAR(value(&sc, "BLEU"), 100.0, 0.01);
}

static void test_whitespace(void) {
  const char *none = "tokenize = \"none\";";
  struct intrus_eval_scores sc;
  /* str.split() splits on U+3000 (ideographic space) and U+00A0 (no-break space). */
  one(none, "a\xe3\x80\x80" "b\xc2\xa0" "c d", "a b c d", &sc);
  EXPECT_NEAR(value(&sc, "hyp_len"), 4, 0);
  EXPECT_NEAR(value(&sc, "BLEU"), 100.0, 0.01);
  /* ... and on U+0085, U+2028 and U+001F, ... */
  one(none, "a\xc2\x85" "b\xe2\x80\xa8" "c\x1f" "d", "a b c d", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 100.0, 0.01);
  /* ... but not on U+200B (zero width space): "a\u200bb" is one token, so 4 tokens
   * against 5 and no match for it. */
  one(none, "a\xe2\x80\x8b" "b c d e", "a b c d e", &sc);
  EXPECT_NEAR(value(&sc, "hyp_len"), 4, 0);
  /* 13a splits there too (it splits on whitespace last). */
  one(NULL, "a\xe3\x80\x80" "b\xc2\xa0" "c d", "a b c d", &sc);
  EXPECT_NEAR(value(&sc, "BLEU"), 100.0, 0.01);
  /* Trailing and leading whitespace of any kind is no token. */
  one(none, "\xe3\x80\x80" "a b c d\xc2\xa0\t\r", "a b c d", &sc);
  EXPECT_NEAR(value(&sc, "hyp_len"), 4, 0);
}

static void test_settings_and_errors(void) {
  struct intrus_error err = {0};
  void *self = NULL;
  /* Defaults without a group: 13a, mixed case, exp. */
  self = make_bleu(NULL);
  struct intrus_eval_scores sc;
  const char *h = "a b c d", *r = "a b c d";
  corpus(self, 1, &h, &r, 1, &sc);
  EXPECT(!strcmp(sc.signature, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.3.1"),
         "%s", sc.signature);
  /* Invalid UTF-8 is a data error. */
  EXPECT(vt->segment_stats(self, "a \xff b", &r, 1, (double[64]){0}, &err) == INTRUS_ERR_DATA,
         "invalid UTF-8");
  EXPECT_CONTAINS(err.msg, "UTF-8");
  vt->destroy(self);

  /* Strict settings: a misspelt key and a bad value are config errors. */
  struct intrus_config *cfg = intrus_config_load_string("tokenizer = \"char\";", "t", &err);
  self = NULL;
  EXPECT(vt->create(intrus_config_root(cfg), &self, &err) == INTRUS_ERR_CONFIG,
         "unknown key accepted");
  EXPECT_CONTAINS(err.msg, "tokenizer");
  intrus_config_free(cfg);
  cfg = intrus_config_load_string("tokenize = \"intl\";", "t", &err);
  EXPECT(vt->create(intrus_config_root(cfg), &self, &err) == INTRUS_ERR_CONFIG,
         "unknown tokenizer accepted");
  EXPECT_CONTAINS(err.msg, "13a");
  intrus_config_free(cfg);
  cfg = intrus_config_load_string("lowercase = \"yes\";", "t", &err);
  EXPECT(vt->create(intrus_config_root(cfg), &self, &err) == INTRUS_ERR_CONFIG,
         "string for a bool accepted");
  intrus_config_free(cfg);
}

/* ---- paired bootstrap ------------------------------------------------------------- */

#define NSEG 30

/* Per-segment statistics of 30 segments of 6 distinct words each: system A changes the
 * last word of every segment, system B copies the reference. */
static void bootstrap_stats(void *self, double *a, double *b) {
  int ss = vt->stats_size(self);
  struct intrus_error err = {0};
  for (int i = 0; i < NSEG; i++) {
    char ref[128], hyp_a[128];
    snprintf(ref, sizeof ref, "w%da w%db w%dc w%dd w%de w%df", i, i, i, i, i, i);
    snprintf(hyp_a, sizeof hyp_a, "w%da w%db w%dc w%dd w%de zz", i, i, i, i, i);
    const char *refs[1] = {ref};
    EXPECT(vt->segment_stats(self, hyp_a, refs, 1, a + (size_t)i * ss, &err) == INTRUS_OK,
           "%s", err.msg);
    EXPECT(vt->segment_stats(self, ref, refs, 1, b + (size_t)i * ss, &err) == INTRUS_OK,
           "%s", err.msg);
  }
}

static void test_bootstrap(void) {
  void *self = make_bleu(NULL);
  int ss = vt->stats_size(self);
  double *a = calloc((size_t)NSEG * ss, sizeof *a), *b = calloc((size_t)NSEG * ss, sizeof *b);
  double *a2 = calloc((size_t)NSEG * ss, sizeof *a2);
  bootstrap_stats(self, a, b);
  memcpy(a2, a, (size_t)NSEG * ss * sizeof *a);
  struct intrus_error err = {0};
  struct intrus_bootstrap_result r1, r2, r3;

  /* Identical systems: B never beats A, so p = (n + 1)/(n + 1) = 1: not significant. */
  EXPECT(intrus_paired_bootstrap(vt, self, NSEG, a, a2, 200, 7, &r1, &err) == INTRUS_OK,
         "%s", err.msg);
  EXPECT(r1.b_better == 0, "identical: B better in %d", r1.b_better);
  EXPECT_NEAR(r1.p_value, 1.0, 0.0);
  EXPECT_NEAR(r1.a.mean, r1.b.mean, 0.0);
  EXPECT_NEAR(r1.a.ci, r1.b.ci, 0.0);

  /* B better on every segment: B = 100 in every resample, A < 100, so B wins all 1000
   * (the default count) and p = 1/1001 < 0.05. */
  EXPECT(intrus_paired_bootstrap(vt, self, NSEG, a, b, 0, 7, &r1, &err) == INTRUS_OK, "%s",
         err.msg);
  EXPECT(r1.samples == INTRUS_BOOTSTRAP_DEFAULT_SAMPLES, "samples %d", r1.samples);
  EXPECT(r1.b_better == r1.samples, "B better in %d of %d", r1.b_better, r1.samples);
  EXPECT(r1.p_value < 0.05, "p = %g", r1.p_value);
  EXPECT_NEAR(r1.p_value, 1.0 / 1001.0, 1e-15);
  EXPECT(r1.p_sacrebleu < 0.05, "sacreBLEU p = %g", r1.p_sacrebleu);
  EXPECT_NEAR(r1.b.score, 100.0, 0.01);
  EXPECT_NEAR(r1.b.ci, 0.0, 1e-9);
  /* A: each segment m = 5, 4, 3, 2 of t = 6, 5, 4, 3, so every resample has the same
   * precisions 5/6, 4/5, 3/4, 2/3 and BP 1: (1/3)^(1/4) = 0.759836 -> 75.98 always. */
  EXPECT_NEAR(r1.a.score, 75.98, 0.01);
  EXPECT_NEAR(r1.a.mean, 75.98, 0.01);
  EXPECT_NEAR(r1.a.ci, 0.0, 1e-9);

  /* A system whose segments differ in quality has a real interval; the same seed gives
   * the same result bit for bit, another seed another one. */
  for (int i = 0; i < NSEG; i += 3)
    memcpy(a2 + (size_t)i * ss, b + (size_t)i * ss, (size_t)ss * sizeof *a2);
  EXPECT(intrus_paired_bootstrap(vt, self, NSEG, a, a2, 300, 42, &r1, &err) == INTRUS_OK,
         "%s", err.msg);
  EXPECT(intrus_paired_bootstrap(vt, self, NSEG, a, a2, 300, 42, &r2, &err) == INTRUS_OK,
         "%s", err.msg);
  EXPECT(intrus_paired_bootstrap(vt, self, NSEG, a, a2, 300, 43, &r3, &err) == INTRUS_OK,
         "%s", err.msg);
  EXPECT(memcmp(&r1, &r2, sizeof r1) == 0, "same seed, different results");
  EXPECT(r1.b.mean != r3.b.mean || r1.b.ci != r3.b.ci, "another seed, same resamples");
  EXPECT(r1.b.ci > 0, "ci %g", r1.b.ci);
  EXPECT(r1.b.lower < r1.b.upper, "[%g, %g]", r1.b.lower, r1.b.upper);
  EXPECT(r1.p_value < 0.05, "B improves every third segment and nothing else: p = %g",
         r1.p_value);

  EXPECT(intrus_paired_bootstrap(vt, self, 0, a, b, 10, 1, &r1, &err) == INTRUS_ERR_INVALID,
         "no segments");
  free(a);
  free(b);
  free(a2);
  vt->destroy(self);
}

/* sacreBLEU's own paired bootstrap (scripts/reference/sacrebleu_bootstrap.py) on two pairs
 * of systems: the scores, each system's resample mean and 95% half-width, and the p-value
 * must be sacreBLEU's for the same seed and sample count, which needs its resamples index
 * for index. sacreBLEU 2.3.1 with NumPy 1.24 scores resamples in float64, as intrus does:
 * equal to 1e-9. sacreBLEU 2.6.0 with NumPy 2.5 computes the resampled precisions in
 * float32 (NumPy 2's scalar promotion), so its means and half-widths are met to 1e-6
 * relative; its p-values exactly. */
static double *file_stats(void *self, const char *ref_name, const char *hyp_name, int *nseg) {
  char rel[256];
  snprintf(rel, sizeof rel, "tests/data/bootstrap/%s", ref_name);
  char *ref = test_read_srcfile(rel);
  snprintf(rel, sizeof rel, "tests/data/bootstrap/%s", hyp_name);
  char *hyp = test_read_srcfile(rel);
  if (!ref || !hyp) {
    fprintf(stderr, "cannot read the bootstrap fixtures (%s, %s)\n", ref_name, hyp_name);
    exit(99);
  }
  int ss = vt->stats_size(self), n = 0;
  double *stats = NULL;
  char *rs = ref, *hs = hyp;
  while (*rs && *hs) {
    char *re = strchr(rs, '\n'), *he = strchr(hs, '\n');
    if (!re || !he) break;
    *re = *he = '\0';
    stats = realloc(stats, (size_t)(n + 1) * ss * sizeof *stats);
    const char *refs[1] = {rs};
    struct intrus_error err = {0};
    EXPECT(vt->segment_stats(self, hs, refs, 1, stats + (size_t)n * ss, &err) == INTRUS_OK,
           "%s", err.msg);
    n++;
    rs = re + 1;
    hs = he + 1;
  }
  EXPECT(*rs == '\0' && *hs == '\0', "%s and %s differ in length", ref_name, hyp_name);
  free(ref);
  free(hyp);
  *nseg = n;
  return stats;
}

static void test_bootstrap_sacrebleu(const char *fixture, double tol) {
  void *self = make_bleu(NULL);
  char *table = test_read_srcfile(fixture);
  EXPECT(table != NULL, "no %s", fixture);
  if (!table) return;
  int rows = 0;
  for (char *line = strtok(table, "\n"); line; line = strtok(NULL, "\n")) {
    if (line[0] == '#') continue;
    char name[32];
    unsigned long long seed;
    int samples;
    double want[7];
    if (sscanf(line, "%31s %llu %d %lf %lf %lf %lf %lf %lf %lf", name, &seed, &samples,
               &want[0], &want[1], &want[2], &want[3], &want[4], &want[5], &want[6]) != 10) {
      EXPECT(0, "malformed fixture line: %s", line);
      continue;
    }
    char ref[64], fa[64], fb[64];
    snprintf(ref, sizeof ref, "%s-ref.txt", name);
    snprintf(fa, sizeof fa, "%s-a.txt", name);
    snprintf(fb, sizeof fb, "%s-b.txt", name);
    int na, nb;
    double *a = file_stats(self, ref, fa, &na), *b = file_stats(self, ref, fb, &nb);
    struct intrus_bootstrap_result r;
    struct intrus_error err = {0};
    EXPECT(na == nb && na > 0, "%s: %d and %d segments", name, na, nb);
    EXPECT(intrus_paired_bootstrap(vt, self, na, a, b, samples, seed, &r, &err) == INTRUS_OK,
           "%s", err.msg);
    double got[7] = {r.a.score, r.a.mean, r.a.ci, r.b.score, r.b.mean, r.b.ci, r.p_sacrebleu};
    static const char *what[7] = {"A score", "A mean", "A ci", "B score", "B mean", "B ci",
                                  "p"};
    for (int k = 0; k < 7; k++)
      EXPECT(fabs(got[k] - want[k]) <= (k == 6 ? 1e-12 : tol * (1 + fabs(want[k]))),
             "%s, %s seed %llu, %d samples: %s %.17g, sacreBLEU %.17g", fixture, name, seed,
             samples, what[k], got[k], want[k]);
    free(a);
    free(b);
    rows++;
  }
  EXPECT(rows == 8, "%s: %d fixture rows", fixture, rows);
  free(table);
  vt->destroy(self);
}

/* ---- intrus eval bleu -------------------------------------------------------------- */

/* The file name in the test's directory, holding text. */
static const char *tmp_file(const char *name, const char *text) {
  return test_write_file(test_tmp_path(name), text);
}


static void test_cli(void) {
  static char out[65536];
  char args[3072];
  /* The two-sentence corpus of test_two_sentences, with trailing whitespace and CRLF
   * line ends that rstrip removes. */
  const char *ref =
      tmp_file("ref.txt", "the cat is on the mat\r\nthe quick brown fox jumps high\n");
  const char *hyp = tmp_file("hyp.txt", "the cat sat on the mat \nA quick brown fox jumps");
  snprintf(args, sizeof args, "eval bleu --ref '%s' --hyp '%s' --lc", ref, hyp);
  int rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "exit %d: %s", rc, out);
  EXPECT(!strcmp(out, "BLEU = 42.46 81.8/66.7/42.9/20.0 (BP = 0.913 ratio = 0.917 hyp_len = 11 "
                      "ref_len = 12)\nnrefs:1|case:lc|eff:no|tok:13a|smooth:exp|version:2.3.1\n"),
         "output:\n%s", out);

  snprintf(args, sizeof args, "eval bleu -r '%s' -i '%s' --lc --json", ref, hyp);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "--json exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "\"name\": \"BLEU\"");
  EXPECT_CONTAINS(out, "\"score\": 42.46");
  EXPECT_CONTAINS(out, "\"signature\": "
                       "\"nrefs:1|case:lc|eff:no|tok:13a|smooth:exp|version:2.3.1\"");
  EXPECT_CONTAINS(out, "\"verbose_score\": \"81.8/66.7/42.9/20.0 (BP = 0.913 ratio = 0.917");
  EXPECT_CONTAINS(out, "\"precisions\": [81.81818181818181, 66.66666666666667, "
                       "42.857142857142854, 20.0]");
  EXPECT_CONTAINS(out, "\"bp\": 0.9131007162822");
  EXPECT_CONTAINS(out, "\"ratio\": 0.9166666666666666");
  EXPECT_CONTAINS(out, "\"hyp_len\": 11");
  EXPECT_CONTAINS(out, "\"ref_len\": 12");
  EXPECT_CONTAINS(out, "\"tok\": \"13a\"");
  EXPECT(out[0] == '{' && strstr(out, "}\n"), "not one JSON object:\n%s", out);

  /* Settings reach the plugin and its signature. */
  snprintf(args, sizeof args, "eval bleu -r '%s' -i '%s' --tok char --smooth floor", ref, hyp);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "\nnrefs:1|case:mixed|eff:no|tok:char|smooth:floor[0.10]|version:2.3.1\n");

  /* Two reference files: nrefs:2. */
  snprintf(args, sizeof args, "eval bleu -r '%s' -r '%s' -i '%s'", ref, ref, hyp);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT_CONTAINS(out, "\nnrefs:2|");

  /* Line counts differ: both files and both counts named, data exit code. */
  const char *short_hyp = tmp_file("short.txt", "the cat\n");
  snprintf(args, sizeof args, "eval bleu -r '%s' -i '%s'", ref, short_hyp);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 5, "line counts: exit %d", rc);
  EXPECT_CONTAINS(out, "short.txt has 1 lines");
  EXPECT_CONTAINS(out, "ref.txt has 2");

  /* Invalid UTF-8 on line 2: the file and line are named. */
  const char *bad = tmp_file("bad.txt", "fine\nnot \xc3\x28 fine\n");
  snprintf(args, sizeof args, "eval bleu -r '%s' -i '%s'", ref, bad);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 5, "invalid UTF-8: exit %d", rc);
  EXPECT_CONTAINS(out, "bad.txt:2: invalid UTF-8");

  /* An empty reference line (after rstrip) is a reference of length 0, as sacreBLEU
   * 2.3.1's command line keeps it. By hand: seg 1 "the cat" = "the cat" (2/2 1-grams,
   * 1/1 2-grams, ref 2); seg 2 "the cat" against "" (0/2, 0/1, ref 0): P1 2/4, P2 1/2,
   * no 3- or 4-grams (the loop stops, P3 = P4 = 0, my_log floor): BLEU 0.00; hyp_len 4,
   * ref_len 2. The same from gzip and from standard input. */
  const char *blank = tmp_file("blank.txt", "the cat\n \t\n");
  const char *twice = tmp_file("twice.txt", "the cat\nthe cat\n");
  const char *want_blank = "BLEU = 0.00 50.0/50.0/0.0/0.0 (BP = 1.000 ratio = 2.000 hyp_len = 4 "
                           "ref_len = 2)\nnrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|"
                           "version:2.3.1";
  snprintf(args, sizeof args, "eval bleu -r '%s' -i '%s'", blank, twice);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "empty reference: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, want_blank);
  char gz[700];
  snprintf(gz, sizeof gz, "gzip -kf '%s'", twice);
  EXPECT(system(gz) == 0, "%s", gz);
  snprintf(args, sizeof args, "eval bleu -r '%s' -i '%s.gz'", blank, twice);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "gzip hypotheses: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, want_blank);
  snprintf(args, sizeof args, "eval bleu -r '%s' -i - < '%s'", blank, twice);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "hypotheses on stdin: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, want_blank);

  /* Two references, one line empty in one of them: nrefs:2 and 100.00, as sacreBLEU
   * 2.3.1 prints (it gave 52.92 nrefs:var before). */
  const char *ra = tmp_file("ra.txt", "a b c d\na b c d\n");
  const char *rb = tmp_file("rb.txt", "a b\n\n");
  const char *h4 = tmp_file("h4.txt", "a b c d\na b c d\n");
  snprintf(args, sizeof args, "eval bleu -r '%s' -r '%s' -i '%s'", ra, rb, h4);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "two references: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "BLEU = 100.00 ");
  EXPECT_CONTAINS(out, "nrefs:2|");

  /* A repeated --hyp is refused, not the last one kept; stdin only once. */
  snprintf(args, sizeof args, "eval bleu -r '%s' -i '%s' -i '%s'", ra, h4, ra);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "--hyp twice: %s", out);
  EXPECT_CONTAINS(out, "--hyp given twice");
  snprintf(args, sizeof args, "eval bleu -r - -i - < '%s'", h4);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "stdin twice: %s", out);
  EXPECT_CONTAINS(out, "standard input");

  /* Missing file: data exit code, the path named. */
  snprintf(args, sizeof args, "eval bleu -r '%s' -i '%s'", test_tmp_path("nope.txt"), hyp);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 5, "missing file: exit %d", rc);
  EXPECT_CONTAINS(out, "nope.txt");
  EXPECT_CONTAINS(out, "No such file");

  /* Usage errors: exit 2. */
  snprintf(args, sizeof args, "eval bleu -r '%s'", ref);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "no --hyp");
  EXPECT_CONTAINS(out, "--hyp");
  snprintf(args, sizeof args, "eval bleu -r '%s' -i '%s' --tok intl", ref, hyp);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "bad --tok");
  EXPECT_CONTAINS(out, "--tok wants 13a, char or none");
  snprintf(args, sizeof args, "eval bleu -r '%s' -i '%s' --bootstrap 0", ref, hyp);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "bad --bootstrap");
  EXPECT(test_run_intrus(NULL, "eval bleu --frobnicate", out, sizeof out) == 2, "unknown option");
  EXPECT(test_run_intrus(NULL, "eval", out, sizeof out) == 2, "no metric");
  EXPECT(test_run_intrus(NULL, "eval meteor", out, sizeof out) == 2, "unknown metric");
  EXPECT_CONTAINS(out, "unknown metric 'meteor'");

  /* Help: exit 0, on stdout. */
  EXPECT(test_run_intrus(NULL, "eval --help", out, sizeof out) == 0, "eval --help");
  EXPECT_CONTAINS(out, "bleu");
  EXPECT(test_run_intrus(NULL, "eval bleu --help", out, sizeof out) == 0, "eval bleu --help");
  EXPECT_CONTAINS(out, "--ref");
  EXPECT_CONTAINS(out, "sacreBLEU 2.3.1");

  /* Paired bootstrap of a better system B against A. */
  const char *hyp2 =
      tmp_file("hyp2.txt", "the cat is on the mat\nthe quick brown fox jumps high\n");
  snprintf(args, sizeof args, "eval bleu -r '%s' -i '%s' --hyp2 '%s' --bootstrap 100 --seed 3",
           ref, hyp, hyp2);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "bootstrap exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "A (");
  EXPECT_CONTAINS(out, "B (");
  EXPECT_CONTAINS(out, "BLEU = 100.00 (\xce\xbc = 100.00 \xc2\xb1 0.00)");
  EXPECT_CONTAINS(out, "paired bootstrap: B > A in");
  EXPECT_CONTAINS(out, "nrefs:1|bs:100|seed:3|case:mixed|");
  snprintf(args, sizeof args,
           "eval bleu -r '%s' -i '%s' --hyp2 '%s' --bootstrap 100 --seed 3 --json", ref, hyp,
           hyp2);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "bootstrap --json exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "\"p_value\": ");
  EXPECT_CONTAINS(out, "\"confidence_mean\": ");
  EXPECT_CONTAINS(out, "\"samples\": 100");

  /* intrus eval bootstrap: the same computation under its own options, so the same
   * numbers, text and JSON alike. */
  char out2[8192];
  for (int json = 0; json < 2; json++) {
    snprintf(args, sizeof args, "eval bleu -r '%s' -i '%s' --hyp2 '%s' -b 200 --seed 7%s", ref,
             hyp, hyp2, json ? " --json" : "");
    EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 0, "bleu --hyp2: %s", out);
    snprintf(args, sizeof args, "eval bootstrap --ref '%s' --hyp '%s' --hyp='%s' -n 200 "
             "--seed 7 --metric bleu%s", ref, hyp, hyp2, json ? " --json" : "");
    rc = test_run_intrus(NULL, args, out2, sizeof out2);
    EXPECT(rc == 0 && !strcmp(out, out2), "eval bootstrap (json %d) exit %d:\n%s\nagainst "
           "eval bleu --hyp2:\n%s", json, rc, out2, out);
  }
  snprintf(args, sizeof args, "eval bootstrap -r '%s' -i '%s'", ref, hyp);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "one system: %s", out);
  EXPECT_CONTAINS(out, "two systems are needed");
  snprintf(args, sizeof args, "eval bootstrap -r '%s' -i '%s' -i '%s' -i '%s'", ref, hyp, hyp,
           hyp2);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "three systems: %s", out);
  EXPECT_CONTAINS(out, "three times");
  snprintf(args, sizeof args, "eval bootstrap -r '%s' -i '%s' -i '%s' --metric meteor", ref,
           hyp, hyp2);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "unknown metric: %s", out);
  EXPECT_CONTAINS(out, "no metric 'meteor'");
  snprintf(args, sizeof args, "eval bootstrap -r '%s' -i '%s' -i '%s' -n 0", ref, hyp, hyp2);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "zero samples: %s", out);
  EXPECT_CONTAINS(out, "intrus eval bootstrap: --samples wants");
  EXPECT(test_run_intrus(NULL, "eval bootstrap --help", out, sizeof out) == 0, "help");
  EXPECT_CONTAINS(out, "--samples");
}

int main(void) {
  struct intrus_plugin_search *search = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(search);
  struct intrus_error err = {0};
  if (intrus_plugin_load(search, INTRUS_KIND_EVALUATOR, "bleu", &plugin, &err) != INTRUS_OK) {
    fprintf(stderr, "cannot load the BLEU plugin: %s\n", err.msg);
    intrus_plugin_search_free(search);
    return 1;
  }
  vt = intrus_plugin_descriptor(plugin)->vtable;
  EXPECT(vt->prepare == NULL, "BLEU needs no prepare");
  if (!test_make_tmpdir("/tmp/test_bleu.XXXXXX")) return 99;

  test_perfect();
  test_two_sentences();
  test_smoothing();
  test_empty_and_short();
  test_multiple_refs();
  test_13a();
  test_char();
  test_lowercase();
  test_whitespace();
  test_settings_and_errors();
  test_bootstrap();
  test_bootstrap_sacrebleu("tests/data/bootstrap/sacrebleu.txt", 1e-9);
  test_bootstrap_sacrebleu("tests/data/bootstrap/sacrebleu-2.6.0.txt", 1e-6);
  test_cli();

  test_remove_tmpdir();
  intrus_plugin_close(plugin);
  intrus_plugin_search_free(search);
  return test_finish("test_bleu");
}

/* BPE against subword-nmt (learn_bpe.py / apply_bpe.py, codes version 0.2) and
 * vocabularies: exact merge sequences, segmentations, round trips, file errors. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intrus/plugin.h"
#include "intrus/rng.h"
#include "intrus/text.h"
#include "testutil.h"

static void add_line(struct intrus_wordcount *w, const char *s) {
  intrus_wordcount_add_line(w, s, strlen(s));
}

/* The toy corpus of Sennrich et al. (2016): low 5, lower 2, newest 6, widest 3. */
static struct intrus_wordcount *toy_counts(void) {
  struct intrus_wordcount *w = intrus_wordcount_create();
  add_line(w, "low low lower low newest newest");
  add_line(w, "  newest widest low\tnewest  ");
  add_line(w, "widest newest low lower widest newest\n");
  return w;
}

/* learn_bpe.py (v0.2) on the toy corpus, derived by hand and confirmed with a
 * line-by-line port of learn_bpe.py: with "</w>" glued to the last character, "e s" and
 * "s t</w>" tie at 9 and learn_bpe.py's max over (frequency, pair) takes the larger
 * pair, "s t</w>"; likewise "w est</w>" over "n e" and "e w" (all 6), "n e" over
 * "e west</w>", "w i" over "i d" and "d est</w>", "w e" over "lo w" and "e r</w>". The
 * paper's own run (a separate "</w>" symbol and dictionary order) learns "e s", "es t",
 * "est </w>", ... instead. */
static const char *const toy_codes =
    "#version: 0.2\n"
    "s t</w>\n"
    "e st</w>\n"
    "l o\n"
    "w est</w>\n"
    "n e\n"
    "ne west</w>\n"
    "lo w</w>\n"
    "w i\n"
    "wi d\n"
    "wid est</w>\n"
    "w e\n"
    "we r</w>\n"
    "lo wer</w>\n";

static void expect_apply(struct intrus_bpe *b, const char *in, const char *want) {
  struct intrus_str out = {0};
  intrus_bpe_apply(b, in, strlen(in), &out);
  EXPECT(out.s && strcmp(out.s, want) == 0, "apply(\"%s\") = \"%s\", want \"%s\"", in,
         out.s ? out.s : "(null)", want);
  intrus_str_free(&out);
}

static void test_learn_toy(void) {
  struct intrus_wordcount *w = toy_counts();
  EXPECT(intrus_wordcount_size(w) == 4, "%zu word types", intrus_wordcount_size(w));
  struct intrus_error err = {0};
  const char *codes = test_tmp_path("toy.bpe");
  EXPECT(intrus_bpe_learn(w, 1000, codes, &err) == INTRUS_OK, "%s", err.msg);
  char *got = test_read_file(codes);
  EXPECT(got && strcmp(got, toy_codes) == 0, "codes:\n%s\nwant:\n%s", got ? got : "(none)",
         toy_codes);
  free(got);
  EXPECT(test_count_temp_files() == 0, "temporary file left behind");

  /* A merge budget cuts the same sequence short. */
  EXPECT(intrus_bpe_learn(w, 3, codes, &err) == INTRUS_OK, "%s", err.msg);
  got = test_read_file(codes);
  EXPECT(got && strcmp(got, "#version: 0.2\ns t</w>\ne st</w>\nl o\n") == 0, "codes:\n%s",
         got ? got : "(none)");
  free(got);
  EXPECT(intrus_bpe_learn(w, 0, codes, &err) == INTRUS_OK, "%s", err.msg);
  got = test_read_file(codes);
  EXPECT(got && strcmp(got, "#version: 0.2\n") == 0, "codes:\n%s", got ? got : "(none)");
  free(got);
  EXPECT(intrus_bpe_learn(w, -1, codes, &err) == INTRUS_ERR_INVALID, "negative merges");
  EXPECT(intrus_bpe_learn(w, 5, "/nonexistent-dir/x.bpe", &err) == INTRUS_ERR_IO,
         "unwritable path");
  EXPECT_CONTAINS(err.msg, "/nonexistent-dir/x.bpe");
  intrus_wordcount_free(w);
}

/* Frequency 1 pairs are never merged (min_freq 2), and overlapping pairs ("a a a")
 * merge left to right as learn_bpe.py's regular expression does. */
static void test_learn_edge(void) {
  struct intrus_error err = {0};
  const char *codes = test_tmp_path("edge.bpe");
  struct intrus_wordcount *w = intrus_wordcount_create();
  add_line(w, "abc");
  EXPECT(intrus_bpe_learn(w, 10, codes, &err) == INTRUS_OK, "%s", err.msg);
  char *got = test_read_file(codes);
  EXPECT(got && strcmp(got, "#version: 0.2\n") == 0, "singleton word: %s", got);
  free(got);
  intrus_wordcount_free(w);

  /* "aaaa" twice: a a a a</w> has (a,a) 4 times and (a,a</w>) twice. Merging "a a"
   * left to right gives aa a a</w>, where (aa,a) and (a,a</w>) tie at 2 and the larger
   * pair "aa a" wins ("aa" > "a"): aaa a</w>, then "aaa a</w>". */
  w = intrus_wordcount_create();
  add_line(w, "aaaa aaaa");
  EXPECT(intrus_bpe_learn(w, 10, codes, &err) == INTRUS_OK, "%s", err.msg);
  got = test_read_file(codes);
  EXPECT(got && strcmp(got, "#version: 0.2\na a\naa a\naaa a</w>\n") == 0, "aaaa: %s", got);
  free(got);
  intrus_wordcount_free(w);
}

static void test_apply_toy(void) {
  struct intrus_error err = {0};
  const char *codes = test_tmp_path("toy_apply.bpe");
  test_write_file(codes, toy_codes);
  struct intrus_bpe *b = NULL;
  EXPECT(intrus_bpe_load(codes, &b, &err) == INTRUS_OK, "%s", err.msg);
  if (!b) return;
  for (int pass = 0; pass < 2; pass++) { /* the second pass is served by the cache */
    expect_apply(b, "low", "low");
    expect_apply(b, "lower", "lower");
    expect_apply(b, "newest", "newest");
    expect_apply(b, "widest", "widest");
    expect_apply(b, "lowest", "lo@@ west");
    expect_apply(b, "newer", "ne@@ wer");
    expect_apply(b, "slow", "s@@ low");
    expect_apply(b, "ww", "w@@ w");
    expect_apply(b, "x", "x");
    expect_apply(b, "\xe2\x82\xac" "low", "\xe2\x82\xac@@ low"); /* an unseen character */
    expect_apply(b, "low  newer lowest\n", "low ne@@ wer lo@@ west");
    expect_apply(b, "", "");
    expect_apply(b, "   ", "");
    /* The joiner mark is a character of its word like any other. */
    expect_apply(b, INTRUS_JOINER "s", INTRUS_JOINER "@@ s");
    expect_apply(b, INTRUS_JOINER "est", INTRUS_JOINER "@@ est");
  }
  intrus_bpe_free(b);
}

/* Codes without a version line are subword-nmt's version 0.1: "</w>" is a symbol. */
static void test_apply_v01_and_duplicates(void) {
  struct intrus_error err = {0};
  const char *codes = test_tmp_path("v01.bpe");
  test_write_file(codes, "l o\nlo w\nlow </w>\n");
  struct intrus_bpe *b = NULL;
  EXPECT(intrus_bpe_load(codes, &b, &err) == INTRUS_OK, "%s", err.msg);
  if (b) {
    expect_apply(b, "low", "low");
    expect_apply(b, "lowx", "low@@ x");
    expect_apply(b, "lo", "lo");
    intrus_bpe_free(b);
  }
  /* A repeated pair keeps the rank of its first line (apply_bpe.py): "a b" ranks
   * before "b c</w>", so "abc" is ab c, not a bc. */
  test_write_file(codes, "#version: 0.2\nx y\na b\nb c</w>\na b\n\n\n");
  b = NULL;
  EXPECT(intrus_bpe_load(codes, &b, &err) == INTRUS_OK, "%s", err.msg);
  if (b) {
    expect_apply(b, "abc", "ab@@ c");
    intrus_bpe_free(b);
  }
}

static void expect_load_error(const char *name, const char *text, enum intrus_status want,
                              const char *msg) {
  const char *path = test_tmp_path(name);
  test_write_file(path, text);
  struct intrus_error err = {0};
  struct intrus_bpe *b = NULL;
  enum intrus_status st = intrus_bpe_load(path, &b, &err);
  EXPECT(st == want, "%s: status %s, want %s (%s)", name, intrus_status_name(st),
         intrus_status_name(want), err.msg);
  EXPECT(b == NULL, "%s: no codes on error", name);
  EXPECT_CONTAINS(err.msg, msg);
  intrus_bpe_free(b);
}

static void test_codes_errors(void) {
  expect_load_error("e1.bpe", "#version: 0.2\na b\nc d\nlonely\n", INTRUS_ERR_FORMAT,
                    "e1.bpe:4: expected two symbols");
  expect_load_error("e2.bpe", "#version: 0.2\na b c\n", INTRUS_ERR_FORMAT,
                    "e2.bpe:2: expected two symbols");
  expect_load_error("e3.bpe", "#version: 0.2\na  b\n", INTRUS_ERR_FORMAT,
                    "e3.bpe:2: expected two symbols");
  expect_load_error("e4.bpe", "#version: 0.2\na b\n\nc d\n", INTRUS_ERR_FORMAT,
                    "e4.bpe:3: expected two symbols, got a blank line");
  expect_load_error("e5.bpe", "#version: 0.3\na b\n", INTRUS_ERR_FORMAT,
                    "e5.bpe:1: unsupported BPE codes version '0.3'");
  expect_load_error("e6.bpe", "#version: 0.2\na b\nc \xff\n", INTRUS_ERR_DATA,
                    "e6.bpe:3: invalid UTF-8 at byte 3");
  struct intrus_error err = {0};
  struct intrus_bpe *b = NULL;
  EXPECT(intrus_bpe_load(test_tmp_path("missing.bpe"), &b, &err) == INTRUS_ERR_IO, "missing");
  EXPECT_CONTAINS(err.msg, "missing.bpe");
  EXPECT_CONTAINS(err.msg, "No such file");
}

/* Learn on random text, apply, and undo the segmentation by deleting "@@ ": the
 * original tokens come back. */
static void test_round_trip(void) {
  static const char *const syll[] = {"ka", "to", "ri", "\xc3\xa9", "n",  "sa",
                                     "\xe3\x81\x82", "mu", "e", "st", "ing", INTRUS_JOINER};
  enum { NSYLL = sizeof syll / sizeof *syll, NLINES = 300 };
  struct intrus_rng r;
  intrus_rng_seed(&r, 7);
  char **lines = malloc(NLINES * sizeof *lines);
  struct intrus_wordcount *w = intrus_wordcount_create();
  for (int i = 0; i < NLINES; i++) {
    char buf[512] = "";
    int nw = 1 + (int)intrus_rng_below(&r, 8);
    for (int k = 0; k < nw; k++) {
      if (k) strcat(buf, " ");
      int ns = 1 + (int)intrus_rng_below(&r, 4);
      for (int j = 0; j < ns; j++) strcat(buf, syll[intrus_rng_below(&r, NSYLL)]);
    }
    lines[i] = strdup(buf);
    add_line(w, buf);
  }
  struct intrus_error err = {0};
  const char *codes = test_tmp_path("rt.bpe");
  EXPECT(intrus_bpe_learn(w, 200, codes, &err) == INTRUS_OK, "%s", err.msg);
  struct intrus_bpe *b = NULL;
  EXPECT(intrus_bpe_load(codes, &b, &err) == INTRUS_OK, "%s", err.msg);
  int split = 0;
  struct intrus_str out = {0}, joined = {0};
  for (int i = 0; b && i < NLINES; i++) {
    intrus_bpe_apply(b, lines[i], strlen(lines[i]), &out);
    intrus_str_clear(&joined);
    intrus_str_append(&joined, "", 0);
    for (size_t k = 0; k < out.len;) {
      if (k + 3 <= out.len && memcmp(out.s + k, "@@ ", 3) == 0) {
        k += 3;
        split++;
      } else {
        intrus_str_append(&joined, out.s + k, 1);
        k++;
      }
    }
    EXPECT(strcmp(joined.s, lines[i]) == 0, "round trip: \"%s\" -> \"%s\" -> \"%s\"", lines[i],
           out.s, joined.s);
  }
  EXPECT(split > 0, "200 merges left no word split: the test proves nothing");
  intrus_str_free(&out);
  intrus_str_free(&joined);
  intrus_bpe_free(b);
  for (int i = 0; i < NLINES; i++) free(lines[i]);
  free(lines);
  intrus_wordcount_free(w);
}

/* ---- vocabulary ------------------------------------------------------------------ */

static void test_vocab_build(void) {
  struct intrus_wordcount *w = intrus_wordcount_create();
  add_line(w, "b a c a b a d <unk> e e");
  add_line(w, "a b c");
  /* counts: a 4, b 3, c 2, e 2, d 1, <unk> 1 */
  struct intrus_vocab *v = intrus_vocab_build(w, 1, 0);
  static const char *const want[] = {"<pad>", "<unk>", "<s>", "</s>", "a", "b", "c", "e", "d"};
  int nw = (int)(sizeof want / sizeof *want);
  EXPECT(intrus_vocab_size(v) == nw, "size %d", intrus_vocab_size(v));
  for (int i = 0; i < nw && i < intrus_vocab_size(v); i++) {
    const char *t = intrus_vocab_token(v, i);
    EXPECT(t && strcmp(t, want[i]) == 0, "token %d = %s, want %s", i, t, want[i]);
    EXPECT(intrus_vocab_id(v, want[i], strlen(want[i])) == i, "id of %s", want[i]);
  }
  EXPECT(intrus_vocab_token(v, -1) == NULL && intrus_vocab_token(v, nw) == NULL, "range");
  EXPECT(intrus_vocab_id(v, "zz", 2) == INTRUS_UNK, "unknown token");
  EXPECT(intrus_vocab_id(v, "ab", 1) == 4, "length-limited look-up");

  int32_t ids[8];
  bool trunc = true;
  int n = intrus_vocab_encode(v, " a zz  e\n", 9, ids, 8, &trunc);
  EXPECT(n == 3 && ids[0] == 4 && ids[1] == INTRUS_UNK && ids[2] == 7 && !trunc,
         "encode: n %d", n);
  n = intrus_vocab_encode(v, "a b c d", 7, ids, 2, &trunc);
  EXPECT(n == 2 && ids[0] == 4 && ids[1] == 5 && trunc, "encode truncated: n %d", n);
  n = intrus_vocab_encode(v, "a b", 3, ids, 2, &trunc);
  EXPECT(n == 2 && !trunc, "exactly cap tokens is not truncation");
  intrus_vocab_free(v);

  v = intrus_vocab_build(w, 2, 0);
  EXPECT(intrus_vocab_size(v) == 8, "min_count 2: size %d", intrus_vocab_size(v));
  intrus_vocab_free(v);
  v = intrus_vocab_build(w, 1, 6);
  EXPECT(intrus_vocab_size(v) == 6, "max_size 6: size %d", intrus_vocab_size(v));
  EXPECT(strcmp(intrus_vocab_token(v, 5), "b") == 0, "max_size keeps the most frequent");
  intrus_vocab_free(v);
  intrus_wordcount_free(w);
}

static void test_vocab_files(void) {
  struct intrus_wordcount *w = intrus_wordcount_create();
  add_line(w, "der die das die der die \xc3\xa4hm");
  struct intrus_vocab *v = intrus_vocab_build(w, 1, 0);
  struct intrus_error err = {0};
  const char *path = test_tmp_path("vocab.txt");
  EXPECT(intrus_vocab_save(v, path, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(test_count_temp_files() == 0, "temporary file left behind");
  char *text = test_read_file(path);
  EXPECT(text && strcmp(text, "<pad>\n<unk>\n<s>\n</s>\ndie\nder\ndas\n\xc3\xa4hm\n") == 0,
         "file:\n%s", text ? text : "(none)");
  struct intrus_vocab *u = NULL;
  EXPECT(intrus_vocab_load(path, &u, &err) == INTRUS_OK, "%s", err.msg);
  if (u) {
    EXPECT(intrus_vocab_size(u) == intrus_vocab_size(v), "size");
    for (int i = 0; i < intrus_vocab_size(v); i++)
      EXPECT(strcmp(intrus_vocab_token(u, i), intrus_vocab_token(v, i)) == 0, "token %d", i);
    EXPECT(intrus_vocab_fingerprint(u) == intrus_vocab_fingerprint(v), "fingerprint");
    intrus_vocab_free(u);
  }
  /* One changed token, or two swapped, changes the fingerprint. */
  const char *path2 = test_tmp_path("vocab2.txt");
  test_write_file(path2, "<pad>\n<unk>\n<s>\n</s>\ndie\nder\ndas\n\xc3\xa4hn\n");
  u = NULL;
  EXPECT(intrus_vocab_load(path2, &u, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(u && intrus_vocab_fingerprint(u) != intrus_vocab_fingerprint(v), "edited token");
  intrus_vocab_free(u);
  test_write_file(path2, "<pad>\n<unk>\n<s>\n</s>\nder\ndie\ndas\n\xc3\xa4hm\n");
  u = NULL;
  EXPECT(intrus_vocab_load(path2, &u, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(u && intrus_vocab_fingerprint(u) != intrus_vocab_fingerprint(v), "swapped tokens");
  intrus_vocab_free(u);
  /* CRLF files load as the same vocabulary. */
  test_write_file(path2, "<pad>\r\n<unk>\r\n<s>\r\n</s>\r\ndie\r\nder\r\ndas\r\n\xc3\xa4hm");
  u = NULL;
  EXPECT(intrus_vocab_load(path2, &u, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(u && intrus_vocab_fingerprint(u) == intrus_vocab_fingerprint(v), "CRLF");
  intrus_vocab_free(u);
  free(text);
  intrus_vocab_free(v);
  intrus_wordcount_free(w);

  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"<pad>\n<unk>\n<s>\n</s>\na\n\nb\n", "v_bad.txt:6: empty token"},
      {"<pad>\n<unk>\n<s>\n</s>\na\nb\na\n", "v_bad.txt:7: duplicate token 'a' (first on line 5)"},
      {"<pad>\n<unk>\n<s>\n</s>\n<unk>\n", "v_bad.txt:5: duplicate token '<unk>'"},
      {"<pad>\n<s>\n<unk>\n</s>\na\n", "v_bad.txt:2: expected the special token '<unk>'"},
      {"a\nb\nc\nd\n", "v_bad.txt:1: expected the special token '<pad>'"},
      {"<pad>\n<unk>\n", "v_bad.txt: 2 lines"},
      {"<pad>\n<unk>\n<s>\n</s>\na b\n", "v_bad.txt:5: token contains a space"},
      {"<pad>\n<unk>\n<s>\n</s>\n\xc3\n", "v_bad.txt:5: invalid UTF-8 at byte 1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *p = test_tmp_path("v_bad.txt");
    test_write_file(p, bad[i].text);
    struct intrus_vocab *x = NULL;
    EXPECT(intrus_vocab_load(p, &x, &err) != INTRUS_OK, "bad vocabulary %zu loaded", i);
    EXPECT(x == NULL, "no vocabulary on error");
    EXPECT_CONTAINS(err.msg, bad[i].msg);
  }
  struct intrus_vocab *x = NULL;
  EXPECT(intrus_vocab_load(test_tmp_path("nope.txt"), &x, &err) == INTRUS_ERR_IO, "missing file");
  EXPECT_CONTAINS(err.msg, "nope.txt");
}

int main(void) {
  char template[4096];
  snprintf(template, sizeof template, "%s/tests/tmp_bpe_XXXXXX", test_builddir());
  if (!test_make_tmpdir(template)) return 2;
  test_learn_toy();
  test_learn_edge();
  test_apply_toy();
  test_apply_v01_and_duplicates();
  test_codes_errors();
  test_round_trip();
  test_vocab_build();
  test_vocab_files();
  test_remove_tmpdir();
  return test_finish("test_bpe");
}

/* Order analysis (intrus analyze order): word classes by the documented rule, pieces
 * joined into words, each word's relative generation index from its first-written piece,
 * means and intervals worked by hand, Kendall's tau of word against writing order worked
 * by hand; malformed files refused naming file and line; the
 * command's table and its bar chart (bar heights read back from the PNG). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cairo.h>

#include "viz/order_stats.h"
#include "viz/bars.h"
#include "viz/pos_tag.h"
#include "viz/plot.h"
#include "testutil.h"

static void test_classify(void) {
  static const struct {
    const char *word, *lang;
    enum word_class want;
  } cases[] = {
      {",", "de", WORD_PUNCT},          {"...", "en", WORD_PUNCT},
      {"\xe2\x80\x94", "ru", WORD_PUNCT}, /* em dash */
      {"\xe2\x82\xac", "de", WORD_PUNCT}, /* euro sign: a symbol */
      {"(\"", NULL, WORD_PUNCT},        {"Der", "de", WORD_FUNCTION},
      {"der", "de", WORD_FUNCTION},     {"\xc3\x9c" "ber", "de", WORD_FUNCTION}, /* Über */
      {"Haus", "de", WORD_CONTENT},     {"123", "de", WORD_CONTENT},
      {"e.g", "en", WORD_CONTENT},      {"The", "en", WORD_FUNCTION},
      {"the", "de", WORD_CONTENT},      {"\xd0\x98", "ru", WORD_FUNCTION}, /* И */
      {"der", "ja", WORD_CONTENT},      {"der", NULL, WORD_CONTENT},
      {"der", "de-AT", WORD_FUNCTION},  {"der", "dex", WORD_CONTENT},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    enum word_class got = word_classify(cases[i].word, cases[i].lang);
    EXPECT(got == cases[i].want, "'%s' (%s): class %d, want %d", cases[i].word,
           cases[i].lang ? cases[i].lang : "no language", got, cases[i].want);
  }
  EXPECT(word_list_known("de") && word_list_known("en") && word_list_known("ru_RU") &&
             !word_list_known("ja") && !word_list_known(NULL) && !word_list_known("deu"),
         "the languages with word lists");
}

static const char header[] = "sentence\tposition\ttoken\tstep\trelative_index\n";

/* Sentence 1, 4 pieces: "Das" (step 2), "Haus@@" (0) + "tür" (3), "￭." (1): words Das
 * 2/3, Haustür 0 (its first piece), "." 1/3. Sentence 2: one piece, skipped. Sentence 4
 * (3 had an empty output): "the" (1) "house" (0): content words in German, 1 and 0. */
static const char good[] =
    "1\t1\tDas\t2\t0.6667\n1\t2\tHaus@@\t0\t0.0000\n1\t3\ttür\t3\t1.0000\n"
    "1\t4\t\xef\xbf\xad.\t1\t0.3333\n2\t1\tJa\t0\t0.0000\n4\t1\tthe\t1\t1.0000\n"
    "4\t2\thouse\t0\t0.0000\n";

/* The statistics of the order.tsv of header and rows, written to the temporary file name
 * and read with lang's word list. */
static struct order_stats read_rows(const char *name, const char *rows, const char *lang) {
  char text[1024];
  snprintf(text, sizeof text, "%s%s", header, rows);
  test_write_file(test_tmp_path(name), text);
  struct order_stats s;
  memset(&s, 0, sizeof s);
  struct intrus_error err = {0};
  EXPECT(order_stats_read(test_tmp_path(name), lang, &s, &err) == INTRUS_OK, "%s: %s", name,
         err.msg);
  return s;
}

static void test_read(void) {
  struct order_stats s = read_rows("order.tsv", good, "de");
  EXPECT(s.sentences == 3 && s.skipped == 1 && s.words == 5,
         "%ld sentences (want 3), %ld skipped (1), %ld words (5)", s.sentences, s.skipped,
         s.words);
  double ci, m;
  m = order_stats_mean(&s, WORD_PUNCT, &ci);
  EXPECT(s.n[WORD_PUNCT] == 1 && fabs(m - 1.0 / 3) < 1e-12 && ci == 0.0,
         "punctuation: %ld words, mean %.6f (want 1/3), ci %.3f", s.n[WORD_PUNCT], m, ci);
  m = order_stats_mean(&s, WORD_FUNCTION, &ci);
  EXPECT(s.n[WORD_FUNCTION] == 1 && fabs(m - 2.0 / 3) < 1e-12,
         "function words: %ld, mean %.6f (want 2/3)", s.n[WORD_FUNCTION], m);
  m = order_stats_mean(&s, WORD_CONTENT, &ci);
  /* Content: 0 (Haustür), 1 (the), 0 (house): mean 1/3, sample sd sqrt(1/3), so the
   * interval is 1.96 * sqrt(1/3) / sqrt(3) = 1.96 / 3. */
  EXPECT(s.n[WORD_CONTENT] == 3 && fabs(m - 1.0 / 3) < 1e-12 && fabs(ci - 1.96 / 3) < 1e-12,
         "content words: %ld, mean %.6f (1/3), ci %.6f (%.6f)", s.n[WORD_CONTENT], m, ci,
         1.96 / 3);
  /* Without a word list, function words are words like the rest. */
  s = read_rows("order.tsv", good, NULL);
  EXPECT(s.n[WORD_FUNCTION] == 0 && s.n[WORD_CONTENT] == 4, "no list: %ld function, %ld other",
         s.n[WORD_FUNCTION], s.n[WORD_CONTENT]);
}

/* How left-to-right: Kendall's tau of word position against the order words were begun,
 * worked by hand. Sentence 1 begun left to right (tau 1), 2 right to left (-1), 3 middle
 * first (words begun 2nd, 1st, 3rd: pairs (1,2) discordant, (1,3) and (2,3) concordant,
 * tau 1/3), 4 one word of two pieces (no pair: left out). Mean 1/9 over 3 sentences;
 * sample variance ((8/9)^2 + (10/9)^2 + (2/9)^2) / 2 = 84/81. */
static void test_tau(void) {
  static const char text[] =
      "1\t1\ta\t0\t0\n1\t2\tb\t1\t0.5\n1\t3\tc\t2\t1\n"
      "2\t1\ta\t2\t1\n2\t2\tb\t1\t0.5\n2\t3\tc\t0\t0\n"
      "3\t1\ta\t1\t0.5\n3\t2\tb\t0\t0\n3\t3\tc\t2\t1\n"
      "4\t1\ta@@\t1\t1\n4\t2\tb\t0\t0\n";
  struct order_stats s = read_rows("tau.tsv", text, NULL);
  double ci, tau = order_stats_tau(&s, &ci);
  EXPECT(s.tau_n == 3 && s.l2r == 1 && s.r2l == 1, "%ld sentences with a pair (want 3), %ld "
         "left to right (1), %ld right to left (1)", s.tau_n, s.l2r, s.r2l);
  double want_ci = 1.96 * sqrt(84.0 / 81) / sqrt(3.0);
  EXPECT(fabs(tau - 1.0 / 9) < 1e-12 && fabs(ci - want_ci) < 1e-12,
         "tau %.6f (want 1/9), ci %.6f (want %.6f)", tau, ci, want_ci);
  /* One sentence of one word: no tau at all. */
  struct order_stats none = read_rows("tau1.tsv", "1\t1\ta\t0\t0\n", NULL);
  EXPECT(isnan(order_stats_tau(&none, &ci)) && none.tau_n == 0, "no pair: tau %g",
         order_stats_tau(&none, &ci));
  /* The command says it, in text and JSON. */
  char out[8192];
  int rc = test_run_intrus(test_tmpdir, "analyze order tau.tsv", out, sizeof out);
  EXPECT(rc == 0, "analyze order tau.tsv: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "over 3 sentences of 2+ words: Kendall's tau 0.111 ± 1.152, 1 begun "
                       "left to right, 1 right to left");
  rc = test_run_intrus(test_tmpdir, "analyze order tau.tsv --json", out, sizeof out);
  EXPECT(rc == 0, "--json: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "\"order\": {\"sentences\": 3, \"kendall_tau\": 0.1111, \"ci95\": "
                       "1.1524, \"left_to_right\": 1, \"right_to_left\": 1}");
}

static void refused(const char *name, const char *text, const char *want) {
  test_write_file(test_tmp_path(name), text);
  struct order_stats s;
  memset(&s, 0, sizeof s);
  struct intrus_error err = {0};
  EXPECT(order_stats_read(test_tmp_path(name), "de", &s, &err) == INTRUS_ERR_DATA,
         "%s accepted", name);
  EXPECT_CONTAINS(err.msg, want);
}

static void test_bad(void) {
  char text[1024];
  refused("noheader.tsv", good, "noheader.tsv:1: not an order.tsv");
  snprintf(text, sizeof text, "%s1\t1\tDas\t0\t0\n1\t3\tHaus\t1\t1\n", header);
  refused("gap.tsv", text, "gap.tsv:3: not a row");
  snprintf(text, sizeof text, "%s1\t1\tDas\t0\n", header);
  refused("short.tsv", text, "short.tsv:2: not a row");
  snprintf(text, sizeof text, "%s1\t1\tDas\tx\t0\n", header);
  refused("nan.tsv", text, "nan.tsv:2:");
  snprintf(text, sizeof text, "%s1\t1\tDas\t0\t0\n1\t2\tHaus\t2\t1\n2\t1\tJa\t0\t0\n", header);
  refused("step.tsv", text, "sentence 1: step 2 of a 2-token output");
  snprintf(text, sizeof text, "%s2\t1\tDas\t0\t0\n1\t1\tHaus\t0\t0\n", header);
  refused("back.tsv", text, "back.tsv:3:");
}

/* The first and last row at column x in the series' colour: a bar's top and bottom. */
static bool bar_extent(cairo_surface_t *s, int x, int series, int *top, int *bottom) {
  double rgb[3];
  intrus_plot_colour(series, rgb);
  int want[3] = {(int)(rgb[0] * 255 + 0.5), (int)(rgb[1] * 255 + 0.5), (int)(rgb[2] * 255 + 0.5)};
  int h = cairo_image_surface_get_height(s), stride = cairo_image_surface_get_stride(s);
  const unsigned char *data = cairo_image_surface_get_data(s);
  *top = *bottom = -1;
  for (int y = 0; y < h; y++) {
    uint32_t p = ((const uint32_t *)(data + (size_t)y * stride))[x];
    int r = (p >> 16) & 255, g = (p >> 8) & 255, b = p & 255;
    if (abs(r - want[0]) <= 2 && abs(g - want[1]) <= 2 && abs(b - want[2]) <= 2) {
      if (*top < 0) *top = y;
      *bottom = y;
    }
  }
  return *top >= 0;
}

static void test_command(void) {
  char out[8192];
  int rc = test_run_intrus(test_tmpdir, "analyze order order.tsv --lang de -L mine -o bars.png",
                           out, sizeof out);
  EXPECT(rc == 0, "exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "| punctuation | 1 | 0.333 ± 0.000 |");
  EXPECT_CONTAINS(out, "| function words | 1 | 0.667 ± 0.000 |");
  EXPECT_CONTAINS(out, "| content words | 3 | 0.333 ± 0.653 |");
  EXPECT_CONTAINS(out, "mine: 3 sentences, 5 words (1 sentences of fewer than 2 tokens");
  cairo_surface_t *s = cairo_image_surface_create_from_png(test_tmp_path("bars.png"));
  EXPECT(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS, "cairo reads bars.png back");
  if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
    /* Three groups of one bar across the plot area (which starts about 60 pixels in):
     * the function-word bar (2/3) is twice as tall as the punctuation bar (1/3), on the
     * same base line. Columns a quarter of a group from each group's centre miss the
     * error bars and the value labels. */
    int w = cairo_image_surface_get_width(s), t[2], b[2];
    double left = 62, group = (w - 14 - left) / 3.0;
    bool found = true;
    for (int g = 0; g < 2; g++)
      found &= bar_extent(s, (int)(left + group * (g + 0.25)), 0, &t[g], &b[g]);
    EXPECT(found, "the bars are on the chart");
    if (found) {
      double h0 = b[0] - t[0] + 1, h1 = b[1] - t[1] + 1;
      EXPECT(abs(b[0] - b[1]) <= 1, "the bars stand on one line (%d, %d)", b[0], b[1]);
      EXPECT(h0 > 50 && fabs(h1 / h0 - 2.0) < 0.03, "bar heights %.0f and %.0f: want 1:2", h0,
             h1);
    }
  }
  cairo_surface_destroy(s);
  rc = test_run_intrus(test_tmpdir, "analyze order order.tsv order.tsv -L one", out, sizeof out);
  EXPECT(rc == 2, "one label for two files: exit %d", rc);
  rc = test_run_intrus(test_tmpdir, "analyze order nosuch.tsv", out, sizeof out);
  EXPECT(rc == 5, "a missing file: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "nosuch.tsv");
  rc = test_run_intrus(test_tmpdir, "analyze order order.tsv --lang ja --json", out, sizeof out);
  EXPECT(rc == 0, "--lang ja --json: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "no function-word list for 'ja'");
  EXPECT_CONTAINS(out, "\"words\": {\"words\": 4");
}

/* intrus analyze time: bench_intrus t's TSV drawn, one curve per decoder; bad files. */
/* The lowest dark pixel in columns [x - 10, x + 10] below row from; -1 without one. */
static int lowest_ink(cairo_surface_t *s, int x, int from) {
  const unsigned char *d = cairo_image_surface_get_data(s);
  int stride = cairo_image_surface_get_stride(s), h = cairo_image_surface_get_height(s);
  int low = -1;
  for (int y = from; y < h; y++)
    for (int dx = -10; dx <= 10; dx++) {
      const unsigned char *p = d + (size_t)y * (size_t)stride + 4 * (size_t)(x + dx);
      if (p[0] < 100 && p[1] < 100 && p[2] < 100) low = y;
    }
  return low;
}

/* Category names wider than their group alternate between two rows (eleven parts of
 * speech at 900 pixels overlapped); narrow ones stay on one. */
static void test_bar_labels(void) {
  static const char *const wide[] = {"prepositions", "conjunctions", "determiners",
                                     "prepositions", "conjunctions", "determiners",
                                     "prepositions", "conjunctions", "determiners",
                                     "prepositions", "conjunctions"};
  static const char *const narrow[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"};
  static const char *const series[] = {"one"};
  double value[11];
  for (int i = 0; i < 11; i++) value[i] = 0.5;
  for (int k = 0; k < 2; k++) {
    struct bar_chart c = {.title = "t", .ytitle = "y", .ncat = 11, .nseries = 1,
                          .categories = k ? narrow : wide, .series = series, .value = value,
                          .ymin = 0, .ymax = 1, .width = 900, .height = 560};
    struct intrus_error err = {0};
    const char *path = test_tmp_path("labels.png");
    EXPECT(intrus_bars_draw(path, &c, &err) == INTRUS_OK, "%s", err.msg);
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
      EXPECT(false, "cairo reads labels.png back");
      cairo_surface_destroy(s);
      continue;
    }
    int w = cairo_image_surface_get_width(s);
    double left = 62, group = (w - 14 - left) / 11.0;
    int from = 500; /* below the bars' base line, in the label band */
    int a = lowest_ink(s, (int)(left + group * 4.5), from);
    int b = lowest_ink(s, (int)(left + group * 5.5), from);
    if (k == 0)
      EXPECT(a > 0 && b > a + 8, "wide names: the odd one's row (ink to %d) under the even "
             "one's (%d)", b, a);
    else
      EXPECT(a > 0 && abs(a - b) <= 3, "narrow names on one row (ink to %d and %d)", a, b);
    cairo_surface_destroy(s);
  }
}

static void test_time(void) {
  test_write_file(test_tmp_path("times.tsv"),
                  "decoder\tlength\tms_per_sentence\ninsertion\t5\t3.1\n"
                  "left-to-right\t5\t1.0\ninsertion\t10\t9.5\nleft-to-right\t10\t2.1\n");
  char out[4096];
  int rc = test_run_intrus(test_tmpdir, "analyze time times.tsv -o times.png", out, sizeof out);
  EXPECT(rc == 0, "analyze time: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "insertion: 5:3.10 10:9.50");
  EXPECT_CONTAINS(out, "left-to-right: 5:1.00 10:2.10");
  cairo_surface_t *s = cairo_image_surface_create_from_png(test_tmp_path("times.png"));
  EXPECT(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS &&
             cairo_image_surface_get_width(s) == 900,
         "times.png is a 900-pixel-wide PNG");
  cairo_surface_destroy(s);
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"length\tms\n", "times-bad.tsv:1: want the header"},
      {"decoder\tlength\tms_per_sentence\ninsertion\t5\n", "times-bad.tsv:2: not"},
      {"decoder\tlength\tms_per_sentence\ninsertion\t0\t1\n", "times-bad.tsv:2: not"},
      {"decoder\tlength\tms_per_sentence\n", "times-bad.tsv: no rows"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    test_write_file(test_tmp_path("times-bad.tsv"), bad[i].text);
    rc = test_run_intrus(test_tmpdir, "analyze time times-bad.tsv -o bad.png", out, sizeof out);
    EXPECT(rc == 5, "bad times file %zu: exit %d: %s", i, rc, out);
    EXPECT_CONTAINS(out, bad[i].want);
    EXPECT(access(test_tmp_path("bad.png"), F_OK) != 0, "a bad file drew a picture");
  }
  rc = test_run_intrus(test_tmpdir, "analyze time times.tsv", out, sizeof out);
  EXPECT(rc == 2, "no -o: exit %d", rc);
}

/* ---- parts of speech (pos_tag.c) ------------------------------------------------ */

static void test_pos_tags(void) {
  static const struct {
    const char *analysis;
    enum pos_class want;
  } cases[] = {
      {"cat<n><sg>", POS_NOUN},          {"Paris<np><loc>", POS_NOUN},
      {"give<vblex><past>", POS_VERB},   {"be<vbser><pri><p3><sg>", POS_VERB},
      {"can<vaux><past>", POS_VERB},     {"old<adj><sint>", POS_ADJ},
      {"only<adv>", POS_ADV},            {"prpers<prn><subj>", POS_PRON},
      {"on<pr>", POS_ADP},               {"but<cnjcoo>", POS_CONJ},
      {"if<cnjadv>", POS_CONJ},          {"the<det><def><sp>", POS_DET},
      {"two<num><pl>", POS_NUM},         {",<cm>", POS_PUNCT},
      {".<sent>", POS_PUNCT},            {"(<lpar>", POS_PUNCT},
      {"*tick", POS_OTHER},              {"oh<ij>", POS_OTHER},
      {"do<vbdo><pri>+not<adv>", POS_VERB}, {"", POS_OTHER},
      {"nbsp", POS_OTHER},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    EXPECT(pos_class_of_analysis(cases[i].analysis) == cases[i].want, "'%s': %s, want %s",
           cases[i].analysis, pos_class_name(pos_class_of_analysis(cases[i].analysis)),
           pos_class_name(cases[i].want));
  EXPECT(pos_default_mode("de") == NULL && pos_default_mode(NULL) == NULL &&
             pos_default_mode("en") && pos_default_mode("ru"),
         "Debian has analysers for en and ru, none for de");
}

/* lang's mode file, or NULL (saying so) when its Apertium package is not installed. */
static const char *installed_mode(const char *lang, const char *package) {
  const char *mode = pos_default_mode(lang);
  if (access(mode, R_OK) == 0) return mode;
  printf("# %s is not installed (apt-get install %s): %s parts of speech not checked\n", mode,
         package, lang);
  return NULL;
}

/* Tags nsent sentences of words with mode and checks each word's class. */
static void expect_tags(const char *mode, char **words, const long *start, long nsent,
                        const enum pos_class *want, struct pos_tag_info *info) {
  long n = start[nsent];
  int *cls = calloc((size_t)n, sizeof *cls);
  struct intrus_error err = {0};
  EXPECT(pos_tag_apertium(mode, words, start, nsent, cls, info, &err) == INTRUS_OK, "%s",
         err.msg);
  for (long i = 0; i < n; i++)
    EXPECT(cls[i] == (int)want[i], "'%s': %s, want %s", words[i],
           pos_class_name((enum pos_class)cls[i]), pos_class_name(want[i]));
  free(cls);
}

/* English through apertium-eng-spa: its HMM tagger, a multiword unit ("at the bottom
 * of": four prepositions), text outside units ("%", "+", the escaped "/"), a word the
 * analyser does not know ("zorblax"), and two sentences kept apart. */
static void test_pos_english(void) {
  const char *mode = installed_mode("en", "apertium-eng-spa");
  if (!mode) return;
  char *words[] = {"The", "cat", "sat", "at", "the", "bottom", "of", "the", "stairs", ".",
                   "She", "opened", "%MOD1+Up/Down", "and", "zorblax", "two", "files",
                   "quickly"};
  static const enum pos_class want[] = {
      POS_DET,  POS_NOUN, POS_VERB,  POS_ADP,  POS_ADP, POS_ADP, POS_ADP, POS_DET, POS_NOUN,
      POS_PUNCT, POS_PRON, POS_VERB, POS_OTHER, POS_CONJ, POS_OTHER, POS_NUM, POS_NOUN,
      POS_ADV};
  long start[] = {0, 10, 18};
  int cls[18];
  struct pos_tag_info info;
  struct intrus_error err = {0};
  expect_tags(mode, words, start, 2, want, &info);
  EXPECT(info.hmm_sentences == 2 && info.first_sentences == 0,
         "the English pair's HMM tagger on %ld of 2 sentences", info.hmm_sentences);
  EXPECT(info.unknown >= 2, "%ld unknown words (MOD1 and zorblax at least)", info.unknown);

  /* apertium-destxt moves '~' out of the text into a superblank ("[~]"): still the
   * words' characters (an En-Ru output with gcc's "~%qT" stopped the analysis). */
  char *tilde[] = {"She", "~%qT", "and", "~", "files"};
  static const enum pos_class want_tilde[] = {POS_PRON, POS_OTHER, POS_CONJ, POS_OTHER,
                                              POS_NOUN};
  long start_tilde[] = {0, 5};
  expect_tags(mode, tilde, start_tilde, 1, want_tilde, &info);

  /* A tagger that fails (as Debian 12's Russian one crashes): the first reading of each
   * unit the analyser leaves, and info says so. */
  char broken_tagger[512];
  snprintf(broken_tagger, sizeof broken_tagger,
           "lt-proc '/usr/share/apertium/apertium-eng-spa/eng-spa.automorf.bin' | "
           "apertium-tagger -g $2 '%s'\n", test_tmp_path("missing.prob"));
  test_write_file(test_tmp_path("no-tagger.mode"), broken_tagger);
  EXPECT(pos_tag_apertium(test_tmp_path("no-tagger.mode"), words, start, 2, cls, &info, &err) ==
             INTRUS_OK, "%s", err.msg);
  EXPECT(info.hmm_sentences == 0 && info.first_sentences == 2,
         "first readings in %ld of 2 sentences", info.first_sentences);
  EXPECT(cls[1] == POS_NOUN && cls[3] == POS_ADP && cls[9] == POS_PUNCT && cls[15] == POS_NUM,
         "first readings: cat %s, at %s, . %s, two %s", pos_class_name(cls[1]),
         pos_class_name(cls[3]), pos_class_name(cls[9]), pos_class_name(cls[15]));

  /* A tagger that crashes on one sentence of three: the whole input takes the first
   * readings (one file's words are classed one way). */
  char script[1024], crashy[1024];
  snprintf(script, sizeof script,
           "#!/bin/sh\nx=$(cat)\ncase \"$x\" in *zorblax*) exit 139;; esac\n"
           "printf '%%s\\n' \"$x\" | apertium-tagger \"$@\"\n");
  test_write_file(test_tmp_path("crashy-apertium-tagger"), script);
  chmod(test_tmp_path("crashy-apertium-tagger"), 0755);
  snprintf(crashy, sizeof crashy,
           "lt-proc '/usr/share/apertium/apertium-eng-spa/eng-spa.automorf.bin' | '%s' -g "
           "'/usr/share/apertium/apertium-eng-spa/eng-spa.prob'\n",
           test_tmp_path("crashy-apertium-tagger"));
  test_write_file(test_tmp_path("crashy.mode"), crashy);
  char *three[] = {"The", "cat", "sat", ".", "She", "saw", "zorblax", ".", "Two", "files", "."};
  long start3[] = {0, 4, 8, 11};
  int cls3[11];
  EXPECT(pos_tag_apertium(test_tmp_path("crashy.mode"), three, start3, 3, cls3, &info, &err) ==
             INTRUS_OK, "%s", err.msg);
  EXPECT(info.hmm_sentences == 0 && info.first_sentences == 3,
         "tagger on %ld sentences (want 0), first readings on %ld (3)", info.hmm_sentences,
         info.first_sentences);
  EXPECT(cls3[1] == POS_NOUN && cls3[2] == POS_VERB && cls3[4] == POS_PRON &&
             cls3[6] == POS_OTHER && cls3[8] == POS_NUM && cls3[9] == POS_NOUN,
         "cat %s, sat %s, She %s, zorblax %s, Two %s, files %s", pos_class_name(cls3[1]),
         pos_class_name(cls3[2]), pos_class_name(cls3[4]), pos_class_name(cls3[6]),
         pos_class_name(cls3[8]), pos_class_name(cls3[9]));

  /* A mode whose analyser cannot run is an error naming it, not classes. */
  test_write_file(test_tmp_path("broken.mode"), "no-such-analyser-program x | apertium-tagger -g y\n");
  EXPECT(pos_tag_apertium(test_tmp_path("broken.mode"), words, start, 2, cls, &info, &err) ==
             INTRUS_ERR_IO, "a broken pipeline accepted");
  EXPECT_CONTAINS(err.msg, "cannot run the Apertium pipeline");
  EXPECT(pos_tag_apertium(test_tmp_path("none.mode"), words, start, 2, cls, &info, &err) ==
             INTRUS_ERR_IO, "a missing mode file accepted");
  EXPECT_CONTAINS(err.msg, "apertium-eng-spa");

  /* The command: an English trace by part of speech, and --pos where Debian has no
   * analyser. */
  char text[1024], out[8192];
  snprintf(text, sizeof text, "%s1\t1\tThe\t1\t0.5\n1\t2\tcat\t0\t0\n1\t3\tsat\t2\t1\n",
           header);
  test_write_file(test_tmp_path("en.tsv"), text);
  int rc = test_run_intrus(test_tmpdir, "analyze order en.tsv --lang en --pos", out, sizeof out);
  EXPECT(rc == 0, "analyze order --pos: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "| nouns | 1 | 0.000 ± 0.000 |");
  EXPECT_CONTAINS(out, "| determiners | 1 | 0.500 ± 0.000 |");
  EXPECT_CONTAINS(out, "| verbs | 1 | 1.000 ± 0.000 |");
  EXPECT_CONTAINS(out, "the HMM tagger's readings in 1 sentences, the first reading the "
                       "analyser leaves in 0");
  rc = test_run_intrus(test_tmpdir, "analyze order en.tsv --lang de --pos", out, sizeof out);
  EXPECT(rc == 2, "--pos for German: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "no part-of-speech analyser for 'de'");
}

/* Russian through apertium-bel-rus (its HMM tagger, or where that crashes, as Debian
 * 12's does on some inputs, the first reading its constraint grammar leaves). */
static void test_pos_russian(void) {
  const char *mode = installed_mode("ru", "apertium-bel-rus");
  if (!mode) return;
  char *words[] = {"Она", "открыла", "новый", "документ", "в", "редакторе", "."};
  static const enum pos_class want[] = {POS_PRON, POS_VERB, POS_ADJ, POS_NOUN,
                                        POS_ADP,  POS_NOUN, POS_PUNCT};
  long start[] = {0, 7};
  struct pos_tag_info info;
  expect_tags(mode, words, start, 1, want, &info);
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-order-XXXXXX")) return 99;
  test_classify();
  test_read();
  test_tau();
  test_bad();
  test_command();
  test_bar_labels();
  test_time();
  test_pos_tags();
  test_pos_english();
  test_pos_russian();
  if (!tu_failures) test_remove_tmpdir(); /* kept for a look when a check failed */
  test_release_font_caches(); /* test_bar_labels drew in-process */
  return test_finish("test_order_stats");
}

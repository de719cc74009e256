/* Decoding-order traces: the exact text of a hand-made trajectory (the paper's Figure 1
 * style), relative generation indices worked out by hand, the empty output, PNG and SVG
 * pictures (read back: one highlighted box per step, in the column of the word that
 * step inserted), subword output drawn with glyphs the font has and a legend for its
 * marks, and errors that name the path without leaving temporary files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cairo.h>

#include "intrus/text.h"
#include "intrus/trace.h"
#include "viz/draw.h"
#include "testutil.h"

/* "sat", "cat", ".", "the", "mat", "on", "the": the cat sat on the mat . */
static const struct intrus_ins_step cat_steps[] = {{0, 10}, {0, 11}, {2, 12}, {0, 13},
                                                   {3, 14}, {3, 15}, {4, 13}};
static const char *const cat_words[] = {"sat", "cat", ".", "the", "mat", "on", "the"};
static const struct intrus_trace cat = {.len = 7, .steps = cat_steps, .words = cat_words};
/* Step that wrote each final column, by hand. */
static const int cat_when[7] = {3, 1, 0, 5, 6, 4, 2};

static char *write_text(const struct intrus_trace *t, int index, enum intrus_status *st,
                        struct intrus_error *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  *st = intrus_trace_write_text(f, "out/trace.txt", index, t, err);
  fclose(f);
  return buf;
}

static void test_text(void) {
  struct intrus_error err = {0};
  enum intrus_status st;
  char *s = write_text(&cat, 7, &st, &err);
  EXPECT(st == INTRUS_OK, "%s", err.msg);
  const char *want = "# sentence 7\n"
                     "1\t[sat]\n"
                     "2\t[cat] sat\n"
                     "3\tcat sat [.]\n"
                     "4\t[the] cat sat .\n"
                     "5\tthe cat sat [mat] .\n"
                     "6\tthe cat sat [on] mat .\n"
                     "7\tthe cat sat on [the] mat .\n"
                     "\n";
  EXPECT(strcmp(s, want) == 0, "got:\n%s", s);
  free(s);

  struct intrus_trace empty = {.len = 0, .steps = NULL, .words = NULL};
  s = write_text(&empty, 2, &st, &err);
  EXPECT(st == INTRUS_OK && strcmp(s, "# sentence 2\n0\t(empty)\n\n") == 0, "empty: %s", s);
  free(s);

  struct intrus_ins_step one_step[] = {{0, 9}};
  const char *one_word[] = {"hello"};
  struct intrus_trace one = {.len = 1, .steps = one_step, .words = one_word};
  s = write_text(&one, 1, &st, &err);
  EXPECT(st == INTRUS_OK && strcmp(s, "# sentence 1\n1\t[hello]\n\n") == 0, "one: %s", s);
  free(s);

  /* A step that inserts beyond its partial output. */
  struct intrus_ins_step bad_steps[] = {{0, 9}, {2, 9}};
  const char *bad_words[] = {"a", "b"};
  struct intrus_trace bad = {.len = 2, .steps = bad_steps, .words = bad_words};
  s = write_text(&bad, 1, &st, &err);
  EXPECT(st == INTRUS_ERR_INVALID, "a bad slot is refused (%d)", st);
  EXPECT_CONTAINS(err.msg, "out/trace.txt");
  EXPECT_CONTAINS(err.msg, "step 2");
  free(s);

  /* A stream that cannot be written. */
  FILE *ro = fopen("/dev/null", "r");
  st = intrus_trace_write_text(ro, "out/trace.txt", 1, &cat, &err);
  fclose(ro);
  EXPECT(st == INTRUS_ERR_IO, "writing to a read-only stream fails (%d)", st);
  EXPECT_CONTAINS(err.msg, "out/trace.txt");
}

static void test_relative(void) {
  double rel[7];
  int order[7];
  intrus_trace_relative_index(&cat, rel, order);
  for (int j = 0; j < 7; j++) {
    EXPECT(order[j] == cat_when[j], "column %d: step %d, want %d", j, order[j], cat_when[j]);
    EXPECT_NEAR(rel[j], cat_when[j] / 6.0, 1e-15);
  }
  double rel2[7];
  intrus_trace_relative_index(&cat, rel2, NULL);
  EXPECT(memcmp(rel, rel2, sizeof rel) == 0, "order may be NULL");

  struct intrus_ins_step one_step[] = {{0, 9}};
  const char *one_word[] = {"x"};
  struct intrus_trace one = {.len = 1, .steps = one_step, .words = one_word};
  rel[0] = 5.0;
  order[0] = 5;
  intrus_trace_relative_index(&one, rel, order);
  EXPECT(rel[0] == 0.0 && order[0] == 0, "one token: relative index 0 (%g)", rel[0]);

  /* Right to left: every token goes in front, so the last column was written first. */
  struct intrus_ins_step r2l[4] = {{0, 5}, {0, 6}, {0, 7}, {0, 8}};
  const char *w[4] = {"d", "c", "b", "a"};
  struct intrus_trace t = {.len = 4, .steps = r2l, .words = w};
  intrus_trace_relative_index(&t, rel, order);
  for (int j = 0; j < 4; j++) {
    EXPECT(order[j] == 3 - j, "r2l column %d: step %d", j, order[j]);
    EXPECT_NEAR(rel[j], (3 - j) / 3.0, 1e-15);
  }

  struct intrus_trace empty = {.len = 0, .steps = NULL, .words = NULL};
  rel[0] = 7.0;
  intrus_trace_relative_index(&empty, rel, order);
  EXPECT(rel[0] == 7.0, "an empty output writes nothing");
}

static bool is_highlight(uint32_t px) {
  /* The box fill, (1.0, 0.84, 0.45) in ARGB32; the rest of the picture is white, grey
   * text and the box's darker border. */
  int r = (px >> 16) & 255, g = (px >> 8) & 255, b = px & 255;
  return r == 255 && abs(g - 214) <= 2 && abs(b - 115) <= 2;
}

/* Reads the PNG back and finds the highlighted boxes: one per step, top to bottom,
 * and their left-to-right order must be the order of the columns the steps wrote. */
static void check_png_layout(const char *path, const struct intrus_trace *t, const int *when) {
  cairo_surface_t *s = cairo_image_surface_create_from_png(path);
  EXPECT(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS, "cairo reads %s back", path);
  if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
    cairo_surface_destroy(s);
    return;
  }
  int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
  int stride = cairo_image_surface_get_stride(s);
  const unsigned char *data = cairo_image_surface_get_data(s);
  double xc[64];
  int bands = 0, in_band = 0;
  double sx = 0;
  long cnt = 0;
  for (int y = 0; y < h; y++) {
    const uint32_t *row = (const uint32_t *)(data + (size_t)y * stride);
    long n = 0;
    double sum = 0;
    for (int x = 0; x < w; x++)
      if (is_highlight(row[x])) {
        n++;
        sum += x;
      }
    if (n > 0) {
      in_band = 1;
      cnt += n;
      sx += sum;
    } else if (in_band) {
      if (bands < 64) xc[bands] = sx / (double)cnt;
      bands++;
      in_band = 0;
      cnt = 0;
      sx = 0;
    }
  }
  if (in_band && bands < 64) xc[bands++] = sx / (double)cnt;
  EXPECT(bands == t->len, "%s: %d highlighted rows for %d steps", path, bands, t->len);
  if (bands == t->len)
    for (int a = 0; a < t->len; a++)
      for (int b = 0; b < t->len; b++) {
        /* Step a's box is left of step b's exactly when a's column is. */
        int ca = -1, cb = -1;
        for (int j = 0; j < t->len; j++) {
          if (when[j] == a) ca = j;
          if (when[j] == b) cb = j;
        }
        EXPECT((xc[a] < xc[b]) == (ca < cb), "%s: steps %d and %d are drawn in the wrong order",
               path, a, b);
      }
  cairo_surface_destroy(s);
}

/* Whether the pictures' font (draw_set_font's sans-serif, regular or bold) has a glyph
 * for every character of s: a character it lacks maps to glyph 0, drawn as a box. */
static bool font_has_glyphs(const char *s, bool bold) {
  cairo_surface_t *surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t *cr = cairo_create(surf);
  draw_set_font(cr, 14.0, bold);
  cairo_glyph_t *glyphs = NULL;
  int n = 0;
  cairo_status_t cs = cairo_scaled_font_text_to_glyphs(cairo_get_scaled_font(cr), 0, 0, s, -1,
                                                       &glyphs, &n, NULL, NULL, NULL);
  bool ok = cs == CAIRO_STATUS_SUCCESS;
  for (int i = 0; ok && i < n; i++) ok = glyphs[i].index != 0;
  cairo_glyph_free(glyphs);
  cairo_destroy(cr);
  cairo_surface_destroy(surf);
  return ok;
}

static int png_height(const char *path) {
  cairo_surface_t *s = cairo_image_surface_create_from_png(path);
  int h = cairo_surface_status(s) == CAIRO_STATUS_SUCCESS ? cairo_image_surface_get_height(s) : -1;
  cairo_surface_destroy(s);
  return h;
}

/* Subword output as the tokenizer and BPE write it: the joiner mark U+FFED before
 * punctuation glued to its left ("￭."), split off by BPE on its own ("￭@@"), and
 * pieces ending in "@@". The default font has no glyph for the mark, so the pictures
 * must not hand it to cairo (it drew a box before every full stop); they draw a mark of
 * their own, and the legend says what it and "@@" mean. */
static void test_subword_pictures(void) {
  const char *J = INTRUS_JOINER;
  if (font_has_glyphs(J, false))
    fprintf(stderr, "note: this font has a glyph for U+FFED; the pictures still draw their own\n");
  struct {
    const char *word, *shown;
    bool joined;
  } cases[] = {
      {"\xef\xbf\xad.", ".", true},      {"\xef\xbf\xad@@", "@@", true},
      {"\xef\xbf\xad(", "(", true},      {"Bi@@", "Bi@@", false},
      {"Dialog", "Dialog", false},        {"\xef\xbf\xad", "", true},
      {"caf\xc3", "caf\xef\xbf\xbd", false}, /* an invalid byte still becomes U+FFFD */
      {"a\xef\xbf\xad" "b", "ab", true},     /* nowhere else from the tokenizer; no box either */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    bool joined = !cases[i].joined;
    char *t = draw_token_text(cases[i].word, &joined);
    EXPECT(strcmp(t, cases[i].shown) == 0 && joined == cases[i].joined,
           "draw_token_text(\"%s\") = \"%s\" joined %d, want \"%s\" joined %d", cases[i].word, t,
           joined, cases[i].shown, cases[i].joined);
    EXPECT(!strstr(t, J), "no joiner mark is drawn as text: \"%s\"", t);
    EXPECT(font_has_glyphs(t, false) && font_has_glyphs(t, true),
           "the font has every glyph of \"%s\" as drawn for \"%s\"", t, cases[i].word);
    free(t);
  }

  /* "Die Bi@@ oth@@ ek ( $ ) ." written in some order, and the same words without the
   * marks: the pictures lay out alike, one highlighted box per step, and the first has
   * two legend lines more (the joiner mark, "@@"). */
  static const struct intrus_ins_step steps[] = {{0, 9}, {0, 9}, {1, 9}, {0, 9},
                                                 {3, 9}, {1, 9}, {2, 9}, {4, 9}};
  const char *marked[] = {"\xef\xbf\xad.", "$", "\xef\xbf\xad)", "Die",
                          "ek", "Bi@@", "oth@@", "\xef\xbf\xad("};
  const char *plain[] = {".", "$", ")", "Die", "ek", "Bi", "oth", "("};
  struct intrus_trace tm = {.len = 8, .steps = steps, .words = marked};
  struct intrus_trace tp = {.len = 8, .steps = steps, .words = plain};
  int when[8];
  intrus_trace_relative_index(&tm, (double[8]){0}, when);
  struct intrus_error err = {0};
  const char *pm = test_tmp_path("marked.png"), *pp = test_tmp_path("plain.png");
  EXPECT(intrus_trace_draw(pm, &tm, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_trace_draw(pp, &tp, &err) == INTRUS_OK, "%s", err.msg);
  check_png_layout(pm, &tm, when);
  check_png_layout(pp, &tp, when);
  int hm = png_height(pm), hp = png_height(pp);
  EXPECT(hm > hp + 20 && hm < hp + 40, "the legend of marked words is two lines longer (%d, %d)",
         hm, hp);
  const char *sm = test_tmp_path("marked.svg");
  EXPECT(intrus_trace_draw(sm, &tm, &err) == INTRUS_OK, "%s", err.msg);
}

static void test_pictures(void) {
  struct intrus_error err = {0};
  size_t n;
  const char *png = test_tmp_path("cat.png");
  EXPECT(intrus_trace_draw(png, &cat, &err) == INTRUS_OK, "%s", err.msg);
  unsigned char *b = test_read_bytes(png, &n);
  EXPECT(b && n > 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0, "%s is a PNG", png);
  free(b);
  check_png_layout(png, &cat, cat_when);

  /* Drawing again replaces the file. */
  struct intrus_ins_step r2l[3] = {{0, 5}, {0, 6}, {0, 7}};
  const char *w[3] = {"three", "two", "one"};
  struct intrus_trace t3 = {.len = 3, .steps = r2l, .words = w};
  const int when3[3] = {2, 1, 0};
  EXPECT(intrus_trace_draw(png, &t3, &err) == INTRUS_OK, "%s", err.msg);
  check_png_layout(png, &t3, when3);

  const char *svg = test_tmp_path("cat.SVG");
  EXPECT(intrus_trace_draw(svg, &cat, &err) == INTRUS_OK, "%s", err.msg);
  b = test_read_bytes(svg, &n);
  EXPECT(b && strstr((char *)b, "<svg"), "%s is an SVG", svg);
  free(b);

  struct intrus_trace empty = {.len = 0, .steps = NULL, .words = NULL};
  const char *epng = test_tmp_path("empty.png"), *esvg = test_tmp_path("empty.svg");
  EXPECT(intrus_trace_draw(epng, &empty, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_trace_draw(esvg, &empty, &err) == INTRUS_OK, "%s", err.msg);
  b = test_read_bytes(epng, &n);
  EXPECT(b && n > 8 && memcmp(b, "\x89PNG", 4) == 0, "the empty output draws a PNG");
  free(b);

  /* A word that is not valid UTF-8 (a piece of a character) is still drawn. */
  struct intrus_ins_step two_steps[] = {{0, 5}, {1, 6}};
  const char *two_words[] = {"caf\xc3", "\xa9 \xed\xa0\x80 \xf4\x90\x80\x80 ok"};
  struct intrus_trace two = {.len = 2, .steps = two_steps, .words = two_words};
  const char *upng = test_tmp_path("utf8.png"), *usvg = test_tmp_path("utf8.svg");
  EXPECT(intrus_trace_draw(upng, &two, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_trace_draw(usvg, &two, &err) == INTRUS_OK, "%s", err.msg);
  const int when2[2] = {0, 1};
  check_png_layout(upng, &two, when2);

  /* Errors name the path and leave nothing behind. */
  const char *gif = test_tmp_path("cat.gif");
  EXPECT(intrus_trace_draw(gif, &cat, &err) == INTRUS_ERR_INVALID, "a .gif is refused");
  EXPECT_CONTAINS(err.msg, gif);
  const char *noext = test_tmp_path("cat");
  EXPECT(intrus_trace_draw(noext, &cat, &err) == INTRUS_ERR_INVALID, "no extension is refused");
  EXPECT_CONTAINS(err.msg, noext);
  struct stat sb;
  EXPECT(stat(gif, &sb) != 0 && stat(noext, &sb) != 0, "refused pictures are not written");

  const char *missing = test_tmp_path("no/such/dir/cat.png");
  EXPECT(intrus_trace_draw(missing, &cat, &err) == INTRUS_ERR_IO, "an unwritable directory");
  EXPECT_CONTAINS(err.msg, missing);
  /* The temporary file is written, but the rename onto a directory fails. */
  const char *isdir = test_tmp_path("dir.png");
  mkdir(isdir, 0777);
  EXPECT(intrus_trace_draw(isdir, &cat, &err) == INTRUS_ERR_IO, "a directory in the way");
  EXPECT_CONTAINS(err.msg, isdir);
  rmdir(isdir);

  struct intrus_ins_step bad_steps[] = {{1, 9}};
  const char *bad_words[] = {"a"};
  struct intrus_trace bad = {.len = 1, .steps = bad_steps, .words = bad_words};
  const char *badpng = test_tmp_path("bad.png");
  EXPECT(intrus_trace_draw(badpng, &bad, &err) == INTRUS_ERR_INVALID, "a bad trace is refused");
  EXPECT_CONTAINS(err.msg, badpng);
  EXPECT(stat(badpng, &sb) != 0, "a refused trace writes no picture");

  /* Past cairo's limit on an image's side: PNG refuses, naming the path. */
  enum { LONG = 3000 };
  static struct intrus_ins_step long_steps[LONG];
  static const char *long_words[LONG];
  for (int s = 0; s < LONG; s++) {
    long_steps[s] = (struct intrus_ins_step){s, 5};
    long_words[s] = "word";
  }
  struct intrus_trace longt = {.len = LONG, .steps = long_steps, .words = long_words};
  const char *bigpng = test_tmp_path("long.png");
  EXPECT(intrus_trace_draw(bigpng, &longt, &err) == INTRUS_ERR_INVALID, "a 3000-word PNG");
  EXPECT_CONTAINS(err.msg, bigpng);
  EXPECT(stat(bigpng, &sb) != 0, "a refused PNG is not written");

  EXPECT(test_count_temp_files() == 0, "%d temporary files left in %s", test_count_temp_files(),
         test_tmpdir);
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-trace-XXXXXX")) return 99;
  test_text();
  test_relative();
  test_pictures();
  test_subword_pictures();
  test_remove_tmpdir();
  test_release_font_caches();
  return test_finish("test_trace");
}

/* Learning curves (intrus plot): two synthetic runs drawn into a PNG of the requested
 * size, read back: each run's colour is on the picture, the better run's curve above the
 * worse one; a log resumed from an older checkpoint; and the errors, each naming its
 * file (and line), leaving no picture and no temporary file. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cairo.h>

#include "viz/plot.h"
#include "testutil.h"

static void write_log(const char *run, const char *text) {
  char path[600];
  mkdir(test_tmp_path(run), 0700);
  snprintf(path, sizeof path, "%s/train.log", run);
  test_write_file(test_tmp_path(path), text);
}

static const char header[] = "step\tloss\tlr\ttokens_per_s\tvalid_loss\tvalid_bleu\ttrain_s\n";

/* A run validated every 100 steps, logging every 50: BLEU from b0 rising by db. */
static void write_run(const char *run, double b0, double db) {
  char text[8192];
  size_t k = (size_t)snprintf(text, sizeof text, "%s", header);
  for (int step = 50; step <= 1000; step += 50) {
    bool v = step % 100 == 0;
    k += (size_t)snprintf(text + k, sizeof text - k, "%d\t%.6f\t0.001\t12000.0\t", step,
                          8.0 - step / 200.0);
    if (v) k += (size_t)snprintf(text + k, sizeof text - k, "%.6f\t%.2f", 7.0 - step / 250.0,
                                 b0 + db * step / 100);
    else k += (size_t)snprintf(text + k, sizeof text - k, "\t");
    k += (size_t)snprintf(text + k, sizeof text - k, "\t%.1f\n", step * 0.9);
  }
  write_log(run, text);
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* Pixels within 8 levels of run i's colour; their mean row in *mean_y, their leftmost
 * column in *min_x. */
static long colour_pixels(cairo_surface_t *s, int i, double *mean_y, int *min_x) {
  double rgb[3];
  intrus_plot_colour(i, rgb);
  int want[3] = {(int)(rgb[0] * 255 + 0.5), (int)(rgb[1] * 255 + 0.5), (int)(rgb[2] * 255 + 0.5)};
  int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
  int stride = cairo_image_surface_get_stride(s);
  const unsigned char *data = cairo_image_surface_get_data(s);
  long n = 0;
  double sy = 0;
  *min_x = w;
  for (int y = 0; y < h; y++) {
    const uint32_t *row = (const uint32_t *)(data + (size_t)y * stride);
    for (int x = 0; x < w; x++) {
      int r = (row[x] >> 16) & 255, g = (row[x] >> 8) & 255, b = row[x] & 255;
      if (abs(r - want[0]) <= 8 && abs(g - want[1]) <= 8 && abs(b - want[2]) <= 8) {
        n++;
        sy += y;
        if (x < *min_x) *min_x = x;
      }
    }
  }
  *mean_y = n ? sy / (double)n : -1;
  return n;
}

/* The plot area's left edge: the first column that is mostly the frame's grey. */
static int frame_left(cairo_surface_t *s) {
  int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
  int stride = cairo_image_surface_get_stride(s);
  const unsigned char *data = cairo_image_surface_get_data(s);
  for (int x = 0; x < w; x++) {
    int n = 0;
    for (int y = 0; y < h; y++) {
      uint32_t px = ((const uint32_t *)(data + (size_t)y * stride))[x];
      int r = (px >> 16) & 255, g = (px >> 8) & 255, b = px & 255;
      n += abs(r - 89) <= 3 && abs(g - 89) <= 3 && abs(b - 89) <= 3;
    }
    if (n > h / 3) return x;
  }
  return -1;
}

static void test_draw(void) {
  write_run("good", 2.0, 3.0); /* BLEU 5 .. 32 */
  write_run("weak", 0.5, 0.4); /* BLEU 0.9 .. 4.5 */
  const char *runs[] = {test_tmp_path("good"), test_tmp_path("weak")};
  struct plot_options opt = {PLOT_X_STEP, PLOT_Y_BLEU, NULL, 640, 400};
  struct intrus_error err = {0};
  const char *out = test_tmp_path("curves.png");
  enum intrus_status st = intrus_plot_runs(out, 2, runs, NULL, &opt, &err);
  EXPECT(st == INTRUS_OK, "%s", err.msg);
  cairo_surface_t *s = cairo_image_surface_create_from_png(out);
  EXPECT(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS, "cairo reads %s back", out);
  if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
    EXPECT(cairo_image_surface_get_width(s) == 640 && cairo_image_surface_get_height(s) == 400,
           "%d x %d", cairo_image_surface_get_width(s), cairo_image_surface_get_height(s));
    double y0, y1;
    int x0, x1;
    long n0 = colour_pixels(s, 0, &y0, &x0), n1 = colour_pixels(s, 1, &y1, &x1);
    /* The legend's sample line and marker alone are under 100 pixels. */
    EXPECT(n0 > 300 && n1 > 300, "curve pixels: %ld and %ld", n0, n1);
    EXPECT(y0 < y1, "the better run is drawn higher (mean rows %.1f, %.1f)", y0, y1);
    /* The first point is on the plot area's left edge: nothing of a curve is drawn
     * further left than its marker's radius. */
    int left = frame_left(s);
    EXPECT(left > 20 && x0 >= left - 4 && x1 >= left - 4,
           "nothing is drawn left of the plot area (columns %d, %d; the area from %d)", x0, x1,
           left);
  }
  cairo_surface_destroy(s);

  /* Time on x, the training loss, labels, a title, another size. */
  const char *labels[] = {"base", NULL};
  opt = (struct plot_options){PLOT_X_TIME, PLOT_Y_LOSS, "Loss", 900, 560};
  st = intrus_plot_runs(out, 2, runs, labels, &opt, &err);
  EXPECT(st == INTRUS_OK, "%s", err.msg);
  s = cairo_image_surface_create_from_png(out);
  EXPECT(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS &&
             cairo_image_surface_get_width(s) == 900 && cairo_image_surface_get_height(s) == 560,
         "time/loss picture");
  cairo_surface_destroy(s);

  /* A log resumed from an older checkpoint logs steps 300.. again, and a last line
   * still being written is ignored. */
  write_log("resumed", "step\tloss\tlr\ttokens_per_s\tvalid_loss\tvalid_bleu\n"
                       "100\t5\t0.001\t100\t4\t1.0\n200\t5\t0.001\t100\t4\t2.0\n"
                       "300\t5\t0.001\t100\t4\t9.0\n200\t5\t0.001\t100\t4\t2.5\t30.0\n"
                       "300\t5\t0.001\t100\t4\t3.0\t45.0\n400\t5\t0.0");
  const char *one[] = {test_tmp_path("resumed")};
  opt = (struct plot_options){PLOT_X_STEP, PLOT_Y_VALID_LOSS, NULL, 300, 200};
  st = intrus_plot_runs(test_tmp_path("resumed.png"), 1, one, NULL, &opt, &err);
  EXPECT(st == INTRUS_OK, "resumed log: %s", err.msg);
  EXPECT(test_count_temp_files() == 0, "no temporary file is left");
}

/* Each case must fail with status want, a message containing `has` (and `also`), and
 * leave neither the picture nor a temporary file. */
static void expect_error(const char *run, const struct plot_options *opt, enum intrus_status want,
                         const char *has, const char *also) {
  const char *runs[] = {test_tmp_path("good"), test_tmp_path(run)};
  const char *out = test_tmp_path("error.png");
  struct intrus_error err = {0};
  enum intrus_status st = intrus_plot_runs(out, 2, runs, NULL, opt, &err);
  EXPECT(st == want, "%s: status %d, want %d (%s)", run, st, want, err.msg);
  EXPECT_CONTAINS(err.msg, has);
  if (also) EXPECT_CONTAINS(err.msg, also);
  EXPECT(!exists(out), "%s: no picture is written", run);
  EXPECT(test_count_temp_files() == 0, "%s: no temporary file is left", run);
}

static void test_errors(void) {
  struct plot_options bleu = {PLOT_X_STEP, PLOT_Y_BLEU, NULL, 640, 400};
  struct plot_options time = {PLOT_X_TIME, PLOT_Y_BLEU, NULL, 640, 400};
  char want[600];

  mkdir(test_tmp_path("empty-dir"), 0700);
  snprintf(want, sizeof want, "%s/empty-dir/train.log: cannot open", test_tmpdir);
  expect_error("empty-dir", &bleu, INTRUS_ERR_IO, want, NULL);

  /* A synthetic-task run: validation loss, never BLEU. */
  write_log("no-bleu", "step\tloss\tlr\ttokens_per_s\tvalid_loss\tvalid_bleu\ttrain_s\n"
                       "50\t3.1\t0.001\t900\t\t\t1.5\n100\t2.7\t0.001\t900\t2.9\t\t3.0\n");
  snprintf(want, sizeof want, "%s/no-bleu/train.log", test_tmpdir);
  expect_error("no-bleu", &bleu, INTRUS_ERR_DATA, want, "no row has a valid_bleu value");

  write_log("malformed", "step\tloss\tlr\ttokens_per_s\tvalid_loss\tvalid_bleu\ttrain_s\n"
                         "50\t3.1\t0.001\t900\t\t\t1.5\n100\t2.7\t0.001\t900\t2.9\t1x.5\t3.0\n");
  snprintf(want, sizeof want, "%s/malformed/train.log:3:", test_tmpdir);
  expect_error("malformed", &bleu, INTRUS_ERR_DATA, want, "valid_bleu '1x.5' is not a number");

  write_log("short-row", "step\tloss\tlr\ttokens_per_s\tvalid_loss\tvalid_bleu\ttrain_s\n"
                         "50\t3.1\t0.001\n100\t2.7\t0.001\t900\t2.9\t1.5\t3.0\n");
  snprintf(want, sizeof want, "%s/short-row/train.log:2:", test_tmpdir);
  expect_error("short-row", &bleu, INTRUS_ERR_DATA, want, "3 cells, the header has 7");

  write_log("old", "step\tloss\tlr\ttokens_per_s\tvalid_loss\tvalid_bleu\n"
                   "100\t2.7\t0.001\t900\t2.9\t1.5\n");
  snprintf(want, sizeof want, "%s/old/train.log", test_tmpdir);
  expect_error("old", &time, INTRUS_ERR_DATA, want, "no 'train_s' column");
  const char *old[] = {test_tmp_path("old")};
  struct intrus_error err = {0};
  EXPECT(intrus_plot_runs(test_tmp_path("old.png"), 1, old, NULL, &bleu, &err) == INTRUS_OK,
         "the old log plots by step: %s", err.msg);

  write_log("not-a-log", "hello\tworld\n1\t2\n");
  snprintf(want, sizeof want, "%s/not-a-log/train.log:1:", test_tmpdir);
  expect_error("not-a-log", &bleu, INTRUS_ERR_DATA, want, "no 'step' column");

  /* A picture that cannot be written: the directory is missing. */
  const char *runs[] = {test_tmp_path("good")};
  const char *out = test_tmp_path("missing/curves.png");
  EXPECT(intrus_plot_runs(out, 1, runs, NULL, &bleu, &err) == INTRUS_ERR_IO, "%s", err.msg);
  EXPECT_CONTAINS(err.msg, out);
  EXPECT(intrus_plot_runs(test_tmp_path("curves.svg"), 1, runs, NULL, &bleu, &err) ==
             INTRUS_ERR_INVALID,
         "only PNG");
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-plot-XXXXXX")) return 99;
  test_draw();
  test_errors();
  if (!tu_failures) test_remove_tmpdir(); /* kept for a look when a check failed */
  test_release_font_caches();
  return test_finish("test_plot");
}

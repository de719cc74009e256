/* Machine translation end to end on a slice of the bundled en-de corpus: training on
 * parallel text resumes exactly; decoding and `intrus run` write outputs and BLEU; bad
 * data (invalid UTF-8, unequal files, an empty file) and a vocabulary changed since it
 * was made (tokenizer.txt) or that does not match the checkpoint are refused with
 * messages naming the file. Validation decodes
 * for BLEU every valid_bleu_every steps with valid_beam, and best.ckpt follows BLEU only;
 * train.log's train_s counts training time without validation, across a resume. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "intrus/checkpoint.h"
#include "intrus/corpus.h"
#include "intrus/train.h"
#include "testutil.h"

#define MAX_STEPS 64

static const char *cfg_fmt =
    "name = \"mt\"; seed = 3;\n"
    "data: { kind = \"parallel\"; dir = \"%s\"; src = \"en\"; tgt = \"de\"; bpe_merges = 200; "
    "max_len = 40; };\n"
    "model: { d_model = 16;\n"
    "  encoder: { plugin = \"transformer\"; layers = 1; heads = 2; ff = 32; dropout = 0.1; };\n"
    "  decoder: { plugin = \"autoregressive\"; layers = 1; heads = 2; ff = 32; dropout = 0.1; };\n"
    "};\n"
    "train: { steps = 20; batch_tokens = 400; lr = 3e-3; warmup = 5; log_every = 10;\n"
    "  valid_every = 10; checkpoint_every = 10; label_smoothing = 0.1; };\n"
    "search: { beam = 2; batch_tokens = 500; };\n";

/* Copies the first n lines of the bundled split into dir/split.lang (plain text). */
static void slice(const char *dir, const char *split, const char *lang, size_t n) {
  char src[1024], dst[1024];
  snprintf(src, sizeof src, "%s/data/mt/en-de/%s.%s.gz", test_srcdir(), split, lang);
  snprintf(dst, sizeof dst, "%s/%s.%s", dir, split, lang);
  char **lines;
  size_t count;
  struct intrus_error err = {0};
  if (intrus_lines_read(src, &lines, &count, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    exit(1);
  }
  FILE *f = fopen(dst, "w");
  for (size_t i = 0; i < n && i < count; i++) fprintf(f, "%s\n", lines[i]);
  fclose(f);
  intrus_lines_free(lines, count);
}

static void write_cfg(const char *path, const char *data_dir) {
  FILE *f = fopen(path, "w");
  fprintf(f, cfg_fmt, data_dir);
  fclose(f);
}

/* Trains the experiment file cfg_path into the run directory run, calling
 * on_step(step, loss, user) after each step. */
static enum intrus_status train_with(const char *cfg_path, const char *run, long max_steps,
                                     void (*on_step)(long, double, void *), void *user,
                                     struct intrus_train_result *res, struct intrus_error *err) {
  struct intrus_config *cfg = intrus_config_load_file(cfg_path, err);
  if (!cfg) return err->status;
  enum intrus_status st = test_train_config(cfg, run, max_steps, on_step, user, res, err);
  intrus_config_free(cfg);
  return st;
}

static enum intrus_status train(const char *cfg_path, const char *run, long max_steps,
                                struct test_losses *tr, struct intrus_error *err) {
  struct intrus_train_result res;
  return train_with(cfg_path, run, max_steps, test_record_loss, tr, &res, err);
}


static size_t count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = 0;
  int c;
  while ((c = fgetc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}

static void test_resume_exact(const char *cfg) {
  struct test_losses a = {0}, b = {0};
  struct intrus_error err = {0};
  EXPECT(train(cfg, "a", 20, &a, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(train(cfg, "b", 10, &b, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(train(cfg, "b", 20, &b, &err) == INTRUS_OK, "%s", err.msg);
  int same = 0;
  for (int s = 1; s <= 20; s++) same += memcmp(&a.loss[s], &b.loss[s], sizeof(double)) == 0;
  EXPECT(same == 20, "resumed run matches the uninterrupted one at %d of 20 steps", same);
  EXPECT(a.loss[20] < a.loss[1], "loss did not go down: %g -> %g", a.loss[1], a.loss[20]);
  /* Validation at steps 10 and 20 decoded the valid set for BLEU and kept the best. */
  char path[600];
  snprintf(path, sizeof path, "%s/a/best.ckpt", test_tmpdir);
  EXPECT(access(path, R_OK) == 0, "no %s", path);
  char **log;
  size_t n;
  struct intrus_error lerr = {0};
  snprintf(path, sizeof path, "%s/a/train.log", test_tmpdir);
  EXPECT(intrus_lines_read(path, &log, &n, &lerr) == INTRUS_OK, "%s", lerr.msg);
  if (!lerr.status) {
    EXPECT_CONTAINS(log[0], "valid_bleu");
    EXPECT(n == 3, "train.log has %zu lines", n);
    /* valid_bleu is the sixth column (train_s follows it). */
    const char *cell = n == 3 ? log[2] : "";
    for (int tab = 0; tab < 5 && cell; tab++) cell = strchr(cell, '\t') ? strchr(cell, '\t') + 1 : NULL;
    EXPECT(cell && *cell && *cell != '\t', "no BLEU in the last log line: %s",
           n ? log[n - 1] : "");
    intrus_lines_free(log, n);
  }
}

static void test_vocab_mismatch(const char *cfg) {
  /* Change one token of run b's vocabulary: resuming must refuse the checkpoint. */
  char path[600];
  snprintf(path, sizeof path, "%s/b/vocab.txt", test_tmpdir);
  char **lines;
  size_t n;
  struct intrus_error err = {0};
  EXPECT(intrus_lines_read(path, &lines, &n, &err) == INTRUS_OK, "%s", err.msg);
  FILE *f = fopen(path, "w");
  for (size_t i = 0; i < n; i++) fprintf(f, "%s%s\n", lines[i], i == n - 1 ? "x" : "");
  fclose(f);
  intrus_lines_free(lines, n);
  struct test_losses t = {0};
  /* tokenizer.txt records the file as it was made. */
  EXPECT(train(cfg, "b", 21, &t, &err) == INTRUS_ERR_DATA, "status: %s", err.msg);
  EXPECT_CONTAINS(err.msg, "vocab.txt: changed since it was made");
  /* A run from before tokenizer.txt: the checkpoint's vocabulary fingerprint refuses it. */
  snprintf(path, sizeof path, "%s/b/tokenizer.txt", test_tmpdir);
  EXPECT(unlink(path) == 0, "removing %s", path);
  EXPECT(train(cfg, "b", 21, &t, &err) == INTRUS_ERR_FORMAT, "status: %s", err.msg);
  EXPECT_CONTAINS(err.msg, "checkpoint.ckpt");
  EXPECT_CONTAINS(err.msg, "vocabulary");
}

/* eval.checkpoint = "best": intrus run decodes the test set with best.ckpt (the run is
 * trained: it only decodes), as intrus decode -c best.ckpt does; a bad value is refused. */
static void test_cli_test_checkpoint(void) {
  char out[16384], path[600];
  char *base = test_read_file(test_tmp_path("mt.cfg"));
  size_t n = strlen(base) + 200;
  char *text = malloc(n);
  snprintf(text, n, "%seval: { checkpoint = \"best\"; };\n", base);
  snprintf(path, sizeof path, "%s/mt-best.cfg", test_tmpdir);
  test_write_file(path, text);
  snprintf(text, n, "%seval: { checkpoint = \"worst\"; };\n", base);
  snprintf(path, sizeof path, "%s/mt-worst.cfg", test_tmpdir);
  test_write_file(path, text);
  free(text);
  free(base);
  int rc = test_run_intrus(test_tmpdir, "run mt-best.cfg -o a -q", out, sizeof out);
  EXPECT(rc == 0, "run with eval.checkpoint = best: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "decoded with best.ckpt");
  char *json = test_read_file(test_tmp_path("a/results.json"));
  EXPECT_CONTAINS(json, "\"test_checkpoint\": \"best.ckpt\"");
  free(json);
  rc = test_run_intrus(test_tmpdir, "decode mt.cfg -o a -c a/best.ckpt -i data/test.en -O "
                       "a/test-best.out -q", out, sizeof out);
  EXPECT(rc == 0, "decode -c best.ckpt: exit %d: %s", rc, out);
  char *a = test_read_file(test_tmp_path("a/test.hyp"));
  char *b = test_read_file(test_tmp_path("a/test-best.out"));
  EXPECT(a && b && strcmp(a, b) == 0, "intrus run with best.ckpt wrote another test.hyp than "
                                      "intrus decode -c best.ckpt");
  free(a);
  free(b);
  rc = test_run_intrus(test_tmpdir, "run mt-worst.cfg -o worst -q", out, sizeof out);
  EXPECT(rc == 3, "eval.checkpoint = worst: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "checkpoint");
  EXPECT_CONTAINS(out, "worst");
  snprintf(path, sizeof path, "%s/worst/checkpoint.ckpt", test_tmpdir);
  EXPECT(access(path, F_OK) != 0, "eval.checkpoint = worst: training ran");
}

static void test_cli_decode_and_run(void) {
  char out[16384];
  int rc = test_run_intrus(test_tmpdir, "decode mt.cfg -o a -i data/test.en -O a/test.out -q",
                           out, sizeof out);
  EXPECT(rc == 0, "decode exit %d: %s", rc, out);
  char path[600];
  snprintf(path, sizeof path, "%s/a/test.out", test_tmpdir);
  EXPECT(count_lines(path) == 30, "decoded %zu lines for 30 inputs", count_lines(path));
  rc = test_run_intrus(test_tmpdir, "run mt.cfg -o a -q", out, sizeof out);
  EXPECT(rc == 0, "run exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "BLEU = ");
  EXPECT_CONTAINS(out, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.3.1");
  char *json = test_read_file(test_tmp_path("a/results.json"));
  EXPECT_CONTAINS(json, "\"BLEU\": ");
  EXPECT_CONTAINS(json, "\"test_sentences\": 30, \"test_decode_s\": ");
  EXPECT_CONTAINS(json, "\"test_checkpoint\": \"checkpoint.ckpt\"");
  /* Run a validated with BLEU at steps 10 and 20 (valid_every = 10). */
  EXPECT_CONTAINS(json, "\"valid_decodes\": 2, \"valid_decode_s\": ");
  EXPECT_CONTAINS(json, "\"fingerprint\": \"");
  free(json);
  test_cli_test_checkpoint();
  rc = test_run_intrus(test_tmpdir, "decode mt.cfg -o nosuchrun -i data/test.en -q", out,
                       sizeof out);
  EXPECT(rc == 5, "decode without a trained run: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "nosuchrun");
}

/* ---- validation schedule and train_s ------------------------------------------------ */

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The experiment of cfg_fmt with `from` replaced by `to` in its text, and `from2` by `to2`
 * unless NULL. */
static void write_cfg_with(const char *path, const char *data_dir, const char *from,
                           const char *to, const char *from2, const char *to2) {
  char base[4096];
  snprintf(base, sizeof base, cfg_fmt, data_dir);
  char *text = strdup(base);
  for (int i = 0; i < 2; i++) {
    const char *f = i ? from2 : from, *t = i ? to2 : to;
    if (!f) continue;
    char *next = test_replace(text, f, t);
    if (!next) {
      fprintf(stderr, "'%s' is no longer in the test's experiment\n", f);
      exit(1);
    }
    free(text);
    text = next;
  }
  test_write_file(path, text);
  free(text);
}

/* A uint64 record of a checkpoint; false when the file or the record is missing. */
static bool ckpt_u64(const char *path, const char *name, uint64_t *v) {
  if (access(path, F_OK) != 0) return false;
  struct intrus_ckpt *ck = NULL;
  struct intrus_error err = {0};
  bool ok = intrus_ckpt_read(path, false, 0, &ck, &err) == INTRUS_OK &&
            intrus_ckpt_u64(ck, name, v);
  EXPECT(ok, "%s: no record '%s' (%s)", path, name, err.msg);
  intrus_ckpt_free(ck);
  return ok;
}

/* What training looks like from on_step (called after each step, before its
 * validation): the step best.ckpt holds then (0: none), and each step's wall time. A
 * sleep in each step is training time that train_s must count. */
struct probe {
  char best[600];
  long best_step[MAX_STEPS + 1];
  double at[MAX_STEPS + 1];
  long sleep_us;
  double seconds; /* the run's own wall time (intrus_train_result.seconds) */
};

static void probe_step(long step, double loss, void *user) {
  (void)loss;
  struct probe *p = user;
  if (step > MAX_STEPS) return;
  uint64_t v = 0;
  p->best_step[step] = ckpt_u64(p->best, "step", &v) ? (long)v : 0;
  if (p->sleep_us) usleep((useconds_t)p->sleep_us);
  p->at[step] = wall_s();
}

static enum intrus_status train_probe(const char *cfg_path, const char *run, long max_steps,
                                      struct probe *p, struct intrus_error *err) {
  snprintf(p->best, sizeof p->best, "%s/%s/best.ckpt", test_tmpdir, run);
  struct intrus_train_result res;
  enum intrus_status st = train_with(cfg_path, run, max_steps, probe_step, p, &res, err);
  p->seconds = st ? NAN : res.seconds;
  return st;
}

/* train.log's rows as fields: rows[i][0..7] = step loss lr tokens_per_s valid_loss
 * valid_bleu train_s valid_decode_s. Returns the number of rows read (at most cap), -1
 * on a bad header. */
enum { LOG_FIELDS = 8 };
struct log_row {
  char f[LOG_FIELDS][32];
  int nf;
};
static int read_log(const char *run, struct log_row *rows, int cap) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s/train.log", test_tmpdir, run);
  char **lines;
  size_t n;
  struct intrus_error err = {0};
  if (intrus_lines_read(path, &lines, &n, &err) != INTRUS_OK) {
    EXPECT(0, "%s", err.msg);
    return -1;
  }
  int got = -1;
  static const char header[] =
      "step\tloss\tlr\ttokens_per_s\tvalid_loss\tvalid_bleu\ttrain_s\tvalid_decode_s";
  EXPECT(n > 0 && strcmp(lines[0], header) == 0, "%s: header '%s'", path, n ? lines[0] : "");
  if (n > 0 && strcmp(lines[0], header) == 0) {
    got = 0;
    for (size_t i = 1; i < n && got < cap; i++, got++) {
      struct log_row *r = &rows[got];
      memset(r, 0, sizeof *r);
      const char *a = lines[i];
      for (;;) {
        const char *tab = strchr(a, '\t');
        size_t len = tab ? (size_t)(tab - a) : strlen(a);
        if (r->nf < LOG_FIELDS) snprintf(r->f[r->nf], sizeof r->f[0], "%.*s", (int)len, a);
        r->nf++;
        if (!tab) break;
        a = tab + 1;
      }
      EXPECT(r->nf == LOG_FIELDS, "%s:%zu: %d fields: %s", path, i + 1, r->nf, lines[i]);
    }
  }
  intrus_lines_free(lines, n);
  return got;
}

/* A whole cell is a number (strtod reads it all). */
static bool number(const char *s, double *v) {
  char *end;
  *v = strtod(s, &end);
  return *s && *end == '\0' && isfinite(*v);
}

/* valid_every = 5, valid_bleu_every = 10: losses at steps 5, 10, 15, 20, BLEU at 10 and
 * 20 only, and best.ckpt follows BLEU: written at a BLEU validation only (none after the
 * loss-only validation at 5, the one of step 10 still there after step 15). */
static void test_valid_bleu_every(const char *data) {
  char cfg[700];
  snprintf(cfg, sizeof cfg, "%s/vb.cfg", test_tmpdir);
  write_cfg_with(cfg, data, "valid_every = 10;", "valid_every = 5; valid_bleu_every = 10;", NULL,
                 NULL);
  struct probe p;
  memset(&p, 0, sizeof p);
  struct intrus_error err = {0};
  EXPECT(train_probe(cfg, "vb", 0, &p, &err) == INTRUS_OK, "%s", err.msg);
  struct log_row rows[8];
  int n = read_log("vb", rows, 8);
  EXPECT(n == 4, "train.log has %d rows", n);
  double bleu[21];
  for (int i = 0; i < n && i < 4; i++) {
    double step, v;
    EXPECT(number(rows[i].f[0], &step) && step == 5 * (i + 1), "row %d is step %s", i,
           rows[i].f[0]);
    EXPECT(number(rows[i].f[4], &v) && v > 0, "step %s: valid_loss '%s'", rows[i].f[0],
           rows[i].f[4]);
    bool want_bleu = (i + 1) % 2 == 0;
    bool has = number(rows[i].f[5], &bleu[5 * (i + 1)]);
    EXPECT(has == want_bleu && (want_bleu || rows[i].f[5][0] == '\0'),
           "step %s: valid_bleu '%s' (BLEU only at steps 10 and 20)", rows[i].f[0],
           rows[i].f[5]);
    /* The seconds of each validation decode, on its row only. */
    EXPECT(want_bleu ? number(rows[i].f[7], &v) && v >= 0 : rows[i].f[7][0] == '\0',
           "step %s: valid_decode_s '%s'", rows[i].f[0], rows[i].f[7]);
  }
  if (n == 4)
    printf("valid_bleu_every 10: BLEU '%s' at 10 and '%s' at 20\n", rows[1].f[5], rows[3].f[5]);
  /* best.ckpt as on_step saw it before each step's validation, and at the end. */
  int wrong = 0;
  for (int s = 1; s <= 20; s++) {
    long want = s <= 10 ? 0 : 10;
    if (p.best_step[s] != want) {
      wrong++;
      fprintf(stderr, "before the validation of step %d best.ckpt holds step %ld, not %ld\n", s,
              p.best_step[s], want);
    }
  }
  EXPECT(wrong == 0, "best.ckpt was written outside the BLEU validations (%d steps)", wrong);
  uint64_t last = 0;
  EXPECT(ckpt_u64(p.best, "step", &last) && (last == 10 || last == 20),
         "best.ckpt ends at step %llu", (unsigned long long)last);
  if (n == 4 && (last == 10 || last == 20))
    EXPECT(strcmp(rows[1].f[5], rows[3].f[5]) == 0 || (last == 20) == (bleu[20] > bleu[10]),
           "best.ckpt holds step %llu with BLEU %s at 10 and %s at 20", (unsigned long long)last,
           rows[1].f[5], rows[3].f[5]);
  /* Without valid_bleu_every, every validation decodes (run a: valid_every = 10). */
  struct log_row ar[4];
  int na = read_log("a", ar, 4);
  EXPECT(na == 2 && ar[0].f[5][0] && ar[1].f[5][0], "run a: BLEU '%s' at 10, '%s' at 20",
         na > 0 ? ar[0].f[5] : "", na > 1 ? ar[1].f[5] : "");
  /* valid_beam = 8 decodes as search.beam = 8 does (training is the same: search
   * settings do not change it), not as the search group's beam 2. */
  static const char *const beam_runs[2][3] = {
      {"vbb8", "valid_every = 5; valid_bleu_every = 10; valid_beam = 8;", "beam = 2;"},
      {"vbs8", "valid_every = 5; valid_bleu_every = 10;", "beam = 8;"}};
  struct log_row br[2][8];
  for (int i = 0; i < 2; i++) {
    char bcfg[700];
    snprintf(bcfg, sizeof bcfg, "%s/%s.cfg", test_tmpdir, beam_runs[i][0]);
    write_cfg_with(bcfg, data, "valid_every = 10;", beam_runs[i][1], "beam = 2;",
                   beam_runs[i][2]);
    struct probe q;
    memset(&q, 0, sizeof q);
    EXPECT(train_probe(bcfg, beam_runs[i][0], 0, &q, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT(read_log(beam_runs[i][0], br[i], 8) == 4, "%s: train.log rows", beam_runs[i][0]);
  }
  if (n == 4) {
    printf("BLEU at 10, 20: beam 2 %s %s, valid_beam 8 %s %s, search beam 8 %s %s\n",
           rows[1].f[5], rows[3].f[5], br[0][1].f[5], br[0][3].f[5], br[1][1].f[5],
           br[1][3].f[5]);
    EXPECT(strcmp(br[0][1].f[5], br[1][1].f[5]) == 0 && strcmp(br[0][3].f[5], br[1][3].f[5]) == 0,
           "valid_beam 8: BLEU %s, %s; search.beam 8: %s, %s", br[0][1].f[5], br[0][3].f[5],
           br[1][1].f[5], br[1][3].f[5]);
    EXPECT(strcmp(br[0][1].f[5], rows[1].f[5]) != 0 || strcmp(br[0][3].f[5], rows[3].f[5]) != 0,
           "valid_beam 8 gives the BLEU of beam 2 (%s, %s)", rows[1].f[5], rows[3].f[5]);
  }
  /* valid_bleu_every must be a multiple of valid_every; the settings are checked. */
  static const struct {
    const char *to, *want1, *want2;
  } bad[] = {
      {"valid_every = 5; valid_bleu_every = 7;", "valid_bleu_every", "multiple of valid_every"},
      {"valid_every = 5; valid_bleu_every = 0;", "valid_bleu_every", "0"},
      {"valid_every = 5; valid_beam = -1;", "valid_beam", "-1"},
      {"valid_every = 5; valid_beam = 4096;", "valid_beam", "4096"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char bcfg[700];
    snprintf(bcfg, sizeof bcfg, "%s/vbbad%zu.cfg", test_tmpdir, i);
    write_cfg_with(bcfg, data, "valid_every = 10;", bad[i].to, NULL, NULL);
    struct probe q;
    memset(&q, 0, sizeof q);
    struct intrus_error e = {0};
    EXPECT(train_probe(bcfg, "vbbad", 0, &q, &e) == INTRUS_ERR_CONFIG, "%s accepted", bad[i].to);
    EXPECT_CONTAINS(e.msg, bad[i].want1);
    EXPECT_CONTAINS(e.msg, bad[i].want2);
    EXPECT(q.at[1] == 0.0, "%s: training started", bad[i].to);
  }
}

/* train_s: training wall seconds without validation, in train.log's last column, kept
 * in the checkpoint (train_ms) and continued by a resume. Each step sleeps 30 ms (in
 * on_step, training time): train 10 steps, resume to 20. */
static void test_train_s(const char *data) {
  enum { SLEEP_US = 30000 };
  char cfg[700];
  snprintf(cfg, sizeof cfg, "%s/ts.cfg", test_tmpdir);
  /* A wide validation beam makes the BLEU validations slow next to the steps. */
  write_cfg_with(cfg, data, "valid_every = 10;",
                 "valid_every = 5; valid_bleu_every = 10; valid_beam = 48;", NULL, NULL);
  struct probe p;
  memset(&p, 0, sizeof p);
  p.sleep_us = SLEEP_US;
  struct intrus_error err = {0};
  double t0 = wall_s();
  EXPECT(train_probe(cfg, "ts", 10, &p, &err) == INTRUS_OK, "%s", err.msg);
  double t1 = wall_s(), p1_seconds = p.seconds;
  char path[600];
  snprintf(path, sizeof path, "%s/ts/checkpoint.ckpt", test_tmpdir);
  uint64_t ms10 = 0;
  EXPECT(ckpt_u64(path, "train_ms", &ms10), "no train_ms after 10 steps");
  struct log_row rows[8];
  int n10 = read_log("ts", rows, 8);
  EXPECT(n10 == 2, "train.log has %d rows after 10 steps", n10);
  double s10 = NAN;
  if (n10 == 2 && number(rows[1].f[6], &s10))
    EXPECT(fabs(s10 - ms10 / 1e3) <= 0.051, "step 10: train_s %s, the checkpoint's train_ms %llu",
           rows[1].f[6], (unsigned long long)ms10);
  EXPECT(ms10 / 1e3 >= 10 * SLEEP_US / 1e6 - 0.001 && ms10 / 1e3 <= t1 - t0,
         "after 10 steps of at least %.2f s each: train_ms %llu, the run took %.3f s",
         SLEEP_US / 1e6, (unsigned long long)ms10, t1 - t0);
  double t2 = wall_s();
  EXPECT(train_probe(cfg, "ts", 20, &p, &err) == INTRUS_OK, "%s", err.msg);
  double t3 = wall_s();
  int n = read_log("ts", rows, 8);
  EXPECT(n == 4, "train.log has %d rows after the resume", n);
  double prev = 0.0, v[4] = {0};
  for (int i = 0; i < n && i < 4; i++) {
    double step;
    EXPECT(number(rows[i].f[0], &step) && step == 5 * (i + 1), "row %d is step %s", i,
           rows[i].f[0]);
    EXPECT(number(rows[i].f[6], &v[i]) && v[i] >= 0.0, "step %s: train_s '%s' is no number >= 0",
           rows[i].f[0], rows[i].f[6]);
    EXPECT(v[i] >= prev, "train_s goes down from %.1f to %s at step %s", prev, rows[i].f[6],
           rows[i].f[0]);
    prev = v[i];
  }
  printf("train_s at steps 5, 10 | resumed 15, 20: %.1f %.1f | %.1f %.1f (runs of %.2f and "
         "%.2f s, validation of step 10 %.2f s)\n", v[0], v[1], v[2], v[3], t1 - t0, t3 - t2,
         t1 - p.at[10]);
  /* Without validation: a run's train_s grows by at most the time from its start (its
   * end less its own wall time) to the end of its last step (on_step's clock: that
   * includes the validations but the last one, which is slow), plus the rounding and some
   * room for a busy machine. */
  double start1 = t1 - p1_seconds, start2 = t3 - p.seconds;
  EXPECT(s10 <= p.at[10] - start1 + 0.15,
         "train_s %.1f at step 10, yet steps 1..10 took %.3f s with the validation of step 5",
         s10, p.at[10] - start1);
  EXPECT(n == 4 && v[3] - ms10 / 1e3 <= p.at[20] - start2 + 0.15,
         "the resumed run's train_s grew %.3f s, yet steps 11..20 took %.3f s with the "
         "validation of step 15", v[3] - ms10 / 1e3, p.at[20] - start2);
  /* Continued: the resumed rows start from the checkpoint's time; and all of it is at most
   * the wall time of the two runs. */
  EXPECT(n == 4 && v[2] >= ms10 / 1e3 - 0.05 && v[3] >= 20 * SLEEP_US / 1e6 - 0.05,
         "after the resume: train_s %.1f at 15, %.1f at 20; %.3f s at the checkpoint", v[2], v[3],
         ms10 / 1e3);
  EXPECT(v[3] <= (t1 - t0) + (t3 - t2) + 0.05, "train_s %.1f after runs of %.3f s in all", v[3],
         (t1 - t0) + (t3 - t2));
  uint64_t ms20 = 0;
  EXPECT(ckpt_u64(path, "train_ms", &ms20) && fabs(ms20 / 1e3 - v[3]) <= 0.051,
         "step 20: train_ms %llu, train_s %.1f", (unsigned long long)ms20, v[3]);
}

static void bad_data(const char *name, const char *train_en_text, const char *want1,
                     const char *want2) {
  char dir[600], cfg[700];
  snprintf(dir, sizeof dir, "%s/%s", test_tmpdir, name);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/data/* %s/", dir, test_tmpdir, dir);
  EXPECT(system(cmd) == 0, "%s", cmd);
  char path[800];
  snprintf(path, sizeof path, "%s/train.en", dir);
  test_write_file(path, train_en_text);
  snprintf(cfg, sizeof cfg, "%s/%s.cfg", test_tmpdir, name);
  write_cfg(cfg, dir);
  struct test_losses t = {0};
  struct intrus_error err = {0};
  enum intrus_status st = train(cfg, name, 1, &t, &err);
  EXPECT(st == INTRUS_ERR_DATA, "%s: status %d: %s", name, st, err.msg);
  EXPECT_CONTAINS(err.msg, want1);
  EXPECT_CONTAINS(err.msg, want2);
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-test-mt-XXXXXX")) return 1;
  char data[600], cfg[700];
  snprintf(data, sizeof data, "%s/data", test_tmpdir);
  snprintf(cfg, sizeof cfg, "%s/mt.cfg", test_tmpdir);
  char cmd[800];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", data);
  if (system(cmd) != 0) return 1;
  slice(data, "train", "en", 300);
  slice(data, "train", "de", 300);
  slice(data, "valid", "en", 30);
  slice(data, "valid", "de", 30);
  slice(data, "test", "en", 30);
  slice(data, "test", "de", 30);
  write_cfg(cfg, "data");
  test_resume_exact(cfg);
  test_vocab_mismatch(cfg);
  test_cli_decode_and_run();
  test_valid_bleu_every("data");
  test_train_s("data");
  bad_data("badutf8", "Open file\nSave \xff file\n", "train.en:2:", "invalid UTF-8");
  bad_data("empty", "", "train.en", "empty file");
  bad_data("unequal", "Open file\n", "train.en has 1 lines", "train.de has 300");
  test_remove_tmpdir();
  return test_finish("test_mt");
}

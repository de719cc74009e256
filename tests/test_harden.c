/* Inputs that once crashed intrus or left a run in a wrong state, each reproduced:
 * checkpoints whose records are well-formed but out of range (checksums recomputed by
 * writing them through the checkpoint API) are refused with the record's name; NaN
 * parameters are refused; a refused resume leaves effective.cfg alone; train.log has
 * no repeated rows after a kill and a resume; a second trainer on a locked run
 * directory is refused and told who holds it; experiment names that are not one plain
 * path component are refused; `intrus run` and `intrus decode -O` check what they will
 * read and write before they start; tokenizer files are tied to the data and settings
 * that made them; and the command line's smaller failures. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "intrus/checkpoint.h"
#include "intrus/model.h"
#include "intrus/rng.h"
#include "intrus/train.h"
#include "testutil.h"

static const char *toy =
    "name = \"toy\"; seed = 1;\n"
    "data: { kind = \"synthetic\"; task = \"copy\"; vocab = 12; min_len = 2; max_len = 6;\n"
    "  valid_size = 64; };\n"
    "model: { d_model = 16;\n"
    "  encoder: { plugin = \"transformer\"; layers = 1; heads = 2; ff = 32; dropout = 0.0; };\n"
    "  decoder: { plugin = \"autoregressive\"; layers = 1; heads = 2; ff = 32; dropout = 0.0; };\n"
    "};\n"
    "train: { steps = 40; batch = 16; lr = 3e-3; warmup = 5; log_every = 1; valid_every = 10;\n"
    "  checkpoint_every = 10; };\n";

static const char *toy_phased =
    "name = \"toyp\"; seed = 1;\n"
    "data: { kind = \"synthetic\"; task = \"copy\"; vocab = 12; min_len = 2; max_len = 6;\n"
    "  valid_size = 32; };\n"
    "model: { d_model = 16;\n"
    "  encoder: { plugin = \"transformer\"; layers = 1; heads = 2; ff = 32; dropout = 0.0; };\n"
    "  decoder: { plugin = \"insertion\"; layers = 1; heads = 2; ff = 32; dropout = 0.0; };\n"
    "};\n"
    "train: { batch = 8; lr = 3e-3; warmup = 5; log_every = 5; valid_every = 5;\n"
    "  checkpoint_every = 5;\n"
    "  phases = ( { name = \"a\"; order = { plugin = \"uniform\"; }; loss = \"uniform\";\n"
    "      steps = 10; until = \"plateau\"; patience = 2; },\n"
    "    { name = \"b\"; order = { plugin = \"uniform\"; }; loss = \"main\"; steps = 10; } ); };\n";

static enum intrus_status train_text(const char *text, const char *run, long max_steps,
                                     struct intrus_error *err) {
  struct test_losses losses = {0};
  struct intrus_train_result res;
  return test_train_text(text, run, max_steps, &losses, &res, err);
}

/* ---- checkpoints with out-of-range values ---------------------------------------- */

static const char *const RECORDS[] = {"step",        "last_loss",   "vocab", "best",
                                      "train_ms",    "phase",       "phase_start",
                                      "sched_start", "phase_stale", "phase_best"};
#define NRECORDS (sizeof RECORDS / sizeof RECORDS[0])

/* Rewrites run/checkpoint.ckpt of experiment text with record `name` set to `value`
 * (NULL: none changed) and, when poison, one parameter value set to NaN; everything
 * else as it was. Written through the checkpoint writer, so the file is well-formed
 * and its checksum right: only the values are wrong. */
static void forge(const char *text, const char *run, const char *name, uint64_t value,
                  bool poison) {
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_string(text, "toy.cfg", &err);
  char path[700];
  snprintf(path, sizeof path, "%s/%s/checkpoint.ckpt", test_tmpdir, run);
  struct intrus_ckpt *ck = NULL;
  struct intrus_model *m = NULL;
  EXPECT(intrus_ckpt_read(path, false, 0, &ck, &err) == INTRUS_OK, "%s", err.msg);
  uint64_t fp = ck ? intrus_ckpt_fingerprint(ck) : 0;
  EXPECT(test_model_create(cfg, 12, 12, 1, NULL, &m, &err) == INTRUS_OK, "%s", err.msg);
  if (!ck || !m) exit(1);
  struct intrus_params *p = intrus_model_params(m);
  EXPECT(intrus_ckpt_get_params(ck, p, true, &err) == INTRUS_OK, "%s", err.msg);
  if (poison) intrus_params_values(p)[3] = NAN;
  uint64_t v[NRECORDS];
  bool have[NRECORDS];
  for (size_t i = 0; i < NRECORDS; i++) have[i] = intrus_ckpt_u64(ck, RECORDS[i], &v[i]);
  intrus_ckpt_free(ck);
  struct intrus_ckpt_writer *w = NULL;
  EXPECT(intrus_ckpt_begin(path, fp, &w, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_put_params(w, p, true, &err) == INTRUS_OK, "%s", err.msg);
  for (size_t i = 0; i < NRECORDS; i++) {
    bool set = name && !strcmp(name, RECORDS[i]);
    if (have[i] || set)
      EXPECT(intrus_ckpt_put_u64(w, RECORDS[i], set ? value : v[i], &err) == INTRUS_OK, "%s",
             err.msg);
  }
  EXPECT(intrus_ckpt_commit(w, &err) == INTRUS_OK, "%s", err.msg);
  intrus_model_destroy(m);
  intrus_config_free(cfg);
}

static uint64_t bits(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

/* Trains a fresh run of text to `steps`, forges one record, resumes: must be refused
 * with a message naming want. */
static void refused(const char *text, const char *run, long steps, const char *name,
                    uint64_t value, bool poison, const char *want) {
  struct intrus_error err = {0};
  EXPECT(train_text(text, run, steps, &err) == INTRUS_OK, "%s: %s", run, err.msg);
  forge(text, run, name, value, poison);
  memset(&err, 0, sizeof err);
  enum intrus_status st = train_text(text, run, 0, &err);
  EXPECT(st == INTRUS_ERR_FORMAT, "%s: %s = %llu resumed with status %d: %s", run,
         name ? name : "-", (unsigned long long)value, st, err.msg);
  EXPECT_CONTAINS(err.msg, want);
  EXPECT_CONTAINS(err.msg, "checkpoint.ckpt");
}

static void test_checkpoint_values(void) {
  /* The forger itself changes nothing a resume could object to. */
  struct intrus_error err = {0};
  EXPECT(train_text(toy, "ok", 10, &err) == INTRUS_OK, "%s", err.msg);
  forge(toy, "ok", NULL, 0, false);
  EXPECT(train_text(toy, "ok", 20, &err) == INTRUS_OK, "an untouched forged checkpoint: %s",
         err.msg);

  refused(toy, "phase_max", 10, "phase", UINT64_MAX, false, "record 'phase'");
  refused(toy, "step_max", 10, "step", UINT64_MAX, false, "record 'step'");
  refused(toy, "step_big", 10, "step", 1000000000000ULL, false, "outside 1..40");
  refused(toy, "step_zero", 10, "step", 0, false, "record 'step'");
  refused(toy, "sched", 10, "sched_start", 1000, false, "record 'sched_start'");
  refused(toy, "pstart", 10, "phase_start", 11, false, "record 'phase_start'");
  refused(toy, "loss_nan", 10, "last_loss", bits(NAN), false, "record 'last_loss'");
  refused(toy, "best_inf", 10, "best", bits(INFINITY), false, "record 'best'");
  refused(toy, "nan_param", 10, NULL, 0, true, "non-finite");
  refused(toy_phased, "p_phase", 5, "phase", 3, false, "2 phase(s)");
  refused(toy_phased, "p_stale", 5, "phase_stale", 99, false, "record 'phase_stale'");
  refused(toy_phased, "p_best", 5, "phase_best", bits(NAN), false, "record 'phase_best'");
}

/* ---- effective.cfg, train.log, the lock ------------------------------------------- */

static void test_refused_resume_keeps_effective_cfg(void) {
  struct intrus_error err = {0};
  EXPECT(train_text(toy, "eff", 10, &err) == INTRUS_OK, "%s", err.msg);
  char *before = test_read_file(test_tmp_path("eff/effective.cfg"));
  char *other = test_replace(toy, "d_model = 16", "d_model = 8");
  EXPECT(train_text(other, "eff", 0, &err) != INTRUS_OK, "resume with another d_model");
  char *after = test_read_file(test_tmp_path("eff/effective.cfg"));
  EXPECT(before && after && !strcmp(before, after),
         "a refused resume rewrote effective.cfg");
  free(before);
  free(after);
  free(other);
}

/* Step numbers of train.log's rows in order; returns how many. */
static int log_steps(const char *run, long *steps, int cap) {
  char rel[300];
  snprintf(rel, sizeof rel, "%s/train.log", run);
  char *text = test_read_file(test_tmp_path(rel));
  int n = 0;
  for (char *line = text ? strchr(text, '\n') : NULL; line && line[1] && n < cap;
       line = strchr(line + 1, '\n'))
    steps[n++] = strtol(line + 1, NULL, 10);
  free(text);
  return n;
}

static void test_log_after_kill(void) {
  struct intrus_error err = {0};
  EXPECT(train_text(toy, "log", 10, &err) == INTRUS_OK, "%s", err.msg);
  /* What a run killed after logging steps 11 and 12 (checkpoint still at 10) leaves. */
  char rel[64] = "log/train.log";
  FILE *f = fopen(test_tmp_path(rel), "a");
  fputs("11\t2.0\t0.001\t100.0\t\t\t1.0\n12\t2.0\t0.001\t100.0\t\t\t1.0\n", f);
  fclose(f);
  EXPECT(train_text(toy, "log", 14, &err) == INTRUS_OK, "%s", err.msg);
  long steps[64];
  int n = log_steps("log", steps, 64);
  EXPECT(n == 14, "train.log has %d rows for 14 steps", n);
  for (int i = 0; i < n; i++) EXPECT(steps[i] == i + 1, "row %d is step %ld", i + 1, steps[i]);
}

static void test_lock(void) {
  struct intrus_error err = {0};
  EXPECT(train_text(toy, "lock", 10, &err) == INTRUS_OK, "%s", err.msg);
  int fd = open(test_tmp_path("lock/.lock"), O_RDWR);
  EXPECT(fd >= 0, "no lock file in the run directory");
  if (fd < 0) return;
  EXPECT(flock(fd, LOCK_EX | LOCK_NB) == 0, "the lock is still held after training");
  EXPECT(ftruncate(fd, 0) == 0 && pwrite(fd, "pid 4242 on elsewhere since now\n", 32, 0) == 32,
         "writing the lock note");
  enum intrus_status st = train_text(toy, "lock", 20, &err);
  EXPECT(st == INTRUS_ERR_IO, "a second trainer on a locked run: status %d", st);
  EXPECT_CONTAINS(err.msg, "in use");
  EXPECT_CONTAINS(err.msg, "pid 4242 on elsewhere");
  close(fd);
  EXPECT(train_text(toy, "lock", 20, &err) == INTRUS_OK, "after the lock is gone: %s", err.msg);
}

/* ---- the command line --------------------------------------------------------------- */

static void bad_name(const char *name, const char *label) {
  char path[700], out[8192], args[800];
  snprintf(path, sizeof path, "%s/names/%s.cfg", test_tmpdir, label);
  char *text = test_replace(toy, "name = \"toy\"", name);
  test_write_file(path, text);
  free(text);
  snprintf(args, sizeof args, "train %s.cfg -n 1 -q", label);
  char dir[700];
  snprintf(dir, sizeof dir, "%s/names", test_tmpdir);
  int rc = test_run_intrus(dir, args, out, sizeof out);
  EXPECT(rc == 3, "%s: exit %d: %s", label, rc, out);
  EXPECT_CONTAINS(out, "name");
  EXPECT_CONTAINS(out, label);
}

static void test_names(void) {
  char dir[700];
  snprintf(dir, sizeof dir, "%s/names", test_tmpdir);
  mkdir(dir, 0777);
  bad_name("name = \"\"", "empty");
  bad_name("name = \"../../evil\"", "escape");
  bad_name("name = \"a/b\"", "slash");
  char longname[400] = "name = \"";
  memset(longname + 8, 'x', 300);
  strcpy(longname + 308, "\"");
  bad_name(longname, "long");
  struct stat sb;
  EXPECT(stat(test_tmp_path("evil"), &sb) != 0, "a name escaped runs/");
  EXPECT(stat(test_tmp_path("names/runs"), &sb) != 0, "a refused experiment wrote into runs/");
}

/* Sets the first value of the first parameter record of the checkpoint at path to NaN
 * and recomputes the checksum, as a diverged run's values would be stored. */
static void poison_first_param(const char *path) {
  size_t len = 0;
  unsigned char *b = test_read_bytes(path, &len);
  unsigned char *p = b ? memmem(b, len, "param/", 6) : NULL;
  EXPECT(p && p - b >= 4, "no parameter record in %s", path);
  if (!p) return;
  uint32_t name_len, ndim;
  memcpy(&name_len, p - 4, 4);
  memcpy(&ndim, p + name_len, 4);
  unsigned char *data = p + name_len + 4 + 4 * (size_t)ndim;
  const float nan = NAN;
  memcpy(data, &nan, 4);
  uint64_t sum = intrus_fnv1a(INTRUS_FNV_INIT, b, len - 8);
  memcpy(b + len - 8, &sum, 8);
  test_write_bytes(path, b, len);
  free(b);
}

static void test_checks_before_work(void) {
  const char *data = test_tmp_path("text");
  mkdir(data, 0777);
  static const char *const files[][2] = {
      {"train.en", "open the file\nsave the file\nclose the window\nopen a window\n"},
      {"train.de", "die Datei öffnen\ndie Datei speichern\ndas Fenster schließen\n"
                   "ein Fenster öffnen\n"},
      {"valid.en", "open the window\n"},
      {"valid.de", "das Fenster öffnen\n"},
      {"test.en", "save the window\nclose the file\n"},
      {"test.de", "das Fenster speichern\n"}};
  char path[800];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", data, files[i][0]);
    test_write_file(path, files[i][1]);
  }
  snprintf(path, sizeof path, "%s/text.cfg", test_tmpdir);
  test_write_file(path,
                  "name = \"text\"; seed = 1;\n"
                  "data: { kind = \"parallel\"; dir = \"text\"; src = \"en\"; tgt = \"de\";\n"
                  "  bpe_merges = 10; };\n"
                  "model: { d_model = 8;\n"
                  "  encoder: { plugin = \"transformer\"; layers = 1; heads = 2; ff = 16; };\n"
                  "  decoder: { plugin = \"autoregressive\"; layers = 1; heads = 2; ff = 16; };\n"
                  "};\n"
                  "train: { steps = 5; batch_tokens = 100; valid_every = 5; };\n");
  char out[8192];
  int rc = test_run_intrus(test_tmpdir, "run text.cfg -o textrun -q", out, sizeof out);
  EXPECT(rc == 5, "run with unequal test files: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "test.en");
  struct stat sb;
  EXPECT(stat(test_tmp_path("textrun/checkpoint.ckpt"), &sb) != 0,
         "run trained before finding its test files unusable");
  snprintf(path, sizeof path, "%s/test.de", data);
  unlink(path);
  rc = test_run_intrus(test_tmpdir, "run text.cfg -o textrun -q", out, sizeof out);
  EXPECT(rc == 5, "run without test.de: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "test.de");
  EXPECT(stat(test_tmp_path("textrun/checkpoint.ckpt"), &sb) != 0,
         "run trained before finding its test file missing");

  rc = test_run_intrus(test_tmpdir, "decode text.cfg -o textrun -i text/test.en -O /nonexistent/x -q",
                       out, sizeof out);
  EXPECT(rc == 5, "decode -O into a missing directory: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "/nonexistent");
  EXPECT(strstr(out, "checkpoint") == NULL, "decode -O was checked only after loading: %s", out);

  /* NaN parameters are refused for decoding (and for training on: see above). */
  test_write_file(path, "das Fenster speichern\ndie Datei schließen\n");
  rc = test_run_intrus(test_tmpdir, "train text.cfg -o textrun -n 2 -q", out, sizeof out);
  EXPECT(rc == 0, "training the text run: exit %d: %s", rc, out);
  rc = test_run_intrus(test_tmpdir, "decode text.cfg -o textrun -i text/test.en -q", out,
                       sizeof out);
  EXPECT(rc == 0, "decoding the text run: exit %d: %s", rc, out);
  poison_first_param(test_tmp_path("textrun/checkpoint.ckpt"));
  rc = test_run_intrus(test_tmpdir, "decode text.cfg -o textrun -i text/test.en -q", out,
                       sizeof out);
  EXPECT(rc == 5, "decoding NaN parameters: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "non-finite");
}

/* The smaller ones of the command line and the readers. */
static void test_small_ones(void) {
  char out[16384], path[800];
  int rc;
  /* getopt's own messages name the command as the user typed it. */
  rc = test_run_intrus(test_tmpdir, "train text.cfg --bogus", out, sizeof out);
  EXPECT(rc == 2, "unknown option: exit %d", rc);
  EXPECT_CONTAINS(out, "intrus train: unrecognized option");
  rc = test_run_intrus(test_tmpdir, "train text.cfg -n 1234567890123456789012345", out,
                       sizeof out);
  EXPECT(rc == 2, "a 25-digit -n: exit %d", rc);
  EXPECT_CONTAINS(out, "too large");
  rc = test_run_intrus(NULL, "help train", out, sizeof out);
  EXPECT(rc == 0, "intrus help train: exit %d", rc);
  EXPECT_CONTAINS(out, "Usage: intrus train EXPERIMENT.cfg");
  rc = test_run_intrus(NULL, "run --help", out, sizeof out);
  EXPECT(rc == 0, "intrus run --help: exit %d", rc);
  EXPECT_CONTAINS(out, "Usage: intrus run EXPERIMENT.cfg");
  EXPECT_CONTAINS(out, "BLEU");
  EXPECT_CONTAINS(out, "test.hyp");

  /* A fresh run is not "resumed from 0"; -n below the step reached trains nothing. */
  rc = test_run_intrus(test_tmpdir, "train text.cfg -o fresh -n 2", out, sizeof out);
  EXPECT(rc == 0, "fresh run: exit %d: %s", rc, out);
  EXPECT(strstr(out, "resumed from 0") == NULL, "a fresh run says: %s", out);
  EXPECT_CONTAINS(out, "steps 1..2");
  rc = test_run_intrus(test_tmpdir, "train text.cfg -o fresh -n 1", out, sizeof out);
  EXPECT(rc == 0, "-n below the step reached: exit %d: %s", rc, out);
  EXPECT(strstr(out, "2..1") == NULL && strstr(out, "steps 3..") == NULL,
         "-n below the step reached: %s", out);
  EXPECT_CONTAINS(out, "already trained to step 2");

  /* Empty input decodes to empty output; --trace on a left-to-right model writes its
   * order (a token appended a step: relative index 0 first, 1 last). */
  test_write_file(test_tmp_path("empty.txt"), "");
  rc = test_run_intrus(test_tmpdir, "decode text.cfg -o fresh -i empty.txt -q", out, sizeof out);
  EXPECT(rc == 0 && out[0] == '\0', "empty input: exit %d, output '%s'", rc, out);
  rc = test_run_intrus(test_tmpdir, "decode text.cfg -o fresh -q < empty.txt", out, sizeof out);
  EXPECT(rc == 0 && out[0] == '\0', "empty stdin: exit %d, output '%s'", rc, out);
  rc = test_run_intrus(test_tmpdir, "decode text.cfg -o fresh -i text/test.en -t tr -q", out,
                       sizeof out);
  EXPECT(rc == 0, "--trace on an autoregressive model: exit %d: %s", rc, out);
  {
    char *order = test_read_file(test_tmp_path("tr/order.tsv"));
    EXPECT(order && strncmp(order, "sentence\tposition\ttoken\tstep\t", 29) == 0,
           "--trace on an autoregressive model: order.tsv '%.60s'", order ? order : "(none)");
    /* Row k of a sentence (position k, 1-based) was written at step k - 1. */
    int rows = 0, wrong = 0;
    for (char *line = order ? strchr(order, '\n') : NULL; line && line[1];
         line = strchr(line + 1, '\n')) {
      long sent;
      int pos, step;
      char tok[256];
      if (sscanf(line + 1, "%ld\t%d\t%255s\t%d", &sent, &pos, tok, &step) != 4) {
        wrong++;
        continue;
      }
      rows++;
      wrong += step != pos - 1;
    }
    EXPECT(rows > 0 && wrong == 0,
           "--trace on an autoregressive model: %d rows, %d not step = position - 1", rows, wrong);
    free(order);
  }

  /* One very long input line is cut to search.max_src_len subwords, with a warning
   * naming the file and line (it asked for a terabyte and aborted). */
  size_t big = 3000 * strlen("open the file ") + 64;
  char *lines = malloc(big);
  strcpy(lines, "open the file\n");
  for (int i = 0; i < 3000; i++) strcat(lines, "open the file ");
  strcat(lines, "\n");
  test_write_file(test_tmp_path("long.txt"), lines);
  free(lines);
  rc = test_run_intrus(test_tmpdir, "decode text.cfg -o fresh -i long.txt -O long.out -q", out,
                       sizeof out);
  EXPECT(rc == 0, "a 9000-word line: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "long.txt:2: ");
  EXPECT_CONTAINS(out, "decoding the first 256 (search.max_src_len)");
  char *decoded = test_read_file(test_tmp_path("long.out"));
  int nl = 0;
  for (const char *p = decoded; p && *p; p++) nl += *p == '\n';
  EXPECT(nl == 2, "%d output lines for 2 inputs", nl);
  free(decoded);
  /* Training decodes its validation file at every validation: a line over max_src_len
   * is warned about once a run, not at each (16 times in a small-preset run). */
  char *textcfg = test_read_file(test_tmp_path("text.cfg"));
  char *warncfg = malloc(strlen(textcfg) + 256);
  strcpy(warncfg, textcfg);
  char *tr = strstr(warncfg, "train: {");
  if (tr) {
    strcpy(tr, "search: { max_src_len = 1; };\n"
               "train: { steps = 3; batch_tokens = 100; valid_every = 1; valid_bleu = 1; };\n");
    test_write_file(test_tmp_path("warn.cfg"), warncfg);
    rc = test_run_intrus(test_tmpdir, "train warn.cfg -o warnrun", out, sizeof out);
    EXPECT(rc == 0, "training with max_src_len 1: exit %d: %s", rc, out);
    int warnings = 0, validations = 0;
    for (const char *p = out; (p = strstr(p, "(search.max_src_len)")); p++) warnings++;
    for (const char *p = out; (p = strstr(p, "(decoded in")); p++) validations++;
    EXPECT(warnings == 1 && validations >= 3,
           "%d max_src_len warnings over %d validations (want 1): %s", warnings, validations,
           out);
  }
  EXPECT(tr != NULL, "text.cfg has a train group");
  free(warncfg);
  free(textcfg);

  /* A FIFO as the config is refused at once instead of blocking. */
  snprintf(path, sizeof path, "%s/fifo.cfg", test_tmpdir);
  EXPECT(mkfifo(path, 0600) == 0, "mkfifo");
  rc = test_run_intrus(test_tmpdir, "train fifo.cfg -q", out, sizeof out);
  EXPECT(rc == 5, "a FIFO as the config: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "not a regular file");

  /* A message too long for the error buffer keeps its end, where the reason is. */
  char longdir[1500];
  memset(longdir, 'd', sizeof longdir - 1);
  longdir[sizeof longdir - 1] = '\0';
  struct intrus_error err = {0};
  intrus_error_set(&err, INTRUS_ERR_IO, "%s/x.cfg: cannot read: the reason", longdir);
  EXPECT_CONTAINS(err.msg, "cannot read: the reason");
  EXPECT_CONTAINS(err.msg, "[...]");
  EXPECT(strlen(err.msg) < sizeof err.msg, "message overruns");

  /* Pairs dropped for an empty side are counted in the data line. */
  char *train_en = test_read_file(test_tmp_path("text/train.en"));
  char *train_de = test_read_file(test_tmp_path("text/train.de"));
  char *en = malloc(strlen(train_en) + 16), *de = malloc(strlen(train_de) + 16);
  sprintf(en, "%s\nsomething\n", train_en);
  sprintf(de, "%s\n\n", train_de);
  test_write_file(test_tmp_path("text/train.en"), en);
  test_write_file(test_tmp_path("text/train.de"), de);
  rc = test_run_intrus(test_tmpdir, "train text.cfg -o blank -n 1", out, sizeof out);
  EXPECT(rc == 0, "blank pairs: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "2 with an empty side");
  test_write_file(test_tmp_path("text/train.en"), train_en);
  test_write_file(test_tmp_path("text/train.de"), train_de);
  free(en);
  free(de);
  free(train_en);
  free(train_de);
}

/* ---- tokenizer files ------------------------------------------------------------ */

static void test_tokenizer_files(void) {
  char out[16384];
  int rc;
  char *train_en = test_read_file(test_tmp_path("text/train.en"));
  char *cfg = test_read_file(test_tmp_path("text.cfg"));
  /* A first run that fails after learning BPE (blank training data) leaves files that the
   * next run, on fixed data, must not reuse. */
  test_write_file(test_tmp_path("text/train.en"), "\n\n\n\n");
  rc = test_run_intrus(test_tmpdir, "train text.cfg -o tok -n 1", out, sizeof out);
  EXPECT(rc == 5, "blank training data: exit %d: %s", rc, out);
  test_write_file(test_tmp_path("text/train.en"), train_en);
  rc = test_run_intrus(test_tmpdir, "train text.cfg -o tok -n 1", out, sizeof out);
  EXPECT(rc == 0, "after fixing the data: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "learnt again");
  EXPECT(strstr(out, "vocabulary 4 / 4") == NULL, "the stale vocabulary was reused: %s", out);
  char *manifest = test_read_file(test_tmp_path("tok/tokenizer.txt"));
  EXPECT_CONTAINS(manifest, "bpe.codes 0x");
  free(manifest);

  /* Another bpe_merges: refused, not silently the old codes. */
  char *other = test_replace(cfg, "bpe_merges = 10", "bpe_merges = 12");
  test_write_file(test_tmp_path("text12.cfg"), other);
  rc = test_run_intrus(test_tmpdir, "train text12.cfg -o tok -n 2 -q", out, sizeof out);
  EXPECT(rc == 5, "another bpe_merges: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "bpe_merges");

  /* Other training data. */
  char *more = malloc(strlen(train_en) + 32);
  sprintf(more, "%sopen the box\n", train_en);
  char *train_de = test_read_file(test_tmp_path("text/train.de"));
  char *more_de = malloc(strlen(train_de) + 32);
  sprintf(more_de, "%sdie Kiste öffnen\n", train_de);
  test_write_file(test_tmp_path("text/train.en"), more);
  test_write_file(test_tmp_path("text/train.de"), more_de);
  rc = test_run_intrus(test_tmpdir, "train text.cfg -o tok -n 2 -q", out, sizeof out);
  EXPECT(rc == 5, "other training data: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "other training data");
  test_write_file(test_tmp_path("text/train.en"), train_en);
  test_write_file(test_tmp_path("text/train.de"), train_de);

  /* An edited or emptied bpe.codes is refused by decode and by train. */
  rc = test_run_intrus(test_tmpdir, "decode text.cfg -o tok -i text/test.en -q", out, sizeof out);
  EXPECT(rc == 0, "decode of the intact run: exit %d: %s", rc, out);
  char *codes = test_read_file(test_tmp_path("tok/bpe.codes"));
  char *edited = malloc(strlen(codes) + 16);
  sprintf(edited, "%sx y\n", codes);
  test_write_file(test_tmp_path("tok/bpe.codes"), edited);
  rc = test_run_intrus(test_tmpdir, "decode text.cfg -o tok -i text/test.en -q", out, sizeof out);
  EXPECT(rc == 5, "decode with an edited bpe.codes: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "bpe.codes: changed since it was made");
  test_write_file(test_tmp_path("tok/bpe.codes"), "");
  rc = test_run_intrus(test_tmpdir, "train text.cfg -o tok -n 2 -q", out, sizeof out);
  EXPECT(rc == 5, "train with an empty bpe.codes: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "bpe.codes: changed since it was made");
  test_write_file(test_tmp_path("tok/bpe.codes"), codes);
  rc = test_run_intrus(test_tmpdir, "train text.cfg -o tok -n 2 -q", out, sizeof out);
  EXPECT(rc == 0, "train with the codes restored: exit %d: %s", rc, out);
  free(codes);
  free(edited);
  free(more);
  free(more_de);
  free(train_de);
  free(other);
  free(cfg);
  free(train_en);
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-test-harden-XXXXXX")) return 1;
  test_checkpoint_values();
  test_refused_resume_keeps_effective_cfg();
  test_log_after_kill();
  test_lock();
  test_names();
  test_checks_before_work();
  test_small_ones();
  test_tokenizer_files();
  test_remove_tmpdir();
  return test_finish("test_harden");
}

/* Machine translation end to end on a slice of the bundled en-de corpus: training on
 * parallel text resumes exactly; decoding and `intrus run` write outputs and BLEU; bad
 * data (invalid UTF-8, unequal files, an empty file) and a vocabulary that does not
 * match the checkpoint are refused with messages naming the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "intrus/corpus.h"
#include "intrus/train.h"
#include "testutil.h"

static char tmp[256];

#define MAX_STEPS 64
struct trace {
  double loss[MAX_STEPS + 1];
};
static void record(long step, double loss, void *user) {
  struct trace *t = user;
  if (step <= MAX_STEPS) t->loss[step] = loss;
}

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

static enum intrus_status train(const char *cfg_path, const char *run, long max_steps,
                                struct trace *tr, struct intrus_error *err) {
  struct intrus_config *cfg = intrus_config_load_file(cfg_path, err);
  if (!cfg) return err->status;
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(s);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/%s", tmp, run);
  struct intrus_train_options opt = {.run_dir = dir, .search = s, .max_steps = max_steps,
                                     .on_step = record, .user = tr};
  struct intrus_train_result res;
  enum intrus_status st = intrus_train(cfg, &opt, &res, err);
  intrus_plugin_search_free(s);
  intrus_config_free(cfg);
  return st;
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
  struct trace a = {0}, b = {0};
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
  snprintf(path, sizeof path, "%s/a/best.ckpt", tmp);
  EXPECT(access(path, R_OK) == 0, "no %s", path);
  char **log;
  size_t n;
  struct intrus_error lerr = {0};
  snprintf(path, sizeof path, "%s/a/train.log", tmp);
  EXPECT(intrus_lines_read(path, &log, &n, &lerr) == INTRUS_OK, "%s", lerr.msg);
  if (!lerr.status) {
    EXPECT_CONTAINS(log[0], "valid_bleu");
    EXPECT(n == 3, "train.log has %zu lines", n);
    EXPECT(n == 3 && strrchr(log[2], '\t') && strrchr(log[2], '\t')[1] != '\0',
           "no BLEU in the last log line: %s", n ? log[n - 1] : "");
    intrus_lines_free(log, n);
  }
}

static void test_vocab_mismatch(const char *cfg) {
  /* Change one token of run b's vocabulary: resuming must refuse the checkpoint. */
  char path[600];
  snprintf(path, sizeof path, "%s/b/vocab.txt", tmp);
  char **lines;
  size_t n;
  struct intrus_error err = {0};
  EXPECT(intrus_lines_read(path, &lines, &n, &err) == INTRUS_OK, "%s", err.msg);
  FILE *f = fopen(path, "w");
  for (size_t i = 0; i < n; i++) fprintf(f, "%s%s\n", lines[i], i == n - 1 ? "x" : "");
  fclose(f);
  intrus_lines_free(lines, n);
  struct trace t = {0};
  EXPECT(train(cfg, "b", 21, &t, &err) == INTRUS_ERR_FORMAT, "status: %s", err.msg);
  EXPECT_CONTAINS(err.msg, "checkpoint.ckpt");
  EXPECT_CONTAINS(err.msg, "vocabulary");
}

static void test_cli_decode_and_run(void) {
  char out[16384];
  int rc = test_run_intrus(tmp, "decode mt.cfg -o a -i data/test.en -O a/test.out -q", out, sizeof out);
  EXPECT(rc == 0, "decode exit %d: %s", rc, out);
  char path[600];
  snprintf(path, sizeof path, "%s/a/test.out", tmp);
  EXPECT(count_lines(path) == 30, "decoded %zu lines for 30 inputs", count_lines(path));
  rc = test_run_intrus(tmp, "run mt.cfg -o a -q", out, sizeof out);
  EXPECT(rc == 0, "run exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "BLEU = ");
  EXPECT_CONTAINS(out, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.3.1");
  snprintf(path, sizeof path, "%s/a/results.json", tmp);
  FILE *f = fopen(path, "r");
  char json[4096] = {0};
  if (f) {
    size_t got = fread(json, 1, sizeof json - 1, f);
    json[got] = '\0';
    fclose(f);
  }
  EXPECT_CONTAINS(json, "\"BLEU\": ");
  EXPECT_CONTAINS(json, "\"test_sentences\": 30");
  rc = test_run_intrus(tmp, "decode mt.cfg -o nosuchrun -i data/test.en -q", out, sizeof out);
  EXPECT(rc == 5, "decode without a trained run: exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "nosuchrun");
}

static void bad_data(const char *name, const char *train_en_text, const char *want1,
                     const char *want2) {
  char dir[600], cfg[700];
  snprintf(dir, sizeof dir, "%s/%s", tmp, name);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/data/* %s/", dir, tmp, dir);
  EXPECT(system(cmd) == 0, "%s", cmd);
  char path[800];
  snprintf(path, sizeof path, "%s/train.en", dir);
  FILE *f = fopen(path, "w");
  fputs(train_en_text, f);
  fclose(f);
  snprintf(cfg, sizeof cfg, "%s/%s.cfg", tmp, name);
  write_cfg(cfg, dir);
  struct trace t = {0};
  struct intrus_error err = {0};
  enum intrus_status st = train(cfg, name, 1, &t, &err);
  EXPECT(st == INTRUS_ERR_DATA, "%s: status %d: %s", name, st, err.msg);
  EXPECT_CONTAINS(err.msg, want1);
  EXPECT_CONTAINS(err.msg, want2);
}

int main(void) {
  snprintf(tmp, sizeof tmp, "/tmp/intrus-test-mt-XXXXXX");
  if (!mkdtemp(tmp)) return 1;
  char data[600], cfg[700];
  snprintf(data, sizeof data, "%s/data", tmp);
  snprintf(cfg, sizeof cfg, "%s/mt.cfg", tmp);
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
  bad_data("badutf8", "Open file\nSave \xff file\n", "train.en:2:", "invalid UTF-8");
  bad_data("empty", "", "train.en", "empty file");
  bad_data("unequal", "Open file\n", "train.en has 1 lines", "train.de has 300");
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  return test_finish("test_mt");
}

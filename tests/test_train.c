/* The whole path an experiment takes: config file -> plugins -> model -> Adam training
 * -> checkpoints. A one-layer Transformer must learn the copy task; a run stopped and
 * resumed must log the same losses as an uninterrupted one; two runs with the same seed
 * must be bitwise identical. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "intrus/plugin.h"
#include "intrus/train.h"
#include "testutil.h"

static void test_learns_copy(const char *cfg) {
  struct test_losses tr = {0};
  struct intrus_train_result res;
  struct intrus_error err = {0};
  enum intrus_status st = test_train_text(cfg, "full", 0, &tr, &res, &err);
  EXPECT(st == INTRUS_OK, "%s", err.msg);
  EXPECT(res.steps_done == 400, "steps %ld", res.steps_done);
  /* ln(9) = 2.2 nats per token at chance; a copy model that works is near zero. */
  EXPECT(res.valid_loss < 0.05, "validation loss %.4f after 400 steps", res.valid_loss);
  EXPECT(tr.loss[1] > 1.5, "first loss %.4f", tr.loss[1]);
  printf("copy task: loss %.4f at step 1, %.4f at step 400, valid %.4f\n", tr.loss[1],
         tr.loss[400], res.valid_loss);
  const char *path = test_tmp_path("full/effective.cfg");
  char *eff = test_read_file(path);
  EXPECT(eff != NULL, "no effective config at %s", path);
  if (eff) {
    EXPECT_CONTAINS(eff, "beta2");          /* a default filled in */
    EXPECT_CONTAINS(eff, "tie_embeddings"); /* a plugin's default */
    free(eff);
  }
  path = test_tmp_path("full/checkpoint.ckpt");
  EXPECT(access(path, R_OK) == 0, "no checkpoint at %s", path);
}

static void test_resume_and_determinism(const char *cfg) {
  struct test_losses a = {0}, b = {0}, c = {0};
  struct intrus_train_result res;
  struct intrus_error err = {0};
  EXPECT(test_train_text(cfg, "a", 60, &a, &res, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(test_train_text(cfg, "b", 30, &b, &res, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(test_train_text(cfg, "b", 60, &b, &res, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(res.resumed_from == 30, "resumed from %ld", res.resumed_from);
  EXPECT(test_train_text(cfg, "c", 60, &c, &res, &err) == INTRUS_OK, "%s", err.msg);
  int same_resume = 0, same_repeat = 0;
  for (int s = 1; s <= 60; s++) {
    same_resume += memcmp(&a.loss[s], &b.loss[s], sizeof(double)) == 0;
    same_repeat += memcmp(&a.loss[s], &c.loss[s], sizeof(double)) == 0;
  }
  EXPECT(same_resume == 60, "resumed run matches the uninterrupted one at %d of 60 steps",
         same_resume);
  EXPECT(same_repeat == 60, "repeated run is bitwise identical at %d of 60 steps", same_repeat);
}

static void test_fingerprint_mismatch(const char *cfg) {
  /* The run dir "a" holds a d_model 32 checkpoint; a different model must be refused. */
  char *other = test_replace(cfg, "d_model = 32;", "d_model = 16;");
  struct test_losses t = {0};
  struct intrus_train_result res;
  struct intrus_error err = {0};
  EXPECT(other != NULL, "fixture lost its d_model line");
  if (!other) return;
  enum intrus_status st = test_train_text(other, "a", 61, &t, &res, &err);
  EXPECT(st == INTRUS_ERR_FORMAT, "status %d: %s", st, err.msg);
  EXPECT_CONTAINS(err.msg, "checkpoint.ckpt");
  EXPECT_CONTAINS(err.msg, "another model configuration");
  free(other);
}

static void test_config_errors(const char *cfg) {
  struct test_losses t = {0};
  struct intrus_train_result res;
  struct intrus_error err = {0};
  char *bad = test_replace(cfg, "layers = 1; heads = 2; ff = 64; dropout = 0.0; };\n  decoder",
                           "layers = 1; haeds = 2; ff = 64; dropout = 0.0; };\n  decoder");
  EXPECT(bad != NULL, "fixture changed");
  if (bad) {
    EXPECT(test_train_text(bad, "bad", 1, &t, &res, &err) == INTRUS_ERR_CONFIG, "%s", err.msg);
    EXPECT_CONTAINS(err.msg, "toy.cfg:");
    EXPECT_CONTAINS(err.msg, "haeds");
    free(bad);
  }
  bad = test_replace(cfg, "plugin = \"autoregressive\"", "plugin = \"nosuch\"");
  EXPECT(bad != NULL, "fixture changed");
  if (bad) {
    EXPECT(test_train_text(bad, "bad", 1, &t, &res, &err) == INTRUS_ERR_PLUGIN, "%s", err.msg);
    EXPECT_CONTAINS(err.msg, "nosuch");
    EXPECT_CONTAINS(err.msg, "autoregressive"); /* lists what is available */
    free(bad);
  }
}


static void test_cli(void) {
  char out[8192], args[1024];
  snprintf(args, sizeof args, "train %s/experiments/toy-copy.cfg -o %s/cli -n 3 -q",
           test_srcdir(), test_tmpdir);
  int rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "3 steps");
  const char *bad = test_write_file(test_tmp_path("bad.cfg"),
                                    "name = \"x\";\ndata: { kind = \"synthetic\" ;\n model = 3;\n");
  snprintf(args, sizeof args, "train %s -o %s/cli2", bad, test_tmpdir);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 3, "exit %d for a malformed config: %s", rc, out);
  EXPECT_CONTAINS(out, "bad.cfg:");
  rc = test_run_intrus(NULL, "train", out, sizeof out);
  EXPECT(rc == 2, "exit %d without an experiment", rc);
  rc = test_run_intrus(NULL, "train --help", out, sizeof out);
  EXPECT(rc == 0 && strstr(out, "--run-dir"), "train --help: %d %s", rc, out);
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-test-train-XXXXXX")) return 1;
  char *cfg = test_read_srcfile("experiments/toy-copy.cfg");
  if (!cfg) return 1;
  test_learns_copy(cfg);
  test_resume_and_determinism(cfg);
  test_fingerprint_mismatch(cfg);
  test_config_errors(cfg);
  test_cli();
  free(cfg);
  test_remove_tmpdir();
  return test_finish("test_train");
}

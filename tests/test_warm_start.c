/* Warm start (model.init, core/model/warm_start.c) on tiny models: an autoregressive
 * source trained a few steps, an insertion model started from it. With lr = 0 the
 * target's first checkpoint holds its starting parameters exactly: the copied ones must
 * be the source's bit for bit (the token output layer by the output-layer rule, from
 * proj.w or from a tied source's embedding, transposed), the others a fresh run's bit
 * for bit. A source of another vocabulary is refused naming the setting and the files;
 * a resumed run does not copy again (its losses equal an uninterrupted run's); the
 * source's content goes into the run's checkpoints, and a resume after the source
 * changed is refused; the printout lists what was copied, kept and left unused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intrus/checkpoint.h"
#include "intrus/model.h"
#include "intrus/train.h"
#include "testutil.h"

/* The source: a left-to-right baseline. %s: extra decoder settings; %d: vocabulary. */
static const char *source_fmt =
    "name = \"src\"; seed = 1;\n"
    "data: { kind = \"synthetic\"; task = \"copy\"; vocab = %d; min_len = 2; max_len = 6;\n"
    "  valid_size = 32; };\n"
    "model: { d_model = 16;\n"
    "  encoder: { plugin = \"transformer\"; layers = 1; heads = 2; ff = 32; dropout = 0.0; };\n"
    "  decoder: { plugin = \"autoregressive\"; layers = 1; heads = 2; ff = %d; dropout = 0.0;%s "
    "};\n"
    "};\n"
    "train: { steps = 40; batch = 16; lr = 3e-3; warmup = 5; log_every = 1; valid_every = 10;\n"
    "  checkpoint_every = 1; };\n";

/* The target: an insertion model of the same width and depth, pair slots (one more new
 * parameter). %s: the model.init line (or nothing); %s: train.lr. */
static const char *target_fmt =
    "name = \"warm\"; seed = 1;\n"
    "data: { kind = \"synthetic\"; task = \"copy\"; vocab = 12; min_len = 2; max_len = 6;\n"
    "  valid_size = 32; };\n"
    "model: { d_model = 16;\n"
    "  %s\n"
    "  encoder: { plugin = \"transformer\"; layers = 1; heads = 2; ff = 32; dropout = 0.0; };\n"
    "  decoder: { plugin = \"insertion\"; layers = 1; heads = 2; ff = 32; dropout = 0.0;\n"
    "             slots = \"pair\"; };\n"
    "};\n"
    "train: { batch = 16; lr = %s; warmup = 5; log_every = 1; valid_every = 10;\n"
    "  checkpoint_every = 1;\n"
    "  phases = ( { name = \"pretrain\"; order = { plugin = \"uniform\"; }; loss = \"uniform\";\n"
    "               states = \"one\"; steps = 40; } ); };\n";

static char *source_text(int vocab, int dec_ff, const char *extra) {
  char *s = malloc(4096);
  snprintf(s, 4096, source_fmt, vocab, dec_ff, extra);
  return s;
}

/* The target with model.init naming src (relative to the experiment file), or without
 * model.init when src is NULL. */
static char *target_text(const char *src, const char *lr) {
  char init[512] = "";
  if (src) snprintf(init, sizeof init, "init = { checkpoint = \"%s\"; };", src);
  char *s = malloc(4096);
  snprintf(s, 4096, target_fmt, init, lr);
  return s;
}

/* Writes text to test_tmpdir/file, loads it from there (so that relative paths are
 * taken from test_tmpdir) and trains it into test_tmpdir/run to max_steps; the progress
 * lines into *progress (malloc'd) when it is not NULL. */
static enum intrus_status train(const char *file, const char *text, const char *run,
                                long max_steps, struct test_losses *losses, char **progress,
                                struct intrus_error *err) {
  struct intrus_config *cfg = intrus_config_load_file(test_write_file(test_tmp_path(file), text),
                                                      err);
  if (!cfg) return err->status;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = progress ? open_memstream(&buf, &len) : NULL;
  struct intrus_train_result res;
  struct test_losses scratch = {0};
  enum intrus_status st =
      test_train_config_progress(cfg, run, max_steps, test_record_loss,
                                 losses ? losses : &scratch, f, &res, err);
  if (f) {
    fclose(f);
    *progress = buf;
  }
  intrus_config_free(cfg);
  return st;
}

static struct intrus_ckpt *load(const char *rel) {
  struct intrus_ckpt *ck = NULL;
  struct intrus_error err = {0};
  EXPECT(intrus_ckpt_read(test_tmp_path(rel), false, 0, &ck, &err) == INTRUS_OK, "%s", err.msg);
  return ck;
}

/* The values of parameter name in ck, with their count; NULL when absent. */
static const float *param(const struct intrus_ckpt *ck, const char *name, size_t *n) {
  char key[512];
  int ndim = 0, shape[4] = {0};
  snprintf(key, sizeof key, "param/%s", name);
  const float *x = ck ? intrus_ckpt_tensor(ck, key, &ndim, shape) : NULL;
  *n = x ? intrus_shape_numel(ndim, shape) : 0;
  return x;
}

/* Bitwise equality of parameter a in ck_a and parameter b in ck_b. */
static bool same_bits(const struct intrus_ckpt *ck_a, const char *a, const struct intrus_ckpt *ck_b,
                      const char *b) {
  size_t na, nb;
  const float *x = param(ck_a, a, &na), *y = param(ck_b, b, &nb);
  return x && y && na == nb && memcmp(x, y, na * sizeof *x) == 0;
}

/* The names of the target model's parameters (no checkpoint needed). */
static struct intrus_model *target_model(void) {
  char *text = target_text("src/checkpoint.ckpt", "0.0");
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_string(text, "warm.cfg", &err);
  struct intrus_model *m = NULL;
  /* model.init is accepted wherever a model is built (decode, analyze): read strictly. */
  EXPECT(cfg && test_model_create(cfg, 12, 12, 1, NULL, &m, &err) == INTRUS_OK, "%s", err.msg);
  intrus_config_free(cfg);
  free(text);
  return m;
}

static bool copied_by_name(const char *name) {
  return !strncmp(name, "encoder.", 8) || !strcmp(name, "decoder.embed") ||
         !strncmp(name, "decoder.layer", 13) || !strncmp(name, "decoder.final_norm", 18);
}

/* Untied source: every shared parameter bit for bit, decoder.out_token from
 * decoder.proj.w, the position column and pair slots as a fresh run's. */
static void test_copy(struct intrus_model *m) {
  struct intrus_error err = {0};
  char *src = source_text(12, 32, ""), *warm = target_text("src/checkpoint.ckpt", "0.0"),
       *fresh = target_text(NULL, "0.0"), *out = NULL;
  EXPECT(train("src.cfg", src, "src", 3, NULL, NULL, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(train("warm.cfg", warm, "warm0", 1, NULL, &out, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(train("fresh.cfg", fresh, "fresh0", 1, NULL, NULL, &err) == INTRUS_OK, "%s", err.msg);
  struct intrus_ckpt *cs = load("src/checkpoint.ckpt"), *cw = load("warm0/checkpoint.ckpt"),
                     *cf = load("fresh0/checkpoint.ckpt");
  int copied = 0, kept = 0;
  for (size_t i = 0; m && i < intrus_params_count(intrus_model_params(m)); i++) {
    const char *name = intrus_params_at(intrus_model_params(m), i)->name;
    if (copied_by_name(name)) {
      copied++;
      EXPECT(same_bits(cw, name, cs, name), "%s is not the source's", name);
      /* The source was trained: a copy differs from a fresh start (else the test proves
       * nothing). Layer-norm biases and gains may still be at their init after 3 steps
       * only in theory; the weights are not. */
      if (strstr(name, ".w") || !strcmp(name, "decoder.embed"))
        EXPECT(!same_bits(cw, name, cf, name), "%s equals a fresh run's", name);
    } else if (!strcmp(name, "decoder.out_token")) {
      EXPECT(same_bits(cw, name, cs, "decoder.proj.w"), "out_token is not the source's proj.w");
    } else {
      kept++;
      EXPECT(same_bits(cw, name, cf, name), "%s is not a fresh run's", name);
    }
  }
  EXPECT(copied > 30 && kept == 2, "%d copied by name, %d kept", copied, kept);
  uint64_t rec = 0;
  EXPECT(cw && intrus_ckpt_u64(cw, "init_source", &rec) && cs &&
             rec == intrus_ckpt_checksum(cs),
         "the run's checkpoint records 0x%016llx, the source's content is 0x%016llx",
         (unsigned long long)rec, cs ? (unsigned long long)intrus_ckpt_checksum(cs) : 0ULL);
  EXPECT(cf && !intrus_ckpt_u64(cf, "init_source", NULL), "a fresh run records a source");
  EXPECT_CONTAINS(out, "warm start (model.init.checkpoint) from ");
  EXPECT_CONTAINS(out, "copied 49 of 51 parameters");
  EXPECT_CONTAINS(out, "decoder.out_token [16, 12] <- decoder.proj.w [16, 12]");
  EXPECT_CONTAINS(out, "kept their own initialisation (2):");
  EXPECT_CONTAINS(out, "decoder.out_pos [16, 1]: not in the source");
  EXPECT_CONTAINS(out, "decoder.slot_next [16, 16]: not in the source");
  EXPECT_CONTAINS(out, "source parameters not used (0)");
  char *file = test_read_file(test_tmp_path("warm0/warm_start.txt"));
  EXPECT(file && out && strstr(out, file), "warm_start.txt is not the printout: %s",
         file ? file : "(none)");
  char *log = test_read_file(test_tmp_path("warm0/train.log"));
  EXPECT(log && !strncmp(log, "step\t", 5), "train.log does not start with its header");
  free(log);
  free(file);
  free(out);
  intrus_ckpt_free(cs);
  intrus_ckpt_free(cw);
  intrus_ckpt_free(cf);
  free(src);
  free(warm);
  free(fresh);
}

/* Tied source: out_token is the transpose of its embedding; its proj.w does not exist. */
static void test_tied(void) {
  struct intrus_error err = {0};
  char *src = source_text(12, 32, " tie_embeddings = true;"),
       *warm = target_text("srctied/checkpoint.ckpt", "0.0"), *out = NULL;
  EXPECT(train("srctied.cfg", src, "srctied", 3, NULL, NULL, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(train("warmtied.cfg", warm, "warmtied", 1, NULL, &out, &err) == INTRUS_OK, "%s",
         err.msg);
  struct intrus_ckpt *cs = load("srctied/checkpoint.ckpt"), *cw = load("warmtied/checkpoint.ckpt");
  size_t ne, nt;
  const float *e = param(cs, "decoder.embed", &ne), *t = param(cw, "decoder.out_token", &nt);
  EXPECT(e && t && ne == nt && ne == 12 * 16, "sizes %zu %zu", ne, nt);
  int wrong = 0;
  for (int v = 0; e && t && ne == nt && v < 12; v++)
    for (int d = 0; d < 16; d++) wrong += memcmp(&t[d * 12 + v], &e[v * 16 + d], sizeof *t) != 0;
  EXPECT(wrong == 0, "%d of 192 out_token values are not the source's embedding transposed", wrong);
  EXPECT(same_bits(cw, "decoder.embed", cs, "decoder.embed"), "embedding not copied");
  EXPECT_CONTAINS(out, "decoder.out_token [16, 12] <- decoder.embed [12, 16] transposed");
  /* The fingerprint the run records follows the source. */
  struct intrus_ckpt *c0 = load("warm0/checkpoint.ckpt");
  uint64_t a = 0, b = 0;
  EXPECT(c0 && cw && intrus_ckpt_u64(c0, "init_source", &a) &&
             intrus_ckpt_u64(cw, "init_source", &b) && a != b,
         "two sources, one recorded content 0x%016llx", (unsigned long long)a);
  intrus_ckpt_free(c0);
  intrus_ckpt_free(cs);
  intrus_ckpt_free(cw);
  free(out);
  free(src);
  free(warm);
}

/* A source whose decoder feed-forward is narrower: those parameters are listed with
 * both shapes and keep a fresh run's values; the rest is copied. */
static void test_shape_mismatch(void) {
  struct intrus_error err = {0};
  char *src = source_text(12, 24, ""), *warm = target_text("srcff/checkpoint.ckpt", "0.0"),
       *out = NULL;
  EXPECT(train("srcff.cfg", src, "srcff", 2, NULL, NULL, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(train("warmff.cfg", warm, "warmff", 1, NULL, &out, &err) == INTRUS_OK, "%s", err.msg);
  struct intrus_ckpt *cs = load("srcff/checkpoint.ckpt"), *cw = load("warmff/checkpoint.ckpt"),
                     *cf = load("fresh0/checkpoint.ckpt");
  static const char *const kept[] = {"decoder.layer0.ffn.in.w", "decoder.layer0.ffn.in.b",
                                     "decoder.layer0.ffn.out.w"};
  for (int i = 0; i < 3; i++)
    EXPECT(same_bits(cw, kept[i], cf, kept[i]), "%s is not a fresh run's", kept[i]);
  EXPECT(same_bits(cw, "decoder.layer0.ffn.out.b", cs, "decoder.layer0.ffn.out.b"),
         "ffn.out.b [16] fits and was not copied");
  EXPECT(same_bits(cw, "decoder.layer0.self.q.w", cs, "decoder.layer0.self.q.w"), "q not copied");
  EXPECT_CONTAINS(out, "decoder.layer0.ffn.in.w [16, 32]: shape mismatch, [16, 24] in the source");
  EXPECT_CONTAINS(out, "decoder.layer0.ffn.out.w [32, 16]: shape mismatch, [24, 16] in the source");
  EXPECT_CONTAINS(out, "kept their own initialisation (5):");
  intrus_ckpt_free(cs);
  intrus_ckpt_free(cw);
  intrus_ckpt_free(cf);
  free(out);
  free(src);
  free(warm);
}

/* Another vocabulary: refused at model.init.checkpoint's line, naming both sides. */
static void test_vocabulary(void) {
  struct intrus_error err = {0};
  char *src = source_text(13, 32, ""), *warm = target_text("src13/checkpoint.ckpt", "3e-3");
  EXPECT(train("src13.cfg", src, "src13", 2, NULL, NULL, &err) == INTRUS_OK, "%s", err.msg);
  enum intrus_status st = train("warm13.cfg", warm, "warm13", 2, NULL, NULL, &err);
  EXPECT(st == INTRUS_ERR_CONFIG, "status %d: %s", st, err.msg);
  EXPECT_CONTAINS(err.msg, "warm13.cfg:5: model.init.checkpoint:");
  EXPECT_CONTAINS(err.msg, "src13/checkpoint.ckpt was trained with another vocabulary");
  EXPECT_CONTAINS(err.msg, "(data.vocab)");
  EXPECT(access(test_tmp_path("warm13/checkpoint.ckpt"), F_OK) != 0, "a refused run trained");
  free(src);
  free(warm);
}

/* A resumed run keeps its own parameters: stopped at 2 and resumed to 5, its losses are
 * those of an uninterrupted run, and it prints no second warm start. */
static void test_resume(void) {
  struct intrus_error err = {0};
  char *warm = target_text("src/checkpoint.ckpt", "3e-3"), *out = NULL;
  struct test_losses a = {0}, b = {0};
  EXPECT(train("warm.cfg", warm, "wa", 5, &a, NULL, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(train("warm.cfg", warm, "wb", 2, &b, NULL, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(train("warm.cfg", warm, "wb", 5, &b, &out, &err) == INTRUS_OK, "%s", err.msg);
  int same = 0;
  for (int s = 1; s <= 5; s++) same += memcmp(&a.loss[s], &b.loss[s], sizeof(double)) == 0;
  EXPECT(same == 5, "the resumed warm run matches the uninterrupted one at %d of 5 steps", same);
  EXPECT(out && !strstr(out, "warm start ("), "the resume warm-started again: %s",
         out ? out : "(no output)");
  EXPECT_CONTAINS(out, "resuming warm from step 2");
  free(out);
  free(warm);
}

static void copy_file(const char *from, const char *to) {
  size_t n;
  unsigned char *b = test_read_bytes(test_tmp_path(from), &n);
  EXPECT(b != NULL, "cannot read %s", from);
  if (b) test_write_bytes(test_tmp_path(to), b, n);
  free(b);
}

/* The source is part of the run's identity: a resume after the source file changed is
 * refused (and goes on once it is restored); a source that is gone leaves the run its
 * own parameters; another path is another configuration. */
static void test_source_changed(void) {
  struct intrus_error err = {0};
  char *warm = target_text("x.ckpt", "3e-3"), *out = NULL;
  copy_file("src/checkpoint.ckpt", "x.ckpt");
  EXPECT(train("warmx.cfg", warm, "wx", 2, NULL, NULL, &err) == INTRUS_OK, "%s", err.msg);
  copy_file("srctied/checkpoint.ckpt", "x.ckpt");
  enum intrus_status st = train("warmx.cfg", warm, "wx", 3, NULL, NULL, &err);
  EXPECT(st == INTRUS_ERR_CONFIG, "status %d: %s", st, err.msg);
  EXPECT_CONTAINS(err.msg, "warmx.cfg:5: model.init.checkpoint:");
  EXPECT_CONTAINS(err.msg, "x.ckpt has changed since this run began from it");
  EXPECT_CONTAINS(err.msg, "wx/checkpoint.ckpt records 0x");
  copy_file("src/checkpoint.ckpt", "x.ckpt");
  EXPECT(train("warmx.cfg", warm, "wx", 3, NULL, NULL, &err) == INTRUS_OK, "%s", err.msg);
  unlink(test_tmp_path("x.ckpt"));
  EXPECT(train("warmx.cfg", warm, "wx", 4, NULL, &out, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT_CONTAINS(out, "x.ckpt is gone; the run resumes with its own parameters");
  free(out);
  free(warm);
  /* Another path (the same file under another name) changes the config's fingerprint. */
  warm = target_text("./src/checkpoint.ckpt", "3e-3");
  st = train("warm.cfg", warm, "wb", 6, NULL, NULL, &err);
  EXPECT(st == INTRUS_ERR_FORMAT, "status %d: %s", st, err.msg);
  EXPECT_CONTAINS(err.msg, "another model configuration");
  free(warm);
}

static void test_config_errors(void) {
  struct intrus_error err = {0};
  char *warm = target_text("src/checkpoint.ckpt", "3e-3");
  char *bad = test_replace(warm, "init = { checkpoint", "init = { checkpont");
  EXPECT(train("bad.cfg", bad, "bad1", 1, NULL, NULL, &err) == INTRUS_ERR_CONFIG, "%s", err.msg);
  EXPECT_CONTAINS(err.msg, "checkpont");
  free(bad);
  bad = test_replace(warm, "src/checkpoint.ckpt", "nosuch.ckpt");
  EXPECT(train("bad.cfg", bad, "bad2", 1, NULL, NULL, &err) == INTRUS_ERR_IO, "%s", err.msg);
  EXPECT_CONTAINS(err.msg, "bad.cfg:5: model.init.checkpoint:");
  EXPECT_CONTAINS(err.msg, "nosuch.ckpt");
  free(bad);
  /* A source of another width and feed-forward size: nothing fits, which is refused
   * rather than trained. */
  char *wide = source_text(12, 24, "");
  char *narrow = test_replace(wide, "d_model = 16;", "d_model = 8;");
  char *src = test_replace(narrow, "ff = 32;", "ff = 24;");
  free(wide);
  free(narrow);
  EXPECT(train("srcnarrow.cfg", src, "srcnarrow", 1, NULL, NULL, &err) == INTRUS_OK, "%s",
         err.msg);
  bad = test_replace(warm, "src/checkpoint.ckpt", "srcnarrow/checkpoint.ckpt");
  EXPECT(train("bad.cfg", bad, "bad3", 1, NULL, NULL, &err) == INTRUS_ERR_FORMAT, "%s", err.msg);
  EXPECT_CONTAINS(err.msg, "no parameter of this model has its name and shape there");
  free(bad);
  free(src);
  free(warm);
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-test-warm-XXXXXX")) return 1;
  struct intrus_model *m = target_model();
  test_copy(m);
  test_tied();
  test_shape_mismatch();
  test_vocabulary();
  test_resume();
  test_source_changed();
  test_config_errors();
  intrus_model_destroy(m);
  test_remove_tmpdir();
  return test_finish("test_warm_start");
}

/* Strict config reading: exact messages (file, line, dotted path), defaults in the
 * written effective config, fingerprints, unknown-setting reports. Fixtures live in
 * tests/data/config/ and their line numbers are part of the expectations. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "intrus/config.h"
#include "testutil.h"

#define EXPECT_STREQ(got, want)                                                        \
  do {                                                                                 \
    const char *ts_g = (got), *ts_w = (want);                                          \
    EXPECT(ts_g && strcmp(ts_g, ts_w) == 0, "\n   got: \"%s\"\n  want: \"%s\"",          \
           ts_g ? ts_g : "(null)", ts_w);                                              \
  } while (0)

/* Expects status st and the message "<fixture path><rest>" (rest is printf-formatted). */
static char fixture_buf[4096];

static const char *fixture(const char *name) {
  snprintf(fixture_buf, sizeof fixture_buf, "%s/tests/data/config/%s", test_srcdir(), name);
  return fixture_buf;
}

static char want_buf[4096];
static const char *want(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *want(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(want_buf, sizeof want_buf, fmt, ap);
  va_end(ap);
  return want_buf;
}

static struct intrus_config *load(const char *name) {
  struct intrus_error err = {0};
  struct intrus_config *c = intrus_config_load_file(fixture(name), &err);
  EXPECT(c != NULL, "loading %s: %s", name, err.msg);
  return c;
}

static void test_syntax_and_io(void) {
  struct intrus_error err = {0};
  char path[4096];
  snprintf(path, sizeof path, "%s", fixture("syntax.cfg"));
  EXPECT(intrus_config_load_file(path, &err) == NULL, "syntax error accepted");
  EXPECT(err.status == INTRUS_ERR_CONFIG, "status %d", err.status);
  EXPECT_STREQ(err.msg, want("%s:4: syntax error", path));

  snprintf(path, sizeof path, "%s", fixture("no-such-file.cfg"));
  EXPECT(intrus_config_load_file(path, &err) == NULL, "missing file accepted");
  EXPECT(err.status == INTRUS_ERR_IO, "status %d", err.status);
  EXPECT_STREQ(err.msg, want("cannot read config file '%s': %s", path, strerror(ENOENT)));

  snprintf(path, sizeof path, "%s/tests/data/config", test_srcdir());
  EXPECT(intrus_config_load_file(path, &err) == NULL, "directory accepted");
  EXPECT(err.status == INTRUS_ERR_IO, "status %d", err.status);
  EXPECT_STREQ(err.msg, want("cannot read config file '%s': %s", path, strerror(EISDIR)));

  /* load_string uses the given name in place of a file. */
  EXPECT(intrus_config_load_string("a = 1;\nb = 2 3;\n", "overrides", &err) == NULL,
         "syntax error accepted");
  EXPECT_STREQ(err.msg, "overrides:2: syntax error");
  struct intrus_config *c = intrus_config_load_string("a = 1;\nb = \"x\";\n", "overrides", &err);
  EXPECT(c != NULL, "%s", err.msg);
  if (!c) return;
  EXPECT_STREQ(intrus_config_filename(c), "overrides");
  long long v;
  EXPECT(intrus_cfg_int(intrus_config_root(c), "b", 0, &v, &err) == INTRUS_ERR_CONFIG, "b");
  EXPECT_STREQ(err.msg, "overrides:2: b: expected an integer, got a string");
  EXPECT(intrus_cfg_int_req(intrus_config_root(c), "zz", &v, &err) == INTRUS_ERR_CONFIG, "zz");
  EXPECT_STREQ(err.msg, "overrides: missing required setting 'zz'");
  intrus_config_free(c);

  /* @include is relative to the including file; errors name the included file. */
  c = load("inc_main.cfg");
  if (!c) return;
  const intrus_cfg *model;
  EXPECT(intrus_cfg_group_req(intrus_config_root(c), "model", &model, &err) == INTRUS_OK, "%s",
         err.msg);
  if (model) {
    EXPECT(intrus_cfg_int(model, "d_model", 1, &v, &err) == INTRUS_ERR_CONFIG, "d_model");
    snprintf(path, sizeof path, "%s", fixture("inc_part.cfg"));
    EXPECT_STREQ(err.msg, want("%s:2: model.d_model: expected an integer, got a string", path));
  }
  intrus_config_free(c);
}

static void test_read_nested(void) {
  struct intrus_error err = {0};
  struct intrus_config *c = load("exp.cfg");
  if (!c) return;
  const char *file = intrus_config_filename(c);
  EXPECT_STREQ(file, fixture("exp.cfg"));
  const intrus_cfg *root = intrus_config_root(c), *model, *enc, *train, *ph;
  EXPECT_STREQ(intrus_cfg_path(root), "");
  EXPECT(intrus_cfg_has(root, "model") && !intrus_cfg_has(root, "nope"), "has");

  const char *name;
  long long seed, dm, heads;
  double dropout;
  bool tied;
  EXPECT(intrus_cfg_string_req(root, "name", &name, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT_STREQ(name, "tiny");
  EXPECT(intrus_cfg_int_req(root, "seed", &seed, &err) == INTRUS_OK && seed == 7, "seed");
  EXPECT(intrus_cfg_group_req(root, "model", &model, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_cfg_group_req(model, "encoder", &enc, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT_STREQ(intrus_cfg_path(enc), "model.encoder");
  EXPECT(intrus_cfg_line(enc) == 6, "encoder line %d", intrus_cfg_line(enc));
  EXPECT(intrus_cfg_int_req(enc, "d_model", &dm, &err) == INTRUS_OK && dm == 64, "d_model");
  EXPECT(intrus_cfg_int_range(enc, "heads", 1, 1, 64, &heads, &err) == INTRUS_OK && heads == 4,
         "heads");
  EXPECT(intrus_cfg_double_range(enc, "dropout", 0, 0, 1, &dropout, &err) == INTRUS_OK,
         "%s", err.msg);
  EXPECT_NEAR(dropout, 0.1, 0);
  EXPECT(intrus_cfg_bool(enc, "tied", false, &tied, &err) == INTRUS_OK && tied, "tied");
  EXPECT(intrus_cfg_check_unknown(enc, &err) == INTRUS_OK, "%s", err.msg);

  /* A missing required setting is reported at the line of the group lacking it. */
  long long v;
  EXPECT(intrus_cfg_int_req(enc, "layers", &v, &err) == INTRUS_ERR_CONFIG, "layers");
  EXPECT_STREQ(err.msg, want("%s:6: model.encoder: missing required setting 'layers'", file));
  EXPECT(intrus_cfg_group_req(model, "decoder", &ph, &err) == INTRUS_ERR_CONFIG && !ph, "dec");
  EXPECT_STREQ(err.msg, want("%s:5: model: missing required setting 'decoder'", file));
  EXPECT(intrus_cfg_group(model, "decoder", &ph, &err) == INTRUS_OK && !ph, "optional group");

  const char **vocab;
  int nvocab;
  EXPECT(intrus_cfg_strings(model, "vocab", &vocab, &nvocab, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(nvocab == 3 && !strcmp(vocab[0], "a") && !strcmp(vocab[2], "c"), "vocab");
  EXPECT(intrus_cfg_check_unknown(model, &err) == INTRUS_OK, "%s", err.msg);

  static const char *const opts[] = {"sgd", "adam", "adamw", NULL};
  int opt = -1, n = 0;
  EXPECT(intrus_cfg_group_req(root, "train", &train, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_cfg_choice(train, "optimizer", "adam", opts, &opt, &err) == INTRUS_OK && opt == 2,
         "optimizer %d", opt);
  EXPECT(intrus_cfg_list_len(train, "phases", &n, &err) == INTRUS_OK && n == 2, "phases %d", n);
  EXPECT(intrus_cfg_list_group(train, "phases", 1, &ph, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT_STREQ(intrus_cfg_path(ph), "train.phases[1]");
  EXPECT(intrus_cfg_line(ph) == 18, "phase line %d", intrus_cfg_line(ph));
  double lr;
  EXPECT(intrus_cfg_double_req(ph, "lr", &lr, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT_NEAR(lr, 3.0, 0); /* an integer is accepted as a double */
  EXPECT(intrus_cfg_int_range(ph, "steps", 1, 1, 150, &v, &err) == INTRUS_ERR_CONFIG, "range");
  EXPECT_STREQ(err.msg, want("%s:19: train.phases[1].steps: 200 is out of range [1, 150]", file));
  EXPECT(intrus_cfg_double_range(ph, "lr", 0.1, 0, 1, &lr, &err) == INTRUS_ERR_CONFIG, "range");
  EXPECT_STREQ(err.msg, want("%s:20: train.phases[1].lr: 3 is out of range [0, 1]", file));
  const char **files;
  EXPECT(intrus_cfg_strings(ph, "files", &files, &n, &err) == INTRUS_OK && n == 2, "files");
  EXPECT(n == 2 && !strcmp(files[1], "y.txt") && files[2] == NULL, "files");
  EXPECT(intrus_cfg_check_unknown(ph, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_cfg_list_group(train, "phases", 0, &ph, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT_STREQ(intrus_cfg_path(ph), "train.phases[0]");
  EXPECT(intrus_cfg_double_req(ph, "lr", &lr, &err) == INTRUS_OK && lr == 1e-3, "%s", err.msg);
  EXPECT(intrus_cfg_check_unknown(ph, &err) == INTRUS_ERR_CONFIG, "steps is unread");
  EXPECT_STREQ(err.msg, want("%s:17: train.phases[0]: unknown setting 'steps' (known settings: "
                             "lr)", file));
  intrus_cfg_mark_read(ph, "steps");
  EXPECT(intrus_cfg_check_unknown(ph, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_cfg_check_unknown(train, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_cfg_check_unknown(root, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_cfg_list_group(train, "phases", 2, &ph, &err) == INTRUS_ERR_INVALID, "index");
  EXPECT_STREQ(err.msg, want("%s:16: train.phases: element 2 requested, but the list has 2", file));

  /* intrus_cfg_error: at the key's line, else the group's. */
  EXPECT(intrus_cfg_error(enc, "heads", &err, "%lld does not divide d_model %lld", 3LL, dm) ==
             INTRUS_ERR_CONFIG, "cfg_error");
  EXPECT_STREQ(err.msg, want("%s:8: model.encoder.heads: 3 does not divide d_model 64", file));
  intrus_cfg_error(enc, "absent", &err, "needs %s", "something");
  EXPECT_STREQ(err.msg, want("%s:6: model.encoder.absent: needs something", file));
  intrus_cfg_error(enc, NULL, &err, "bad group");
  EXPECT_STREQ(err.msg, want("%s:6: model.encoder: bad group", file));
  intrus_cfg_error(root, "name", &err, "bad name");
  EXPECT_STREQ(err.msg, want("%s:3: name: bad name", file));
  intrus_cfg_error(root, NULL, &err, "inconsistent");
  EXPECT_STREQ(err.msg, want("%s: inconsistent", file));
  intrus_config_free(c);
}

static void test_types(void) {
  struct intrus_error err = {0};
  struct intrus_config *c = load("bad.cfg");
  if (!c) return;
  const char *file = intrus_config_filename(c);
  const intrus_cfg *g = NULL, *sub;
  EXPECT(intrus_cfg_group_req(intrus_config_root(c), "g", &g, &err) == INTRUS_OK, "%s", err.msg);
  if (!g) return;
  long long i;
  double d;
  bool b;
  const char *s;
  const char **strs;
  int n, idx;

#define EXPECT_ERR(call, line, rest)                                                 \
  do {                                                                               \
    err.msg[0] = '\0';                                                               \
    EXPECT((call) == INTRUS_ERR_CONFIG, "%s accepted", #call);                       \
    EXPECT_STREQ(err.msg, want("%s:%d: %s", file, line, rest));                      \
  } while (0)

  EXPECT_ERR(intrus_cfg_int(g, "i", 0, &i, &err), 4, "g.i: expected an integer, got a string");
  EXPECT_ERR(intrus_cfg_int_req(g, "i", &i, &err), 4, "g.i: expected an integer, got a string");
  EXPECT_ERR(intrus_cfg_int_range(g, "i", 0, 0, 9, &i, &err), 4,
             "g.i: expected an integer, got a string");
  EXPECT_ERR(intrus_cfg_double(g, "f", 0, &d, &err), 5, "g.f: expected a number, got a string");
  EXPECT_ERR(intrus_cfg_double_req(g, "f", &d, &err), 5, "g.f: expected a number, got a string");
  EXPECT_ERR(intrus_cfg_int(g, "fl", 0, &i, &err), 6, "g.fl: expected an integer, got a float");
  EXPECT_ERR(intrus_cfg_bool(g, "b", false, &b, &err), 7,
             "g.b: expected a boolean, got an integer");
  EXPECT_ERR(intrus_cfg_string(g, "s", "x", &s, &err), 8, "g.s: expected a string, got an integer");
  EXPECT_ERR(intrus_cfg_string_req(g, "s", &s, &err), 8,
             "g.s: expected a string, got an integer");
  EXPECT_ERR(intrus_cfg_group(g, "grp", &sub, &err), 9, "g.grp: expected a group, got an integer");
  EXPECT_ERR(intrus_cfg_group_req(g, "grp", &sub, &err), 9,
             "g.grp: expected a group, got an integer");
  EXPECT_ERR(intrus_cfg_list_len(g, "lst", &n, &err), 10,
             "g.lst: expected a list of groups, got a group");
  EXPECT_ERR(intrus_cfg_list_group(g, "lst", 0, &sub, &err), 10,
             "g.lst: expected a list of groups, got a group");
  EXPECT_ERR(intrus_cfg_list_len(g, "lst2", &n, &err), 11,
             "g.lst2[1]: expected a group, got an integer");
  EXPECT_ERR(intrus_cfg_strings(g, "strs", &strs, &n, &err), 12,
             "g.strs: expected an array or list of strings, got a string");
  EXPECT_ERR(intrus_cfg_strings(g, "strs2", &strs, &n, &err), 13,
             "g.strs2[1]: expected a string, got an integer");
  EXPECT_ERR(intrus_cfg_int_range(g, "r", 1, 1, 8, &i, &err), 14, "g.r: 0 is out of range [1, 8]");
  EXPECT_ERR(intrus_cfg_double_range(g, "d", 0.5, 0, 1, &d, &err), 15,
             "g.d: 1.5 is out of range [0, 1]");
  EXPECT_ERR(intrus_cfg_double_range(g, "d", 0, -0.25, 1e-3, &d, &err), 15,
             "g.d: 1.5 is out of range [-0.25, 0.001]");
  static const char *const opts[] = {"sgd", "adam", "adamw", NULL};
  EXPECT_ERR(intrus_cfg_choice(g, "ch", "sgd", opts, &idx, &err), 16,
             "g.ch: unknown value 'adm' (allowed values: sgd, adam, adamw); did you mean 'adam'?");
  EXPECT_ERR(intrus_cfg_choice(g, "ch2", "sgd", opts, &idx, &err), 17,
             "g.ch2: unknown value 'zzz' (allowed values: sgd, adam, adamw)");
  EXPECT_ERR(intrus_cfg_choice(g, "s", "sgd", opts, &idx, &err), 8,
             "g.s: expected a string, got an integer");
#undef EXPECT_ERR
  /* int64 values and defaults beyond 32 bits. */
  EXPECT(intrus_cfg_int(g, "big", 0, &i, &err) == INTRUS_OK && i == 3000000000LL, "big %lld", i);
  EXPECT(intrus_cfg_double(g, "big", 0, &d, &err) == INTRUS_OK && d == 3e9, "big as double");
  /* A choice from its default. */
  EXPECT(intrus_cfg_choice(g, "ch3", "adam", opts, &idx, &err) == INTRUS_OK && idx == 1, "ch3");
  /* A choice without default is required. */
  err.msg[0] = '\0';
  EXPECT(intrus_cfg_choice(g, "ch4", NULL, opts, &idx, &err) == INTRUS_ERR_CONFIG, "ch4");
  EXPECT_STREQ(err.msg, want("%s:3: g: missing required setting 'ch4'", file));
  intrus_config_free(c);
}

static void test_unknown(void) {
  struct intrus_error err = {0};
  /* The single-unknown message. */
  struct intrus_config *c = intrus_config_load_string(
      "# one\n\n\n\n\nmodel = {\n  encoder = {\n    d_model = 64;\n    layrs = 2;\n"
      "    heads = 4; dropout = 0.1; };\n};\n", "exp.cfg", &err);
  EXPECT(c != NULL, "%s", err.msg);
  if (!c) return;
  const intrus_cfg *model, *enc;
  long long v;
  double d;
  EXPECT(intrus_cfg_group_req(intrus_config_root(c), "model", &model, &err) == INTRUS_OK, "m");
  EXPECT(intrus_cfg_group_req(model, "encoder", &enc, &err) == INTRUS_OK, "enc");
  EXPECT(intrus_cfg_int_req(enc, "layers", &v, &err) == INTRUS_ERR_CONFIG, "layers");
  EXPECT_STREQ(err.msg, "exp.cfg:7: model.encoder: missing required setting 'layers' "
                        "(is 'layrs' on line 9 a misspelling?)");
  intrus_cfg_int(enc, "layers", 6, &v, &err);
  intrus_cfg_int(enc, "d_model", 6, &v, &err);
  intrus_cfg_int(enc, "heads", 6, &v, &err);
  intrus_cfg_double(enc, "dropout", 0, &d, &err);
  EXPECT(intrus_cfg_check_unknown(enc, &err) == INTRUS_ERR_CONFIG, "layrs accepted");
  EXPECT_STREQ(err.msg, "exp.cfg:9: model.encoder: unknown setting 'layrs' (known settings: "
                        "d_model, dropout, heads, layers); did you mean 'layers'?");
  intrus_config_free(c);

  /* Several unknowns, in file order; the top level. */
  c = load("unknown.cfg");
  if (!c) return;
  const char *file = intrus_config_filename(c);
  const intrus_cfg *root = intrus_config_root(c);
  EXPECT(intrus_cfg_group_req(root, "model", &model, &err) == INTRUS_OK, "m");
  EXPECT(intrus_cfg_group_req(model, "encoder", &enc, &err) == INTRUS_OK, "enc");
  intrus_cfg_int(enc, "d_model", 6, &v, &err);
  intrus_cfg_int(enc, "heads", 6, &v, &err);
  intrus_cfg_int(enc, "layers", 6, &v, &err);
  intrus_cfg_double(enc, "dropout", 0, &d, &err);
  EXPECT(intrus_cfg_check_unknown(enc, &err) == INTRUS_ERR_CONFIG, "unknowns accepted");
  EXPECT_STREQ(err.msg,
               want("%s:3: model.encoder: 3 unknown settings (known settings: d_model, dropout, "
                    "heads, layers):\n"
                    "%s:5: model.encoder: unknown setting 'layrs'; did you mean 'layers'?\n"
                    "%s:7: model.encoder: unknown setting 'dropuot'; did you mean 'dropout'?\n"
                    "%s:8: model.encoder: unknown setting 'frobnicate'",
                    file, file, file, file));
  EXPECT(intrus_cfg_check_unknown(model, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_cfg_check_unknown(root, &err) == INTRUS_ERR_CONFIG, "modle accepted");
  EXPECT_STREQ(err.msg, want("%s:11: unknown setting 'modle' (known settings: model); did you "
                             "mean 'model'?", file));
  intrus_config_free(c);

  /* Nothing read at all. */
  c = intrus_config_load_string("x = 1;\n", "s", &err);
  if (!c) return;
  EXPECT(intrus_cfg_check_unknown(intrus_config_root(c), &err) == INTRUS_ERR_CONFIG, "x");
  EXPECT_STREQ(err.msg, "s:1: unknown setting 'x' (known settings: none)");
  intrus_config_free(c);
}

static void test_defaults_written(void) {
  struct intrus_error err = {0};
  struct intrus_config *c = load("exp.cfg");
  if (!c) return;
  const intrus_cfg *root = intrus_config_root(c), *model, *enc, *train, *ph;
  long long v;
  double d;
  bool b;
  const char *s;
  int idx, n;
  static const char *const acts[] = {"relu", "gelu", NULL};
  EXPECT(intrus_cfg_group_req(root, "model", &model, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_cfg_group_req(model, "encoder", &enc, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_cfg_int(enc, "layers", 6, &v, &err) == INTRUS_OK && v == 6, "layers");
  EXPECT(intrus_cfg_int(enc, "d_model", 6, &v, &err) == INTRUS_OK && v == 64, "explicit wins");
  EXPECT(intrus_cfg_int(enc, "max_tokens", 5000000000LL, &v, &err) == INTRUS_OK, "int64");
  EXPECT(intrus_cfg_double(enc, "eps", 1e-5, &d, &err) == INTRUS_OK && d == 1e-5, "eps");
  EXPECT(intrus_cfg_double_range(enc, "attn_dropout", 0.25, 0, 1, &d, &err) == INTRUS_OK, "ad");
  EXPECT(intrus_cfg_bool(enc, "pre_norm", true, &b, &err) == INTRUS_OK && b, "pre_norm");
  EXPECT(intrus_cfg_string(enc, "init", "xavier \"uniform\"", &s, &err) == INTRUS_OK, "init");
  EXPECT_STREQ(s, "xavier \"uniform\"");
  EXPECT(intrus_cfg_choice(enc, "act", "gelu", acts, &idx, &err) == INTRUS_OK && idx == 1, "act");
  EXPECT(intrus_cfg_group_req(root, "train", &train, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_cfg_list_group(train, "phases", 0, &ph, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_cfg_int(ph, "warmup", 10, &v, &err) == INTRUS_OK, "warmup");
  /* Defaults are read settings: no unknowns. */
  EXPECT(intrus_cfg_int(enc, "heads", 1, &v, &err) == INTRUS_OK, "heads");
  EXPECT(intrus_cfg_double(enc, "dropout", 0, &d, &err) == INTRUS_OK, "dropout");
  EXPECT(intrus_cfg_bool(enc, "tied", 0, &b, &err) == INTRUS_OK, "tied");
  EXPECT(intrus_cfg_check_unknown(enc, &err) == INTRUS_OK, "%s", err.msg);

  char out[4096], tmp[4200];
  snprintf(out, sizeof out, "%s/tests/test_config_effective.cfg", test_builddir());
  EXPECT(intrus_config_write(c, out, &err) == INTRUS_OK, "%s", err.msg);
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
  EXPECT(access(tmp, F_OK) != 0, "temporary file %s left behind", tmp);
  static const char *const all[] = {"name", "seed", "model", "train"};
  uint64_t fp = intrus_config_fingerprint(c, all, 4);

  struct intrus_config *e = intrus_config_load_file(out, &err);
  EXPECT(e != NULL, "re-reading the effective config: %s", err.msg);
  if (e) {
    root = intrus_config_root(e);
    EXPECT(intrus_cfg_group_req(root, "model", &model, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT(intrus_cfg_group_req(model, "encoder", &enc, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT(intrus_cfg_int_req(enc, "layers", &v, &err) == INTRUS_OK && v == 6, "%s", err.msg);
    EXPECT(intrus_cfg_int_req(enc, "d_model", &v, &err) == INTRUS_OK && v == 64, "%s", err.msg);
    EXPECT(intrus_cfg_int_req(enc, "max_tokens", &v, &err) == INTRUS_OK && v == 5000000000LL,
           "%s", err.msg);
    EXPECT(intrus_cfg_double_req(enc, "eps", &d, &err) == INTRUS_OK && d == 1e-5, "%s", err.msg);
    EXPECT(intrus_cfg_double_req(enc, "attn_dropout", &d, &err) == INTRUS_OK && d == 0.25, "ad");
    EXPECT(intrus_cfg_bool(enc, "pre_norm", false, &b, &err) == INTRUS_OK && b, "pre_norm");
    EXPECT(intrus_cfg_string_req(enc, "init", &s, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT_STREQ(s, "xavier \"uniform\"");
    EXPECT(intrus_cfg_choice(enc, "act", NULL, acts, &idx, &err) == INTRUS_OK && idx == 1, "act");
    EXPECT(intrus_cfg_group_req(root, "train", &train, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT(intrus_cfg_list_len(train, "phases", &n, &err) == INTRUS_OK && n == 2, "%s", err.msg);
    EXPECT(intrus_cfg_list_group(train, "phases", 0, &ph, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT(intrus_cfg_int_req(ph, "warmup", &v, &err) == INTRUS_OK && v == 10, "%s", err.msg);
    EXPECT(intrus_cfg_string_req(root, "name", &s, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT_STREQ(s, "tiny");
    EXPECT(intrus_config_fingerprint(e, all, 4) == fp, "effective config fingerprints differ");
    intrus_config_free(e);
  }
  unlink(out);

  /* A write that cannot happen names the path. */
  snprintf(out, sizeof out, "%s/tests/no-such-dir/eff.cfg", test_builddir());
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
  EXPECT(intrus_config_write(c, out, &err) == INTRUS_ERR_IO, "write to a missing directory");
  EXPECT_STREQ(err.msg, want("cannot write '%s': cannot create '%s': %s", out, tmp,
                             strerror(ENOENT)));
  intrus_config_free(c);
}

static void test_fingerprint(void) {
  struct intrus_config *a = load("fp_a.cfg"), *b = load("fp_b.cfg"), *c = load("fp_c.cfg");
  if (!a || !b || !c) goto out;
  static const char *const mt[] = {"model", "train"};
  static const char *const m[] = {"model"}, *const t[] = {"train"}, *const d[] = {"data"};
  static const char *const tm[] = {"train", "model"};
  uint64_t fa = intrus_config_fingerprint(a, mt, 2);
  EXPECT(fa == intrus_config_fingerprint(a, mt, 2), "not deterministic");
  EXPECT(fa == intrus_config_fingerprint(b, mt, 2), "reordering/comments changed it");
  EXPECT(fa != intrus_config_fingerprint(c, mt, 2), "a changed value kept it");
  EXPECT(intrus_config_fingerprint(a, t, 1) == intrus_config_fingerprint(c, t, 1), "train");
  EXPECT(intrus_config_fingerprint(a, m, 1) != intrus_config_fingerprint(c, m, 1), "model");
  EXPECT(intrus_config_fingerprint(a, d, 1) != intrus_config_fingerprint(b, d, 1), "data");
  EXPECT(fa != intrus_config_fingerprint(a, tm, 2), "path order is part of the key");
  EXPECT(fa != intrus_config_fingerprint(a, m, 1), "subset");
  /* Paths into groups and lists; absent paths hash as absent. */
  static const char *const k1[] = {"model.layers[1].kind"}, *const k2[] = {"model.layers.[1]"};
  static const char *const k3[] = {"model.nope"}, *const k4[] = {"model.layers[7]"};
  EXPECT(intrus_config_fingerprint(a, k1, 1) == intrus_config_fingerprint(b, k1, 1), "k1");
  EXPECT(intrus_config_fingerprint(a, k2, 1) == intrus_config_fingerprint(b, k2, 1), "k2");
  EXPECT(intrus_config_fingerprint(a, k1, 1) != intrus_config_fingerprint(a, k2, 1), "k1 k2");
  EXPECT(intrus_config_fingerprint(a, k3, 1) == intrus_config_fingerprint(c, k3, 1), "k3");
  EXPECT(intrus_config_fingerprint(a, k3, 1) != intrus_config_fingerprint(a, k4, 1), "k3 k4");
  /* Type tags: 1 and 1.0 and "1" differ; 1 and 1L do not. */
  struct intrus_error err = {0};
  const char *texts[] = {"x = 1;", "x = 1L;", "x = 1.0;", "x = \"1\";", "x = true;",
                         "x = [1];", "x = (1);", "x = {a = 1;};"};
  uint64_t h[8];
  static const char *const x[] = {"x"};
  for (int i = 0; i < 8; i++) {
    struct intrus_config *s = intrus_config_load_string(texts[i], "t", &err);
    EXPECT(s != NULL, "%s", err.msg);
    h[i] = s ? intrus_config_fingerprint(s, x, 1) : (uint64_t)i;
    intrus_config_free(s);
  }
  EXPECT(h[0] == h[1], "1 and 1L");
  for (int i = 1; i < 8; i++)
    for (int j = i + 1; j < 8; j++)
      EXPECT(h[i] != h[j], "'%s' and '%s' collide", texts[i], texts[j]);
out:
  intrus_config_free(a);
  intrus_config_free(b);
  intrus_config_free(c);
}

/* --set: a setting replaced, one added, a group added on the way; refusals name the
 * assignment and leave the tree as it was. */
static void test_set(void) {
  struct intrus_error err = {0};
  struct intrus_config *c = intrus_config_load_string(
      "search = { beam = 4; alpha = 1.0; mode = \"pair\"; };\nmodel = { d = 8; l = (1, 2); };\n",
      "set.cfg", &err);
  EXPECT(c != NULL, "%s", err.msg);
  if (!c) return;
  const intrus_cfg *root = intrus_config_root(c), *g = NULL;
  EXPECT(intrus_config_set(c, "search.beam=8", &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_config_set(c, "search.finish_penalty=2.5", &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_config_set(c, "search.prune=false", &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_config_set(c, "search.mode=single", &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_config_set(c, "search.name=\"a b\"", &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_config_set(c, "extra.deep.x=3", &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_config_set(c, "search.alpha=2", &err) == INTRUS_OK, "%s", err.msg);
  long long i = 0;
  double d = 0;
  bool b = true;
  const char *str = NULL;
  EXPECT(intrus_cfg_group_req(root, "search", &g, &err) == INTRUS_OK, "%s", err.msg);
  if (g) {
    EXPECT(intrus_cfg_int(g, "beam", 0, &i, &err) == INTRUS_OK && i == 8, "beam %lld", i);
    EXPECT(intrus_cfg_double(g, "finish_penalty", 0, &d, &err) == INTRUS_OK && d == 2.5,
           "finish_penalty %g", d);
    EXPECT(intrus_cfg_double(g, "alpha", 0, &d, &err) == INTRUS_OK && d == 2.0, "alpha %g", d);
    EXPECT(intrus_cfg_bool(g, "prune", true, &b, &err) == INTRUS_OK && !b, "prune");
    EXPECT(intrus_cfg_string(g, "mode", "", &str, &err) == INTRUS_OK && strcmp(str, "single") == 0,
           "mode %s", str ? str : "(null)");
    EXPECT(intrus_cfg_string(g, "name", "", &str, &err) == INTRUS_OK && strcmp(str, "a b") == 0,
           "name %s", str ? str : "(null)");
  }
  const intrus_cfg *e = NULL, *deep = NULL;
  EXPECT(intrus_cfg_group_req(root, "extra", &e, &err) == INTRUS_OK, "%s", err.msg);
  if (e) EXPECT(intrus_cfg_group_req(e, "deep", &deep, &err) == INTRUS_OK, "%s", err.msg);
  if (deep) EXPECT(intrus_cfg_int(deep, "x", 0, &i, &err) == INTRUS_OK && i == 3, "x %lld", i);

#define EXPECT_SET_ERR(arg, wanted)                                                      \
  do {                                                                               \
    err.msg[0] = '\0';                                                               \
    EXPECT(intrus_config_set(c, arg, &err) == INTRUS_ERR_USAGE, "%s accepted", arg);  \
    EXPECT_STREQ(err.msg, wanted);                                                   \
  } while (0)
  EXPECT_SET_ERR("search.beam", "--set 'search.beam': expected PATH=VALUE (e.g. search.slots=8)");
  EXPECT_SET_ERR("=3", "--set '=3': '' is not a setting name (letters, digits, '_', '-'; "
                       "dotted for a group's member)");
  EXPECT_SET_ERR("search..beam=3", "--set 'search..beam=3': 'search..beam' is not a setting "
                                   "name (letters, digits, '_', '-'; dotted for a group's member)");
  EXPECT_SET_ERR("search.=3", "--set 'search.=3': the path ends in '.'");
  EXPECT_SET_ERR("search.beam=(1,2)", "--set 'search.beam=(1,2)': a number, boolean or string "
                                      "only, not a group, array or list");
  EXPECT_SET_ERR("search.beam=a b", "--set 'search.beam=a b': 'a b' is not a number, boolean "
                                    "or string");
  EXPECT_SET_ERR("search.beam.x=1", "--set 'search.beam.x=1': 'search.beam' in set.cfg is not a "
                                    "group");
  EXPECT_SET_ERR("model=1", "--set 'model=1': set.cfg has 'model' as a group, which --set does "
                            "not replace");
  EXPECT_SET_ERR("model.l=1", "--set 'model.l=1': set.cfg has 'l' as a list, which --set does "
                              "not replace");
#undef EXPECT_SET_ERR
  /* The refusals changed nothing. */
  const intrus_cfg *m = NULL;
  EXPECT(intrus_cfg_group_req(root, "model", &m, &err) == INTRUS_OK, "%s", err.msg);
  if (m) EXPECT(intrus_cfg_int(m, "d", 0, &i, &err) == INTRUS_OK && i == 8, "d %lld", i);
  if (g) EXPECT(intrus_cfg_int(g, "beam", 0, &i, &err) == INTRUS_OK && i == 8, "beam %lld", i);
  intrus_config_free(c);
}

int main(void) {
  test_syntax_and_io();
  test_read_nested();
  test_types();
  test_unknown();
  test_defaults_written();
  test_fingerprint();
  test_set();
  return test_finish("test_config");
}

/* The plugin loader end to end: loading the template encoder from the build tree and
 * running it, every way a module can be rejected (unknown name, other ABI, no
 * descriptor, wrong name, corrupt file), listing, and the `intrus plugins` command. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "intrus/config.h"
#include "intrus/params.h"
#include "intrus/plugin.h"
#include "intrus/tensor.h"
#include "testutil.h"

static char *path_join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", a, b);
  return p;
}

static int ends_with(const char *s, const char *suffix) {
  size_t ls = strlen(s), lx = strlen(suffix);
  return ls >= lx && !strcmp(s + ls - lx, suffix);
}

/* The default search path, as the core builds it. */
static struct intrus_plugin_search *default_search(void) {
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(s);
  return s;
}

static int search_has(const struct intrus_plugin_search *s, const char *dir) {
  for (int i = 0; i < intrus_plugin_search_count(s); i++)
    if (!strcmp(intrus_plugin_search_dir(s, i), dir)) return 1;
  return 0;
}

/* ---- search path ---------------------------------------------------------------- */

static void test_search_path(void) {
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add(s, "/a::/b/:/a");
  intrus_plugin_search_add(s, NULL);
  intrus_plugin_search_add(s, "");
  EXPECT(intrus_plugin_search_count(s) == 2, "count %d", intrus_plugin_search_count(s));
  EXPECT(!strcmp(intrus_plugin_search_dir(s, 0), "/a"), "dir 0 %s", intrus_plugin_search_dir(s, 0));
  EXPECT(!strcmp(intrus_plugin_search_dir(s, 1), "/b"), "dir 1 %s", intrus_plugin_search_dir(s, 1));
  EXPECT(intrus_plugin_search_dir(s, 2) == NULL, "past the end");
  intrus_plugin_search_free(s);

  /* Without INTRUS_PLUGIN_PATH: pkglibdir, then the build tree (this test runs
   * uninstalled from it), in that order. */
  char *saved = getenv("INTRUS_PLUGIN_PATH") ? strdup(getenv("INTRUS_PLUGIN_PATH")) : NULL;
  unsetenv("INTRUS_PLUGIN_PATH");
  s = default_search();
  EXPECT(intrus_plugin_search_count(s) == 2, "count %d", intrus_plugin_search_count(s));
  EXPECT(!strcmp(intrus_plugin_search_dir(s, 0), INTRUS_PKGLIBDIR), "dir 0 %s",
         intrus_plugin_search_dir(s, 0));
  EXPECT(!strcmp(intrus_plugin_search_dir(s, 1), INTRUS_BUILDDIR "/plugins"), "dir 1 %s",
         intrus_plugin_search_dir(s, 1) ? intrus_plugin_search_dir(s, 1) : "(none)");
  intrus_plugin_search_free(s);

  setenv("INTRUS_PLUGIN_PATH", "/x:/y", 1);
  s = default_search();
  EXPECT(intrus_plugin_search_count(s) >= 3, "count %d", intrus_plugin_search_count(s));
  EXPECT(!strcmp(intrus_plugin_search_dir(s, 0), "/x"), "env first");
  EXPECT(!strcmp(intrus_plugin_search_dir(s, 1), "/y"), "env second");
  intrus_plugin_search_free(s);

  /* The build tree named in the environment (as `make check` does) is not repeated. */
  setenv("INTRUS_PLUGIN_PATH", INTRUS_BUILDDIR "/plugins/", 1);
  s = default_search();
  EXPECT(intrus_plugin_search_count(s) == 2, "count %d", intrus_plugin_search_count(s));
  EXPECT(search_has(s, INTRUS_BUILDDIR "/plugins") && search_has(s, INTRUS_PKGLIBDIR),
         "build tree and pkglibdir");
  intrus_plugin_search_free(s);

  if (saved) setenv("INTRUS_PLUGIN_PATH", saved, 1);
  else unsetenv("INTRUS_PLUGIN_PATH");
  free(saved);
}

/* ---- (1) the template encoder ----------------------------------------------------- */

struct created {
  struct intrus_config *cfg;
  struct intrus_params *params;
  void *self;
};

/* Creates the template encoder from the text of a config whose group `encoder` is the
 * plugin's; returns its status and leaves the message in err. */
static enum intrus_status create_from(const struct intrus_encoder_vtable *vt, const char *text,
                                      struct created *c, struct intrus_error *err) {
  c->self = NULL;
  c->params = intrus_params_create();
  c->cfg = intrus_config_load_string(text, "test.cfg", err);
  EXPECT(c->cfg != NULL, "config: %s", err->msg);
  if (!c->cfg) return err->status;
  const intrus_cfg *g = NULL;
  enum intrus_status st = intrus_cfg_group_req(intrus_config_root(c->cfg), "encoder", &g, err);
  EXPECT(st == INTRUS_OK, "group: %s", err->msg);
  if (st) return st;
  struct intrus_model_init init = {.cfg = g, .params = c->params, .prefix = "encoder.",
                                   .d_model = 4, .src_vocab = 10, .tgt_vocab = 12};
  return vt->create(&init, &c->self, err);
}

static void created_free(const struct intrus_encoder_vtable *vt, struct created *c) {
  if (c->self) vt->destroy(c->self);
  intrus_params_destroy(c->params);
  intrus_config_free(c->cfg);
}

static void test_template(void) {
  struct intrus_plugin_search *s = default_search();
  struct intrus_plugin *p = NULL;
  struct intrus_error err = {0};
  enum intrus_status st = intrus_plugin_load(s, INTRUS_KIND_ENCODER, "template", &p, &err);
  EXPECT(st == INTRUS_OK, "load template: %s", err.msg);
  intrus_plugin_search_free(s);
  if (!p) return;

  const struct intrus_plugin_desc *d = intrus_plugin_descriptor(p);
  EXPECT(d->abi_major == INTRUS_ABI_MAJOR && d->abi_minor <= INTRUS_ABI_MINOR, "abi %u.%u",
         (unsigned)d->abi_major, (unsigned)d->abi_minor);
  EXPECT(!strcmp(d->name, "template"), "name %s", d->name);
  EXPECT(d->kind == INTRUS_KIND_ENCODER, "kind %d", (int)d->kind);
  EXPECT(!strcmp(d->version, "1.0.0"), "version %s", d->version);
  EXPECT(d->summary && *d->summary, "summary");
  EXPECT(ends_with(intrus_plugin_file(p), "/plugins/encoder_template.la"), "file %s",
         intrus_plugin_file(p));
  const struct intrus_encoder_vtable *vt = d->vtable;
  EXPECT(vt && vt->create && vt->destroy && vt->encode, "vtable complete");

  /* Create with scale 2.5 and run a batch of two sources, lengths 3 and 2. */
  struct created c;
  st = create_from(vt, "encoder: { scale = 2.5; };", &c, &err);
  EXPECT(st == INTRUS_OK, "create: %s", err.msg);
  if (st == INTRUS_OK) {
    EXPECT(intrus_params_count(c.params) == 1, "one parameter, got %zu",
           intrus_params_count(c.params));
    EXPECT(intrus_params_finalize(c.params, 7, &err) == INTRUS_OK, "finalize: %s", err.msg);
    intrus_tensor *table = intrus_params_find(c.params, "encoder.embedding");
    EXPECT(table && table->ndim == 2 && table->shape[0] == 10 && table->shape[1] == 4,
           "embedding [10, 4]");

    intrus_ctx *ctx = intrus_ctx_create(0);
    const int32_t tokens[] = {5, 6, 7, 8, 9, INTRUS_PAD};
    const int lens[] = {3, 2};
    struct intrus_src_batch src = {.batch = 2, .len = 3, .tokens = tokens, .lens = lens};
    struct intrus_memory mem = {0};
    st = vt->encode(c.self, ctx, &src, &mem, &err);
    EXPECT(st == INTRUS_OK, "encode: %s", err.msg);
    if (st == INTRUS_OK && table) {
      EXPECT(mem.batch == 2 && mem.len == 3, "memory %d x %d", mem.batch, mem.len);
      EXPECT(mem.states->ndim == 3 && mem.states->shape[0] == 2 && mem.states->shape[1] == 3 &&
                 mem.states->shape[2] == 4,
             "states [2, 3, 4]");
      for (int i = 0; i < 6; i++)
        for (int j = 0; j < 4; j++)
          EXPECT_NEAR(mem.states->data[i * 4 + j], 2.5 * table->data[tokens[i] * 4 + j], 1e-6);
      const uint8_t want_mask[] = {1, 1, 1, 1, 1, 0};
      for (int i = 0; i < 6; i++)
        EXPECT(mem.mask[i] == want_mask[i], "mask[%d] = %d", i, mem.mask[i]);

      /* The forward code is all a plugin writes: gradients reach the embedding through
       * the tape. d(sum states)/d(row) is scale for each use of the row. */
      intrus_params_zero_grad(c.params);
      intrus_backward(ctx, intrus_sum(ctx, mem.states));
      for (int j = 0; j < 4; j++) {
        EXPECT_NEAR(table->grad[5 * 4 + j], 2.5, 1e-6);
        EXPECT_NEAR(table->grad[1 * 4 + j], 0.0, 1e-6);
      }
    }

    /* Image sources are a configuration mistake for a text encoder. */
    struct intrus_src_batch img = {.batch = 1, .channels = 1, .height = 2, .width = 2};
    st = vt->encode(c.self, ctx, &img, &mem, &err);
    EXPECT(st == INTRUS_ERR_CONFIG, "images rejected: %d", (int)st);
    EXPECT_CONTAINS(err.msg, "images");
    intrus_ctx_destroy(ctx);
  }
  created_free(vt, &c);

  /* The default is filled in and written back to the tree. */
  st = create_from(vt, "encoder: { };", &c, &err);
  EXPECT(st == INTRUS_OK, "create with defaults: %s", err.msg);
  if (c.cfg) {
    const intrus_cfg *g = NULL;
    intrus_cfg_group(intrus_config_root(c.cfg), "encoder", &g, &err);
    EXPECT(g && intrus_cfg_has(g, "scale"), "default scale recorded");
  }
  created_free(vt, &c);

  /* A misspelt setting is an error that names it, and nothing was registered. */
  st = create_from(vt, "encoder: { scale = 1.0;\n  sclae = 2.0; };", &c, &err);
  EXPECT(st == INTRUS_ERR_CONFIG, "unknown setting rejected: %d", (int)st);
  EXPECT_CONTAINS(err.msg, "sclae");
  EXPECT(intrus_params_count(c.params) == 0, "nothing registered on error");
  EXPECT(c.self == NULL, "no instance on error");
  created_free(vt, &c);

  st = create_from(vt, "encoder: { scale = -1.0; };", &c, &err);
  EXPECT(st == INTRUS_ERR_CONFIG, "negative scale rejected: %d", (int)st);
  EXPECT_CONTAINS(err.msg, "scale");
  created_free(vt, &c);

  intrus_plugin_close(p);
}

/* ---- (2)-(4) rejected modules ------------------------------------------------------ */

static void test_not_found(void) {
  struct intrus_plugin_search *s = default_search();
  struct intrus_plugin *p = (struct intrus_plugin *)1;
  struct intrus_error err = {0};
  enum intrus_status st = intrus_plugin_load(s, INTRUS_KIND_ENCODER, "nosuch", &p, &err);
  EXPECT(st == INTRUS_ERR_PLUGIN, "status %d", (int)st);
  EXPECT(p == NULL, "no plugin on error");
  EXPECT_CONTAINS(err.msg, "no encoder plugin named 'nosuch'");
  EXPECT_CONTAINS(err.msg, "searched: ");
  EXPECT_CONTAINS(err.msg, INTRUS_BUILDDIR "/plugins");
  EXPECT_CONTAINS(err.msg, "available encoder plugins: ");
  const char *avail = strstr(err.msg, "available encoder plugins: ");
  EXPECT_CONTAINS(avail, "template");

  /* Only plugins of the kind asked for are offered. */
  st = intrus_plugin_load(s, INTRUS_KIND_DECODER, "template", &p, &err);
  EXPECT(st == INTRUS_ERR_PLUGIN, "status %d", (int)st);
  EXPECT_CONTAINS(err.msg, "no decoder plugin named 'template'");
  avail = strstr(err.msg, "available decoder plugins: ");
  EXPECT(avail && !strstr(avail, "template"), "encoder offered as decoder: %s", err.msg);

  /* A name cannot leave the search directories. */
  st = intrus_plugin_load(s, INTRUS_KIND_ENCODER, "../plugins/encoder_template", &p, &err);
  EXPECT(st == INTRUS_ERR_PLUGIN, "status %d", (int)st);
  EXPECT_CONTAINS(err.msg, "invalid encoder plugin name");
  intrus_plugin_search_free(s);

  /* Nothing on the path at all. */
  s = intrus_plugin_search_create();
  st = intrus_plugin_load(s, INTRUS_KIND_ORDER, "uniform", &p, &err);
  EXPECT(st == INTRUS_ERR_PLUGIN, "status %d", (int)st);
  EXPECT_CONTAINS(err.msg, "searched: no directories; available order plugins: none");
  intrus_plugin_search_free(s);
}

static void test_rejected(void) {
  char *dir = path_join(test_builddir(), "tests/plugins");
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add(s, dir);
  struct intrus_plugin *p = NULL;
  struct intrus_error err = {0};
  char want[128];

  enum intrus_status st = intrus_plugin_load(s, INTRUS_KIND_ENCODER, "abibad", &p, &err);
  EXPECT(st == INTRUS_ERR_PLUGIN && !p, "abi major: status %d", (int)st);
  snprintf(want, sizeof want, "plugin ABI %d.0 ", INTRUS_ABI_MAJOR + 1);
  EXPECT_CONTAINS(err.msg, want);
  snprintf(want, sizeof want, "(ABI %d.%d)", INTRUS_ABI_MAJOR, INTRUS_ABI_MINOR);
  EXPECT_CONTAINS(err.msg, want);
  EXPECT_CONTAINS(err.msg, "tests/plugins/encoder_abibad.la: ");
  EXPECT_CONTAINS(err.msg, "rebuild the plugin");

  st = intrus_plugin_load(s, INTRUS_KIND_ENCODER, "abinewer", &p, &err);
  EXPECT(st == INTRUS_ERR_PLUGIN && !p, "abi minor: status %d", (int)st);
  snprintf(want, sizeof want, "plugin ABI %d.%d ", INTRUS_ABI_MAJOR, INTRUS_ABI_MINOR + 1);
  EXPECT_CONTAINS(err.msg, want);
  snprintf(want, sizeof want, "(ABI %d.%d)", INTRUS_ABI_MAJOR, INTRUS_ABI_MINOR);
  EXPECT_CONTAINS(err.msg, want);

  st = intrus_plugin_load(s, INTRUS_KIND_ENCODER, "nodesc", &p, &err);
  EXPECT(st == INTRUS_ERR_PLUGIN && !p, "no descriptor: status %d", (int)st);
  EXPECT_CONTAINS(err.msg, "encoder_nodesc.la: not an intrus plugin");
  EXPECT_CONTAINS(err.msg, "encoder_nodesc_LTX_intrus_plugin_desc");

  st = intrus_plugin_load(s, INTRUS_KIND_ENCODER, "misnamed", &p, &err);
  EXPECT(st == INTRUS_ERR_PLUGIN && !p, "misnamed: status %d", (int)st);
  EXPECT_CONTAINS(err.msg, "declares the encoder plugin 'othername'");

  /* Opening a module file directly checks the ABI too. */
  char *file = path_join(dir, "encoder_abibad.la");
  st = intrus_plugin_open(file, &p, &err);
  EXPECT(st == INTRUS_ERR_PLUGIN && !p, "open abibad: status %d", (int)st);
  EXPECT_CONTAINS(err.msg, "is not compatible with this intrus");
  free(file);

  intrus_plugin_search_free(s);
  free(dir);
}

/* ---- (5) corrupt files, (6) listing ------------------------------------------------ */

struct seen {
  int n;
  char paths[32][512];
  char problems[32][512];
  const struct intrus_plugin_desc *descs[32]; /* only compared with NULL after the call */
  char names[32][64], kinds[32][16], versions[32][32];
};

static void record(const char *path, const struct intrus_plugin_desc *desc, const char *problem,
                   void *user) {
  struct seen *s = user;
  if (s->n >= 32) return;
  int i = s->n++;
  snprintf(s->paths[i], sizeof s->paths[i], "%s", path);
  snprintf(s->problems[i], sizeof s->problems[i], "%s", problem ? problem : "");
  s->descs[i] = desc;
  s->names[i][0] = s->kinds[i][0] = s->versions[i][0] = '\0';
  EXPECT((desc == NULL) != (problem == NULL), "exactly one of desc and problem: %s", path);
  if (desc) {
    snprintf(s->names[i], sizeof s->names[i], "%s", desc->name);
    snprintf(s->kinds[i], sizeof s->kinds[i], "%s", intrus_plugin_kind_name(desc->kind));
    snprintf(s->versions[i], sizeof s->versions[i], "%s", desc->version);
  }
}

static int seen_find(const struct seen *s, const char *suffix) {
  int found = -1;
  for (int i = 0; i < s->n; i++)
    if (ends_with(s->paths[i], suffix)) {
      EXPECT(found < 0, "%s listed twice", suffix);
      found = i;
    }
  return found;
}

static void test_corrupt_and_listing(void) {
  const char *tmp = test_make_tmpdir("/tmp/intrus-test-plugin-XXXXXX");
  EXPECT(tmp != NULL, "mkdtemp");
  if (!tmp) return;
  char *so = path_join(tmp, "encoder_junk.so"), *la = path_join(tmp, "encoder_junk.la");
  char *shadow = path_join(tmp, "encoder_template.so");
  char *other = path_join(tmp, "README.txt");
  test_write_file(so, "this is not an ELF file\n");
  test_write_file(la, "# not a libtool archive\ngarbage\n");
  test_write_file(shadow, "\x7f" "ELF but truncated");
  test_write_file(other, "not a module\n");

  struct intrus_plugin *p = NULL;
  struct intrus_error err = {0};
  char want[600];
  const char *files[] = {so, la};
  for (int i = 0; i < 2; i++) {
    enum intrus_status st = intrus_plugin_open(files[i], &p, &err);
    EXPECT(st == INTRUS_ERR_PLUGIN && !p, "open junk: status %d", (int)st);
    snprintf(want, sizeof want, "%s: cannot load plugin: ", files[i]);
    EXPECT_CONTAINS(err.msg, want);
    /* The lt_dlerror() text follows and is not empty. */
    const char *why = strstr(err.msg, want);
    EXPECT(why && strlen(why) > strlen(want), "libltdl's reason given: %s", err.msg);
  }
  char *missing = path_join(tmp, "encoder_missing.so");
  EXPECT(intrus_plugin_open(missing, &p, &err) == INTRUS_ERR_PLUGIN, "missing file");
  EXPECT_CONTAINS(err.msg, missing);
  free(missing);

  /* The first module found is used even when broken: a junk copy earlier on the path
   * is reported, not silently skipped in favour of the build tree's template. */
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add(s, tmp);
  intrus_plugin_search_add_defaults(s);
  enum intrus_status st = intrus_plugin_load(s, INTRUS_KIND_ENCODER, "template", &p, &err);
  EXPECT(st == INTRUS_ERR_PLUGIN && !p, "shadowing junk: status %d", (int)st);
  EXPECT_CONTAINS(err.msg, shadow);
  /* .la wins over .so in one directory. */
  st = intrus_plugin_load(s, INTRUS_KIND_ENCODER, "junk", &p, &err);
  EXPECT(st == INTRUS_ERR_PLUGIN && !p, "junk: status %d", (int)st);
  snprintf(want, sizeof want, "%s: cannot load plugin: ", la);
  EXPECT_CONTAINS(err.msg, want);

  /* Listing: the shadowing junk, then everything else once. */
  char *testmods = path_join(test_builddir(), "tests/plugins");
  intrus_plugin_search_add(s, testmods);
  struct seen *seen = calloc(1, sizeof *seen);
  EXPECT(intrus_plugin_list(s, record, seen, &err) == INTRUS_OK, "list: %s", err.msg);
  int i = seen_find(seen, "/encoder_template.so");
  EXPECT(i >= 0 && seen->descs[i] == NULL, "shadowing junk listed as a problem");
  EXPECT(seen_find(seen, "/encoder_template.la") < 0, "shadowed template not listed");
  i = seen_find(seen, "/encoder_junk.la");
  EXPECT(i >= 0 && strstr(seen->problems[i], "cannot load plugin: "), "junk problem");
  EXPECT(seen_find(seen, "/encoder_junk.so") < 0, ".so hidden by .la");
  EXPECT(seen_find(seen, "README.txt") < 0, "non-modules ignored");
  i = seen_find(seen, "/encoder_abibad.la");
  EXPECT(i >= 0 && strstr(seen->problems[i], "plugin ABI"), "abibad problem");
  i = seen_find(seen, "/encoder_nodesc.la");
  EXPECT(i >= 0 && strstr(seen->problems[i], "not an intrus plugin"), "nodesc problem");
  i = seen_find(seen, "/encoder_misnamed.la");
  EXPECT(i >= 0 && strstr(seen->problems[i], "othername"), "misnamed problem");
  intrus_plugin_search_free(s);

  /* Listing the default path finds the template with its kind and version. */
  memset(seen, 0, sizeof *seen);
  s = default_search();
  EXPECT(intrus_plugin_list(s, record, seen, &err) == INTRUS_OK, "list: %s", err.msg);
  i = seen_find(seen, "/plugins/encoder_template.la");
  EXPECT(i >= 0, "template listed");
  if (i >= 0) {
    EXPECT(seen->descs[i] != NULL, "template loads: %s", seen->problems[i]);
    EXPECT(!strcmp(seen->names[i], "template"), "name %s", seen->names[i]);
    EXPECT(!strcmp(seen->kinds[i], "encoder"), "kind %s", seen->kinds[i]);
    EXPECT(!strcmp(seen->versions[i], "1.0.0"), "version %s", seen->versions[i]);
  }
  intrus_plugin_search_free(s);
  free(seen);

  test_remove_tmpdir();
  free(so), free(la), free(shadow), free(other), free(testmods);
}

/* ---- (7) the command -------------------------------------------------------------- */


static void test_command(void) {
  static char out[65536];
  int rc = test_run_intrus(NULL, "plugins", out, sizeof out);
  EXPECT(rc == 0, "intrus plugins: exit %d\n%s", rc, out);
  EXPECT_CONTAINS(out, "Plugin search path");
  EXPECT_CONTAINS(out, "NAME");
  EXPECT_CONTAINS(out, "template");
  EXPECT_CONTAINS(out, "encoder");
  EXPECT_CONTAINS(out, "1.0.0");
  EXPECT_CONTAINS(out, "/plugins/encoder_template.la");

  rc = test_run_intrus(NULL, "plugins --kind decoder", out, sizeof out);
  EXPECT(!strstr(out, "encoder_template"), "--kind decoder lists no encoder:\n%s", out);

  char args[1024];
  snprintf(args, sizeof args, "plugins --plugin-path '%s/tests/plugins'", test_builddir());
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "with broken modules: exit %d\n%s", rc, out);
  EXPECT_CONTAINS(out, "Could not load:");
  EXPECT_CONTAINS(out, "encoder_abibad.la: plugin ABI");
  EXPECT_CONTAINS(out, "template");

  rc = test_run_intrus(NULL, "plugins --plugin-path=/nonexistent --kind=order --kind encoder", out,
                  sizeof out);
  EXPECT(rc == 0, "= forms: exit %d\n%s", rc, out);
  EXPECT_CONTAINS(out, "/nonexistent  (does not exist)");

  rc = test_run_intrus(NULL, "plugins --bogus", out, sizeof out);
  EXPECT(rc == 2, "--bogus: exit %d", rc);
  EXPECT_CONTAINS(out, "unknown option '--bogus'");
  rc = test_run_intrus(NULL, "plugins --kind", out, sizeof out);
  EXPECT(rc == 2, "--kind without value: exit %d", rc);
  rc = test_run_intrus(NULL, "plugins --kind widget", out, sizeof out);
  EXPECT(rc == 2, "--kind widget: exit %d", rc);
  EXPECT_CONTAINS(out, "unknown plugin kind 'widget'");
  rc = test_run_intrus(NULL, "plugins --help", out, sizeof out);
  EXPECT(rc == 0, "plugins --help: exit %d", rc);
  EXPECT_CONTAINS(out, "Usage: intrus plugins");

  rc = test_run_intrus(NULL, "nosuchcmd", out, sizeof out);
  EXPECT(rc == 2, "nosuchcmd: exit %d", rc);
  rc = test_run_intrus(NULL, "--help", out, sizeof out);
  EXPECT(rc == 0, "--help: exit %d", rc);
  EXPECT_CONTAINS(out, "plugins");
}

int main(void) {
  test_search_path();
  test_template();
  test_not_found();
  test_rejected();
  test_corrupt_and_listing();
  test_command();
  return test_finish("test_plugin");
}

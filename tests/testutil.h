/* A minimal test harness: EXPECT* count and report failures without stopping, so one
 * run shows every broken case; test_finish() prints a summary and gives the exit code
 * automake expects (0 pass, 1 fail). Also the helpers more than one test needs: a
 * temporary directory, whole-file reads and writes, running the `intrus` binary or a
 * child that must abort, and training an experiment.
 *
 * Header-only so each test is one file; this also keeps one set of EXPECT counters per
 * test program (they are static: a helper compiled in a .c of its own would count into
 * a copy of its own). */
#ifndef INTRUS_TESTUTIL_H
#define INTRUS_TESTUTIL_H

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "intrus/checkpoint.h"
#include "intrus/config.h"
#include "intrus/model.h"
#include "intrus/plugin.h"
#include "intrus/rng.h"
#include "intrus/train.h"

static int tu_checks, tu_failures;

/* n floats uniform in [lo, hi) from r. */
static inline void tu_fill_uniform(struct intrus_rng *r, float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * intrus_rng_uniform(r);
}

/* n floats uniform in [-1, 1), malloc'd (at least one). */
static inline float *tu_random_floats(struct intrus_rng *r, size_t n) {
  float *x = malloc((n ? n : 1) * sizeof *x);
  if (x) tu_fill_uniform(r, x, n, -1.0f, 1.0f);
  return x;
}

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    tu_checks++;                                                               \
    if (!(cond)) {                                                             \
      tu_failures++;                                                           \
      fprintf(stderr, "%s:%d: FAIL: %s: ", __FILE__, __LINE__, #cond);         \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

#define EXPECT_NEAR(a, b, tol)                                                 \
  do {                                                                         \
    double tu_a = (a), tu_b = (b);                                             \
    EXPECT(fabs(tu_a - tu_b) <= (tol), "%s = %.9g, %s = %.9g, tol %.3g", #a, tu_a, \
           #b, tu_b, (double)(tol));                                           \
  } while (0)

#define EXPECT_CONTAINS(haystack, needle)                                      \
  do {                                                                         \
    const char *tu_h = (haystack), *tu_n = (needle);                           \
    EXPECT(tu_h && strstr(tu_h, tu_n), "\"%s\" does not contain \"%s\"",       \
           tu_h ? tu_h : "(null)", tu_n);                                      \
  } while (0)

static inline int test_finish(const char *name) {
  printf("%s: %d checks, %d failed\n", name, tu_checks, tu_failures);
  return tu_failures ? 1 : 0;
}

/* Directory of the source tree / build tree (set by the test environment; fall back
 * to the compiled-in paths so a test binary can be run by hand). */
static inline const char *test_srcdir(void) {
  const char *d = getenv("INTRUS_TEST_SRCDIR");
  return d ? d : INTRUS_SRCDIR;
}
static inline const char *test_builddir(void) {
  const char *d = getenv("INTRUS_TEST_BUILDDIR");
  return d ? d : INTRUS_BUILDDIR;
}

/* ---- files ------------------------------------------------------------------------ */

/* The whole file at path, malloc'd with a NUL after its *len bytes (len may be NULL) so
 * that text can be searched; NULL if it cannot be opened. */
static inline unsigned char *test_read_bytes(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *buf = NULL;
  size_t n = 0, cap = 0, k;
  do {
    if (n + 1 >= cap) {
      cap = cap ? 2 * cap : 65536;
      if (!(buf = realloc(buf, cap))) abort();
    }
    k = fread(buf + n, 1, cap - n - 1, f);
    n += k;
  } while (k > 0);
  fclose(f);
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

/* The whole file at path as a NUL-terminated malloc'd string; NULL if it cannot be read. */
static inline char *test_read_file(const char *path) {
  return (char *)test_read_bytes(path, NULL);
}

/* test_read_file of the file at rel in the source tree; NULL, saying so on stderr, if it
 * cannot be read. */
static inline char *test_read_srcfile(const char *rel) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", test_srcdir(), rel);
  char *text = test_read_file(path);
  if (!text) fprintf(stderr, "cannot read %s\n", path);
  return text;
}

/* Writes n bytes of data to path (replacing it) and returns path; a test fixture that
 * cannot be written ends the test as a hard error (exit 99). */
static inline const char *test_write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    exit(99);
  }
  return path;
}

/* test_write_bytes of a string. */
static inline const char *test_write_file(const char *path, const char *text) {
  return test_write_bytes(path, text, strlen(text));
}

/* text with its first from replaced by to, malloc'd; NULL if text has no from. */
static inline char *test_replace(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  if (!at) return NULL;
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  return out;
}

/* ---- the test's temporary directory ---------------------------------------------- */

static char test_tmpdir[512];

/* Makes test_tmpdir from template (ending in XXXXXX, as for mkdtemp) and returns it;
 * NULL, with the reason on stderr, if it cannot be made. */
static inline const char *test_make_tmpdir(const char *template) {
  if (snprintf(test_tmpdir, sizeof test_tmpdir, "%s", template) >= (int)sizeof test_tmpdir) {
    fprintf(stderr, "%s: path too long for a temporary directory\n", template);
    return NULL;
  }
  if (!mkdtemp(test_tmpdir)) {
    fprintf(stderr, "mkdtemp %s: %s\n", template, strerror(errno));
    return NULL;
  }
  return test_tmpdir;
}

/* test_tmpdir/name; the string stays valid for the next 15 calls. */
static inline const char *test_tmp_path(const char *name) {
  static char buf[16][1024];
  static unsigned next;
  char *p = buf[next++ % 16];
  snprintf(p, sizeof buf[0], "%s/%s", test_tmpdir, name);
  return p;
}

/* How many names in test_tmpdir contain ".tmp." (what an atomic write leaves behind if
 * it is not atomic); -1 if the directory cannot be read. */
static inline int test_count_temp_files(void) {
  DIR *d = opendir(test_tmpdir);
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strstr(e->d_name, ".tmp.")) n++;
  closedir(d);
  return n;
}

/* Removes dir and everything below it, read-only directories included (a test may make
 * them); 0 on success. */
static inline int test_remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    char sub[4400];
    for (struct dirent *e; (e = readdir(d));) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      if (snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) >= (int)sizeof sub) continue;
      struct stat st;
      if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
        chmod(sub, 0700);
        test_remove_tree(sub);
      } else {
        unlink(sub);
      }
    }
    closedir(d);
  }
  return rmdir(dir);
}

/* Removes test_tmpdir and its contents; says so on stderr if it cannot (the test goes
 * on: a directory left in /tmp fails nothing). 0 on success. */
static inline int test_remove_tmpdir(void) {
  int rc = test_remove_tree(test_tmpdir);
  if (rc != 0) fprintf(stderr, "could not remove %s: %s\n", test_tmpdir, strerror(errno));
  return rc;
}

/* Runs the built `intrus ARGS` (in directory dir unless NULL) with stdout and stderr
 * captured into out; returns its exit code, -1 if it did not exit normally. */
static inline int test_run_intrus(const char *dir, const char *args, char *out, size_t cap) {
  char cmd[4096];
  if (dir)
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s/intrus' %s 2>&1", dir, test_builddir(), args);
  else
    snprintf(cmd, sizeof cmd, "'%s/intrus' %s 2>&1", test_builddir(), args);
  FILE *f = popen(cmd, "r");
  if (!f) return -1;
  size_t n = fread(out, 1, cap - 1, f);
  out[n] = '\0';
  int status = pclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs fn(arg) in a child process with its stderr captured in out (NUL-terminated), for
 * code that must abort (a panic aborts); returns the child's wait status, -1 (out says
 * why) if no child could be run. */
static inline int test_run_child(void (*fn)(const void *arg), const void *arg, char *out,
                                 size_t cap) {
  int fds[2];
  if (pipe(fds) != 0) {
    snprintf(out, cap, "pipe failed: %s", strerror(errno));
    return -1;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    fn(arg);
    _exit(0);
  }
  close(fds[1]);
  size_t got = 0;
  ssize_t k;
  while (got < cap - 1 && (k = read(fds[0], out + got, cap - 1 - got)) > 0) got += (size_t)k;
  out[got] = '\0';
  close(fds[0]);
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) {
    snprintf(out, cap, "fork failed: %s", strerror(errno));
    return -1;
  }
  return st;
}

/* Sets the OpenMP thread count (nothing without OpenMP). */
/* Cairo's font caches and fontconfig's configuration live as long as the process: a
 * test that draws in-process releases them before it ends, so that leak checkers see
 * only ours. Looked up rather than linked: most tests link neither. */
static inline void test_release_font_caches(void) {
  void (*fn)(void);
  *(void **)&fn = dlsym(RTLD_DEFAULT, "cairo_debug_reset_static_data");
  if (fn) fn();
  *(void **)&fn = dlsym(RTLD_DEFAULT, "FcFini");
  if (fn) fn();
}

static inline void test_set_threads(int n) {
#ifdef _OPENMP
  omp_set_num_threads(n);
#else
  (void)n;
#endif
}

/* ---- training --------------------------------------------------------------------- */

#define TEST_MAX_STEPS 512

/* The training loss of each step up to TEST_MAX_STEPS, and the last step trained. */
struct test_losses {
  double loss[TEST_MAX_STEPS + 1];
  long last;
};

/* An on_step callback that records into the struct test_losses at user. */
static inline void test_record_loss(long step, double loss, void *user) {
  struct test_losses *t = user;
  if (step <= TEST_MAX_STEPS) t->loss[step] = loss;
  t->last = step;
}

/* Trains experiment cfg into the run directory test_tmpdir/run with the default plugin
 * search path, stopping after max_steps (0: no limit), calling on_step(step, loss, user)
 * after every step (when given) and writing progress lines to progress (NULL: quietly). */
static inline enum intrus_status test_train_config_progress(
    struct intrus_config *cfg, const char *run, long max_steps,
    void (*on_step)(long, double, void *), void *user, FILE *progress,
    struct intrus_train_result *res, struct intrus_error *err) {
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(s);
  struct intrus_train_options opt = {.run_dir = test_tmp_path(run), .search = s,
                                     .progress = progress, .max_steps = max_steps,
                                     .on_step = on_step, .user = user};
  enum intrus_status st = intrus_train(cfg, &opt, res, err);
  intrus_plugin_search_free(s);
  return st;
}

static inline enum intrus_status test_train_config(struct intrus_config *cfg, const char *run,
                                                   long max_steps,
                                                   void (*on_step)(long, double, void *),
                                                   void *user, struct intrus_train_result *res,
                                                   struct intrus_error *err) {
  return test_train_config_progress(cfg, run, max_steps, on_step, user, NULL, res, err);
}

/* test_train_config of the experiment text (named "toy.cfg" in messages), its losses
 * recorded in *losses. */
static inline enum intrus_status test_train_text(const char *text, const char *run,
                                                 long max_steps, struct test_losses *losses,
                                                 struct intrus_train_result *res,
                                                 struct intrus_error *err) {
  struct intrus_config *cfg = intrus_config_load_string(text, "toy.cfg", err);
  if (!cfg) return err->status;
  enum intrus_status st =
      test_train_config(cfg, run, max_steps, test_record_loss, losses, res, err);
  intrus_config_free(cfg);
  return st;
}

/* The model of experiment cfg's model group for vocabularies of src_vocab and tgt_vocab
 * tokens, initialised with seed, then given the parameters of the checkpoint at ckpt
 * unless it is NULL; its plugins come from the default search path. */
static inline enum intrus_status test_model_create(const struct intrus_config *cfg,
                                                   int src_vocab, int tgt_vocab, uint64_t seed,
                                                   const char *ckpt, struct intrus_model **out,
                                                   struct intrus_error *err) {
  const intrus_cfg *mg = NULL;
  struct intrus_model *m = NULL;
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(s);
  enum intrus_status st = intrus_cfg_group_req(intrus_config_root(cfg), "model", &mg, err);
  if (!st) st = intrus_model_create(mg, s, src_vocab, tgt_vocab, seed, &m, err);
  intrus_plugin_search_free(s);
  if (!st && ckpt) {
    struct intrus_ckpt *ck = NULL;
    st = intrus_ckpt_read(ckpt, false, 0, &ck, err);
    if (!st) st = intrus_ckpt_get_params(ck, intrus_model_params(m), false, err);
    intrus_ckpt_free(ck);
  }
  if (st) {
    intrus_model_destroy(m);
    m = NULL;
  }
  *out = m;
  return st;
}

#endif

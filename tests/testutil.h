/* A minimal test harness: EXPECT* count and report failures without stopping, so one
 * run shows every broken case; test_finish() prints a summary and gives the exit code
 * automake expects (0 pass, 1 fail). Header-only so each test is one file. */
#ifndef INTRUS_TESTUTIL_H
#define INTRUS_TESTUTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "intrus/rng.h"

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

/* The whole file at path as a NUL-terminated malloc'd string; NULL if it cannot be read. */
static inline char *test_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
  if (buf) buf[got] = '\0';
  fclose(f);
  return buf;
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

#endif

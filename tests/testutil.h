/* A minimal test harness: EXPECT* count and report failures without stopping, so one
 * run shows every broken case; test_finish() prints a summary and gives the exit code
 * automake expects (0 pass, 1 fail). Header-only so each test is one file. */
#ifndef INTRUS_TESTUTIL_H
#define INTRUS_TESTUTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tu_checks, tu_failures;

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

#endif

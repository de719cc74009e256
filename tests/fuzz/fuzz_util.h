/* Shared by the libFuzzer harnesses (tests/fuzz/run.sh builds and runs them; `make
 * fuzz`). The readers under test take paths, so each input is written to one scratch
 * file per process first. */
#ifndef INTRUS_FUZZ_UTIL_H
#define INTRUS_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A scratch path of this process under $TMPDIR (or /tmp), with the given suffix. */
static inline const char *fuzz_path(const char *suffix) {
  static char path[4][512];
  static int next;
  char *p = path[next++ % 4];
  const char *dir = getenv("TMPDIR");
  snprintf(p, sizeof path[0], "%s/intrus-fuzz-%ld%s", dir && *dir ? dir : "/tmp",
           (long)getpid(), suffix);
  return p;
}

/* Writes data to path (whole, replacing it); aborts if it cannot, which the fuzzer
 * reports: a harness that cannot write its input tests nothing. */
static inline void fuzz_write(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) abort();
}

/* data as a NUL-terminated string (malloc'd). */
static inline char *fuzz_string(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) abort();
  memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

#endif

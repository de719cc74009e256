#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/status.h"

enum intrus_status intrus_error_set(struct intrus_error *err, enum intrus_status status,
                                    const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    char *full = NULL;
    int n = vasprintf(&full, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof err->msg) {
      memcpy(err->msg, full, (size_t)n + 1);
    } else if (n >= 0) {
      /* Too long (a long path): the reason is at the end, so the middle is cut. */
      const size_t cap = sizeof err->msg - 1, head = cap / 3;
      const char *mark = " [...] ";
      const size_t tail = cap - head - strlen(mark);
      memcpy(err->msg, full, head);
      memcpy(err->msg + head, mark, strlen(mark));
      memcpy(err->msg + head + strlen(mark), full + (size_t)n - tail, tail);
      err->msg[cap] = '\0';
    } else {
      va_start(ap, fmt);
      vsnprintf(err->msg, sizeof err->msg, fmt, ap);
      va_end(ap);
    }
    free(full);
    err->status = status;
  }
  return status;
}

enum intrus_status intrus_error_prefix(struct intrus_error *err, const char *fmt, ...) {
  if (!err) return INTRUS_OK;
  char out[INTRUS_ERROR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out, sizeof out, fmt, ap);
  va_end(ap);
  if (n < 0) return err->status;
  size_t len = strnlen(out, sizeof out - 1);
  /* Copy what fits of ": " and the old message after the prefix, truncating. */
  const char *rest[2] = {": ", err->msg};
  for (int r = 0; r < 2; r++)
    for (const char *c = rest[r]; *c && len < sizeof out - 1; c++) out[len++] = *c;
  out[len] = '\0';
  memcpy(err->msg, out, sizeof out);
  return err->status;
}

void intrus_error_clear(struct intrus_error *err) {
  if (err) {
    err->status = INTRUS_OK;
    err->msg[0] = '\0';
  }
}

const char *intrus_status_name(enum intrus_status status) {
  switch (status) {
  case INTRUS_OK: return "ok";
  case INTRUS_ERR_NOMEM: return "out of memory";
  case INTRUS_ERR_IO: return "io";
  case INTRUS_ERR_CONFIG: return "config";
  case INTRUS_ERR_PLUGIN: return "plugin";
  case INTRUS_ERR_FORMAT: return "format";
  case INTRUS_ERR_INVALID: return "invalid";
  case INTRUS_ERR_DATA: return "data";
  case INTRUS_ERR_USAGE: return "usage";
  case INTRUS_ERR_UNSUPPORTED: return "unsupported";
  }
  return "unknown";
}

_Noreturn void intrus_panic_at(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "intrus: internal error at %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}

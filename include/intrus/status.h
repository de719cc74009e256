/* Status codes and error messages shared by the core and the plugins.
 * Functions that can fail on bad input return enum intrus_status and, when given a
 * struct intrus_error, leave a message there that names the file, line or setting. */
#ifndef INTRUS_STATUS_H
#define INTRUS_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

enum intrus_status {
  INTRUS_OK = 0,
  INTRUS_ERR_NOMEM = -1,   /* allocation failed */
  INTRUS_ERR_IO = -2,      /* a file could not be opened, read or written */
  INTRUS_ERR_CONFIG = -3,  /* an experiment file is malformed or has a bad setting */
  INTRUS_ERR_PLUGIN = -4,  /* a plugin is missing, unloadable or of another ABI */
  INTRUS_ERR_FORMAT = -5,  /* a file exists but is corrupt, truncated or mismatched */
  INTRUS_ERR_INVALID = -6, /* an argument is out of range */
  INTRUS_ERR_DATA = -7,    /* a data file has bad content (encoding, token ids, lengths) */
  INTRUS_ERR_USAGE = -8,   /* a command line is wrong */
  INTRUS_ERR_UNSUPPORTED = -9 /* a plugin does not provide an optional operation */
};

#define INTRUS_ERROR_MSG_MAX 1024

struct intrus_error {
  enum intrus_status status;
  char msg[INTRUS_ERROR_MSG_MAX];
};

/* Records status and a printf-formatted message in err (which may be NULL) and
 * returns status, so callers can write `return intrus_error_set(err, ...)`. */
enum intrus_status intrus_error_set(struct intrus_error *err, enum intrus_status status,
                                    const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an existing message (for adding context on the way up). */
enum intrus_status intrus_error_prefix(struct intrus_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void intrus_error_clear(struct intrus_error *err);

/* A short stable name ("io", "config", ...) for logs and tests. */
const char *intrus_status_name(enum intrus_status status);

/* Programming errors (shape mismatches inside the engine, misuse of an API) are not
 * recoverable input errors: they print the message with the call site and abort. */
_Noreturn void intrus_panic_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define intrus_panic(...) intrus_panic_at(__FILE__, __LINE__, __VA_ARGS__)
#define INTRUS_CHECK(cond, ...) \
  do { if (!(cond)) intrus_panic_at(__FILE__, __LINE__, __VA_ARGS__); } while (0)

#ifdef __cplusplus
}
#endif
#endif

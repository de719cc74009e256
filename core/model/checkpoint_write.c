/* Writing checkpoint files; the layout is described in intrus/checkpoint.h.
 *
 * Every multi-byte field is encoded byte by byte as little-endian, so a checkpoint moves
 * between machines unchanged. The writer cannot know the record count when it writes
 * the header, so it writes a placeholder, fills the count in at commit and then hashes
 * the file back from the kernel's page cache: the checksum covers the bytes exactly as
 * they will be read. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intrus/checkpoint.h"
#include "intrus/fileio.h"
#include "intrus/rng.h"
#include "checkpoint_internal.h"

/* ---- little-endian fields ------------------------------------------------------ */

static void put_le32(unsigned char *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *b, uint64_t v) {
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
}

static void encode_header(unsigned char hdr[CKPT_HEADER_LEN], uint64_t fingerprint,
                          uint32_t count) {
  memcpy(hdr, CKPT_MAGIC, CKPT_MAGIC_LEN);
  put_le32(hdr + CKPT_VERSION_OFFSET, INTRUS_CKPT_VERSION);
  put_le64(hdr + 12, fingerprint);
  put_le32(hdr + CKPT_COUNT_OFFSET, count);
}

/* ---- writer -------------------------------------------------------------------- */

static void writer_free(struct intrus_ckpt_writer *w) {
  for (size_t i = 0; i < w->count; i++) free(w->names[i]);
  free(w->names);
  free(w->index.slot);
  free(w->path);
  free(w->tmp);
  free(w);
}

static void writer_discard_file(struct intrus_ckpt_writer *w) {
  if (w->f) fclose(w->f);
  w->f = NULL;
  unlink(w->tmp);
}

/* A write to the temporary file failed: the file is useless, so it goes at once, and
 * the writer keeps the message for every later call (the caller still has to commit
 * or abort to free it). */
static enum intrus_status __attribute__((format(printf, 3, 4)))
writer_fail(struct intrus_ckpt_writer *w, struct intrus_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->failure.msg, sizeof w->failure.msg, fmt, ap);
  va_end(ap);
  w->failure.status = INTRUS_ERR_IO;
  w->failed = true;
  writer_discard_file(w);
  if (err) *err = w->failure;
  return INTRUS_ERR_IO;
}

static enum intrus_status writer_failure(const struct intrus_ckpt_writer *w,
                                         struct intrus_error *err) {
  if (err) *err = w->failure;
  return w->failure.status;
}

static enum intrus_status write_bytes(struct intrus_ckpt_writer *w, const void *buf, size_t len,
                                      struct intrus_error *err) {
  if (len && fwrite(buf, 1, len, w->f) != len) {
    int e = errno ? errno : EIO;
    return writer_fail(w, err, "%s: cannot write checkpoint: %s", w->tmp, strerror(e));
  }
  w->bytes += len;
  return INTRUS_OK;
}

enum intrus_status intrus_ckpt_begin(const char *path, uint64_t fingerprint,
                                     struct intrus_ckpt_writer **out, struct intrus_error *err) {
  INTRUS_CHECK(path && out, "intrus_ckpt_begin: NULL argument");
  *out = NULL;
  struct intrus_ckpt_writer *w = calloc(1, sizeof *w);
  size_t tmp_len = strlen(path) + 32;
  if (w) {
    w->path = strdup(path);
    w->tmp = malloc(tmp_len);
  }
  if (!w || !w->path || !w->tmp) {
    if (w) writer_free(w);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "%s: out of memory starting a checkpoint",
                            path);
  }
  snprintf(w->tmp, tmp_len, "%s.tmp.%ld", path, (long)getpid());
  w->fingerprint = fingerprint;
  /* Read access too: commit hashes the file back through this descriptor. */
  int fd = open(w->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    int e = errno;
    intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot create temporary checkpoint file: %s",
                     w->tmp, strerror(e));
    writer_free(w);
    return INTRUS_ERR_IO;
  }
  w->f = fdopen(fd, "w+b");
  if (!w->f) {
    int e = errno;
    close(fd);
    unlink(w->tmp);
    intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open temporary checkpoint file: %s",
                     w->tmp, strerror(e));
    writer_free(w);
    return INTRUS_ERR_IO;
  }
  /* The count is unknown until commit, which overwrites this placeholder. */
  unsigned char hdr[CKPT_HEADER_LEN];
  encode_header(hdr, fingerprint, 0);
  enum intrus_status st = write_bytes(w, hdr, sizeof hdr, err);
  if (st != INTRUS_OK) {
    writer_free(w);
    return st;
  }
  *out = w;
  return INTRUS_OK;
}

/* Checks that name can be the next record's and remembers it. */
static enum intrus_status add_name(struct intrus_ckpt_writer *w, const char *name,
                                   struct intrus_error *err) {
  size_t len = strlen(name);
  if (len == 0)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "%s: a checkpoint record needs a name",
                            w->path);
  if (len > CKPT_NAME_MAX)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "%s: record name '%.64s...' has %zu bytes (at most %d)", w->path,
                            name, len, CKPT_NAME_MAX);
  if (ckpt_name_index_find(&w->index, w->names, name) != SIZE_MAX)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "%s: record '%s' written twice", w->path,
                            name);
  if (w->count >= UINT32_MAX)
    return intrus_error_set(err, INTRUS_ERR_INVALID, "%s: too many records (at most %" PRIu32 ")",
                            w->path, UINT32_MAX);
  if (w->count == w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 64;
    char **names = realloc(w->names, cap * sizeof *names);
    if (!names) goto nomem;
    w->names = names;
    w->cap = cap;
  }
  if (!(w->names[w->count] = strdup(name))) goto nomem;
  if (!ckpt_name_index_insert(&w->index, w->names, w->count)) {
    free(w->names[w->count]);
    goto nomem;
  }
  w->count++;
  return INTRUS_OK;
nomem:
  return intrus_error_set(err, INTRUS_ERR_NOMEM, "%s: out of memory adding record '%s'",
                          w->path, name);
}

static enum intrus_status write_record_head(struct intrus_ckpt_writer *w, uint8_t type,
                                            const char *name, struct intrus_error *err) {
  size_t len = strlen(name);
  unsigned char b[5];
  b[0] = type;
  put_le32(b + 1, (uint32_t)len);
  enum intrus_status st = write_bytes(w, b, sizeof b, err);
  return st != INTRUS_OK ? st : write_bytes(w, name, len, err);
}

enum intrus_status intrus_ckpt_put_tensor(struct intrus_ckpt_writer *w, const char *name,
                                          int ndim, const int *shape, const float *data,
                                          struct intrus_error *err) {
  INTRUS_CHECK(w && name && shape, "intrus_ckpt_put_tensor: NULL argument");
  if (w->failed) return writer_failure(w, err);
  if (ndim < 1 || ndim > CKPT_MAX_DIMS)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "%s: tensor '%s' has %d dimensions (must be 1 to %d)", w->path,
                            name, ndim, CKPT_MAX_DIMS);
  size_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0)
      return intrus_error_set(err, INTRUS_ERR_INVALID,
                              "%s: tensor '%s' has a negative dimension (%d)", w->path, name,
                              shape[i]);
    if (shape[i] && n > SIZE_MAX / sizeof(float) / (size_t)shape[i])
      return intrus_error_set(err, INTRUS_ERR_INVALID, "%s: tensor '%s' is too large",
                              w->path, name);
    n *= (size_t)shape[i];
  }
  INTRUS_CHECK(n == 0 || data, "intrus_ckpt_put_tensor: tensor '%s' has no data", name);
  enum intrus_status st = add_name(w, name, err);
  if (st != INTRUS_OK) return st;

  unsigned char buf[16384];
  if ((st = write_record_head(w, CKPT_TYPE_TENSOR, name, err)) != INTRUS_OK) return st;
  put_le32(buf, (uint32_t)ndim);
  for (int i = 0; i < ndim; i++) put_le32(buf + 4 + 4 * i, (uint32_t)shape[i]);
  if ((st = write_bytes(w, buf, 4 + 4 * (size_t)ndim, err)) != INTRUS_OK) return st;
  /* Floats go through a byte buffer in chunks: explicit little-endian, and one fwrite
   * per 4096 values rather than per value. */
  for (size_t i = 0; i < n;) {
    size_t k = n - i < sizeof buf / 4 ? n - i : sizeof buf / 4;
    for (size_t j = 0; j < k; j++) {
      uint32_t u;
      memcpy(&u, &data[i + j], sizeof u);
      put_le32(buf + 4 * j, u);
    }
    if ((st = write_bytes(w, buf, 4 * k, err)) != INTRUS_OK) return st;
    i += k;
  }
  return INTRUS_OK;
}

enum intrus_status intrus_ckpt_put_u64(struct intrus_ckpt_writer *w, const char *name,
                                       uint64_t value, struct intrus_error *err) {
  INTRUS_CHECK(w && name, "intrus_ckpt_put_u64: NULL argument");
  if (w->failed) return writer_failure(w, err);
  enum intrus_status st = add_name(w, name, err);
  if (st != INTRUS_OK) return st;
  if ((st = write_record_head(w, CKPT_TYPE_U64, name, err)) != INTRUS_OK) return st;
  unsigned char b[8];
  put_le64(b, value);
  return write_bytes(w, b, sizeof b, err);
}

static int pwrite_all(int fd, const unsigned char *b, size_t len, off_t off) {
  while (len) {
    ssize_t k = pwrite(fd, b, len, off);
    if (k < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    b += k;
    len -= (size_t)k;
    off += k;
  }
  return 0;
}

/* FNV-1a of the first `bytes` bytes of the file, whose header is hdr. Returns 0 or an
 * errno value. */
static int hash_back(int fd, const unsigned char *hdr, uint64_t bytes, uint64_t *out) {
  unsigned char buf[32768];
  uint64_t h = intrus_fnv1a(INTRUS_FNV_INIT, hdr, CKPT_HEADER_LEN);
  for (uint64_t off = CKPT_HEADER_LEN; off < bytes;) {
    size_t want = bytes - off < sizeof buf ? (size_t)(bytes - off) : sizeof buf;
    ssize_t k = pread(fd, buf, want, (off_t)off);
    if (k < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (k == 0) return EIO; /* shorter than what was written */
    h = intrus_fnv1a(h, buf, (size_t)k);
    off += (uint64_t)k;
  }
  *out = h;
  return 0;
}

/* Count, checksum and fsync of the temporary file. Returns 0, or an errno value with
 * *what saying which step failed. */
static int finish_temp_file(struct intrus_ckpt_writer *w, const char **what) {
  int fd = fileno(w->f), e;
  unsigned char hdr[CKPT_HEADER_LEN], sum[CKPT_SUM_LEN];
  uint64_t h = 0;
  *what = "cannot write checkpoint";
  /* Everything stdio buffered must reach the file before the descriptor is used. */
  if (fflush(w->f) != 0) return errno ? errno : EIO;
  encode_header(hdr, w->fingerprint, (uint32_t)w->count);
  if ((e = pwrite_all(fd, hdr, sizeof hdr, 0)) != 0) return e;
  *what = "cannot read checkpoint back";
  if ((e = hash_back(fd, hdr, w->bytes, &h)) != 0) return e;
  *what = "cannot write checkpoint";
  put_le64(sum, h);
  if ((e = pwrite_all(fd, sum, sizeof sum, (off_t)w->bytes)) != 0) return e;
  *what = "cannot sync checkpoint to disk";
  if (fsync(fd) != 0) return errno;
  *what = "cannot close checkpoint";
  FILE *f = w->f;
  w->f = NULL; /* fclose releases it whatever it returns */
  if (fclose(f) != 0) return errno ? errno : EIO;
  return 0;
}

enum intrus_status intrus_ckpt_commit(struct intrus_ckpt_writer *w, struct intrus_error *err) {
  INTRUS_CHECK(w, "intrus_ckpt_commit: NULL writer");
  enum intrus_status st = INTRUS_OK;
  const char *what;
  int e;
  if (w->failed) {
    st = writer_failure(w, err);
  } else if ((e = finish_temp_file(w, &what)) != 0) {
    st = writer_fail(w, err, "%s: %s: %s", w->tmp, what, strerror(e));
  } else if (rename(w->tmp, w->path) != 0) {
    e = errno;
    st = writer_fail(w, err, "%s: cannot move %s into place: %s", w->path, w->tmp, strerror(e));
  } else if ((e = intrus_fsync_parent_dir(w->path)) != 0) {
    /* The new file is in place by now; only its durability is in doubt. */
    st = intrus_error_set(err, INTRUS_ERR_IO,
                          "%s: checkpoint written, but its directory cannot be synced (it may "
                          "not survive a crash): %s",
                          w->path, strerror(e));
  }
  writer_free(w);
  return st;
}

void intrus_ckpt_abort(struct intrus_ckpt_writer *w) {
  if (!w) return;
  writer_discard_file(w);
  writer_free(w);
}

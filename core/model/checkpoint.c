/* Checkpoint files; the layout is described in intrus/checkpoint.h.
 *
 * Every multi-byte field is encoded byte by byte as little-endian, so a checkpoint moves
 * between machines unchanged. The writer cannot know the record count when it writes
 * the header, so it writes a placeholder, fills the count in at commit and then hashes
 * the file back from the kernel's page cache: the checksum covers the bytes exactly as
 * they will be read. The reader loads the whole file and checks its structure, checksum
 * and contents before it builds anything a caller could see. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "intrus/checkpoint.h"
#include "intrus/fileio.h"
#include "intrus/rng.h"

#define CKPT_MAGIC "INTRUSCK"
#define CKPT_MAGIC_LEN 8
#define CKPT_HEADER_LEN 24 /* magic, u32 version, u64 fingerprint, u32 count */
#define CKPT_VERSION_OFFSET 8
#define CKPT_COUNT_OFFSET 20
#define CKPT_SUM_LEN 8
#define CKPT_NAME_MAX 4096
#define CKPT_MAX_DIMS 4
#define CKPT_TYPE_TENSOR 1
#define CKPT_TYPE_U64 2

/* ---- little-endian fields ------------------------------------------------------ */

static void put_le32(unsigned char *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *b, uint64_t v) {
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *b) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)b[i] << (8 * i);
  return v;
}

static uint64_t get_le64(const unsigned char *b) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)b[i] << (8 * i);
  return v;
}

static void encode_header(unsigned char hdr[CKPT_HEADER_LEN], uint64_t fingerprint,
                          uint32_t count) {
  memcpy(hdr, CKPT_MAGIC, CKPT_MAGIC_LEN);
  put_le32(hdr + CKPT_VERSION_OFFSET, INTRUS_CKPT_VERSION);
  put_le64(hdr + 12, fingerprint);
  put_le32(hdr + CKPT_COUNT_OFFSET, count);
}

/* ---- name index: open addressing over an array of C strings owned by the caller -- */

struct name_index {
  size_t cap;   /* a power of two; 0 before the first insert */
  size_t used;
  size_t *slot; /* 1 + position in the owner's name array; 0 marks an empty slot */
};

static size_t name_slot(const char *name, size_t cap) {
  return (size_t)intrus_fnv1a(INTRUS_FNV_INIT, name, strlen(name)) & (cap - 1);
}

/* Position of key in names, or SIZE_MAX when absent. */
static size_t name_index_find(const struct name_index *ix, char *const *names,
                              const char *key) {
  if (!ix->cap) return SIZE_MAX;
  for (size_t i = name_slot(key, ix->cap);; i = (i + 1) & (ix->cap - 1)) {
    size_t s = ix->slot[i];
    if (!s) return SIZE_MAX;
    if (strcmp(names[s - 1], key) == 0) return s - 1;
  }
}

/* Adds names[pos], which must not be present yet. False when out of memory. */
static bool name_index_insert(struct name_index *ix, char *const *names, size_t pos) {
  /* Kept at most half full so probe sequences stay short. */
  if (2 * (ix->used + 1) > ix->cap) {
    size_t cap = ix->cap ? 2 * ix->cap : 16;
    while (2 * (ix->used + 1) > cap) cap *= 2;
    size_t *slot = calloc(cap, sizeof *slot);
    if (!slot) return false;
    for (size_t i = 0; i < ix->cap; i++) {
      size_t s = ix->slot[i];
      if (!s) continue;
      size_t j = name_slot(names[s - 1], cap);
      while (slot[j]) j = (j + 1) & (cap - 1);
      slot[j] = s;
    }
    free(ix->slot);
    ix->slot = slot;
    ix->cap = cap;
  }
  size_t j = name_slot(names[pos], ix->cap);
  while (ix->slot[j]) j = (j + 1) & (ix->cap - 1);
  ix->slot[j] = pos + 1;
  ix->used++;
  return true;
}

/* ---- writer -------------------------------------------------------------------- */

struct intrus_ckpt_writer {
  FILE *f;            /* NULL once a write failed and the temporary file is gone */
  char *path, *tmp;
  uint64_t fingerprint;
  uint64_t bytes;     /* written so far, header included */
  char **names;       /* of the records written, for refusing duplicates */
  size_t count, cap;
  struct name_index index;
  bool failed;
  struct intrus_error failure; /* the first write error, repeated by every later call */
};

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
  if (name_index_find(&w->index, w->names, name) != SIZE_MAX)
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
  if (!name_index_insert(&w->index, w->names, w->count)) {
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

/* ---- reader -------------------------------------------------------------------- */

struct ckpt_record {
  uint8_t type;
  int ndim;
  int shape[CKPT_MAX_DIMS];
  size_t n;           /* floats */
  const float *data;  /* into floats of the checkpoint */
  uint64_t value;
};

struct intrus_ckpt {
  char *path;          /* for the messages of intrus_ckpt_get_params */
  uint64_t fingerprint;
  size_t count;
  struct ckpt_record *recs;
  char **names;        /* into name_block */
  char *name_block;
  float *floats;       /* every tensor's data, 64-byte aligned */
  struct name_index index;
};

/* Where a record lies in the file, as found by walk_records. */
struct raw_record {
  uint8_t type;
  const unsigned char *name;
  uint32_t name_len;
  uint32_t ndim;
  const unsigned char *shape;
  uint64_t numel;
  const unsigned char *data;
};

enum walk_outcome { WALK_OK, WALK_TRUNCATED, WALK_BAD_TYPE };

struct walk_result {
  enum walk_outcome outcome;
  size_t end;      /* after the last record walked */
  uint32_t rec;    /* index of the record that was cut off or has a bad type */
  uint64_t need;   /* truncated: bytes the file needs at least, checksum included */
  bool at_start;   /* truncated exactly before record rec */
  bool name_whole; /* the name of record rec is all there */
  struct raw_record raw;
};

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b) {
  return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* Follows the records' lengths from the header to the checksum, trusting nothing: it
 * stops where the file runs out or a record has a type whose length is unknown. When
 * recs is not NULL it also stores where each record lies. */
static void walk_records(const unsigned char *buf, size_t size, uint32_t count,
                         struct raw_record *recs, struct walk_result *res) {
  size_t pos = CKPT_HEADER_LEN;
  memset(res, 0, sizeof *res);
  for (uint32_t i = 0; i < count; i++) {
    struct raw_record r = {0};
    uint64_t need;
    res->rec = i;
    res->at_start = pos == size;
    if (size - pos < 5) {
      need = pos + 5;
      goto truncated;
    }
    r.type = buf[pos];
    r.name_len = get_le32(buf + pos + 1);
    pos += 5;
    if (size - pos < r.name_len) {
      need = sat_add(pos, r.name_len);
      goto truncated;
    }
    r.name = buf + pos;
    pos += r.name_len;
    res->name_whole = true;
    if (r.type == CKPT_TYPE_TENSOR) {
      if (size - pos < 4) {
        need = pos + 4;
        goto truncated;
      }
      r.ndim = get_le32(buf + pos);
      pos += 4;
      if ((size - pos) / 4 < r.ndim) {
        need = sat_add(pos, 4 * (uint64_t)r.ndim);
        goto truncated;
      }
      r.shape = buf + pos;
      r.numel = 1;
      for (uint32_t d = 0; d < r.ndim; d++) r.numel = sat_mul(r.numel, get_le32(r.shape + 4 * d));
      pos += 4 * (size_t)r.ndim;
      if ((size - pos) / 4 < r.numel) {
        need = sat_add(pos, sat_mul(4, r.numel));
        goto truncated;
      }
      r.data = buf + pos;
      pos += 4 * (size_t)r.numel;
    } else if (r.type == CKPT_TYPE_U64) {
      if (size - pos < 8) {
        need = pos + 8;
        goto truncated;
      }
      r.data = buf + pos;
      pos += 8;
    } else {
      res->outcome = WALK_BAD_TYPE;
      res->raw = r;
      res->end = pos;
      return;
    }
    if (recs) recs[i] = r;
    res->name_whole = false;
    continue;
  truncated:
    res->outcome = WALK_TRUNCATED;
    res->need = sat_add(need, CKPT_SUM_LEN);
    res->raw = r;
    res->end = pos;
    return;
  }
  res->outcome = WALK_OK;
  res->end = pos;
}

/* A record name fit for a message: control bytes become '?', long names are cut. */
static void printable_name(char out[160], const unsigned char *name, size_t len) {
  size_t n = len < 150 ? len : 150, j = 0;
  for (size_t i = 0; i < n; i++) out[j++] = name[i] < 0x20 || name[i] == 0x7f ? '?' : (char)name[i];
  if (n < len) {
    memcpy(out + j, "...", 3);
    j += 3;
  }
  out[j] = '\0';
}

static enum intrus_status read_whole_file(const char *path, unsigned char **out, size_t *len,
                                          struct intrus_error *err) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    int e = errno;
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open checkpoint: %s", path,
                            strerror(e));
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    int e = errno;
    fclose(f);
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot read checkpoint: %s", path,
                            strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    fclose(f);
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot read checkpoint: %s", path,
                            S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
  }
  if ((uintmax_t)st.st_size > SIZE_MAX / 2) {
    fclose(f);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "%s: checkpoint of %jd bytes is too large "
                            "for memory", path, (intmax_t)st.st_size);
  }
  size_t size = (size_t)st.st_size;
  unsigned char *buf = malloc(size ? size : 1);
  if (!buf) {
    fclose(f);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "%s: cannot allocate %zu bytes to read the "
                            "checkpoint", path, size);
  }
  size_t got = fread(buf, 1, size, f);
  if (got < size && ferror(f)) {
    int e = errno ? errno : EIO;
    fclose(f);
    free(buf);
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot read checkpoint: %s", path,
                            strerror(e));
  }
  fclose(f);
  *out = buf;
  *len = got; /* a file that shrank meanwhile is judged as truncated */
  return INTRUS_OK;
}

void intrus_ckpt_free(struct intrus_ckpt *c) {
  if (!c) return;
  free(c->path);
  free(c->recs);
  free(c->names);
  free(c->name_block);
  free(c->floats);
  free(c->index.slot);
  free(c);
}

/* Everything after the read: buf holds the whole file. */
static enum intrus_status parse_checkpoint(const char *path, const unsigned char *buf,
                                          size_t size, bool check_fingerprint,
                                          uint64_t expected, struct intrus_ckpt **out,
                                          struct intrus_error *err) {
  const size_t min_size = CKPT_HEADER_LEN + CKPT_SUM_LEN;
  char nm[160];
  enum intrus_status st = INTRUS_ERR_FORMAT;

  /* 1. Magic. A short file whose bytes begin the magic is a truncated checkpoint. */
  size_t m = size < CKPT_MAGIC_LEN ? size : CKPT_MAGIC_LEN;
  if (memcmp(buf, CKPT_MAGIC, m) != 0)
    return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: not an intrus checkpoint (bad magic)",
                            path);
  if (size < CKPT_VERSION_OFFSET + 4)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: truncated at byte %zu of at least %zu (%s)", path, size,
                            min_size, size ? "the header is cut off" : "empty file");

  /* 2. Version, before the checksum: another version may checksum differently. */
  uint32_t version = get_le32(buf + CKPT_VERSION_OFFSET);
  if (version != INTRUS_CKPT_VERSION)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: unsupported checkpoint version %" PRIu32
                            " (this build reads version %d)",
                            path, version, INTRUS_CKPT_VERSION);

  /* 3. Truncation: the records' own lengths must lead to a whole checksum. */
  if (size < CKPT_HEADER_LEN)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: truncated at byte %zu of at least %zu (the header is cut off)",
                            path, size, min_size);
  uint64_t fingerprint = get_le64(buf + 12);
  uint32_t count = get_le32(buf + CKPT_COUNT_OFFSET);
  struct walk_result wr;
  walk_records(buf, size, count, NULL, &wr);
  if (wr.outcome == WALK_TRUNCATED) {
    if (wr.at_start)
      return intrus_error_set(err, INTRUS_ERR_FORMAT,
                              "%s: truncated at byte %zu of at least %" PRIu64
                              ": ends before record %" PRIu32 " of %" PRIu32,
                              path, size, wr.need, wr.rec + 1, count);
    if (!wr.name_whole)
      return intrus_error_set(err, INTRUS_ERR_FORMAT,
                              "%s: truncated at byte %zu of at least %" PRIu64
                              ": ends in the middle of record %" PRIu32 " of %" PRIu32,
                              path, size, wr.need, wr.rec + 1, count);
    printable_name(nm, wr.raw.name, wr.raw.name_len);
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: truncated at byte %zu of at least %" PRIu64
                            ": ends in the middle of record '%s' (%" PRIu32 " of %" PRIu32 ")",
                            path, size, wr.need, nm, wr.rec + 1, count);
  }
  if (wr.outcome == WALK_OK && size - wr.end < CKPT_SUM_LEN)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: truncated at byte %zu of at least %zu: the checksum is %s",
                            path, size, wr.end + CKPT_SUM_LEN,
                            size == wr.end ? "missing" : "cut off");

  /* 4. Checksum: from here on the bytes are the ones the writer wrote. */
  if (size < min_size || get_le64(buf + size - CKPT_SUM_LEN) !=
                             intrus_fnv1a(INTRUS_FNV_INIT, buf, size - CKPT_SUM_LEN))
    return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: corrupt (checksum mismatch)", path);

  /* What is left can only come from a faulty writer, but is refused all the same. */
  if (wr.outcome == WALK_BAD_TYPE) {
    printable_name(nm, wr.raw.name, wr.raw.name_len);
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: record '%s' (%" PRIu32 " of %" PRIu32 ") has unknown type %u",
                            path, nm, wr.rec + 1, count, (unsigned)wr.raw.type);
  }

  /* The walk proved that count records fit in the file, so count is sane to allocate. */
  struct intrus_ckpt *c = calloc(1, sizeof *c);
  struct raw_record *raw = calloc(count ? count : 1, sizeof *raw);
  size_t name_bytes = 0, floats = 0;
  if (c) {
    c->count = count;
    c->fingerprint = fingerprint;
    c->path = strdup(path);
    c->recs = calloc(count ? count : 1, sizeof *c->recs);
    c->names = calloc(count ? count : 1, sizeof *c->names);
  }
  if (!c || !raw || !c->path || !c->recs || !c->names) goto nomem;
  walk_records(buf, size, count, raw, &wr);
  for (uint32_t i = 0; i < count; i++) name_bytes += raw[i].name_len + (size_t)1;
  if (!(c->name_block = malloc(name_bytes ? name_bytes : 1))) goto nomem;

  /* 5. Names: non-empty, bounded, no NUL, no record named twice. */
  char *nb = c->name_block;
  for (uint32_t i = 0; i < count; i++) {
    const struct raw_record *r = &raw[i];
    printable_name(nm, r->name, r->name_len);
    if (r->name_len == 0 || r->name_len > CKPT_NAME_MAX) {
      intrus_error_set(err, INTRUS_ERR_FORMAT,
                       "%s: record %" PRIu32 " of %" PRIu32 " has a name of %" PRIu32
                       " bytes (must be 1 to %d)",
                       path, i + 1, count, r->name_len, CKPT_NAME_MAX);
      goto fail;
    }
    if (memchr(r->name, 0, r->name_len)) {
      intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: record '%s' has a NUL byte in its name",
                       path, nm);
      goto fail;
    }
    memcpy(nb, r->name, r->name_len);
    nb[r->name_len] = '\0';
    c->names[i] = nb;
    nb += r->name_len + 1;
    size_t prev = name_index_find(&c->index, c->names, c->names[i]);
    if (prev != SIZE_MAX) {
      intrus_error_set(err, INTRUS_ERR_FORMAT,
                       "%s: duplicate record name '%s' (records %zu and %" PRIu32 ")", path,
                       nm, prev + 1, i + 1);
      goto fail;
    }
    if (!name_index_insert(&c->index, c->names, i)) goto nomem;
  }

  /* 6. Tensor shapes: 1 to 4 dimensions, each one an int. */
  for (uint32_t i = 0; i < count; i++) {
    const struct raw_record *r = &raw[i];
    if (r->type != CKPT_TYPE_TENSOR) continue;
    if (r->ndim < 1 || r->ndim > CKPT_MAX_DIMS) {
      intrus_error_set(err, INTRUS_ERR_FORMAT,
                       "%s: record '%s' has %" PRIu32 " dimensions (must be 1 to %d)", path,
                       c->names[i], r->ndim, CKPT_MAX_DIMS);
      goto fail;
    }
    for (uint32_t d = 0; d < r->ndim; d++) {
      uint32_t dim = get_le32(r->shape + 4 * d);
      if (dim > INT_MAX) {
        intrus_error_set(err, INTRUS_ERR_FORMAT,
                         "%s: record '%s' has a bad shape (dimension %" PRIu32 " is %" PRIu32
                         ")",
                         path, c->names[i], d + 1, dim);
        goto fail;
      }
    }
    floats += (size_t)r->numel; /* no overflow: every float lies in the file */
  }

  /* 7. Nothing between the last record and the checksum. */
  if (size - CKPT_SUM_LEN > wr.end) {
    intrus_error_set(err, INTRUS_ERR_FORMAT,
                     "%s: trailing garbage (%zu bytes after the last record)", path,
                     size - CKPT_SUM_LEN - wr.end);
    goto fail;
  }

  /* 8. The model configuration it was written for. */
  if (check_fingerprint && fingerprint != expected) {
    intrus_error_set(err, INTRUS_ERR_FORMAT,
                     "%s: written for another model configuration (fingerprint 0x%016" PRIx64
                     ", expected 0x%016" PRIx64 ")",
                     path, fingerprint, expected);
    goto fail;
  }

  /* Verified: decode the values. Aligned for the BLAS and vector loops that read them. */
  void *fb = NULL;
  if (posix_memalign(&fb, 64, (floats ? floats : 1) * sizeof(float)) != 0) goto nomem;
  c->floats = fb;
  size_t off = 0;
  for (uint32_t i = 0; i < count; i++) {
    const struct raw_record *r = &raw[i];
    struct ckpt_record *rec = &c->recs[i];
    rec->type = r->type;
    if (r->type == CKPT_TYPE_U64) {
      rec->value = get_le64(r->data);
      continue;
    }
    rec->ndim = (int)r->ndim;
    for (uint32_t d = 0; d < r->ndim; d++) rec->shape[d] = (int)get_le32(r->shape + 4 * d);
    rec->n = (size_t)r->numel;
    rec->data = c->floats + off;
    for (size_t j = 0; j < rec->n; j++) {
      uint32_t u = get_le32(r->data + 4 * j);
      memcpy(&c->floats[off + j], &u, sizeof u);
    }
    off += rec->n;
  }
  free(raw);
  *out = c;
  return INTRUS_OK;

nomem:
  st = intrus_error_set(err, INTRUS_ERR_NOMEM,
                        "%s: out of memory loading a checkpoint of %zu bytes", path, size);
fail:
  free(raw);
  intrus_ckpt_free(c);
  return st;
}

enum intrus_status intrus_ckpt_read(const char *path, bool check_fingerprint,
                                    uint64_t fingerprint, struct intrus_ckpt **out,
                                    struct intrus_error *err) {
  INTRUS_CHECK(path && out, "intrus_ckpt_read: NULL argument");
  *out = NULL;
  unsigned char *buf;
  size_t size = 0;
  enum intrus_status st = read_whole_file(path, &buf, &size, err);
  if (st != INTRUS_OK) return st;
  st = parse_checkpoint(path, buf, size, check_fingerprint, fingerprint, out, err);
  free(buf);
  return st;
}

uint64_t intrus_ckpt_fingerprint(const struct intrus_ckpt *c) { return c->fingerprint; }

static const struct ckpt_record *find_record(const struct intrus_ckpt *c, const char *name) {
  size_t i = name_index_find(&c->index, c->names, name);
  return i == SIZE_MAX ? NULL : &c->recs[i];
}

const float *intrus_ckpt_tensor(const struct intrus_ckpt *c, const char *name, int *ndim,
                                int shape[4]) {
  const struct ckpt_record *r = find_record(c, name);
  if (!r || r->type != CKPT_TYPE_TENSOR) return NULL;
  if (ndim) *ndim = r->ndim;
  if (shape)
    for (int d = 0; d < r->ndim; d++) shape[d] = r->shape[d];
  return r->data;
}

bool intrus_ckpt_u64(const struct intrus_ckpt *c, const char *name, uint64_t *value) {
  const struct ckpt_record *r = find_record(c, name);
  if (!r || r->type != CKPT_TYPE_U64) return false;
  if (value) *value = r->value;
  return true;
}

/* ---- parameter sets ------------------------------------------------------------ */

static const char *const kind_prefix[3] = {"param/", "adam_m/", "adam_v/"};

/* "<prefix><name>" into key; false when that is longer than a record name may be. */
static bool param_key(char key[CKPT_NAME_MAX + 1], const char *prefix, const char *name) {
  size_t a = strlen(prefix), b = strlen(name);
  if (a + b > CKPT_NAME_MAX) return false;
  memcpy(key, prefix, a);
  memcpy(key + a, name, b + 1);
  return true;
}

static void format_shape(char *out, size_t cap, int ndim, const int *shape) {
  size_t len = (size_t)snprintf(out, cap, "[");
  for (int d = 0; d < ndim && len < cap; d++)
    len += (size_t)snprintf(out + len, cap - len, "%s%d", d ? ", " : "", shape[d]);
  if (len < cap) snprintf(out + len, cap - len, "]");
}

enum intrus_status intrus_ckpt_put_params(struct intrus_ckpt_writer *w,
                                          struct intrus_params *p, bool with_moments,
                                          struct intrus_error *err) {
  float *blocks[3] = {intrus_params_values(p), intrus_params_adam_m(p), intrus_params_adam_v(p)};
  INTRUS_CHECK(blocks[0], "intrus_ckpt_put_params: parameters not finalized");
  char key[CKPT_NAME_MAX + 1];
  for (size_t i = 0; i < intrus_params_count(p); i++) {
    const intrus_tensor *t = intrus_params_at(p, i);
    size_t off = (size_t)(t->data - blocks[0]);
    for (int k = 0; k < (with_moments ? 3 : 1); k++) {
      if (!param_key(key, kind_prefix[k], t->name))
        return intrus_error_set(err, INTRUS_ERR_INVALID,
                                "%s: parameter name '%.64s...' is too long for a checkpoint",
                                w->path, t->name);
      enum intrus_status st = intrus_ckpt_put_tensor(w, key, t->ndim, t->shape, blocks[k] + off,
                                                     err);
      if (st != INTRUS_OK) return st;
    }
  }
  return INTRUS_OK;
}

enum intrus_status intrus_ckpt_get_params(const struct intrus_ckpt *c, struct intrus_params *p,
                                          bool with_moments, struct intrus_error *err) {
  float *blocks[3] = {intrus_params_values(p), intrus_params_adam_m(p), intrus_params_adam_v(p)};
  INTRUS_CHECK(blocks[0], "intrus_ckpt_get_params: parameters not finalized");
  const int kinds = with_moments ? 3 : 1;
  const size_t n = intrus_params_count(p);
  char key[CKPT_NAME_MAX + 1], have[128], want[128];
  struct intrus_error first = {INTRUS_OK, ""};
  size_t problems = 0;

  /* Everything is checked before anything is copied, so a checkpoint that does not fit
   * leaves the model as it was. */
  for (size_t i = 0; i < n; i++) {
    const intrus_tensor *t = intrus_params_at(p, i);
    for (int k = 0; k < kinds; k++) {
      const struct ckpt_record *r =
          param_key(key, kind_prefix[k], t->name) ? find_record(c, key) : NULL;
      bool same = r && r->type == CKPT_TYPE_TENSOR && r->ndim == t->ndim &&
                  memcmp(r->shape, t->shape, (size_t)t->ndim * sizeof(int)) == 0;
      if (same) continue;
      if (problems++) continue;
      if (!r)
        intrus_error_set(&first, INTRUS_ERR_FORMAT,
                         "%s: parameter '%s' is missing (no record '%s%s')", c->path, t->name,
                         kind_prefix[k], t->name);
      else if (r->type != CKPT_TYPE_TENSOR)
        intrus_error_set(&first, INTRUS_ERR_FORMAT,
                         "%s: record '%s' for parameter '%s' is an integer, not a tensor",
                         c->path, key, t->name);
      else {
        format_shape(have, sizeof have, r->ndim, r->shape);
        format_shape(want, sizeof want, t->ndim, t->shape);
        intrus_error_set(&first, INTRUS_ERR_FORMAT,
                         "%s: parameter '%s' has shape %s in the checkpoint ('%s') but %s in "
                         "the model",
                         c->path, t->name, have, key, want);
      }
    }
  }
  if (problems) {
    size_t len = strlen(first.msg);
    if (problems > 1 && len < sizeof first.msg)
      snprintf(first.msg + len, sizeof first.msg - len,
               " (and %zu more parameter records missing or mismatched)", problems - 1);
    if (err) *err = first;
    return first.status;
  }
  for (size_t i = 0; i < n; i++) {
    const intrus_tensor *t = intrus_params_at(p, i);
    size_t off = (size_t)(t->data - blocks[0]);
    for (int k = 0; k < kinds; k++) {
      param_key(key, kind_prefix[k], t->name);
      const struct ckpt_record *r = find_record(c, key);
      memcpy(blocks[k] + off, r->data, r->n * sizeof(float));
    }
  }
  return INTRUS_OK;
}

/* Reading checkpoint files; the layout is described in intrus/checkpoint.h.
 *
 * The reader loads the whole file and checks its structure, checksum and contents
 * before it builds anything a caller could see, so a damaged file is refused with a
 * message that names the file and the first thing wrong with it. The name index below
 * is shared with the writer, which uses it to refuse a record name written twice. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "intrus/checkpoint.h"
#include "intrus/rng.h"
#include "checkpoint_internal.h"

/* ---- little-endian fields ------------------------------------------------------ */

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

/* ---- name index: open addressing over an array of C strings owned by the caller -- */

static size_t name_slot(const char *name, size_t cap) {
  return (size_t)intrus_fnv1a(INTRUS_FNV_INIT, name, strlen(name)) & (cap - 1);
}

/* Position of key in names, or SIZE_MAX when absent. */
size_t ckpt_name_index_find(const struct ckpt_name_index *ix, char *const *names,
                            const char *key) {
  if (!ix->cap) return SIZE_MAX;
  for (size_t i = name_slot(key, ix->cap);; i = (i + 1) & (ix->cap - 1)) {
    size_t s = ix->slot[i];
    if (!s) return SIZE_MAX;
    if (strcmp(names[s - 1], key) == 0) return s - 1;
  }
}

/* Adds names[pos], which must not be present yet. False when out of memory. */
bool ckpt_name_index_insert(struct ckpt_name_index *ix, char *const *names, size_t pos) {
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

/* ---- reader -------------------------------------------------------------------- */

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
    /* A length that runs past the end is what a cut-off file looks like, and also what a
     * damaged count or length field looks like; only an intact checksum tells them
     * apart, and then the writer was at fault. */
    if (size >= min_size && get_le64(buf + size - CKPT_SUM_LEN) ==
                                intrus_fnv1a(INTRUS_FNV_INIT, buf, size - CKPT_SUM_LEN))
      return intrus_error_set(err, INTRUS_ERR_FORMAT,
                              "%s: corrupt: record %" PRIu32 " of %" PRIu32
                              " claims more bytes than the file holds, though the checksum "
                              "matches (written by a faulty writer)",
                              path, wr.rec + 1, count);
    char where[256];
    if (wr.at_start) {
      snprintf(where, sizeof where, "ends before record %" PRIu32 " of %" PRIu32, wr.rec + 1,
               count);
    } else if (!wr.name_whole) {
      snprintf(where, sizeof where, "ends in the middle of record %" PRIu32 " of %" PRIu32,
               wr.rec + 1, count);
    } else {
      printable_name(nm, wr.raw.name, wr.raw.name_len);
      snprintf(where, sizeof where,
               "ends in the middle of record '%s' (%" PRIu32 " of %" PRIu32 ")", nm, wr.rec + 1,
               count);
    }
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: truncated at byte %zu of at least %" PRIu64
                            ": %s (or a count or length field is damaged: the checksum does "
                            "not match)",
                            path, size, wr.need, where);
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
    c->checksum = get_le64(buf + size - CKPT_SUM_LEN);
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
    size_t prev = ckpt_name_index_find(&c->index, c->names, c->names[i]);
    if (prev != SIZE_MAX) {
      intrus_error_set(err, INTRUS_ERR_FORMAT,
                       "%s: duplicate record name '%s' (records %zu and %" PRIu32 ")", path,
                       nm, prev + 1, i + 1);
      goto fail;
    }
    if (!ckpt_name_index_insert(&c->index, c->names, i)) goto nomem;
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

uint64_t intrus_ckpt_checksum(const struct intrus_ckpt *c) { return c->checksum; }

/* The trailer alone: comparing a file with a checksum recorded earlier must not cost a
 * read of a model's whole checkpoint. The magic is checked so that another kind of
 * file is not taken for a changed checkpoint. */
enum intrus_status intrus_ckpt_file_checksum(const char *path, uint64_t *sum,
                                             struct intrus_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  unsigned char magic[CKPT_MAGIC_LEN], tail[CKPT_SUM_LEN];
  enum intrus_status st = INTRUS_OK;
  if (fread(magic, 1, sizeof magic, f) != sizeof magic ||
      memcmp(magic, CKPT_MAGIC, CKPT_MAGIC_LEN) != 0)
    st = intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: not an intrus checkpoint (bad magic)",
                          path);
  else if (fseek(f, -(long)CKPT_SUM_LEN, SEEK_END) != 0 ||
           ftell(f) < (long)CKPT_HEADER_LEN || fread(tail, 1, sizeof tail, f) != sizeof tail)
    st = intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: truncated (no checksum)", path);
  fclose(f);
  if (!st) *sum = get_le64(tail);
  return st;
}

const struct ckpt_record *ckpt_find_record(const struct intrus_ckpt *c, const char *name) {
  size_t i = ckpt_name_index_find(&c->index, c->names, name);
  return i == SIZE_MAX ? NULL : &c->recs[i];
}

const float *intrus_ckpt_tensor(const struct intrus_ckpt *c, const char *name, int *ndim,
                                int shape[4]) {
  const struct ckpt_record *r = ckpt_find_record(c, name);
  if (!r || r->type != CKPT_TYPE_TENSOR) return NULL;
  if (ndim) *ndim = r->ndim;
  if (shape)
    for (int d = 0; d < r->ndim; d++) shape[d] = r->shape[d];
  return r->data;
}

bool intrus_ckpt_u64(const struct intrus_ckpt *c, const char *name, uint64_t *value) {
  const struct ckpt_record *r = ckpt_find_record(c, name);
  if (!r || r->type != CKPT_TYPE_U64) return false;
  if (value) *value = r->value;
  return true;
}

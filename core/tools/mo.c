/* Reading gettext .mo catalogs: the binary format, with every table and string checked
 * against the file size once, when the catalog is opened, so that the cleaning
 * (mo_clean.c) and the corpus (mo_corpus.c) can index it freely. mo.h holds the
 * contract of all three. */
#include "mo.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- parsing */

static uint32_t rd32(const unsigned char *p, int big_endian) {
  if (big_endian)
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
  return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* A table of count (length, offset) descriptors must fit in the file; 64-bit sums
 * cannot wrap. */
static enum intrus_status check_extent(size_t size, uint32_t count, uint32_t off,
                                       const char *what, const char *name,
                                       struct intrus_error *err) {
  if ((uint64_t)off + 8u * (uint64_t)count > size)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: truncated: the %s table (%u entries at offset %u) runs past "
                            "the end of the file (%zu bytes)",
                            name, what, count, off, size);
  return INTRUS_OK;
}

/* And so must every string it points to. */
static enum intrus_status check_strings(const unsigned char *d, size_t size, int be,
                                        uint32_t count, uint32_t off, const char *what,
                                        const char *name, struct intrus_error *err) {
  for (uint32_t i = 0; i < count; i++) {
    uint32_t len = rd32(d + off + 8u * (uint64_t)i, be);
    uint32_t at = rd32(d + off + 8u * (uint64_t)i + 4, be);
    if ((uint64_t)at + len > size)
      return intrus_error_set(err, INTRUS_ERR_FORMAT,
                              "%s: %s string %u (%u bytes at offset %u) is out of range: the "
                              "file has %zu bytes",
                              name, what, i, len, at, size);
  }
  return INTRUS_OK;
}

enum intrus_status mo_parse(struct mo_catalog *cat, const void *data, size_t size,
                            const char *name, struct intrus_error *err) {
  memset(cat, 0, sizeof *cat);
  const unsigned char *d = data;
  /* magic, revision, count, two table offsets: the hash table that follows is optional
   * for a reader that does not look strings up. */
  if (size < 20)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: truncated: %zu bytes, a .mo header needs 20", name, size);
  int be;
  if (rd32(d, 0) == MO_MAGIC)
    be = 0;
  else if (rd32(d, 1) == MO_MAGIC)
    be = 1;
  else
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: bad magic 0x%08x: not a gettext .mo file", name, rd32(d, 0));
  uint32_t rev = rd32(d + 4, be);
  /* Major revisions 0 and 1 share the layout read here (1 adds system-dependent strings
   * in extra tables, which this reader does not need). */
  if (rev >> 16 > 1)
    return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: unsupported .mo revision %u.%u",
                            name, rev >> 16, rev & 0xffffu);
  uint32_t count = rd32(d + 8, be), oo = rd32(d + 12, be), to = rd32(d + 16, be);
  /* Both extents first: a file cut short should read as truncated, not as strings out
   * of range. */
  enum intrus_status st = check_extent(size, count, oo, "original", name, err);
  if (st == INTRUS_OK) st = check_extent(size, count, to, "translation", name, err);
  if (st == INTRUS_OK) st = check_strings(d, size, be, count, oo, "original", name, err);
  if (st == INTRUS_OK) st = check_strings(d, size, be, count, to, "translation", name, err);
  if (st != INTRUS_OK) return st;
  cat->data = malloc(size ? size : 1);
  if (!cat->data) return intrus_error_set(err, INTRUS_ERR_NOMEM, "%s: out of memory", name);
  memcpy(cat->data, d, size);
  cat->size = size;
  cat->big_endian = be;
  cat->count = count;
  cat->orig_off = oo;
  cat->trans_off = to;
  return INTRUS_OK;
}

enum intrus_status mo_open(struct mo_catalog *cat, const char *path, struct intrus_error *err) {
  memset(cat, 0, sizeof *cat);
  FILE *f = fopen(path, "rb");
  if (!f) return intrus_error_set(err, INTRUS_ERR_IO, "%s: %s", path, strerror(errno));
  unsigned char *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      size_t ncap = cap ? 2 * cap : 65536;
      unsigned char *nb = realloc(buf, ncap);
      if (!nb) {
        free(buf);
        fclose(f);
        return intrus_error_set(err, INTRUS_ERR_NOMEM, "%s: out of memory", path);
      }
      buf = nb;
      cap = ncap;
    }
    size_t k = fread(buf + n, 1, cap - n, f);
    n += k;
    if (k == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: read error", path);
  }
  enum intrus_status st = mo_parse(cat, buf, n, path, err);
  free(buf);
  return st;
}

void mo_close(struct mo_catalog *cat) {
  free(cat->data);
  memset(cat, 0, sizeof *cat);
}

void mo_get(const struct mo_catalog *cat, uint32_t i, struct mo_entry *e) {
  const unsigned char *o = cat->data + cat->orig_off + 8u * (size_t)i;
  const unsigned char *t = cat->data + cat->trans_off + 8u * (size_t)i;
  e->id_len = rd32(o, cat->big_endian);
  e->id = (const char *)cat->data + rd32(o + 4, cat->big_endian);
  e->str_len = rd32(t, cat->big_endian);
  e->str = (const char *)cat->data + rd32(t + 4, cat->big_endian);
}

int mo_charset(const struct mo_catalog *cat, char *out, size_t cap) {
  for (uint32_t i = 0; i < cat->count; i++) {
    struct mo_entry e;
    mo_get(cat, i, &e);
    if (e.id_len != 0) continue;
    static const char key[] = "charset=";
    for (size_t p = 0; p + sizeof key - 1 <= e.str_len; p++) {
      if (strncasecmp(e.str + p, key, sizeof key - 1)) continue;
      size_t q = p + sizeof key - 1, k = 0;
      while (q < e.str_len && k + 1 < cap && !isspace((unsigned char)e.str[q]) &&
             e.str[q] != ';' && e.str[q] != '\0')
        out[k++] = e.str[q++];
      if (cap) out[k] = '\0';
      return k > 0;
    }
    return 0;
  }
  return 0;
}

int mo_charset_is_utf8(const char *cs) {
  static const char *const ok[] = {"UTF-8", "UTF8", "ASCII", "US-ASCII", "ANSI_X3.4-1968"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
    if (!strcasecmp(cs, ok[i])) return 1;
  return 0;
}

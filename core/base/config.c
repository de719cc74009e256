/* Experiment configs as whole files: loading (with the bookkeeping that lets messages
 * name @include'd files where libconfig found them), the effective config written to a
 * run directory, and the fingerprint that ties a checkpoint to the settings that define
 * its model. Reading settings through intrus_cfg handles is config_get.c. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libconfig.h>

#include "intrus/config.h"
#include "intrus/fileio.h"
#include "intrus/rng.h"
#include "config_internal.h"
#include "config_record.h"
#include "xalloc.h"

/* ---- loading ---------------------------------------------------------------------- */

static struct intrus_config *config_new(const char *name) {
  struct intrus_config *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->filename = strdup(name);
  if (!c->filename) {
    free(c);
    return NULL;
  }
  config_init(&c->cfg);
  config_set_destructor(&c->cfg, cfg_hook_free);
  return c;
}

static struct intrus_config *parse_failed(struct intrus_config *c, struct intrus_error *err) {
  const char *file = config_error_file(&c->cfg);
  const char *text = config_error_text(&c->cfg);
  int line = config_error_line(&c->cfg);
  file = cfg_display_file(c, file);
  if (!text) text = "parse error";
  if (line > 0)
    intrus_error_set(err, INTRUS_ERR_CONFIG, "%s:%d: %s", file, line, text);
  else
    intrus_error_set(err, INTRUS_ERR_CONFIG, "%s: %s", file, text);
  intrus_config_free(c);
  return NULL;
}

struct intrus_config *intrus_config_load_file(const char *path, struct intrus_error *err) {
  /* Checked before opening: opening a FIFO for reading blocks until a writer comes. */
  struct stat pre;
  if (stat(path, &pre) == 0 && !S_ISREG(pre.st_mode) && !S_ISDIR(pre.st_mode)) {
    intrus_error_set(err, INTRUS_ERR_IO, "cannot read config file '%s': not a regular file",
                     path);
    return NULL;
  }
  FILE *f = fopen(path, "r");
  if (!f) {
    intrus_error_set(err, INTRUS_ERR_IO, "cannot read config file '%s': %s", path,
                     strerror(errno));
    return NULL;
  }
  struct stat st;
  int e = fstat(fileno(f), &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
  if (e) {
    fclose(f);
    intrus_error_set(err, INTRUS_ERR_IO, "cannot read config file '%s': %s", path,
                     strerror(e));
    return NULL;
  }
  struct intrus_config *c = config_new(path);
  if (!c) {
    fclose(f);
    intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory reading '%s'", path);
    return NULL;
  }
  /* @include "x.cfg" is relative to the including file's directory. */
  const char *slash = strrchr(path, '/');
  if (slash) {
    size_t n = (size_t)(slash - path);
    c->include_dir = xmalloc(n + 2);
    memcpy(c->include_dir, path, n ? n : 1);
    c->include_dir[n ? n : 1] = '\0';
    config_set_include_dir(&c->cfg, c->include_dir);
  }
  int ok = config_read(&c->cfg, f);
  int read_errno = ferror(f) ? errno : 0;
  fclose(f);
  if (!ok) {
    if (config_error_type(&c->cfg) == CONFIG_ERR_FILE_IO && read_errno) {
      intrus_error_set(err, INTRUS_ERR_IO, "cannot read config file '%s': %s", path,
                       strerror(read_errno));
      intrus_config_free(c);
      return NULL;
    }
    return parse_failed(c, err);
  }
  return c;
}

struct intrus_config *intrus_config_load_string(const char *text, const char *name,
                                                struct intrus_error *err) {
  if (!name) name = "<string>";
  struct intrus_config *c = config_new(name);
  if (!c) {
    intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory reading '%s'", name);
    return NULL;
  }
  if (!config_read_string(&c->cfg, text)) return parse_failed(c, err);
  return c;
}

void intrus_config_free(struct intrus_config *c) {
  if (!c) return;
  config_destroy(&c->cfg); /* frees the hooks through cfg_hook_free */
  cfg_record_free(c->record);
  free(c->filename);
  free(c->include_dir);
  for (size_t i = 0; i < 2 * c->nincfiles; i++) free(c->incfiles[i]);
  free(c->incfiles);
  free(c);
}

const char *intrus_config_filename(const struct intrus_config *c) { return c->filename; }

/* ---- writing ---------------------------------------------------------------------- */

enum intrus_status intrus_config_write(const struct intrus_config *c, const char *path,
                                       struct intrus_error *err) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory writing %s", path);
  config_write(&c->cfg, mem);
  bool ok = fflush(mem) == 0 && !ferror(mem);
  fclose(mem);
  enum intrus_status st = ok ? intrus_file_write_atomic(path, text, len, err)
                             : intrus_error_set(err, INTRUS_ERR_NOMEM,
                                                "out of memory writing %s", path);
  free(text);
  return st;
}

/* ---- fingerprint ------------------------------------------------------------------ */

static int cmp_setting_name(const void *a, const void *b) {
  return strcmp(config_setting_name(*(const config_setting_t *const *)a),
                config_setting_name(*(const config_setting_t *const *)b));
}

static uint64_t h_u64(uint64_t h, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  return intrus_fnv1a(h, b, sizeof b);
}

static uint64_t h_tag(uint64_t h, char tag) { return intrus_fnv1a(h, &tag, 1); }

static uint64_t h_str(uint64_t h, const char *s) {
  size_t n = strlen(s);
  return intrus_fnv1a(h_u64(h, n), s, n);
}

/* libconfig 1.5 writes floats with 15 significant digits; hashing them at that precision
 * makes a re-read effective config fingerprint like the run that wrote it. */
static uint64_t h_double(uint64_t h, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.15g", v);
  double r = strtod(buf, NULL);
  if (r == 0) r = 0; /* -0.0 and 0.0 alike */
  uint64_t bits;
  memcpy(&bits, &r, sizeof bits);
  return h_u64(h, bits);
}

static uint64_t h_setting(uint64_t h, const config_setting_t *s) {
  switch (config_setting_type(s)) {
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64: /* 5 and 5L are the same value */
    return h_u64(h_tag(h, 'i'), (uint64_t)config_setting_get_int64(s));
  case CONFIG_TYPE_FLOAT:
    return h_double(h_tag(h, 'f'), config_setting_get_float(s));
  case CONFIG_TYPE_STRING:
    return h_str(h_tag(h, 's'), config_setting_get_string(s));
  case CONFIG_TYPE_BOOL:
    return h_u64(h_tag(h, 'b'), config_setting_get_bool(s) ? 1u : 0u);
  case CONFIG_TYPE_GROUP: {
    int n = config_setting_length(s);
    h = h_u64(h_tag(h, 'g'), (uint64_t)n);
    if (n == 0) return h;
    const config_setting_t **kids = xmalloc((size_t)n * sizeof *kids);
    for (int i = 0; i < n; i++) kids[i] = config_setting_get_elem(s, (unsigned)i);
    /* Keys in sorted order: reordering a group does not change the hash. */
    qsort(kids, (size_t)n, sizeof *kids, cmp_setting_name);
    for (int i = 0; i < n; i++) h = h_setting(h_str(h, config_setting_name(kids[i])), kids[i]);
    free(kids);
    return h;
  }
  case CONFIG_TYPE_ARRAY:
  case CONFIG_TYPE_LIST: {
    int n = config_setting_length(s);
    h = h_u64(h_tag(h, config_setting_type(s) == CONFIG_TYPE_ARRAY ? 'a' : 'l'), (uint64_t)n);
    for (int i = 0; i < n; i++) h = h_setting(h, config_setting_get_elem(s, (unsigned)i));
    return h;
  }
  }
  return h_tag(h, '?');
}

/* Resolves "a.b", "a.list[2].c" or "a.list.[2].c" from the root; NULL when absent. */
static const config_setting_t *resolve(const config_setting_t *s, const char *path) {
  const char *p = path;
  while (s && *p) {
    if (*p == '.') {
      p++;
      continue;
    }
    if (*p == '[') {
      char *end;
      long idx = strtol(p + 1, &end, 10);
      if (*end != ']' || idx < 0 ||
          (config_setting_type(s) != CONFIG_TYPE_LIST &&
           config_setting_type(s) != CONFIG_TYPE_ARRAY))
        return NULL;
      s = config_setting_get_elem(s, (unsigned)idx);
      p = end + 1;
      continue;
    }
    size_t n = strcspn(p, ".[");
    char name[256];
    if (n >= sizeof name || config_setting_type(s) != CONFIG_TYPE_GROUP) return NULL;
    memcpy(name, p, n);
    name[n] = '\0';
    s = config_setting_get_member(s, name);
    p += n;
  }
  return s;
}

uint64_t intrus_config_fingerprint(const struct intrus_config *c, const char *const *paths,
                                   size_t npaths) {
  uint64_t h = h_u64(INTRUS_FNV_INIT, npaths);
  const config_setting_t *root = config_root_setting(&c->cfg);
  for (size_t i = 0; i < npaths; i++) {
    h = h_str(h, paths[i]);
    const config_setting_t *s = resolve(root, paths[i]);
    h = s ? h_setting(h_tag(h, '+'), s) : h_tag(h, '-');
  }
  return h;
}

uint64_t intrus_config_results_fingerprint(const struct intrus_config *c) {
  static const char *const paths[] = {"seed", "data", "model", "train", "search", "eval"};
  return intrus_config_fingerprint(c, paths, sizeof paths / sizeof *paths);
}

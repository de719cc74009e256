/* Strict, typed reading of libconfig experiment files: the intrus_cfg getters. Loading,
 * writing and fingerprinting the file as a whole is config.c.
 *
 * An intrus_cfg handle is a libconfig group (config_setting_t) cast to the opaque type.
 * Each setting we touch gets a small struct cfg_hook on libconfig's per-setting hook
 * pointer: whether a getter read it, its cached dotted path, the keys the program asked
 * for in it (for "known settings" in messages) and cached string arrays. libconfig
 * frees the hooks through the destructor set with config_set_destructor().
 *
 * Messages: "FILE:LINE: PATH: MESSAGE", where FILE is the file the setting came from
 * (the included file for @include'd settings, the name given to load_string for a
 * string), LINE the setting's line (the group's line for a missing setting; omitted
 * for the root and for filled-in defaults, which have no line), and PATH the dotted
 * path ("model.encoder.layers", list elements as "train.phases[1]"; omitted for the
 * root group itself). */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

#include "intrus/config.h"
#include "config_internal.h"
#include "config_record.h"
#include "xalloc.h"

struct cfg_hook {
  bool read;
  char *path;          /* cached dotted path (groups, lists, and anything named in errors) */
  char **known;        /* groups: keys any getter asked for, in first-asked order */
  size_t nknown, capknown;
  const char **strs;   /* intrus_cfg_strings cache */
};

/* ---- small helpers ---------------------------------------------------------------- */

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) intrus_panic("bad format '%s'", fmt);
  char *p = xmalloc((size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

void cfg_hook_free(void *p) {
  struct cfg_hook *h = p;
  if (!h) return;
  free(h->path);
  for (size_t i = 0; i < h->nknown; i++) free(h->known[i]);
  free(h->known);
  free(h->strs);
  free(h);
}

/* The handles are const for callers, but reading marks settings and may add defaults:
 * the tree itself is never const. */
static config_setting_t *S(const intrus_cfg *g) { return (config_setting_t *)(uintptr_t)g; }
static const intrus_cfg *G(const config_setting_t *s) { return (const intrus_cfg *)s; }

/* Tells the recorder (config_record.c) what a getter reads: `intrus config` and the
 * settings reference learn every key, type, default and range from here. */
#define RECORD(g, key, t, ...) \
  cfg_record_read(S(g), (key), &(struct cfg_read){.type = (t), __VA_ARGS__})

static struct intrus_config *owner(const config_setting_t *s) {
  return (struct intrus_config *)s->config;
}

static struct cfg_hook *hook_of(config_setting_t *s) {
  struct cfg_hook *h = config_setting_get_hook(s);
  if (!h) {
    h = xmalloc(sizeof *h);
    memset(h, 0, sizeof *h);
    config_setting_set_hook(s, h);
  }
  return h;
}

static void mark(config_setting_t *s) { hook_of(s)->read = true; }

static void note_known(config_setting_t *g, const char *key) {
  struct cfg_hook *h = hook_of(g);
  for (size_t i = 0; i < h->nknown; i++)
    if (strcmp(h->known[i], key) == 0) return;
  if (h->nknown == h->capknown) {
    size_t cap = h->capknown ? 2 * h->capknown : 8;
    char **k = realloc(h->known, cap * sizeof *k);
    if (!k) intrus_panic("out of memory");
    h->known = k;
    h->capknown = cap;
  }
  h->known[h->nknown++] = xstrdup(key);
}

/* Dotted path of a setting, cached in its hook: "" for the root. */
static const char *setting_path(config_setting_t *s) {
  struct cfg_hook *h = hook_of(s);
  if (!h->path) {
    config_setting_t *parent = config_setting_parent(s);
    if (!parent) {
      h->path = xstrdup("");
    } else {
      const char *pp = setting_path(parent);
      const char *name = config_setting_name(s);
      if (name)
        h->path = *pp ? xasprintf("%s.%s", pp, name) : xstrdup(name);
      else
        h->path = xasprintf("%s[%d]", pp, config_setting_index(s));
    }
  }
  return h->path;
}

/* libconfig records an included file by the name in the @include line; messages show
 * it joined to the including file's directory, where libconfig found it. */
const char *cfg_display_file(struct intrus_config *c, const char *f) {
  if (!f) return c->filename;
  if (f[0] == '/' || !c->include_dir) return f;
  for (size_t i = 0; i < c->nincfiles; i++)
    if (strcmp(c->incfiles[2 * i], f) == 0) return c->incfiles[2 * i + 1];
  char **p = realloc(c->incfiles, (c->nincfiles + 1) * 2 * sizeof *p);
  if (!p) intrus_panic("out of memory");
  c->incfiles = p;
  p[2 * c->nincfiles] = xstrdup(f);
  p[2 * c->nincfiles + 1] = xasprintf("%s/%s", c->include_dir, f);
  return p[2 * c->nincfiles++ + 1];
}

static const char *file_of(const config_setting_t *s) {
  return cfg_display_file(owner(s), config_setting_source_file(s));
}

/* "file:line" of a setting, or "file" when it has no line (root, filled-in defaults). */
static void location(const config_setting_t *s, char *buf, size_t n) {
  unsigned line = config_setting_source_line(s);
  if (line)
    snprintf(buf, n, "%s:%u", file_of(s), line);
  else
    snprintf(buf, n, "%s", file_of(s));
}

/* Sets "LOC(at): PATH: message" (no "PATH: " when path is empty). */
static enum intrus_status fail_at(const config_setting_t *at, const char *path,
                                  struct intrus_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static enum intrus_status fail_at(const config_setting_t *at, const char *path,
                                  struct intrus_error *err, const char *fmt, ...) {
  char loc[512], msg[INTRUS_ERROR_MSG_MAX];
  location(at, loc, sizeof loc);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return intrus_error_set(err, INTRUS_ERR_CONFIG, "%s: %s%s%s", loc, path, *path ? ": " : "",
                          msg);
}

/* Error about a setting itself: at its line, named by its path. */
#define fail_setting(s, err, ...) fail_at((s), setting_path(s), (err), __VA_ARGS__)

static const char *type_name(int type) {
  switch (type) {
  case CONFIG_TYPE_GROUP: return "a group";
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64: return "an integer";
  case CONFIG_TYPE_FLOAT: return "a float";
  case CONFIG_TYPE_STRING: return "a string";
  case CONFIG_TYPE_BOOL: return "a boolean";
  case CONFIG_TYPE_ARRAY: return "an array";
  case CONFIG_TYPE_LIST: return "a list";
  }
  return "a setting of unknown type";
}

static enum intrus_status type_error(config_setting_t *s, const char *expected,
                                     struct intrus_error *err) {
  return fail_setting(s, err, "expected %s, got %s", expected,
                      type_name(config_setting_type(s)));
}

/* Shortest decimal form that reads back as the same double. */
static void format_double(char *buf, size_t n, double v) {
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}

/* Optimal string alignment distance (Levenshtein plus adjacent transpositions). */
static size_t edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return SIZE_MAX;
  size_t d[65][65];
  for (size_t i = 0; i <= la; i++) d[i][0] = i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      size_t cost = a[i - 1] != b[j - 1];
      size_t best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < best) best = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

/* The candidate closest to word within edit distance 2 (and closer than the word is
 * long, so "lr" does not suggest "wd"), or NULL. Ties go to the earlier candidate. */
static const char *closest(const char *word, const char *const *cands, size_t n) {
  const char *best = NULL;
  size_t bestd = 3, len = strlen(word);
  for (size_t i = 0; i < n; i++) {
    size_t d = edit_distance(word, cands[i]);
    if (d < bestd && d < len && strcmp(word, cands[i]) != 0) {
      best = cands[i];
      bestd = d;
    }
  }
  return best;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends to a message buffer, truncating silently. */
static void append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t n, const char *fmt, ...) {
  size_t len = strnlen(buf, n);
  if (len + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, n - len, fmt, ap);
  va_end(ap);
}

/* ---- groups ----------------------------------------------------------------------- */

const intrus_cfg *intrus_config_root(const struct intrus_config *c) {
  return G(config_root_setting(&c->cfg));
}

const char *intrus_cfg_path(const intrus_cfg *g) { return setting_path(S(g)); }

int intrus_cfg_line(const intrus_cfg *g) { return (int)config_setting_source_line(S(g)); }

bool intrus_cfg_has(const intrus_cfg *g, const char *key) {
  return config_setting_get_member(S(g), key) != NULL;
}

void intrus_cfg_mark_read(const intrus_cfg *g, const char *key) {
  config_setting_t *gs = S(g);
  note_known(gs, key);
  config_setting_t *s = config_setting_get_member(gs, key);
  if (s) mark(s);
}

/* "missing required setting 'key'" at the group's line, with a hint when an unread
 * setting of the group looks like a misspelling of key. */
static enum intrus_status missing(config_setting_t *gs, const char *key,
                                  struct intrus_error *err) {
  const char *near = NULL;
  unsigned near_line = 0;
  size_t bestd = 3;
  int n = config_setting_length(gs);
  for (int i = 0; i < n; i++) {
    config_setting_t *s = config_setting_get_elem(gs, (unsigned)i);
    struct cfg_hook *h = config_setting_get_hook(s);
    if (h && h->read) continue;
    const char *name = config_setting_name(s);
    size_t d = edit_distance(name, key);
    if (d < bestd && d < strlen(key)) {
      near = name;
      near_line = config_setting_source_line(s);
      bestd = d;
    }
  }
  if (near && near_line)
    return fail_at(gs, setting_path(gs), err,
                   "missing required setting '%s' (is '%s' on line %u a misspelling?)", key,
                   near, near_line);
  return fail_at(gs, setting_path(gs), err, "missing required setting '%s'", key);
}

/* Looks up key in g and marks it read. *out = NULL when absent (and that is an error
 * when required). */
static enum intrus_status lookup(const intrus_cfg *g, const char *key, bool required,
                                 config_setting_t **out, struct intrus_error *err) {
  INTRUS_CHECK(g && key, "intrus_cfg getter called with a NULL group or key");
  config_setting_t *gs = S(g);
  note_known(gs, key);
  config_setting_t *s = config_setting_get_member(gs, key);
  *out = s;
  if (!s) return required ? missing(gs, key, err) : INTRUS_OK;
  mark(s);
  return INTRUS_OK;
}

/* Adds a filled-in default to the tree (read, so never "unknown"). */
static config_setting_t *add_default(const intrus_cfg *g, const char *key, int type) {
  config_setting_t *s = config_setting_add(S(g), key, type);
  if (!s)
    intrus_panic("cannot add default setting '%s' to '%s' (not a valid libconfig name?)", key,
                 setting_path(S(g)));
  mark(s);
  return s;
}

/* ---- scalars ---------------------------------------------------------------------- */

static enum intrus_status get_int(const intrus_cfg *g, const char *key, bool required,
                                  long long def, long long *out, struct intrus_error *err) {
  config_setting_t *s;
  enum intrus_status st = lookup(g, key, required, &s, err);
  if (st != INTRUS_OK) return st;
  if (!s) {
    if (def >= INT_MIN && def <= INT_MAX) {
      config_setting_set_int(add_default(g, key, CONFIG_TYPE_INT), (int)def);
    } else {
      config_setting_set_int64(add_default(g, key, CONFIG_TYPE_INT64), def);
    }
    *out = def;
    return INTRUS_OK;
  }
  int t = config_setting_type(s);
  if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64) return type_error(s, "an integer", err);
  *out = config_setting_get_int64(s);
  return INTRUS_OK;
}

enum intrus_status intrus_cfg_int(const intrus_cfg *g, const char *key, long long def,
                                  long long *out, struct intrus_error *err) {
  RECORD(g, key, CFG_READ_INT, .idef = def);
  return get_int(g, key, false, def, out, err);
}

enum intrus_status intrus_cfg_int_req(const intrus_cfg *g, const char *key, long long *out,
                                      struct intrus_error *err) {
  RECORD(g, key, CFG_READ_INT, .required = true);
  return get_int(g, key, true, 0, out, err);
}

enum intrus_status intrus_cfg_int_range(const intrus_cfg *g, const char *key, long long def,
                                        long long lo, long long hi, long long *out,
                                        struct intrus_error *err) {
  RECORD(g, key, CFG_READ_INT, .idef = def, .ranged = true, .ilo = lo, .ihi = hi);
  INTRUS_CHECK(lo <= hi && def >= lo && def <= hi,
               "intrus_cfg_int_range('%s'): default %lld outside [%lld, %lld]", key, def, lo,
               hi);
  long long v;
  enum intrus_status st = get_int(g, key, false, def, &v, err);
  if (st != INTRUS_OK) return st;
  if (v < lo || v > hi)
    return fail_setting(config_setting_get_member(S(g), key), err,
                        "%lld is out of range [%lld, %lld]", v, lo, hi);
  *out = v;
  return INTRUS_OK;
}

static enum intrus_status get_double(const intrus_cfg *g, const char *key, bool required,
                                     double def, double *out, struct intrus_error *err) {
  config_setting_t *s;
  enum intrus_status st = lookup(g, key, required, &s, err);
  if (st != INTRUS_OK) return st;
  if (!s) {
    config_setting_set_float(add_default(g, key, CONFIG_TYPE_FLOAT), def);
    *out = def;
    return INTRUS_OK;
  }
  switch (config_setting_type(s)) {
  case CONFIG_TYPE_FLOAT: *out = config_setting_get_float(s); return INTRUS_OK;
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64: *out = (double)config_setting_get_int64(s); return INTRUS_OK;
  }
  return type_error(s, "a number", err);
}

enum intrus_status intrus_cfg_double(const intrus_cfg *g, const char *key, double def,
                                     double *out, struct intrus_error *err) {
  RECORD(g, key, CFG_READ_DOUBLE, .ddef = def);
  return get_double(g, key, false, def, out, err);
}

enum intrus_status intrus_cfg_double_req(const intrus_cfg *g, const char *key, double *out,
                                         struct intrus_error *err) {
  RECORD(g, key, CFG_READ_DOUBLE, .required = true);
  return get_double(g, key, true, 0, out, err);
}

enum intrus_status intrus_cfg_double_range(const intrus_cfg *g, const char *key, double def,
                                           double lo, double hi, double *out,
                                           struct intrus_error *err) {
  RECORD(g, key, CFG_READ_DOUBLE, .ddef = def, .ranged = true, .dlo = lo, .dhi = hi);
  INTRUS_CHECK(lo <= hi && def >= lo && def <= hi,
               "intrus_cfg_double_range('%s'): default %g outside [%g, %g]", key, def, lo, hi);
  double v;
  enum intrus_status st = get_double(g, key, false, def, &v, err);
  if (st != INTRUS_OK) return st;
  if (!(v >= lo && v <= hi)) {
    char vb[32], lb[32], hb[32];
    format_double(vb, sizeof vb, v);
    format_double(lb, sizeof lb, lo);
    format_double(hb, sizeof hb, hi);
    return fail_setting(config_setting_get_member(S(g), key), err,
                        "%s is out of range [%s, %s]", vb, lb, hb);
  }
  *out = v;
  return INTRUS_OK;
}

enum intrus_status intrus_cfg_bool(const intrus_cfg *g, const char *key, bool def, bool *out,
                                   struct intrus_error *err) {
  RECORD(g, key, CFG_READ_BOOL, .bdef = def);
  config_setting_t *s;
  enum intrus_status st = lookup(g, key, false, &s, err);
  if (st != INTRUS_OK) return st;
  if (!s) {
    config_setting_set_bool(add_default(g, key, CONFIG_TYPE_BOOL), def);
    *out = def;
    return INTRUS_OK;
  }
  if (config_setting_type(s) != CONFIG_TYPE_BOOL) return type_error(s, "a boolean", err);
  *out = config_setting_get_bool(s) != 0;
  return INTRUS_OK;
}

/* A string setting, or the default added to the tree (def NULL: required). */
static enum intrus_status get_string(const intrus_cfg *g, const char *key, const char *def,
                                     config_setting_t **sp, const char **out,
                                     struct intrus_error *err) {
  config_setting_t *s;
  enum intrus_status st = lookup(g, key, def == NULL, &s, err);
  if (st != INTRUS_OK) return st;
  if (!s) {
    s = add_default(g, key, CONFIG_TYPE_STRING);
    if (!config_setting_set_string(s, def)) intrus_panic("out of memory");
  } else if (config_setting_type(s) != CONFIG_TYPE_STRING) {
    return type_error(s, "a string", err);
  }
  *sp = s;
  *out = config_setting_get_string(s); /* owned by the tree */
  return INTRUS_OK;
}

enum intrus_status intrus_cfg_string(const intrus_cfg *g, const char *key, const char *def,
                                     const char **out, struct intrus_error *err) {
  RECORD(g, key, CFG_READ_STRING, .sdef = def);
  INTRUS_CHECK(def != NULL, "intrus_cfg_string('%s'): NULL default (use intrus_cfg_string_req)",
               key);
  config_setting_t *s;
  return get_string(g, key, def, &s, out, err);
}

enum intrus_status intrus_cfg_string_req(const intrus_cfg *g, const char *key,
                                         const char **out, struct intrus_error *err) {
  RECORD(g, key, CFG_READ_STRING, .required = true);
  config_setting_t *s;
  return get_string(g, key, NULL, &s, out, err);
}

enum intrus_status intrus_cfg_choice(const intrus_cfg *g, const char *key, const char *def,
                                     const char *const *choices, int *index,
                                     struct intrus_error *err) {
  RECORD(g, key, CFG_READ_CHOICE, .sdef = def, .required = !def, .choices = choices);
  size_t n = 0;
  while (choices[n]) n++;
  INTRUS_CHECK(n > 0, "intrus_cfg_choice('%s'): no choices", key);
  if (def) {
    size_t i = 0;
    while (i < n && strcmp(choices[i], def) != 0) i++;
    INTRUS_CHECK(i < n, "intrus_cfg_choice('%s'): default '%s' is not a choice", key, def);
  }
  config_setting_t *s;
  const char *v;
  enum intrus_status st = get_string(g, key, def, &s, &v, err);
  if (st != INTRUS_OK) return st;
  for (size_t i = 0; i < n; i++)
    if (strcmp(choices[i], v) == 0) {
      *index = (int)i;
      return INTRUS_OK;
    }
  char allowed[INTRUS_ERROR_MSG_MAX] = "";
  for (size_t i = 0; i < n; i++) append(allowed, sizeof allowed, "%s%s", i ? ", " : "", choices[i]);
  const char *near = closest(v, choices, n);
  if (near)
    return fail_setting(s, err, "unknown value '%s' (allowed values: %s); did you mean '%s'?", v,
                        allowed, near);
  return fail_setting(s, err, "unknown value '%s' (allowed values: %s)", v, allowed);
}

/* ---- groups and lists ------------------------------------------------------------- */

static enum intrus_status get_group(const intrus_cfg *g, const char *key, bool required,
                                    const intrus_cfg **out, struct intrus_error *err) {
  config_setting_t *s;
  *out = NULL;
  enum intrus_status st = lookup(g, key, required, &s, err);
  if (st != INTRUS_OK || !s) return st;
  if (config_setting_type(s) != CONFIG_TYPE_GROUP) return type_error(s, "a group", err);
  *out = G(s);
  return INTRUS_OK;
}

enum intrus_status intrus_cfg_group(const intrus_cfg *g, const char *key,
                                    const intrus_cfg **out, struct intrus_error *err) {
  RECORD(g, key, CFG_READ_GROUP, .required = false);
  return get_group(g, key, false, out, err);
}

enum intrus_status intrus_cfg_group_req(const intrus_cfg *g, const char *key,
                                        const intrus_cfg **out, struct intrus_error *err) {
  RECORD(g, key, CFG_READ_GROUP, .required = true);
  return get_group(g, key, true, out, err);
}

/* The list of groups under key (required), every element checked. */
static enum intrus_status get_group_list(const intrus_cfg *g, const char *key,
                                         config_setting_t **out, struct intrus_error *err) {
  config_setting_t *s;
  enum intrus_status st = lookup(g, key, true, &s, err);
  if (st != INTRUS_OK) return st;
  if (config_setting_type(s) != CONFIG_TYPE_LIST) return type_error(s, "a list of groups", err);
  int n = config_setting_length(s);
  for (int i = 0; i < n; i++) {
    config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
    if (config_setting_type(e) != CONFIG_TYPE_GROUP) return type_error(e, "a group", err);
  }
  *out = s;
  return INTRUS_OK;
}

enum intrus_status intrus_cfg_list_len(const intrus_cfg *g, const char *key, int *len,
                                       struct intrus_error *err) {
  RECORD(g, key, CFG_READ_LIST, .required = true);
  config_setting_t *s;
  enum intrus_status st = get_group_list(g, key, &s, err);
  if (st != INTRUS_OK) return st;
  *len = config_setting_length(s);
  return INTRUS_OK;
}

enum intrus_status intrus_cfg_list_group(const intrus_cfg *g, const char *key, int i,
                                         const intrus_cfg **out, struct intrus_error *err) {
  RECORD(g, key, CFG_READ_LIST, .required = true);
  config_setting_t *s;
  *out = NULL;
  enum intrus_status st = get_group_list(g, key, &s, err);
  if (st != INTRUS_OK) return st;
  int n = config_setting_length(s);
  if (i < 0 || i >= n) {
    char loc[512];
    location(s, loc, sizeof loc);
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "%s: %s: element %d requested, but the list has %d", loc,
                            setting_path(s), i, n);
  }
  config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
  mark(e);
  *out = G(e);
  return INTRUS_OK;
}

enum intrus_status intrus_cfg_strings(const intrus_cfg *g, const char *key,
                                      const char ***out, int *count, struct intrus_error *err) {
  RECORD(g, key, CFG_READ_STRINGS, .required = true);
  config_setting_t *s;
  enum intrus_status st = lookup(g, key, true, &s, err);
  if (st != INTRUS_OK) return st;
  int t = config_setting_type(s);
  if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
    return type_error(s, "an array or list of strings", err);
  int n = config_setting_length(s);
  for (int i = 0; i < n; i++) {
    config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
    if (config_setting_type(e) != CONFIG_TYPE_STRING) return type_error(e, "a string", err);
  }
  struct cfg_hook *h = hook_of(s);
  if (!h->strs) {
    h->strs = xmalloc(((size_t)n + 1) * sizeof *h->strs);
    for (int i = 0; i < n; i++) h->strs[i] = config_setting_get_string_elem(s, i);
    h->strs[n] = NULL;
  }
  *out = h->strs;
  *count = n;
  return INTRUS_OK;
}

/* The array or list under key with every element of type want (CONFIG_TYPE_INT covers
 * INT64 too), 1..max of them; absent: *out = NULL (the caller adds its default). */
static enum intrus_status get_scalar_array(const intrus_cfg *g, const char *key, int want,
                                           const char *what, int max, config_setting_t **out,
                                           struct intrus_error *err) {
  config_setting_t *s;
  *out = NULL;
  enum intrus_status st = lookup(g, key, false, &s, err);
  if (st != INTRUS_OK || !s) return st;
  int t = config_setting_type(s);
  if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST) {
    char exp[64];
    snprintf(exp, sizeof exp, "an array of %ss", what);
    return type_error(s, exp, err);
  }
  int n = config_setting_length(s);
  if (n < 1 || n > max)
    return fail_setting(s, err, "has %d elements, expected 1 to %d", n, max);
  for (int i = 0; i < n; i++) {
    config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
    int et = config_setting_type(e);
    bool ok = want == CONFIG_TYPE_INT ? (et == CONFIG_TYPE_INT || et == CONFIG_TYPE_INT64)
                                      : et == want;
    /* Elements of an array carry no line of their own: report at the array's line,
     * naming the element. */
    if (!ok) {
      char *path = xasprintf("%s[%d]", setting_path(s), i);
      enum intrus_status r = fail_at(s, path, err, "expected %s %s, got %s",
                                     want == CONFIG_TYPE_INT ? "an" : "a", what,
                                     type_name(et));
      free(path);
      return r;
    }
  }
  *out = s;
  return INTRUS_OK;
}

enum intrus_status intrus_cfg_ints(const intrus_cfg *g, const char *key, const long long *def,
                                   int ndef, long long lo, long long hi, int max,
                                   long long *out, int *count, struct intrus_error *err) {
  RECORD(g, key, CFG_READ_INTS, .idefs = def, .ndef = ndef, .ilo = lo, .ihi = hi, .max = max);
  INTRUS_CHECK(ndef >= 1 && ndef <= max && lo <= hi,
               "intrus_cfg_ints('%s'): %d defaults for at most %d", key, ndef, max);
  config_setting_t *s;
  enum intrus_status st = get_scalar_array(g, key, CONFIG_TYPE_INT, "integer", max, &s, err);
  if (st != INTRUS_OK) return st;
  if (!s) {
    config_setting_t *a = add_default(g, key, CONFIG_TYPE_ARRAY);
    for (int i = 0; i < ndef; i++) {
      INTRUS_CHECK(def[i] >= lo && def[i] <= hi && def[i] >= INT_MIN && def[i] <= INT_MAX,
                   "intrus_cfg_ints('%s'): default %lld outside [%lld, %lld]", key, def[i], lo,
                   hi);
      if (!config_setting_set_int_elem(a, -1, (int)def[i])) intrus_panic("out of memory");
      out[i] = def[i];
    }
    *count = ndef;
    return INTRUS_OK;
  }
  int n = config_setting_length(s);
  for (int i = 0; i < n; i++) {
    long long v = config_setting_get_int64_elem(s, i);
    if (v < lo || v > hi) {
      char *path = xasprintf("%s[%d]", setting_path(s), i);
      st = fail_at(s, path, err, "%lld is out of range [%lld, %lld]", v, lo, hi);
      free(path);
      return st;
    }
    out[i] = v;
  }
  *count = n;
  return INTRUS_OK;
}

enum intrus_status intrus_cfg_bools(const intrus_cfg *g, const char *key, const bool *def,
                                    int ndef, int max, bool *out, int *count,
                                    struct intrus_error *err) {
  RECORD(g, key, CFG_READ_BOOLS, .bdefs = def, .ndef = ndef, .max = max);
  INTRUS_CHECK(ndef >= 1 && ndef <= max, "intrus_cfg_bools('%s'): %d defaults for at most %d",
               key, ndef, max);
  config_setting_t *s;
  enum intrus_status st = get_scalar_array(g, key, CONFIG_TYPE_BOOL, "boolean", max, &s, err);
  if (st != INTRUS_OK) return st;
  if (!s) {
    config_setting_t *a = add_default(g, key, CONFIG_TYPE_ARRAY);
    for (int i = 0; i < ndef; i++) {
      if (!config_setting_set_bool_elem(a, -1, def[i])) intrus_panic("out of memory");
      out[i] = def[i];
    }
    *count = ndef;
    return INTRUS_OK;
  }
  int n = config_setting_length(s);
  for (int i = 0; i < n; i++) out[i] = config_setting_get_bool_elem(s, i) != 0;
  *count = n;
  return INTRUS_OK;
}

/* ---- caller-side errors and unknown settings -------------------------------------- */

enum intrus_status intrus_cfg_error(const intrus_cfg *g, const char *key,
                                    struct intrus_error *err, const char *fmt, ...) {
  char msg[INTRUS_ERROR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  config_setting_t *gs = S(g);
  config_setting_t *s = key ? config_setting_get_member(gs, key) : NULL;
  if (s) return fail_setting(s, err, "%s", msg);
  if (key) {
    const char *gp = setting_path(gs);
    char *kp = *gp ? xasprintf("%s.%s", gp, key) : xstrdup(key);
    enum intrus_status st = fail_at(gs, kp, err, "%s", msg);
    free(kp);
    return st;
  }
  return fail_at(gs, setting_path(gs), err, "%s", msg);
}

enum intrus_status intrus_cfg_check_unknown(const intrus_cfg *g, struct intrus_error *err) {
  config_setting_t *gs = S(g);
  int n = config_setting_length(gs);
  int nunknown = 0;
  for (int i = 0; i < n; i++) {
    struct cfg_hook *h = config_setting_get_hook(config_setting_get_elem(gs, (unsigned)i));
    if (!h || !h->read) nunknown++;
  }
  if (nunknown == 0) return INTRUS_OK;

  struct cfg_hook *gh = hook_of(gs);
  const char **known = xmalloc((gh->nknown + 1) * sizeof *known);
  for (size_t i = 0; i < gh->nknown; i++) known[i] = gh->known[i];
  qsort(known, gh->nknown, sizeof *known, cmp_str);
  char list[INTRUS_ERROR_MSG_MAX] = "";
  for (size_t i = 0; i < gh->nknown; i++) append(list, sizeof list, "%s%s", i ? ", " : "", known[i]);
  if (!gh->nknown) append(list, sizeof list, "none");

  const char *gpath = setting_path(gs);
  char msg[INTRUS_ERROR_MSG_MAX] = "";
  char loc[512];
  if (nunknown > 1) {
    location(gs, loc, sizeof loc);
    append(msg, sizeof msg, "%s: %s%s%d unknown settings (known settings: %s):", loc, gpath,
           *gpath ? ": " : "", nunknown, list);
  }
  for (int i = 0; i < n; i++) {
    config_setting_t *s = config_setting_get_elem(gs, (unsigned)i);
    struct cfg_hook *h = config_setting_get_hook(s);
    if (h && h->read) continue;
    const char *name = config_setting_name(s);
    location(s, loc, sizeof loc);
    append(msg, sizeof msg, "%s%s: %s%sunknown setting '%s'", nunknown > 1 ? "\n" : "", loc,
           gpath, *gpath ? ": " : "", name);
    if (nunknown == 1) append(msg, sizeof msg, " (known settings: %s)", list);
    const char *near = closest(name, known, gh->nknown);
    if (near) append(msg, sizeof msg, "; did you mean '%s'?", near);
  }
  free(known);
  return intrus_error_set(err, INTRUS_ERR_CONFIG, "%s", msg);
}

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
#include "config_get.h"
#include "config_record.h"
#include "xalloc.h"

/* ---- small helpers ---------------------------------------------------------------- */

char *cfg_xasprintf(const char *fmt, ...) {
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


static struct intrus_config *owner(const config_setting_t *s) {
  return (struct intrus_config *)s->config;
}

struct cfg_hook *cfg_hook_of(config_setting_t *s) {
  struct cfg_hook *h = config_setting_get_hook(s);
  if (!h) {
    h = xmalloc(sizeof *h);
    memset(h, 0, sizeof *h);
    config_setting_set_hook(s, h);
  }
  return h;
}

void cfg_mark(config_setting_t *s) { cfg_hook_of(s)->read = true; }

static void note_known(config_setting_t *g, const char *key) {
  struct cfg_hook *h = cfg_hook_of(g);
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
const char *cfg_setting_path(config_setting_t *s) {
  struct cfg_hook *h = cfg_hook_of(s);
  if (!h->path) {
    config_setting_t *parent = config_setting_parent(s);
    if (!parent) {
      h->path = xstrdup("");
    } else {
      const char *pp = cfg_setting_path(parent);
      const char *name = config_setting_name(s);
      if (name)
        h->path = *pp ? cfg_xasprintf("%s.%s", pp, name) : xstrdup(name);
      else
        h->path = cfg_xasprintf("%s[%d]", pp, config_setting_index(s));
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
  p[2 * c->nincfiles + 1] = cfg_xasprintf("%s/%s", c->include_dir, f);
  return p[2 * c->nincfiles++ + 1];
}

static const char *file_of(const config_setting_t *s) {
  return cfg_display_file(owner(s), config_setting_source_file(s));
}

/* "file:line" of a setting, or "file" when it has no line (root, filled-in defaults). */
void cfg_location(const config_setting_t *s, char *buf, size_t n) {
  unsigned line = config_setting_source_line(s);
  if (line)
    snprintf(buf, n, "%s:%u", file_of(s), line);
  else
    snprintf(buf, n, "%s", file_of(s));
}

enum intrus_status cfg_fail_at(const config_setting_t *at, const char *path,
                               struct intrus_error *err, const char *fmt, ...) {
  char loc[512], msg[INTRUS_ERROR_MSG_MAX];
  cfg_location(at, loc, sizeof loc);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return intrus_error_set(err, INTRUS_ERR_CONFIG, "%s: %s%s%s", loc, path, *path ? ": " : "",
                          msg);
}


const char *cfg_type_name(int type) {
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

enum intrus_status cfg_type_error(config_setting_t *s, const char *expected,
                                  struct intrus_error *err) {
  return fail_setting(s, err, "expected %s, got %s", expected,
                      cfg_type_name(config_setting_type(s)));
}

/* Shortest decimal form that reads back as the same double. */
void cfg_format_double(char *buf, size_t n, double v) {
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
const char *cfg_closest(const char *word, const char *const *cands, size_t n) {
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

void cfg_append(char *buf, size_t n, const char *fmt, ...) {
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

const char *intrus_cfg_path(const intrus_cfg *g) { return cfg_setting_path(S(g)); }

int intrus_cfg_line(const intrus_cfg *g) { return (int)config_setting_source_line(S(g)); }

bool intrus_cfg_has(const intrus_cfg *g, const char *key) {
  return config_setting_get_member(S(g), key) != NULL;
}

void intrus_cfg_mark_read(const intrus_cfg *g, const char *key) {
  config_setting_t *gs = S(g);
  note_known(gs, key);
  config_setting_t *s = config_setting_get_member(gs, key);
  if (s) cfg_mark(s);
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
    return cfg_fail_at(gs, cfg_setting_path(gs), err,
                       "missing required setting '%s' (is '%s' on line %u a misspelling?)", key,
                       near, near_line);
  return cfg_fail_at(gs, cfg_setting_path(gs), err, "missing required setting '%s'", key);
}

/* Looks up key in g and marks it read. *out = NULL when absent (and that is an error
 * when required). */
enum intrus_status cfg_lookup(const intrus_cfg *g, const char *key, bool required,
                              config_setting_t **out, struct intrus_error *err) {
  INTRUS_CHECK(g && key, "intrus_cfg getter called with a NULL group or key");
  config_setting_t *gs = S(g);
  note_known(gs, key);
  config_setting_t *s = config_setting_get_member(gs, key);
  *out = s;
  if (!s) return required ? missing(gs, key, err) : INTRUS_OK;
  cfg_mark(s);
  return INTRUS_OK;
}

/* Adds a filled-in default to the tree (read, so never "unknown"). */
config_setting_t *cfg_add_default(const intrus_cfg *g, const char *key, int type) {
  config_setting_t *s = config_setting_add(S(g), key, type);
  if (!s)
    intrus_panic("cannot add default setting '%s' to '%s' (not a valid libconfig name?)", key,
                 cfg_setting_path(S(g)));
  cfg_mark(s);
  return s;
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
    const char *gp = cfg_setting_path(gs);
    char *kp = *gp ? cfg_xasprintf("%s.%s", gp, key) : xstrdup(key);
    enum intrus_status st = cfg_fail_at(gs, kp, err, "%s", msg);
    free(kp);
    return st;
  }
  return cfg_fail_at(gs, cfg_setting_path(gs), err, "%s", msg);
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

  struct cfg_hook *gh = cfg_hook_of(gs);
  const char **known = xmalloc((gh->nknown + 1) * sizeof *known);
  for (size_t i = 0; i < gh->nknown; i++) known[i] = gh->known[i];
  qsort(known, gh->nknown, sizeof *known, cmp_str);
  char list[INTRUS_ERROR_MSG_MAX] = "";
  for (size_t i = 0; i < gh->nknown; i++)
    cfg_append(list, sizeof list, "%s%s", i ? ", " : "", known[i]);
  if (!gh->nknown) cfg_append(list, sizeof list, "none");

  const char *gpath = cfg_setting_path(gs);
  char msg[INTRUS_ERROR_MSG_MAX] = "";
  char loc[512];
  if (nunknown > 1) {
    cfg_location(gs, loc, sizeof loc);
    cfg_append(msg, sizeof msg, "%s: %s%s%d unknown settings (known settings: %s):", loc, gpath,
               *gpath ? ": " : "", nunknown, list);
  }
  for (int i = 0; i < n; i++) {
    config_setting_t *s = config_setting_get_elem(gs, (unsigned)i);
    struct cfg_hook *h = config_setting_get_hook(s);
    if (h && h->read) continue;
    const char *name = config_setting_name(s);
    cfg_location(s, loc, sizeof loc);
    cfg_append(msg, sizeof msg, "%s%s: %s%sunknown setting '%s'", nunknown > 1 ? "\n" : "", loc,
               gpath, *gpath ? ": " : "", name);
    if (nunknown == 1) cfg_append(msg, sizeof msg, " (known settings: %s)", list);
    const char *near = cfg_closest(name, known, gh->nknown);
    if (near) cfg_append(msg, sizeof msg, "; did you mean '%s'?", near);
  }
  free(known);
  return intrus_error_set(err, INTRUS_ERR_CONFIG, "%s", msg);
}

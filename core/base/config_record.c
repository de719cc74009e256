/* The record of what the readers of a config read (config_record.h): the getters of
 * config_get.c report each read here, and a config that records keeps one entry per
 * group and key, formatted for `intrus config` and the settings reference. A config that
 * does not record pays one pointer test per read. */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "config_record.h"
#include "xalloc.h"

struct cfg_record {
  struct cfg_record_entry *e;
  size_t n, cap;
};

static struct intrus_config *owner(const config_setting_t *s) {
  return (struct intrus_config *)s->config;
}

void intrus_config_record_reads(struct intrus_config *c) {
  if (!c->record) {
    c->record = xmalloc(sizeof *c->record);
    memset(c->record, 0, sizeof *c->record);
  }
}

bool intrus_cfg_settings_only(const intrus_cfg *g) {
  return g && owner((const config_setting_t *)g)->record != NULL;
}

void cfg_record_free(struct cfg_record *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) {
    free(r->e[i].key);
    free(r->e[i].path);
    free(r->e[i].type);
    free(r->e[i].def);
    free(r->e[i].range);
  }
  free(r->e);
  free(r);
}

/* ---- formatting ------------------------------------------------------------------- */

struct buf {
  char *s;
  size_t len, cap;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) intrus_panic("bad format '%s'", fmt);
  if (b->len + (size_t)n + 1 > b->cap) {
    size_t cap = (b->len + (size_t)n + 1) * 2;
    char *s = realloc(b->s, cap);
    if (!s) intrus_panic("out of memory");
    b->s = s;
    b->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

static char *done(struct buf *b) { return b->s ? b->s : xstrdup(""); }

/* A bound as people read it: 2^k for the large powers of two the readers use as "no
 * practical limit". */
static void put_bound(struct buf *b, long long v) {
  if (v == LLONG_MAX) {
    put(b, "2^63-1");
  } else if (v >= 1024 && (v & (v - 1)) == 0) {
    int k = 0;
    while ((1LL << k) != v) k++;
    put(b, "2^%d", k);
  } else {
    put(b, "%lld", v);
  }
}

/* Shortest decimal that reads back as v, written as a libconfig float. */
static void put_double(struct buf *b, double v) {
  char s[64], fixed[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(s, sizeof s, "%.*g", prec, v);
    if (strtod(s, NULL) == v) break;
  }
  /* 10.0 rather than 1e+01: plain decimals where they are no longer. */
  for (int prec = 1; prec <= 12 && strpbrk(s, "eE"); prec++) {
    snprintf(fixed, sizeof fixed, "%.*f", prec, v);
    if (strtod(fixed, NULL) == v) {
      if (strlen(fixed) <= strlen(s) + 2) snprintf(s, sizeof s, "%s", fixed);
      break;
    }
  }
  put(b, "%s%s", s, strpbrk(s, ".eEin") ? "" : ".0");
}

static void put_string(struct buf *b, const char *s) {
  put(b, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') put(b, "\\%c", *s);
    else if (*s == '\n') put(b, "\\n");
    else if (*s == '\t') put(b, "\\t");
    else if ((unsigned char)*s < 0x20) put(b, "\\x%02x", (unsigned char)*s);
    else put(b, "%c", *s);
  }
  put(b, "\"");
}

/* The string value of member key of group g, or NULL. */
static const char *selector(const config_setting_t *g, const char *key) {
  config_setting_t *s = config_setting_get_member(g, key);
  return s && config_setting_type(s) == CONFIG_TYPE_STRING ? config_setting_get_string(s) : NULL;
}

/* g's path, each group followed by "(value)" of its selector (key excepted for g itself:
 * the selector is read before the reader it selects). */
static void put_path(struct buf *b, const config_setting_t *g, const char *key) {
  const config_setting_t *parent = config_setting_parent(g);
  if (!parent) return;
  put_path(b, parent, NULL);
  const char *name = config_setting_name(g);
  if (name) put(b, "%s%s", b->len ? "." : "", name);
  else put(b, "[]");
  if (config_setting_type(g) != CONFIG_TYPE_GROUP) return;
  static const char *const selectors[] = {"plugin", "kind"};
  for (size_t i = 0; i < 2; i++) {
    const char *v = selector(g, selectors[i]);
    if (v && !(key && strcmp(key, selectors[i]) == 0)) {
      put(b, "(%s)", v);
      break;
    }
  }
}

static const char *const type_names[] = {
    [CFG_READ_INT] = "integer",          [CFG_READ_DOUBLE] = "number",
    [CFG_READ_BOOL] = "boolean",         [CFG_READ_STRING] = "string",
    [CFG_READ_CHOICE] = "choice",        [CFG_READ_GROUP] = "group",
    [CFG_READ_LIST] = "list of groups",  [CFG_READ_STRINGS] = "array of strings",
    [CFG_READ_INTS] = "array of integers", [CFG_READ_BOOLS] = "array of booleans"};

static void format_entry(struct cfg_record_entry *e, const config_setting_t *g, const char *key,
                         const struct cfg_read *r) {
  struct buf path = {0}, def = {0}, range = {0};
  put_path(&path, g, key);
  put(&path, "%s%s", path.len ? "." : "", key);
  e->required = r->required;
  switch (r->type) {
  case CFG_READ_INT:
    if (!r->required) put(&def, "%lld", r->idef);
    if (r->ranged) {
      put(&range, "[");
      put_bound(&range, r->ilo);
      put(&range, ", ");
      put_bound(&range, r->ihi);
      put(&range, "]");
    }
    break;
  case CFG_READ_DOUBLE:
    if (!r->required) put_double(&def, r->ddef);
    if (r->ranged) {
      put(&range, "[");
      put_double(&range, r->dlo);
      put(&range, ", ");
      put_double(&range, r->dhi);
      put(&range, "]");
    }
    break;
  case CFG_READ_BOOL: put(&def, "%s", r->bdef ? "true" : "false"); break;
  case CFG_READ_STRING:
  case CFG_READ_CHOICE:
    if (r->sdef) put_string(&def, r->sdef);
    for (size_t i = 0; r->choices && r->choices[i]; i++) {
      if (i) put(&range, " | ");
      put_string(&range, r->choices[i]);
    }
    break;
  case CFG_READ_INTS:
  case CFG_READ_BOOLS:
    put(&def, "[");
    for (int i = 0; i < r->ndef; i++) {
      if (r->type == CFG_READ_INTS) put(&def, "%s%lld", i ? ", " : "", r->idefs[i]);
      else put(&def, "%s%s", i ? ", " : "", r->bdefs[i] ? "true" : "false");
    }
    put(&def, "]");
    put(&range, "1 to %d elements", r->max);
    if (r->type == CFG_READ_INTS) {
      put(&range, ", each in [");
      put_bound(&range, r->ilo);
      put(&range, ", ");
      put_bound(&range, r->ihi);
      put(&range, "]");
    }
    break;
  case CFG_READ_GROUP:
  case CFG_READ_LIST:
  case CFG_READ_STRINGS: break;
  }
  const config_setting_t *at = config_setting_get_member(g, key);
  if (!at) at = g;
  e->file = cfg_display_file(owner(g), config_setting_source_file(at));
  e->line = config_setting_source_line(at);
  e->group = g;
  e->key = xstrdup(key);
  e->path = done(&path);
  e->type = xstrdup(type_names[r->type]);
  e->def = def.s;
  e->range = range.s;
}

/* ---- recording -------------------------------------------------------------------- */

const struct cfg_record_entry *cfg_record_find(const struct intrus_config *c,
                                               const config_setting_t *group, const char *key) {
  if (!c->record) return NULL;
  for (size_t i = 0; i < c->record->n; i++)
    if (c->record->e[i].group == group && strcmp(c->record->e[i].key, key) == 0)
      return &c->record->e[i];
  return NULL;
}

const struct cfg_record_entry *cfg_record_entries(const struct intrus_config *c, size_t *n) {
  *n = c->record ? c->record->n : 0;
  return c->record ? c->record->e : NULL;
}

void cfg_record_read(config_setting_t *g, const char *key, const struct cfg_read *r) {
  if (!g || !key) return;
  struct cfg_record *rec = owner(g)->record;
  if (!rec) return;
  /* The first read of a key stands: later ones (the same setting read again by another
   * part of the program) read it the same way. */
  if (cfg_record_find(owner(g), g, key)) return;
  if (rec->n == rec->cap) {
    size_t cap = rec->cap ? 2 * rec->cap : 64;
    struct cfg_record_entry *e = realloc(rec->e, cap * sizeof *e);
    if (!e) intrus_panic("out of memory");
    rec->e = e;
    rec->cap = cap;
  }
  format_entry(&rec->e[rec->n++], g, key, r);
}

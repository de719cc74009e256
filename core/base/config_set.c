/* A setting changed from the command line: `intrus decode --set search.slots=8` applies
 * "PATH=VALUE" to a loaded experiment before anything reads it, so a search setting can
 * be tried on any experiment, including one whose `search` group comes from an
 * @include'd file (a text edit of the file cannot reach it; libconfig refuses a name given
 * twice, so appending a second group does not work either). */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <libconfig.h>

#include "intrus/config.h"
#include "config_get.h"
#include "config_internal.h"
#include "xalloc.h"

static bool name_ok(const char *s, size_t n) {
  if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '*')) return false;
  for (size_t i = 1; i < n; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-' || s[i] == '*'))
      return false;
  return true;
}

/* Parses "v = <fmt with value>;" into tmp (initialised on success only). */
static bool read_as(config_t *tmp, const char *fmt, const char *value) {
  size_t n = strlen(value) + strlen(fmt) + 1;
  char *text = xmalloc(n);
  snprintf(text, n, fmt, value);
  config_init(tmp);
  bool ok = config_read_string(tmp, text);
  if (!ok) config_destroy(tmp);
  free(text);
  return ok;
}

/* VALUE in libconfig's syntax (8, 1.5e-3, true, "text"); a bare word that is none of
 * those (pair, sampled) is taken as a string, as a shell user would write it. */
static bool parse_value(const char *value, config_t *tmp) {
  if (read_as(tmp, "v = %s;", value)) return true;
  bool word = value[0] != '\0';
  for (const char *c = value; *c; c++)
    if (!(isalnum((unsigned char)*c) || strchr("_-./:+", *c))) word = false;
  return word && read_as(tmp, "v = \"%s\";", value);
}

enum intrus_status intrus_config_set(struct intrus_config *c, const char *assignment,
                                     struct intrus_error *err) {
  const char *eq = strchr(assignment, '=');
  if (!eq)
    return intrus_error_set(err, INTRUS_ERR_USAGE,
                            "--set '%s': expected PATH=VALUE (e.g. search.slots=8)",
                            assignment);
  /* The path's components, checked before the tree is touched. */
  const char *p = assignment;
  do {
    const char *dot = memchr(p, '.', (size_t)(eq - p));
    const char *end = dot ? dot : eq;
    if (!name_ok(p, (size_t)(end - p)))
      return intrus_error_set(err, INTRUS_ERR_USAGE,
                              "--set '%s': '%.*s' is not a setting name (letters, digits, "
                              "'_', '-'; dotted for a group's member)",
                              assignment, (int)(eq - assignment), assignment);
    p = dot ? dot + 1 : eq;
    if (dot && p == eq)
      return intrus_error_set(err, INTRUS_ERR_USAGE, "--set '%s': the path ends in '.'",
                              assignment);
  } while (p < eq);
  config_t tmp;
  if (!parse_value(eq + 1, &tmp))
    return intrus_error_set(err, INTRUS_ERR_USAGE,
                            "--set '%s': '%s' is not a number, boolean or string", assignment,
                            eq + 1);
  config_setting_t *v = config_lookup(&tmp, "v");
  int type = config_setting_type(v);
  if (config_setting_is_aggregate(v)) {
    config_destroy(&tmp);
    return intrus_error_set(err, INTRUS_ERR_USAGE,
                            "--set '%s': a number, boolean or string only, not a group, "
                            "array or list",
                            assignment);
  }
  /* Walk the groups, adding those missing; the last name is replaced or added. */
  config_setting_t *g = config_root_setting(&c->cfg);
  p = assignment;
  enum intrus_status st = INTRUS_OK;
  for (;;) {
    const char *dot = memchr(p, '.', (size_t)(eq - p));
    const char *end = dot ? dot : eq;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(end - p), p);
    config_setting_t *s = config_setting_get_member(g, name);
    if (dot) {
      if (!s) s = config_setting_add(g, name, CONFIG_TYPE_GROUP);
      if (!s || config_setting_type(s) != CONFIG_TYPE_GROUP) {
        st = intrus_error_set(err, INTRUS_ERR_USAGE,
                              "--set '%s': '%.*s' in %s is not a group", assignment,
                              (int)(end - assignment), assignment, c->filename);
        break;
      }
      g = s;
      p = dot + 1;
      continue;
    }
    if (s && config_setting_is_aggregate(s)) {
      st = intrus_error_set(err, INTRUS_ERR_USAGE,
                            "--set '%s': %s has '%s' as %s, which --set does not replace",
                            assignment, c->filename, name,
                            cfg_type_name(config_setting_type(s)));
      break;
    }
    if (s) config_setting_remove(g, name);
    s = config_setting_add(g, name, type);
    if (!s) {
      st = intrus_error_set(err, INTRUS_ERR_USAGE, "--set '%s': cannot add '%s'", assignment,
                            name);
      break;
    }
    cfg_hook_of(s)->from_set = true;
    switch (type) {
    case CONFIG_TYPE_INT: config_setting_set_int(s, config_setting_get_int(v)); break;
    case CONFIG_TYPE_INT64: config_setting_set_int64(s, config_setting_get_int64(v)); break;
    case CONFIG_TYPE_FLOAT: config_setting_set_float(s, config_setting_get_float(v)); break;
    case CONFIG_TYPE_BOOL: config_setting_set_bool(s, config_setting_get_bool(v)); break;
    default: config_setting_set_string(s, config_setting_get_string(v)); break;
    }
    break;
  }
  config_destroy(&tmp);
  return st;
}

/* The scalar intrus_cfg getters: integers, doubles (each with a range form), booleans,
 * strings and choices among fixed strings. A missing setting gets its default added to
 * the tree (cfg_add_default, config_get.c). */
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

/* ---- scalars ---------------------------------------------------------------------- */

static enum intrus_status get_int(const intrus_cfg *g, const char *key, bool required,
                                  long long def, long long *out, struct intrus_error *err) {
  config_setting_t *s;
  enum intrus_status st = cfg_lookup(g, key, required, &s, err);
  if (st != INTRUS_OK) return st;
  if (!s) {
    if (def >= INT_MIN && def <= INT_MAX) {
      config_setting_set_int(cfg_add_default(g, key, CONFIG_TYPE_INT), (int)def);
    } else {
      config_setting_set_int64(cfg_add_default(g, key, CONFIG_TYPE_INT64), def);
    }
    *out = def;
    return INTRUS_OK;
  }
  int t = config_setting_type(s);
  if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64) return cfg_type_error(s, "an integer", err);
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
  enum intrus_status st = cfg_lookup(g, key, required, &s, err);
  if (st != INTRUS_OK) return st;
  if (!s) {
    config_setting_set_float(cfg_add_default(g, key, CONFIG_TYPE_FLOAT), def);
    *out = def;
    return INTRUS_OK;
  }
  switch (config_setting_type(s)) {
  case CONFIG_TYPE_FLOAT: *out = config_setting_get_float(s); return INTRUS_OK;
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64: *out = (double)config_setting_get_int64(s); return INTRUS_OK;
  }
  return cfg_type_error(s, "a number", err);
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
    cfg_format_double(vb, sizeof vb, v);
    cfg_format_double(lb, sizeof lb, lo);
    cfg_format_double(hb, sizeof hb, hi);
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
  enum intrus_status st = cfg_lookup(g, key, false, &s, err);
  if (st != INTRUS_OK) return st;
  if (!s) {
    config_setting_set_bool(cfg_add_default(g, key, CONFIG_TYPE_BOOL), def);
    *out = def;
    return INTRUS_OK;
  }
  if (config_setting_type(s) != CONFIG_TYPE_BOOL) return cfg_type_error(s, "a boolean", err);
  *out = config_setting_get_bool(s) != 0;
  return INTRUS_OK;
}

/* A string setting, or the default added to the tree (def NULL: required). */
static enum intrus_status get_string(const intrus_cfg *g, const char *key, const char *def,
                                     config_setting_t **sp, const char **out,
                                     struct intrus_error *err) {
  config_setting_t *s;
  enum intrus_status st = cfg_lookup(g, key, def == NULL, &s, err);
  if (st != INTRUS_OK) return st;
  if (!s) {
    s = cfg_add_default(g, key, CONFIG_TYPE_STRING);
    if (!config_setting_set_string(s, def)) intrus_panic("out of memory");
  } else if (config_setting_type(s) != CONFIG_TYPE_STRING) {
    return cfg_type_error(s, "a string", err);
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
  for (size_t i = 0; i < n; i++)
    cfg_append(allowed, sizeof allowed, "%s%s", i ? ", " : "", choices[i]);
  const char *near = cfg_closest(v, choices, n);
  if (near)
    return fail_setting(s, err, "unknown value '%s' (allowed values: %s); did you mean '%s'?", v,
                        allowed, near);
  return fail_setting(s, err, "unknown value '%s' (allowed values: %s)", v, allowed);
}

/* The structured intrus_cfg getters: groups, lists of groups, and arrays (or lists) of
 * strings, integers and booleans. */
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

/* ---- groups and lists ------------------------------------------------------------- */

static enum intrus_status get_group(const intrus_cfg *g, const char *key, bool required,
                                    const intrus_cfg **out, struct intrus_error *err) {
  config_setting_t *s;
  *out = NULL;
  enum intrus_status st = cfg_lookup(g, key, required, &s, err);
  if (st != INTRUS_OK || !s) return st;
  if (config_setting_type(s) != CONFIG_TYPE_GROUP) return cfg_type_error(s, "a group", err);
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
  enum intrus_status st = cfg_lookup(g, key, true, &s, err);
  if (st != INTRUS_OK) return st;
  if (config_setting_type(s) != CONFIG_TYPE_LIST) return cfg_type_error(s, "a list of groups", err);
  int n = config_setting_length(s);
  for (int i = 0; i < n; i++) {
    config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
    if (config_setting_type(e) != CONFIG_TYPE_GROUP) return cfg_type_error(e, "a group", err);
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
    cfg_location(s, loc, sizeof loc);
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "%s: %s: element %d requested, but the list has %d", loc,
                            cfg_setting_path(s), i, n);
  }
  config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
  cfg_mark(e);
  *out = G(e);
  return INTRUS_OK;
}

enum intrus_status intrus_cfg_strings(const intrus_cfg *g, const char *key,
                                      const char ***out, int *count, struct intrus_error *err) {
  RECORD(g, key, CFG_READ_STRINGS, .required = true);
  config_setting_t *s;
  enum intrus_status st = cfg_lookup(g, key, true, &s, err);
  if (st != INTRUS_OK) return st;
  int t = config_setting_type(s);
  if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
    return cfg_type_error(s, "an array or list of strings", err);
  int n = config_setting_length(s);
  for (int i = 0; i < n; i++) {
    config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
    if (config_setting_type(e) != CONFIG_TYPE_STRING) return cfg_type_error(e, "a string", err);
  }
  struct cfg_hook *h = cfg_hook_of(s);
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
  enum intrus_status st = cfg_lookup(g, key, false, &s, err);
  if (st != INTRUS_OK || !s) return st;
  int t = config_setting_type(s);
  if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST) {
    char exp[64];
    snprintf(exp, sizeof exp, "an array of %ss", what);
    return cfg_type_error(s, exp, err);
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
      char *path = cfg_xasprintf("%s[%d]", cfg_setting_path(s), i);
      enum intrus_status r = cfg_fail_at(s, path, err, "expected %s %s, got %s",
                                         want == CONFIG_TYPE_INT ? "an" : "a", what,
                                         cfg_type_name(et));
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
    config_setting_t *a = cfg_add_default(g, key, CONFIG_TYPE_ARRAY);
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
      char *path = cfg_xasprintf("%s[%d]", cfg_setting_path(s), i);
      st = cfg_fail_at(s, path, err, "%lld is out of range [%lld, %lld]", v, lo, hi);
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
    config_setting_t *a = cfg_add_default(g, key, CONFIG_TYPE_ARRAY);
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

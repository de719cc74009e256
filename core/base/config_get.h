/* Internal to configs: what the intrus_cfg getters share (config_get.c: the handles,
 * lookups, messages and the unknown-settings check; config_get_scalar.c: numbers,
 * booleans, strings and choices; config_get_list.c: groups, lists and arrays). */
#ifndef INTRUS_CONFIG_GET_H
#define INTRUS_CONFIG_GET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libconfig.h>

#include "intrus/config.h"
#include "config_record.h"

struct cfg_hook {
  bool read;
  bool from_set;       /* put there by intrus_config_set (a command line's --set) */
  char *path;          /* cached dotted path (groups, lists, and anything named in errors) */
  char **known;        /* groups: keys any getter asked for, in first-asked order */
  size_t nknown, capknown;
  const char **strs;   /* intrus_cfg_strings cache */
};

/* The handles are const for callers, but reading marks settings and may add defaults:
 * the tree itself is never const. */
static inline config_setting_t *S(const intrus_cfg *g) {
  return (config_setting_t *)(uintptr_t)g;
}
static inline const intrus_cfg *G(const config_setting_t *s) { return (const intrus_cfg *)s; }

/* Tells the recorder (config_record.c) what a getter reads: `intrus config` and the
 * settings reference learn every key, type, default and range from here. */
#define RECORD(g, key, t, ...) \
  cfg_record_read(S(g), (key), &(struct cfg_read){.type = (t), __VA_ARGS__})

char *cfg_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
struct cfg_hook *cfg_hook_of(config_setting_t *s);
void cfg_mark(config_setting_t *s);
const char *cfg_setting_path(config_setting_t *s);
void cfg_location(const config_setting_t *s, char *buf, size_t n);
/* Sets "LOC(at): PATH: message" (no "PATH: " when path is empty). */
enum intrus_status cfg_fail_at(const config_setting_t *at, const char *path,
                               struct intrus_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Error about a setting itself: at its line, named by its path. */
#define fail_setting(s, err, ...) cfg_fail_at((s), cfg_setting_path(s), (err), __VA_ARGS__)
const char *cfg_type_name(int type);
enum intrus_status cfg_type_error(config_setting_t *s, const char *expected,
                                  struct intrus_error *err);
/* Shortest decimal form that reads back as the same double. */
void cfg_format_double(char *buf, size_t n, double v);
const char *cfg_closest(const char *word, const char *const *cands, size_t n);
/* Appends to a message buffer, truncating silently. */
void cfg_append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Looks up key in g and marks it read. *out = NULL when absent (and that is an error
 * when required). */
enum intrus_status cfg_lookup(const intrus_cfg *g, const char *key, bool required,
                              config_setting_t **out, struct intrus_error *err);
/* Adds a filled-in default to the tree (read, so never "unknown"). */
config_setting_t *cfg_add_default(const intrus_cfg *g, const char *key, int type);

#endif

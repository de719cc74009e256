/* Strict, typed reading of libconfig experiment files for the core and the plugins.
 *
 * Every error names the file and line: parse errors as "file:line: message"; a missing
 * required setting at the line of the group that lacks it; a wrong type or a bad value
 * at the setting's own line; and intrus_cfg_check_unknown() reports every setting of a
 * group that nobody read (a misspelt key is an error, not a silently ignored line).
 * Defaults that a getter fills in are added to the tree, so intrus_config_write()
 * writes the effective config of a run. */
#ifndef INTRUS_CONFIG_H
#define INTRUS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "intrus/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct intrus_config;          /* a parsed file */
typedef struct intrus_cfg intrus_cfg; /* a group inside it (opaque handle) */

struct intrus_config *intrus_config_load_file(const char *path, struct intrus_error *err);
/* name is used in messages in place of a file name. */
struct intrus_config *intrus_config_load_string(const char *text, const char *name,
                                                struct intrus_error *err);
void intrus_config_free(struct intrus_config *c);

/* Applies one command-line assignment "PATH=VALUE" (`intrus decode --set`) to a loaded
 * config before anything reads it: PATH dotted from the root ("search.slots"), groups on
 * it added when missing; VALUE in libconfig's syntax (8, 1.5, true, "text"; a bare word
 * is a string); a scalar already there is replaced, a group or list is not.
 * INTRUS_ERR_USAGE naming the assignment otherwise. */
enum intrus_status intrus_config_set(struct intrus_config *c, const char *assignment,
                                     struct intrus_error *err);

const intrus_cfg *intrus_config_root(const struct intrus_config *c);
const char *intrus_config_filename(const struct intrus_config *c);

/* Writes the tree (with filled-in defaults) to path via a temporary file, fsync and
 * rename. */
enum intrus_status intrus_config_write(const struct intrus_config *c, const char *path,
                                       struct intrus_error *err);

/* 64-bit fingerprint of the named settings (dotted paths from the root, e.g.
 * "model"), independent of formatting and comments; missing paths hash as absent. */
uint64_t intrus_config_fingerprint(const struct intrus_config *c, const char *const *paths,
                                   size_t npaths);
/* The fingerprint of every setting an experiment's results depend on (seed, data,
 * model, train, search, eval; not its name or plugin path): what `intrus run` records
 * in results.json and what the ranks of a distributed run must agree on. */
uint64_t intrus_config_results_fingerprint(const struct intrus_config *c);

/* Dotted path of a group ("model.encoder"; "" for the root) and its line. */
const char *intrus_cfg_path(const intrus_cfg *g);
int intrus_cfg_line(const intrus_cfg *g);
bool intrus_cfg_has(const intrus_cfg *g, const char *key);

/* Getters. The plain form fills in def when the key is absent (and adds it to the
 * tree); the _req form reports a missing key as an error. An int accepts an integer
 * setting; a double accepts a float or an integer setting; a bool accepts true/false;
 * a string accepts a string. Anything else is a type error naming the expected type. */
enum intrus_status intrus_cfg_int(const intrus_cfg *g, const char *key, long long def,
                                  long long *out, struct intrus_error *err);
enum intrus_status intrus_cfg_int_req(const intrus_cfg *g, const char *key, long long *out,
                                      struct intrus_error *err);
/* As intrus_cfg_int, and also an error unless lo <= value <= hi. */
enum intrus_status intrus_cfg_int_range(const intrus_cfg *g, const char *key, long long def,
                                        long long lo, long long hi, long long *out,
                                        struct intrus_error *err);
enum intrus_status intrus_cfg_double(const intrus_cfg *g, const char *key, double def,
                                     double *out, struct intrus_error *err);
enum intrus_status intrus_cfg_double_req(const intrus_cfg *g, const char *key, double *out,
                                         struct intrus_error *err);
enum intrus_status intrus_cfg_double_range(const intrus_cfg *g, const char *key, double def,
                                           double lo, double hi, double *out,
                                           struct intrus_error *err);
enum intrus_status intrus_cfg_bool(const intrus_cfg *g, const char *key, bool def, bool *out,
                                   struct intrus_error *err);
/* The string stays valid while the config lives. def may be NULL only with _req. */
enum intrus_status intrus_cfg_string(const intrus_cfg *g, const char *key, const char *def,
                                     const char **out, struct intrus_error *err);
enum intrus_status intrus_cfg_string_req(const intrus_cfg *g, const char *key,
                                         const char **out, struct intrus_error *err);
/* One of choices (NULL-terminated); the error lists them. *index gets the position. */
enum intrus_status intrus_cfg_choice(const intrus_cfg *g, const char *key, const char *def,
                                     const char *const *choices, int *index,
                                     struct intrus_error *err);

/* A sub-group. _req: missing is an error. Plain: *out = NULL when absent. */
enum intrus_status intrus_cfg_group(const intrus_cfg *g, const char *key,
                                    const intrus_cfg **out, struct intrus_error *err);
enum intrus_status intrus_cfg_group_req(const intrus_cfg *g, const char *key,
                                        const intrus_cfg **out, struct intrus_error *err);

/* A list of groups (libconfig `( {..}, {..} )`): count and the i-th element. */
enum intrus_status intrus_cfg_list_len(const intrus_cfg *g, const char *key, int *len,
                                       struct intrus_error *err);
enum intrus_status intrus_cfg_list_group(const intrus_cfg *g, const char *key, int i,
                                         const intrus_cfg **out, struct intrus_error *err);
/* An array or list of strings; *out points into the config (freed with it). */
enum intrus_status intrus_cfg_strings(const intrus_cfg *g, const char *key,
                                      const char ***out, int *count, struct intrus_error *err);

/* An array or list of integers (booleans) under key, at most max elements, into the
 * caller's out[max]; *count gets how many. Absent: the ndef values of def are added to
 * the tree as an array (so effective.cfg shows them) and returned. Errors name the file
 * and line: a wrong type (of the setting or of an element, named key[i]), an empty or
 * too long array, and for integers an element outside [lo, hi]. */
enum intrus_status intrus_cfg_ints(const intrus_cfg *g, const char *key, const long long *def,
                                   int ndef, long long lo, long long hi, int max,
                                   long long *out, int *count, struct intrus_error *err);
enum intrus_status intrus_cfg_bools(const intrus_cfg *g, const char *key, const bool *def,
                                    int ndef, int max, bool *out, int *count,
                                    struct intrus_error *err);

/* "file:line: <path>.<key>: message" for a setting a caller found invalid on its own
 * terms (e.g. d_model not divisible by heads). Uses the group's line when key is
 * NULL or absent. Returns INTRUS_ERR_CONFIG. */
enum intrus_status intrus_cfg_error(const intrus_cfg *g, const char *key,
                                    struct intrus_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Error if g has a setting no getter has read; lists the unread keys with lines and the
 * keys that were read (the known ones). Call after reading a group completely. */
enum intrus_status intrus_cfg_check_unknown(const intrus_cfg *g, struct intrus_error *err);

/* Marks a key as read without reading it (for settings handled elsewhere). */
void intrus_cfg_mark_read(const intrus_cfg *g, const char *key);

/* Reading a file for its settings alone (`intrus config`, the settings reference): from
 * here on every getter's key, type, default and range is recorded, and
 * intrus_cfg_settings_only() is true for the file's groups. */
void intrus_config_record_reads(struct intrus_config *c);
/* True when g's file is read for its settings alone: a reader then skips what looks past
 * the file (whether a data file exists), never a check of the settings themselves. */
bool intrus_cfg_settings_only(const intrus_cfg *g);

#ifdef __cplusplus
}
#endif
#endif

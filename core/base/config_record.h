/* Recording what the readers of a config read (config_record.c): every intrus_cfg getter
 * reports its key, type, default and range here, and a config that records
 * (intrus_config_record_reads) keeps them. `intrus config` prints them beside the values
 * and checks them against the settings reference (core/cli/settings_doc.c).
 *
 * Paths are normalized so that one path names one meaning: list elements are "[]"
 * ("train.phases[].steps"), and a group whose readers depend on a selector setting in it
 * ("plugin" or "kind") carries the selector's value in parentheses for every key but the
 * selector ("model.encoder(transformer).layers", "data(parallel).dir"; the selector
 * itself stays "model.encoder.plugin", "data.kind"). */
#ifndef INTRUS_CONFIG_RECORD_H
#define INTRUS_CONFIG_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include <libconfig.h>

#include "intrus/config.h"

enum cfg_read_type {
  CFG_READ_INT,
  CFG_READ_DOUBLE,
  CFG_READ_BOOL,
  CFG_READ_STRING,
  CFG_READ_CHOICE,
  CFG_READ_GROUP,
  CFG_READ_LIST,    /* a list of groups */
  CFG_READ_STRINGS, /* an array or list of strings */
  CFG_READ_INTS,
  CFG_READ_BOOLS
};

/* What a getter tells the recorder (raw values: formatted only when recording). */
struct cfg_read {
  enum cfg_read_type type;
  bool required;
  bool ranged;                /* ints, doubles: lo and hi apply */
  long long idef, ilo, ihi;   /* ints (idef also the default of CFG_READ_INTS' elements) */
  double ddef, dlo, dhi;      /* doubles */
  bool bdef;
  const char *sdef;           /* strings, choices (NULL: required) */
  const char *const *choices; /* NULL-terminated */
  const long long *idefs;     /* CFG_READ_INTS: ndef defaults */
  const bool *bdefs;          /* CFG_READ_BOOLS */
  int ndef, max;              /* arrays: defaults and the most elements */
};

/* Called by every getter of config_get.c; does nothing unless g's config records. */
void cfg_record_read(config_setting_t *g, const char *key, const struct cfg_read *r);

/* A recorded read, formatted. */
struct cfg_record_entry {
  const config_setting_t *group; /* the group the key was read from */
  char *key;
  char *path;     /* normalized path of the setting (see above) */
  char *type;     /* "integer", "boolean", "one of", "group", ... */
  char *def;      /* the default in config syntax; NULL when required or without one */
  char *range;    /* "[1, 2^40]", "\"a\" | \"b\"", array sizes; NULL when none */
  bool required;
  const char *file; /* where the setting is (its group when the file leaves it out) */
  unsigned line;    /* 0: no line (the root, a filled-in group) */
};

/* The reads of c in the order they happened (one entry per group and key), or *n = 0
 * when c does not record. */
const struct cfg_record_entry *cfg_record_entries(const struct intrus_config *c, size_t *n);
/* The entry for key of group, or NULL. */
const struct cfg_record_entry *cfg_record_find(const struct intrus_config *c,
                                               const config_setting_t *group, const char *key);

/* Writes c's tree in libconfig syntax (@include'd files expanded), each setting a
 * reader read preceded by the lines comment(its entry, user) returns (malloc'd, NULL for
 * none) as "# " lines; a setting the file leaves out (a filled-in default) is marked
 * "# default", and a read of a key the tree lacks (an optional group left out) is
 * written as its comment and "# KEY: absent". */
#include <stdio.h>
void cfg_print_annotated(const struct intrus_config *c, FILE *f,
                         char *(*comment)(const struct cfg_record_entry *e, void *user),
                         void *user);

/* Frees c's record (intrus_config_free). */
struct cfg_record;
void cfg_record_free(struct cfg_record *r);

#endif

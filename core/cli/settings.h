/* The settings reference: one line of meaning for every setting a reader of an
 * experiment or results table file reads (settings_doc.c, the one place to edit), joined
 * with what the readers themselves record (type, default, range: base/config_record.h)
 * by `intrus config` (cmd_config.c) into the annotated effective configuration, the check
 * that every setting read is described (settings.c) and docs/settings.md. */
#ifndef INTRUS_CLI_SETTINGS_H
#define INTRUS_CLI_SETTINGS_H

#include <stdbool.h>
#include <stdio.h>

#include "base/config_record.h"

/* A setting's path as config_record.h normalizes it ("train.phases[].steps",
 * "model.encoder(transformer).layers"; a last segment "*" stands for any key, as the
 * column names of a table's rows[].experiments), its meaning in one line, and, where the
 * default depends on other settings, that default in words (else NULL: the readers'). */
struct setting_doc {
  const char *path, *meaning, *def;
};

enum settings_file { SETTINGS_EXPERIMENT, SETTINGS_TABLE };

/* The descriptions of one kind of file, ending with {NULL}, and the array's name in
 * settings_doc.c (for messages that say where to add a line). */
const struct setting_doc *settings_docs(enum settings_file kind);
const char *settings_docs_name(enum settings_file kind);
/* The description of path (exact, else a "*" entry), or NULL. */
const struct setting_doc *settings_doc_find(enum settings_file kind, const char *path);

/* "integer in [1, 2^40]; default 1000" for a recorded read (def_words, when given,
 * stands for the default). Malloc'd. */
char *settings_spec(const struct cfg_record_entry *e, const char *def_words);

/* Prints cfg (read with recording on) annotated: each setting's meaning and spec. */
void settings_print(FILE *f, const struct intrus_config *cfg, enum settings_file kind);

/* What several files read, gathered for the check and the reference. */
struct settings_seen;
struct settings_seen *settings_seen_create(void);
void settings_seen_free(struct settings_seen *s);
void settings_seen_add(struct settings_seen *s, const struct intrus_config *cfg,
                       enum settings_file kind, const char *file);
/* Prints every problem to f: a setting read but not described (saying which line to add
 * where), described but read by no file, read with two types or ranges, or with
 * defaults that differ and no default in words. Returns the number of problems. */
int settings_check(const struct settings_seen *s, FILE *f);
/* docs/settings.md: a Markdown table per group of every described setting. */
void settings_reference(const struct settings_seen *s, FILE *f);

#endif

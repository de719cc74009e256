/* Internal to configs: what config.c (the parsed file: loading, writing, fingerprint)
 * and config_get.c (reading settings through intrus_cfg handles) share. The loader sets
 * up the per-setting hooks that the getters fill, and both name files in messages the
 * same way, so an @include'd file reads alike in a parse error and a setting error. */
#ifndef INTRUS_CONFIG_INTERNAL_H
#define INTRUS_CONFIG_INTERNAL_H

#include <stddef.h>

#include <libconfig.h>

struct intrus_config {
  config_t cfg; /* first member: a setting's ->config leads back to us */
  char *filename;
  char *include_dir;
  char **incfiles; /* pairs: name as libconfig records it, include_dir/name */
  size_t nincfiles;
  struct cfg_record *record; /* what the readers read, or NULL (config_record.c) */
};

/* Frees a setting's hook (struct cfg_hook, config_get.c); libconfig calls it through
 * config_set_destructor() when the tree goes. */
void cfg_hook_free(void *p);

/* libconfig records an included file by the name in the @include line; messages show
 * it joined to the including file's directory, where libconfig found it. */
const char *cfg_display_file(struct intrus_config *c, const char *f);

#endif

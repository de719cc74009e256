/* Helpers shared by the subcommands: exit codes, error reporting, plugin search path. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "intrus/config.h"

int intrus_exit_code(enum intrus_status st) {
  switch (st) {
  case INTRUS_OK: return INTRUS_EXIT_OK;
  case INTRUS_ERR_USAGE: return INTRUS_EXIT_USAGE;
  case INTRUS_ERR_CONFIG: return INTRUS_EXIT_CONFIG;
  case INTRUS_ERR_PLUGIN: return INTRUS_EXIT_PLUGIN;
  case INTRUS_ERR_IO:
  case INTRUS_ERR_FORMAT:
  case INTRUS_ERR_DATA: return INTRUS_EXIT_DATA;
  case INTRUS_ERR_NOMEM:
  case INTRUS_ERR_INVALID:
  case INTRUS_ERR_UNSUPPORTED: return INTRUS_EXIT_FAILURE;
  }
  return INTRUS_EXIT_FAILURE; /* a status from a newer plugin than this switch knows */
}

int intrus_cli_fail(const char *cmd, const struct intrus_error *err) {
  /* A failure without a message still has to say something and must not exit 0. */
  if (!err || err->status == INTRUS_OK) {
    fprintf(stderr, "intrus %s: failed\n", cmd);
    return INTRUS_EXIT_FAILURE;
  }
  fprintf(stderr, "intrus %s: %s\n", cmd, err->msg[0] ? err->msg : intrus_status_name(err->status));
  return intrus_exit_code(err->status);
}

struct intrus_plugin_search *intrus_cli_search_path(const char *cli_path,
                                                    const char *experiment_path) {
  struct intrus_plugin_search *s = intrus_plugin_search_create();
  intrus_plugin_search_add(s, cli_path);
  intrus_plugin_search_add(s, experiment_path);
  intrus_plugin_search_add_defaults(s);
  return s;
}

enum intrus_status intrus_cli_experiment(struct intrus_config *cfg, const char *run_dir_arg,
                                         const char *plugin_path_arg, struct cli_experiment *x,
                                         struct intrus_error *err) {
  const char *name, *exp_plugin_path;
  enum intrus_status st;
  x->search = NULL;
  if ((st = intrus_cfg_string(intrus_config_root(cfg), "name", "experiment", &name, err)) ||
      (st = intrus_cfg_string(intrus_config_root(cfg), "plugin_path", "", &exp_plugin_path, err)))
    return st;
  /* The name becomes the path runs/<name>: one plain path component, short enough never
   * to be cut (two names cut to the same prefix would share a run directory). */
  size_t len = strlen(name);
  if (len == 0 || len > CLI_NAME_MAX || name[0] == '.' || name[0] == '-' ||
      strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") != len)
    return intrus_cfg_error(intrus_config_root(cfg), "name", err,
                            "wants 1 to %d of the characters A-Z a-z 0-9 . _ + -, not starting "
                            "with '.' or '-' (it names the directory runs/<name>)",
                            CLI_NAME_MAX);
  snprintf(x->name, sizeof x->name, "%s", name);
  if (run_dir_arg) snprintf(x->run_dir, sizeof x->run_dir, "%s", run_dir_arg);
  else snprintf(x->run_dir, sizeof x->run_dir, "runs/%s", x->name);
  x->search = intrus_cli_search_path(plugin_path_arg, *exp_plugin_path ? exp_plugin_path : NULL);
  return INTRUS_OK;
}

void cli_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

bool cli_sets_add(struct cli_sets *s, const char *cmd, const char *arg, bool report) {
  if (s->n == CLI_SETS_MAX) {
    if (report) fprintf(stderr, "intrus %s: at most %d --set\n", cmd, CLI_SETS_MAX);
    return false;
  }
  s->v[s->n++] = arg;
  return true;
}

struct intrus_config *cli_config_load(const char *path, const struct cli_sets *s,
                                      struct intrus_error *err) {
  struct intrus_config *cfg = intrus_config_load_file(path, err);
  for (int i = 0; cfg && s && i < s->n; i++)
    if (intrus_config_set(cfg, s->v[i], err) != INTRUS_OK) {
      intrus_config_free(cfg);
      cfg = NULL;
    }
  return cfg;
}

/* intrus config: the effective configuration of an experiment or results table file with
 * every setting's meaning, type, default and range; the check that the settings
 * reference describes every setting a reader reads; docs/settings.md (settings.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "intrus/train.h"
#include "settings.h"
#include "table_spec.h"

static const char usage[] =
    "Usage: intrus config FILE.cfg [options]\n"
    "       intrus config --check FILE.cfg...\n"
    "       intrus config --reference FILE.cfg...\n"
    "\n"
    "Prints the effective configuration of an experiment file (or of a results table\n"
    "file): every setting that `intrus run` (`intrus table`) reads, with its value, or the\n"
    "default it takes when the file leaves it out (marked \"# default\"), each under a\n"
    "comment with its meaning, type, allowed values and default. @include'd files are\n"
    "expanded: the output is itself a valid experiment file. Reading builds the model\n"
    "(the plugins are loaded) but reads no data and writes no run directory.\n"
    "\n"
    "Options:\n"
    "  -p, --plugin-path DIRS colon-separated plugin directories searched first\n"
    "  -s, --set PATH=VALUE   the configuration with a setting changed, as `intrus run\n"
    "                         --set` would train it (repeatable; one FILE only)\n"
    "  -c, --check            read every FILE and report each setting a reader read that\n"
    "                         the settings reference (core/cli/settings_doc.c) does not\n"
    "                         describe, described settings no FILE read, and readings\n"
    "                         that disagree; exit status 1 if there is any\n"
    "  -r, --reference        print the settings reference of what the FILEs read, in\n"
    "                         Markdown (scripts/gen-settings-doc.sh writes docs/settings.md)\n"
    "  -h, --help             this help\n";

/* Creates (and destroys) the evaluator of each eval group the file has, so that its
 * settings are read as `intrus run` reads them when it scores the test set. */
static enum intrus_status read_evaluators(struct intrus_config *cfg,
                                          const struct intrus_plugin_search *search,
                                          struct intrus_error *err) {
  static const char *const names[] = {"bleu", "cider"};
  const intrus_cfg *eval, *g;
  enum intrus_status st;
  if ((st = intrus_cfg_group(intrus_config_root(cfg), "eval", &eval, err)) || !eval) return st;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if ((st = intrus_cfg_group(eval, names[i], &g, err))) return st;
    if (!g) continue;
    struct intrus_plugin *p;
    if ((st = intrus_plugin_load(search, INTRUS_KIND_EVALUATOR, names[i], &p, err))) return st;
    const struct intrus_evaluator_vtable *v = intrus_plugin_descriptor(p)->vtable;
    void *self = NULL;
    st = v->create(g, &self, err);
    if (!st) v->destroy(self);
    intrus_plugin_close(p);
    if (st) return st;
  }
  return INTRUS_OK;
}

/* Reads an experiment file as `intrus run` does, without data or a run directory. */
static enum intrus_status read_experiment(struct intrus_config *cfg, const char *plugin_path,
                                          struct intrus_error *err) {
  struct cli_experiment x;
  enum intrus_status st = intrus_cli_experiment(cfg, NULL, plugin_path, &x, err);
  if (st) return st;
  struct intrus_train_options opt = {.run_dir = x.run_dir, .search = x.search,
                                     .settings_only = true};
  struct intrus_train_result res;
  if (!(st = intrus_train(cfg, &opt, &res, err))) st = read_evaluators(cfg, x.search, err);
  intrus_plugin_search_free(x.search);
  return st;
}

/* Loads path with recording on and reads it as its kind of file: a results table when it
 * has rows, else an experiment. On success *out is the config (owned by *table when that
 * is set). */
static enum intrus_status read_file(const char *path, const struct cli_sets *sets,
                                    const char *plugin_path, struct intrus_config **out,
                                    struct table_spec **table, enum settings_file *kind,
                                    struct intrus_error *err) {
  *out = NULL;
  *table = NULL;
  struct intrus_config *cfg = cli_config_load(path, sets, err);
  if (!cfg) return err->status;
  intrus_config_record_reads(cfg);
  enum intrus_status st;
  if (intrus_cfg_has(intrus_config_root(cfg), "rows")) {
    *kind = SETTINGS_TABLE;
    if ((st = table_spec_read(cfg, path, table, err))) return st;
    *out = (*table)->cfg;
    return INTRUS_OK;
  }
  *kind = SETTINGS_EXPERIMENT;
  if ((st = read_experiment(cfg, plugin_path, err))) {
    intrus_config_free(cfg);
    return st;
  }
  *out = cfg;
  return INTRUS_OK;
}

static void file_free(struct intrus_config *cfg, struct table_spec *table) {
  if (table) table_spec_free(table);
  else intrus_config_free(cfg);
}

int intrus_cmd_config(int argc, char **argv) {
  static const struct option longopts[] = {{"plugin-path", required_argument, NULL, 'p'},
                                           {"check", no_argument, NULL, 'c'},
                                           {"reference", no_argument, NULL, 'r'},
                                           {"help", no_argument, NULL, 'h'},
                                           {"set", required_argument, NULL, 's'},
                                           {NULL, 0, NULL, 0}};
  const char *plugin_path = NULL;
  struct cli_sets sets = {.n = 0};
  bool check = false, reference = false;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "p:s:crh", longopts, NULL)) != -1) {
    switch (c) {
    case 'p': plugin_path = optarg; break;
    case 'c': check = true; break;
    case 'r': reference = true; break;
    case 's':
      if (!cli_sets_add(&sets, "config", optarg, true)) return INTRUS_EXIT_USAGE;
      break;
    case 'h': fputs(usage, stdout); return INTRUS_EXIT_OK;
    default: fputs(usage, stderr); return INTRUS_EXIT_USAGE;
    }
  }
  int nfiles = argc - optind;
  if (nfiles < 1 || (!check && !reference && nfiles != 1) || (check && reference) ||
      (sets.n && (check || reference))) {
    fprintf(stderr, "intrus config: %s\n",
            check && reference ? "--check or --reference, not both"
            : sets.n && (check || reference) ? "--set prints one file's configuration; not "
                                               "with --check or --reference"
            : nfiles < 1       ? "expected an experiment file"
                               : "expected one file (several with --check or --reference)");
    fputs(usage, stderr);
    return INTRUS_EXIT_USAGE;
  }
  struct intrus_error err = {0};
  struct settings_seen *seen = settings_seen_create();
  int rc = INTRUS_EXIT_OK;
  for (int i = optind; i < argc && rc == INTRUS_EXIT_OK; i++) {
    struct intrus_config *cfg;
    struct table_spec *table;
    enum settings_file kind = SETTINGS_EXPERIMENT;
    if (read_file(argv[i], &sets, plugin_path, &cfg, &table, &kind, &err)) {
      rc = intrus_cli_fail("config", &err);
      break;
    }
    if (check || reference) {
      settings_seen_add(seen, cfg, kind, argv[i]);
    } else {
      printf("# intrus config %s", argv[i]);
      for (int k = 0; k < sets.n; k++) printf(" --set %s", sets.v[k]);
      printf("\n"
             "# The effective %s configuration: every setting as `intrus %s` reads it,\n"
             "# under its meaning, type, allowed values and default (docs/settings.md).\n\n",
             kind == SETTINGS_TABLE ? "results table" : "experiment",
             kind == SETTINGS_TABLE ? "table" : "run");
      settings_print(stdout, cfg, kind);
    }
    file_free(cfg, table);
  }
  if (rc == INTRUS_EXIT_OK && check) {
    int problems = settings_check(seen, stderr);
    if (problems) {
      fprintf(stderr, "intrus config: %d problem%s with the settings reference\n", problems,
              problems == 1 ? "" : "s");
      rc = INTRUS_EXIT_FAILURE;
    } else {
      printf("intrus config: %d files: every setting read is described\n", nfiles);
    }
  }
  if (rc == INTRUS_EXIT_OK && reference) settings_reference(seen, stdout);
  settings_seen_free(seen);
  return rc;
}

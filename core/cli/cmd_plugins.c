/* `intrus plugins`: shows where plugins are searched for and what was found there, so a
 * user can tell which build of a plugin an experiment will get, and why one is rejected. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char plugins_usage[] =
    "Usage: intrus plugins [--plugin-path DIRS] [--kind KIND]\n"
    "\n"
    "Lists the plugins found on the search path: name, kind, version, plugin ABI,\n"
    "module file and a one-line summary. Modules that cannot be loaded (another ABI,\n"
    "a missing descriptor, a broken file) are listed with the reason.\n"
    "\n"
    "Options:\n"
    "  -p, --plugin-path DIRS  search these colon-separated directories first\n"
    "                          (repeatable)\n"
    "  --kind KIND             only plugins of KIND: encoder, decoder, order or eval\n"
    "  -h, --help              show this help\n"
    "\n"
    "Search order: --plugin-path, $INTRUS_PLUGIN_PATH, then " INTRUS_PKGLIBDIR ";\n"
    "an intrus run from its build tree also searches the build tree's plugins/.\n"
    "The first module of a given name wins.\n"
    "\n"
    "Exit status: 0 when at least one plugin was listed, 2 usage error,\n"
    "4 when no plugin could be listed.\n";

struct row {
  char *name, *kind, *version, *abi, *file, *summary;
};

struct problem {
  char *path, *why;
};

struct listing {
  int kind;  /* 0: every kind */
  struct row *rows;
  size_t nrows;
  struct problem *problems;
  size_t nproblems;
};

static char *dup_or_die(const char *s) {
  char *d = strdup(s ? s : "");
  if (!d) intrus_panic("out of memory");
  return d;
}

static void *grow(void *p, size_t n, size_t size) {
  p = realloc(p, n * size);
  if (!p) intrus_panic("out of memory");
  return p;
}

/* Whether the module file's name starts with "<kind>_" (for modules whose descriptor
 * could not be read, the file name is all there is to filter on). */
static int file_has_kind(const char *path, int kind) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *kn = intrus_plugin_kind_name((enum intrus_plugin_kind)kind);
  size_t l = strlen(kn);
  return !strncmp(base, kn, l) && base[l] == '_';
}

static void visit(const char *path, const struct intrus_plugin_desc *desc, const char *problem,
                  void *user) {
  struct listing *l = user;
  if (!desc) {
    /* Directory problems (path is a directory, not a module) are shown whatever the
     * filter: they may hide plugins of the kind asked for. */
    size_t n = strlen(path);
    int is_module = n > 3 && (!strcmp(path + n - 3, ".la") || !strcmp(path + n - 3, ".so"));
    if (l->kind && is_module && !file_has_kind(path, l->kind)) return;
    l->problems = grow(l->problems, l->nproblems + 1, sizeof *l->problems);
    l->problems[l->nproblems++] = (struct problem){dup_or_die(path), dup_or_die(problem)};
    return;
  }
  if (l->kind && (int)desc->kind != l->kind) return;
  /* The descriptor lives in the module, which is closed after this call: copy. */
  char abi[32];
  snprintf(abi, sizeof abi, "%u.%u", (unsigned)desc->abi_major, (unsigned)desc->abi_minor);
  l->rows = grow(l->rows, l->nrows + 1, sizeof *l->rows);
  l->rows[l->nrows++] = (struct row){dup_or_die(desc->name),
                                     dup_or_die(intrus_plugin_kind_name(desc->kind)),
                                     dup_or_die(desc->version),
                                     dup_or_die(abi),
                                     dup_or_die(path),
                                     dup_or_die(desc->summary)};
}

static int row_cmp(const void *a, const void *b) {
  const struct row *x = a, *y = b;
  int c = strcmp(x->kind, y->kind);
  return c ? c : strcmp(x->name, y->name);
}

static int width(int w, const char *s) {
  int l = (int)strlen(s);
  return l > w ? l : w;
}

static void print_listing(struct listing *l) {
  if (l->nrows) {
    qsort(l->rows, l->nrows, sizeof *l->rows, row_cmp);
    int wn = 4, wk = 4, wv = 7, wa = 3, wf = 4;
    for (size_t i = 0; i < l->nrows; i++) {
      wn = width(wn, l->rows[i].name);
      wk = width(wk, l->rows[i].kind);
      wv = width(wv, l->rows[i].version);
      wa = width(wa, l->rows[i].abi);
      wf = width(wf, l->rows[i].file);
    }
    printf("\n%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", wn, "NAME", wk, "KIND", wv, "VERSION", wa,
           "ABI", wf, "FILE", "SUMMARY");
    for (size_t i = 0; i < l->nrows; i++) {
      const struct row *r = &l->rows[i];
      printf("%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", wn, r->name, wk, r->kind, wv, r->version, wa,
             r->abi, wf, r->file, r->summary);
    }
  }
  if (l->nproblems) {
    printf("\nCould not load:\n");
    for (size_t i = 0; i < l->nproblems; i++)
      printf("  %s: %s\n", l->problems[i].path, l->problems[i].why);
  }
}

static void free_listing(struct listing *l) {
  for (size_t i = 0; i < l->nrows; i++) {
    struct row *r = &l->rows[i];
    free(r->name), free(r->kind), free(r->version), free(r->abi), free(r->file), free(r->summary);
  }
  for (size_t i = 0; i < l->nproblems; i++) free(l->problems[i].path), free(l->problems[i].why);
  free(l->rows);
  free(l->problems);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("intrus plugins: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs(" (try 'intrus plugins --help')\n", stderr);
  return INTRUS_EXIT_USAGE;
}

/* The value of option `name` at argv[*i], as "--name VALUE" or "--name=VALUE" ("-p VALUE"
 * for a short name); NULL if argv[*i] is another option. *missing is set when the option
 * has no value. */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *missing) {
  size_t l = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, l)) return NULL;
  if (a[l] == '=' && name[1] == '-') return a + l + 1;
  if (a[l]) return NULL;
  if (*i + 1 >= argc) {
    *missing = 1;
    return NULL;
  }
  return argv[++*i];
}

int intrus_cmd_plugins(int argc, char **argv) {
  char *cli_path = NULL;  /* repeated --plugin-path values, joined with ':' */
  int kind = 0, rc;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int missing = 0;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(plugins_usage, stdout);
      free(cli_path);
      return INTRUS_EXIT_OK;
    } else if ((v = option_value(argc, argv, &i, "--plugin-path", &missing)) ||
               (!missing && (v = option_value(argc, argv, &i, "-p", &missing)))) {
      size_t old = cli_path ? strlen(cli_path) + 1 : 0;
      cli_path = grow(cli_path, old + strlen(v) + 1, 1);
      if (old) cli_path[old - 1] = ':';
      strcpy(cli_path + old, v);
    } else if (!missing && (v = option_value(argc, argv, &i, "--kind", &missing))) {
      kind = 0;
      for (int k = INTRUS_KIND_ENCODER; k <= INTRUS_KIND_EVALUATOR; k++)
        if (!strcmp(v, intrus_plugin_kind_name((enum intrus_plugin_kind)k))) kind = k;
      if (!kind) {
        free(cli_path);
        return usage_error("unknown plugin kind '%s': use encoder, decoder, order or eval", v);
      }
    } else {
      free(cli_path);
      if (missing) return usage_error("option '%s' needs a value", a);
      return usage_error(a[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", a);
    }
  }

  struct intrus_plugin_search *s = intrus_cli_search_path(cli_path, NULL);
  free(cli_path);
  printf("Plugin search path (first match wins):\n");
  for (int i = 0; i < intrus_plugin_search_count(s); i++) {
    const char *d = intrus_plugin_search_dir(s, i);
    printf("  %s%s\n", d, access(d, F_OK) ? "  (does not exist)" : "");
  }

  struct listing l = {.kind = kind};
  struct intrus_error err = {0};
  enum intrus_status st = intrus_plugin_list(s, visit, &l, &err);
  if (st != INTRUS_OK) {
    rc = intrus_cli_fail("plugins", &err);
  } else {
    print_listing(&l);
    rc = INTRUS_EXIT_OK;
    if (l.nrows == 0) {
      /* Nothing usable: an experiment run with this path would fail to find any
       * plugin, so say it plainly and fail the way a plugin error does. */
      fprintf(stderr, "intrus plugins: no %s%splugins found on the search path\n",
              kind ? intrus_plugin_kind_name((enum intrus_plugin_kind)kind) : "",
              kind ? " " : "");
      rc = INTRUS_EXIT_PLUGIN;
    }
  }
  free_listing(&l);
  intrus_plugin_search_free(s);
  return rc;
}

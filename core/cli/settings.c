/* The settings reference joined with what the readers record (settings.h): the annotated
 * effective configuration, the check that every setting read is described, and the
 * Markdown reference (docs/settings.md). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"

static char *xvasprintf(const char *fmt, va_list ap) {
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) {
    fputs("intrus: out of memory\n", stderr);
    abort();
  }
  return s;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = xvasprintf(fmt, ap);
  va_end(ap);
  return s;
}

static char *xstrdup_or(const char *s) { return s ? xasprintf("%s", s) : NULL; }

static bool same(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* ---- the spec of one read ------------------------------------------------------------ */

static char *spec_of(const char *type, const char *range, const char *def, bool required,
                     const char *def_words) {
  bool choice = !strcmp(type, "choice"), array = !strncmp(type, "array of ", 9);
  const char *what = choice ? "one of" : type;
  const char *sep = !range ? "" : choice ? " " : array ? " (" : " in ";
  const char *tail = range && array ? ")" : "";
  char *d = required    ? xasprintf("required")
            : def_words ? xasprintf("default: %s", def_words)
            : def       ? xasprintf("default %s", def)
                        : xasprintf("optional");
  char *s = xasprintf("%s%s%s%s; %s", what, sep, range ? range : "", tail, d);
  free(d);
  return s;
}

char *settings_spec(const struct cfg_record_entry *e, const char *def_words) {
  return spec_of(e->type, e->range, e->def, e->required, def_words);
}

/* ---- the annotated effective configuration ------------------------------------------ */

static char *annotate(const struct cfg_record_entry *e, void *user) {
  const enum settings_file *kind = user;
  const struct setting_doc *d = settings_doc_find(*kind, e->path);
  char *spec = settings_spec(e, d ? d->def : NULL);
  char *s = d ? xasprintf("%s\n%s", d->meaning, spec)
              : xasprintf("(%s: not in the settings reference)\n%s", e->path, spec);
  free(spec);
  return s;
}

void settings_print(FILE *f, const struct intrus_config *cfg, enum settings_file kind) {
  cfg_print_annotated(cfg, f, annotate, &kind);
}

/* ---- what several files read --------------------------------------------------------- */

struct seen {
  enum settings_file kind;
  char *path, *type, *range, *def, *where; /* where: "file:line" of the setting */
  bool required;
};

struct settings_seen {
  struct seen *e;
  size_t n, cap;
};

struct settings_seen *settings_seen_create(void) {
  struct settings_seen *s = calloc(1, sizeof *s);
  if (!s) abort();
  return s;
}

void settings_seen_free(struct settings_seen *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) {
    free(s->e[i].path);
    free(s->e[i].type);
    free(s->e[i].range);
    free(s->e[i].def);
    free(s->e[i].where);
  }
  free(s->e);
  free(s);
}

void settings_seen_add(struct settings_seen *s, const struct intrus_config *cfg,
                       enum settings_file kind, const char *file) {
  size_t n;
  const struct cfg_record_entry *e = cfg_record_entries(cfg, &n);
  for (size_t i = 0; i < n; i++) {
    if (s->n == s->cap) {
      s->cap = s->cap ? 2 * s->cap : 256;
      struct seen *p = realloc(s->e, s->cap * sizeof *p);
      if (!p) abort();
      s->e = p;
    }
    struct seen *t = &s->e[s->n++];
    t->kind = kind;
    t->path = xstrdup_or(e[i].path);
    t->type = xstrdup_or(e[i].type);
    t->range = xstrdup_or(e[i].range);
    t->def = xstrdup_or(e[i].def);
    t->required = e[i].required;
    t->where = e[i].line ? xasprintf("%s:%u", e[i].file ? e[i].file : file, e[i].line)
                         : xasprintf("%s", e[i].file ? e[i].file : file);
  }
}

/* Whether doc entry path d describes setting path p ("a.b.*" describes "a.b.anything"). */
static bool describes(const char *d, const char *p) {
  size_t n = strlen(d);
  if (n >= 2 && !strcmp(d + n - 2, ".*")) return !strncmp(d, p, n - 1) && p[n - 1];
  return !strcmp(d, p);
}

/* The first read of the path the doc entry d describes, or NULL. */
static const struct seen *first_read(const struct settings_seen *s, enum settings_file kind,
                                     const char *d) {
  for (size_t i = 0; i < s->n; i++)
    if (s->e[i].kind == kind && describes(d, s->e[i].path)) return &s->e[i];
  return NULL;
}

static const char *const kind_what[] = {"experiment", "results table"};

/* Reads ordered by kind, path, then as they came (qsort over indices into one array). */
static const struct settings_seen *sort_base;
static int by_path(const void *a, const void *b) {
  const struct seen *x = &sort_base->e[*(const size_t *)a], *y = &sort_base->e[*(const size_t *)b];
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  int c = strcmp(x->path, y->path);
  if (c) return c;
  return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

int settings_check(const struct settings_seen *s, FILE *f) {
  int problems = 0;
  size_t *ix = malloc((s->n ? s->n : 1) * sizeof *ix);
  if (!ix) abort();
  for (size_t i = 0; i < s->n; i++) ix[i] = i;
  sort_base = s;
  qsort(ix, s->n, sizeof *ix, by_path);
  for (size_t i = 0, j; i < s->n; i = j) {
    const struct seen *e = &s->e[ix[i]]; /* the path's first read */
    for (j = i + 1; j < s->n && s->e[ix[j]].kind == e->kind && !strcmp(s->e[ix[j]].path, e->path);
         j++) {
    }
    const struct setting_doc *d = settings_doc_find(e->kind, e->path);
    char *spec = spec_of(e->type, e->range, e->def, e->required, NULL);
    if (!d) {
      fprintf(f,
              "%s: %s (%s) is read but the settings reference does not describe it: add the "
              "line\n    {\"%s\", \"<what it means, in one line>\"},\nto %s in "
              "core/cli/settings_doc.c\n",
              e->where, e->path, spec, e->path, settings_docs_name(e->kind));
      problems++;
    }
    free(spec);
    /* Every read of the path must agree on type and range; a default that differs between
     * files depends on other settings and is stated in words. */
    for (size_t k = i + 1; k < j; k++) {
      const struct seen *o = &s->e[ix[k]];
      if (!same(o->type, e->type) || !same(o->range, e->range)) {
        fprintf(f, "%s: %s is read as %s %s here but as %s %s at %s\n", o->where, o->path,
                o->type, o->range ? o->range : "", e->type, e->range ? e->range : "", e->where);
        problems++;
        break;
      }
      if (d && !d->def && (!same(o->def, e->def) || o->required != e->required)) {
        fprintf(f,
                "%s: %s defaults to %s here but to %s at %s: its default depends on other "
                "settings; give it in words as the third field of its line in %s in "
                "core/cli/settings_doc.c: {\"%s\", \"...\", \"<the default in words>\"},\n",
                o->where, o->path, o->required ? "nothing (required)" : o->def,
                e->required ? "nothing (required)" : e->def, e->where,
                settings_docs_name(e->kind), e->path);
        problems++;
        break;
      }
    }
  }
  free(ix);
  for (int kind = SETTINGS_EXPERIMENT; kind <= SETTINGS_TABLE; kind++) {
    const struct setting_doc *docs = settings_docs((enum settings_file)kind);
    for (const struct setting_doc *d = docs; d->path; d++) {
      for (const struct setting_doc *o = docs; o < d; o++)
        if (!strcmp(o->path, d->path)) {
          fprintf(f, "core/cli/settings_doc.c: %s: %s is described twice\n",
                  settings_docs_name((enum settings_file)kind), d->path);
          problems++;
        }
      if (!first_read(s, (enum settings_file)kind, d->path)) {
        fprintf(f,
                "core/cli/settings_doc.c: %s: %s is described, but no %s file checked reads "
                "it: remove its line, or add a file that sets it to tests/data/settings/\n",
                settings_docs_name((enum settings_file)kind), d->path,
                kind_what[kind]);
        problems++;
      }
    }
  }
  return problems;
}

/* ---- the Markdown reference ---------------------------------------------------------- */

/* s in a table cell: '|' escaped. */
static void cell(FILE *f, const char *s, bool code) {
  if (!s || !*s) return;
  if (code) fputc('`', f);
  for (; *s; s++) {
    if (*s == '|') fputs("\\|", f);
    else fputc(*s, f);
  }
  if (code) fputc('`', f);
}

/* The group part of a path (up to its last '.', "" for the top level) and its key. */
static size_t parent_len(const char *path) {
  const char *dot = strrchr(path, '.');
  return dot ? (size_t)(dot - path) : 0;
}

/* For a group path ending in "(x)": ": `group` with `plugin = "x"`" (or kind, whichever
 * selector the group has a line for). */
static void heading_selector(FILE *f, const struct setting_doc *docs, const char *path,
                             size_t len) {
  if (len < 3 || path[len - 1] != ')') return;
  const char *open = path + len - 1;
  while (open > path && *open != '(') open--;
  if (*open != '(') return;
  int base = (int)(open - path);
  const char *sel = "kind";
  for (const struct setting_doc *d = docs; d->path; d++)
    if (!strncmp(d->path, path, (size_t)base) && !strcmp(d->path + base, ".plugin")) sel = "plugin";
  fprintf(f, ": `%.*s` with `%s = \"%.*s\"`", base, path, sel, (int)(len - (size_t)base - 2),
          open + 1);
}

static void reference_kind(const struct settings_seen *s, FILE *f, enum settings_file kind) {
  const struct setting_doc *docs = settings_docs(kind);
  for (const struct setting_doc *g = docs; g->path; g++) {
    size_t glen = parent_len(g->path);
    /* One table per group, at the first entry of that group, its rows in file order. */
    bool first = true;
    for (const struct setting_doc *o = docs; o < g && first; o++)
      first = !(parent_len(o->path) == glen && !strncmp(o->path, g->path, glen));
    if (!first) continue;
    if (!glen) {
      fprintf(f, "\n### Top level\n\n");
    } else {
      fprintf(f, "\n### `%.*s`", (int)glen, g->path);
      heading_selector(f, docs, g->path, glen);
      fputs("\n\n", f);
    }
    fputs("| Setting | Type | Default | Allowed | Meaning |\n|---|---|---|---|---|\n", f);
    for (const struct setting_doc *d = g; d->path; d++) {
      if (parent_len(d->path) != glen || strncmp(d->path, g->path, glen)) continue;
      const struct seen *r = first_read(s, kind, d->path);
      fputs("| ", f);
      cell(f, d->path + (glen ? glen + 1 : 0), true);
      fputs(" | ", f);
      cell(f, r ? (!strcmp(r->type, "choice") ? "string" : r->type) : "?", false);
      fputs(" | ", f);
      if (d->def) cell(f, d->def, false);
      else if (!r) cell(f, "?", false);
      else if (r->required) cell(f, "required", false);
      else if (r->def) cell(f, r->def, true);
      else cell(f, "optional", false);
      fputs(" | ", f);
      if (r && r->range) cell(f, r->range, !strcmp(r->type, "choice"));
      fputs(" | ", f);
      cell(f, d->meaning, false);
      fputs(" |\n", f);
    }
  }
}

void settings_reference(const struct settings_seen *s, FILE *f) {
  fputs("# Settings reference\n"
        "\n"
        "<!-- Generated by scripts/gen-settings-doc.sh (intrus config --reference): do not "
        "edit.\n"
        "     The meanings are core/cli/settings_doc.c; types, defaults and ranges come from "
        "the readers. -->\n"
        "\n"
        "Every setting of an experiment file (`intrus train`, `run`, `decode`) and of a "
        "results\n"
        "table file (`intrus table`), as the program's readers read it: type, default, the "
        "values\n"
        "allowed and what it means. A setting not listed is an error (\"unknown setting\"). "
        "`intrus\n"
        "config FILE.cfg` prints a file's effective configuration with the same notes.\n"
        "\n"
        "Paths: `a.b` is key `b` of group `a`; `[]` is any element of a list of groups; "
        "`a(x)` is\n"
        "group `a` when the setting that selects its reader (`plugin`, or `kind` for "
        "`data`) is\n"
        "`\"x\"`; `*` is any key (a name the file chooses). Ranges are inclusive; `2^k` "
        "stands for\n"
        "the power of two.\n",
        f);
  fputs("\n## Experiment files\n", f);
  reference_kind(s, f, SETTINGS_EXPERIMENT);
  fputs("\n## Results table files\n", f);
  reference_kind(s, f, SETTINGS_TABLE);
}

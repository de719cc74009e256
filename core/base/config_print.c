/* The effective configuration as text with a comment on every setting
 * (cfg_print_annotated, config_record.h): what `intrus config` prints. The output is
 * libconfig syntax, @include'd files expanded, so it reads back as the same settings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_get.h"
#include "config_internal.h"
#include "config_record.h"

static void indent(FILE *f, int depth) {
  for (int i = 0; i < depth; i++) fputs("  ", f);
}

static void print_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if (*s == '\n') fputs("\\n", f);
    else if (*s == '\t') fputs("\\t", f);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\x%02x", (unsigned char)*s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

/* Shortest decimal that reads back as v, always with a '.' or exponent (a float). */
static void print_double(FILE *f, double v) {
  char s[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(s, sizeof s, "%.*g", prec, v);
    if (strtod(s, NULL) == v) break;
  }
  fprintf(f, "%s%s", s, strpbrk(s, ".eEin") ? "" : ".0");
}

struct printer {
  const struct intrus_config *c;
  FILE *f;
  char *(*comment)(const struct cfg_record_entry *e, void *user);
  void *user;
};

static void print_members(const struct printer *p, const config_setting_t *g, int depth);

static void print_value(const struct printer *p, const config_setting_t *s, int depth) {
  FILE *f = p->f;
  int n = config_setting_length(s);
  switch (config_setting_type(s)) {
  case CONFIG_TYPE_INT: fprintf(f, "%d", config_setting_get_int(s)); break;
  case CONFIG_TYPE_INT64: fprintf(f, "%lldL", config_setting_get_int64(s)); break;
  case CONFIG_TYPE_FLOAT: print_double(f, config_setting_get_float(s)); break;
  case CONFIG_TYPE_BOOL: fputs(config_setting_get_bool(s) ? "true" : "false", f); break;
  case CONFIG_TYPE_STRING: print_string(f, config_setting_get_string(s)); break;
  case CONFIG_TYPE_ARRAY:
    fputc('[', f);
    for (int i = 0; i < n; i++) {
      if (i) fputs(", ", f);
      print_value(p, config_setting_get_elem(s, (unsigned)i), depth);
    }
    fputc(']', f);
    break;
  case CONFIG_TYPE_LIST:
    fputs("(\n", f);
    for (int i = 0; i < n; i++) {
      indent(f, depth + 1);
      print_value(p, config_setting_get_elem(s, (unsigned)i), depth + 1);
      fputs(i + 1 < n ? ",\n" : "\n", f);
    }
    indent(f, depth);
    fputc(')', f);
    break;
  case CONFIG_TYPE_GROUP:
    fputs("{\n", f);
    print_members(p, s, depth + 1);
    indent(f, depth);
    fputc('}', f);
    break;
  }
}

static void print_comment(const struct printer *p, const struct cfg_record_entry *e, int depth) {
  char *text = e ? p->comment(e, p->user) : NULL;
  if (!text) return;
  /* One "# " line per line of the comment. */
  for (char *line = text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    indent(p->f, depth);
    fprintf(p->f, "# %s\n", line);
  }
  free(text);
}

static void print_members(const struct printer *p, const config_setting_t *g, int depth) {
  FILE *f = p->f;
  int n = config_setting_length(g);
  for (int i = 0; i < n; i++) {
    const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
    const char *name = config_setting_name(s);
    if (depth == 0 && i > 0 && config_setting_type(s) == CONFIG_TYPE_GROUP) fputc('\n', f);
    print_comment(p, cfg_record_find(p->c, g, name), depth);
    indent(f, depth);
    fprintf(f, "%s%s ", name, config_setting_type(s) == CONFIG_TYPE_GROUP ? ":" : " =");
    print_value(p, s, depth);
    /* A setting without a line is one a getter filled in (the file leaves it out) or
     * one a command line's --set put there. */
    const struct cfg_hook *h = config_setting_get_hook(s);
    fputs(config_setting_source_line(s) ? ";\n"
          : h && h->from_set            ? ";  # --set\n"
                                        : ";  # default\n",
          f);
  }
  /* What a reader looked for here and the file does not have (an optional group). */
  size_t ne;
  const struct cfg_record_entry *e = cfg_record_entries(p->c, &ne);
  for (size_t i = 0; i < ne; i++)
    if (e[i].group == g && !config_setting_get_member(g, e[i].key)) {
      print_comment(p, &e[i], depth);
      indent(f, depth);
      fprintf(f, "# %s: absent\n", e[i].key);
    }
}

void cfg_print_annotated(const struct intrus_config *c, FILE *f,
                         char *(*comment)(const struct cfg_record_entry *e, void *user),
                         void *user) {
  struct printer p = {c, f, comment, user};
  print_members(&p, config_root_setting(&c->cfg), 0);
}

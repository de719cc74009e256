/* intrus-mocorpus: English/translation sentence pairs from gettext .mo catalogs, the
 * machine-translation data the project can rebuild from Debian packages alone. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mo.h"

#define PROG "intrus-mocorpus"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_DATA = 5 };

static const char usage[] =
    "Usage: " PROG " --lang LANG [options] FILE.mo... > pairs.tsv\n"
    "\n"
    "Reads gettext catalogs (either byte order) translating English into LANG and writes\n"
    "one pair per line, English TAB translation. Contexts are dropped, plurals give their\n"
    "first form, catalogs whose charset is not UTF-8 are skipped with a warning.\n"
    "Cleaning: UI accelerators (_X, &X, ~X, (_X)) and, in wesnoth*.mo, \"context^\" prefixes\n"
    "are stripped and whitespace collapsed; pairs that are empty, identical, format-only,\n"
    "translator credits, invalid UTF-8, outside the word limits, or (ru/ja/ar) lack the\n"
    "target script are dropped; the first pair of each English source wins, in the order\n"
    "the files are given.\n"
    "\n"
    "Options:\n"
    "  -l, --lang LANG        target language code (ru, ja, ar also check the script)\n"
    "      --min-words N      fewest English words kept (default 3)\n"
    "      --max-words N      most English words kept (default 80)\n"
    "      --files-from FILE  read more catalog paths from FILE, one per line\n"
    "      --stats FILE       per catalog: path TAB entries TAB pairs kept TAB status\n"
    "      --split DIR        write DIR/{train,valid,test}.{en,LANG} instead of the TSV;\n"
    "                         valid and test are chosen by a hash of the English source\n"
    "      --valid N          pairs in valid (default 2000)\n"
    "      --test N           pairs in test (default 2000)\n"
    "  -k, --keep-going       warn about unreadable or corrupt catalogs and go on\n"
    "  -q, --quiet            no summary on stderr\n"
    "  -h, --help             show this help\n"
    "\n"
    "Exit status: 0 success, 1 failure, 2 usage error, 5 unreadable or corrupt catalog.\n";

struct opts {
  const char *lang, *stats, *split;
  int min_words, max_words;
  long valid, test;
  int keep_going, quiet;
};

static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* A list of paths that grows as --files-from and the operands are read. */
struct paths {
  char **v;
  size_t n, cap;
};

static int paths_add(struct paths *p, const char *s) {
  if (p->n == p->cap) {
    size_t ncap = p->cap ? 2 * p->cap : 64;
    char **nv = realloc(p->v, ncap * sizeof *nv);
    if (!nv) return -1;
    p->v = nv;
    p->cap = ncap;
  }
  if (!(p->v[p->n] = strdup(s))) return -1;
  p->n++;
  return 0;
}

static int read_list(struct paths *p, const char *file) {
  FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
  if (!f) {
    fprintf(stderr, PROG ": %s: %s\n", file, strerror(errno));
    return -1;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int rc = 0;
  while ((n = getline(&line, &cap, f)) > 0) {
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    if (n && paths_add(p, line)) {
      fprintf(stderr, PROG ": out of memory\n");
      rc = -1;
      break;
    }
  }
  free(line);
  if (f != stdin) fclose(f);
  return rc;
}

/* Writes one side of one part; closing is checked, since a full disk shows up there. */
static int write_part(const char *dir, const char *part, const char *lang,
                      const struct mo_corpus *c, const unsigned char *which, unsigned char want,
                      int side, size_t *lines) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s.%s", dir, part, lang) >= (int)sizeof path) {
    fprintf(stderr, PROG ": %s: path too long\n", dir);
    return -1;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
    return -1;
  }
  *lines = 0;
  for (size_t i = 0; i < c->count; i++) {
    if (which[i] != want) continue;
    fputs(side ? c->pairs[i].tgt : c->pairs[i].src, f);
    fputc('\n', f);
    ++*lines;
  }
  if (ferror(f) | fclose(f)) {
    fprintf(stderr, PROG ": %s: write failed\n", path);
    return -1;
  }
  return 0;
}

static int write_split(const struct opts *o, const struct mo_corpus *c) {
  if (mkdir(o->split, 0777) && errno != EEXIST) {
    fprintf(stderr, PROG ": %s: %s\n", o->split, strerror(errno));
    return -1;
  }
  unsigned char *which = malloc(c->count ? c->count : 1);
  if (!which || mo_split(c->pairs, c->count, (size_t)o->valid, (size_t)o->test, which)) {
    free(which);
    fprintf(stderr, PROG ": out of memory\n");
    return -1;
  }
  static const char *const parts[3] = {"train", "valid", "test"};
  size_t lines[3] = {0, 0, 0};
  int rc = 0;
  for (int p = 0; p < 3 && !rc; p++)
    for (int side = 0; side < 2 && !rc; side++)
      rc = write_part(o->split, parts[p], side ? o->lang : "en", c, which, (unsigned char)p,
                      side, &lines[p]);
  free(which);
  if (!rc && !o->quiet)
    fprintf(stderr, PROG ": %s: train %zu, valid %zu, test %zu pairs\n", o->split, lines[0],
            lines[1], lines[2]);
  return rc;
}

static int write_tsv(const struct mo_corpus *c) {
  for (size_t i = 0; i < c->count; i++) printf("%s\t%s\n", c->pairs[i].src, c->pairs[i].tgt);
  if (fflush(stdout) || ferror(stdout)) {
    fprintf(stderr, PROG ": writing standard output failed\n");
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct opts o = {.min_words = 3, .max_words = 80, .valid = 2000, .test = 2000};
  struct paths files = {0};
  enum { OPT_MIN = 256, OPT_MAX, OPT_FROM, OPT_STATS, OPT_SPLIT, OPT_VALID, OPT_TEST };
  static const struct option longopts[] = {
      {"lang", required_argument, NULL, 'l'},      {"min-words", required_argument, NULL, OPT_MIN},
      {"max-words", required_argument, NULL, OPT_MAX},
      {"files-from", required_argument, NULL, OPT_FROM},
      {"stats", required_argument, NULL, OPT_STATS}, {"split", required_argument, NULL, OPT_SPLIT},
      {"valid", required_argument, NULL, OPT_VALID}, {"test", required_argument, NULL, OPT_TEST},
      {"keep-going", no_argument, NULL, 'k'},      {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0}};
  int c, rc = EXIT_OK;
  long v;
  while ((c = getopt_long(argc, argv, "l:kqh", longopts, NULL)) != -1) {
    switch (c) {
    case 'l': o.lang = optarg; break;
    case OPT_MIN:
    case OPT_MAX:
      if (parse_long(optarg, 0, 100000, &v)) {
        fprintf(stderr, PROG ": --%s wants a number from 0 to 100000, not '%s'\n",
                c == OPT_MIN ? "min-words" : "max-words", optarg);
        return EXIT_USAGE;
      }
      *(c == OPT_MIN ? &o.min_words : &o.max_words) = (int)v;
      break;
    case OPT_VALID:
    case OPT_TEST:
      if (parse_long(optarg, 0, LONG_MAX, c == OPT_VALID ? &o.valid : &o.test)) {
        fprintf(stderr, PROG ": --%s wants a count, not '%s'\n",
                c == OPT_VALID ? "valid" : "test", optarg);
        return EXIT_USAGE;
      }
      break;
    case OPT_FROM:
      if (read_list(&files, optarg)) return EXIT_FAIL;
      break;
    case OPT_STATS: o.stats = optarg; break;
    case OPT_SPLIT: o.split = optarg; break;
    case 'k': o.keep_going = 1; break;
    case 'q': o.quiet = 1; break;
    case 'h': fputs(usage, stdout); return EXIT_OK;
    default: fputs(usage, stderr); return EXIT_USAGE;
    }
  }
  for (int i = optind; i < argc; i++)
    if (paths_add(&files, argv[i])) {
      fprintf(stderr, PROG ": out of memory\n");
      return EXIT_FAIL;
    }
  if (!o.lang || !*o.lang || strchr(o.lang, '/')) {
    fprintf(stderr, PROG ": --lang LANG is required (a language code such as de)\n");
    return EXIT_USAGE;
  }
  if (o.min_words > o.max_words) {
    fprintf(stderr, PROG ": --min-words %d exceeds --max-words %d\n", o.min_words,
            o.max_words);
    return EXIT_USAGE;
  }
  if (!files.n) {
    fprintf(stderr, PROG ": no catalogs given (see --help)\n");
    return EXIT_USAGE;
  }
  FILE *stats = NULL;
  if (o.stats && !(stats = fopen(o.stats, "w"))) {
    fprintf(stderr, PROG ": %s: %s\n", o.stats, strerror(errno));
    return EXIT_FAIL;
  }

  struct mo_filter filter = {mo_script_for_lang(o.lang), o.min_words, o.max_words, 0};
  struct mo_corpus corpus;
  mo_corpus_init(&corpus);
  size_t entries = 0, used = 0, skipped = 0, broken = 0;
  for (size_t i = 0; i < files.n && rc == EXIT_OK; i++) {
    const char *path = files.v[i];
    struct mo_catalog cat;
    struct intrus_error err;
    intrus_error_clear(&err);
    if (mo_open(&cat, path, &err) != INTRUS_OK) {
      if (err.status == INTRUS_ERR_NOMEM) {
        fprintf(stderr, PROG ": %s\n", err.msg);
        rc = EXIT_FAIL;
        break;
      }
      fprintf(stderr, PROG ": %s%s\n", o.keep_going ? "warning: " : "", err.msg);
      if (stats) fprintf(stats, "%s\t0\t0\terror\n", path);
      broken++;
      if (!o.keep_going) rc = EXIT_DATA;
      continue;
    }
    char cs[64];
    int has_cs = mo_charset(&cat, cs, sizeof cs);
    if (!has_cs || !mo_charset_is_utf8(cs)) {
      fprintf(stderr, PROG ": warning: %s: %s%s; skipped\n", path,
              has_cs ? "charset is " : "no charset in the header", has_cs ? cs : "");
      if (stats) fprintf(stats, "%s\t%u\t0\tcharset\n", path, cat.count);
      skipped++;
      mo_close(&cat);
      continue;
    }
    size_t kept;
    filter.caret_context = mo_is_wesnoth_catalog(path);
    if (mo_corpus_add_catalog(&corpus, &cat, &filter, &kept, &err) != INTRUS_OK) {
      fprintf(stderr, PROG ": %s: %s\n", path, err.msg);
      rc = EXIT_FAIL;
    } else {
      entries += cat.count;
      used++;
      if (stats) fprintf(stats, "%s\t%u\t%zu\tok\n", path, cat.count, kept);
    }
    mo_close(&cat);
  }
  if (stats && (ferror(stats) | fclose(stats))) {
    fprintf(stderr, PROG ": %s: write failed\n", o.stats);
    if (rc == EXIT_OK) rc = EXIT_FAIL;
  }
  if (rc == EXIT_OK && !o.quiet) {
    fprintf(stderr, PROG ": %s: %zu catalogs read, %zu skipped (charset), %zu unreadable; "
                    "%zu entries, %zu pairs kept\n" PROG ": dropped:",
            o.lang, used, skipped, broken, entries, corpus.count);
    for (int k = MO_KEEP + 1; k < MO_NVERDICTS; k++)
      fprintf(stderr, " %s %zu%s", mo_verdict_name((enum mo_verdict)k), corpus.verdicts[k],
              k + 1 < MO_NVERDICTS ? "," : "\n");
  }
  if (rc == EXIT_OK && (o.split ? write_split(&o, &corpus) : write_tsv(&corpus)))
    rc = EXIT_FAIL;
  mo_corpus_free(&corpus);
  for (size_t i = 0; i < files.n; i++) free(files.v[i]);
  free(files.v);
  return rc;
}

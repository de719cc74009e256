/* intrus table: trains, decodes and scores every cell of a results table that is not
 * done yet, tests each row against the baseline row (paired bootstrap), and writes
 * table.md, table.csv and table.json. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_distill.h"
#include "intrus/corpus.h"
#include "table_run.h"
#include "train/run_dir.h"
#include "table_figures.h"
#include "table_spec.h"

static const char table_usage[] =
    "Usage: intrus table TABLE.cfg [options]\n"
    "\n"
    "Runs a results table: every cell is an experiment (intrus run). Cells whose run\n"
    "directory already holds the results of the same settings are not run again; a\n"
    "half-trained run resumes from its checkpoint. Then each row is tested against the\n"
    "table's baseline row by paired bootstrap resampling of the test set, and\n"
    "OUT/table.md, OUT/table.csv and OUT/table.json are written (our score, the paper's\n"
    "beside it, the significance mark). See docs/tables.md for the table file.\n"
    "\n"
    "Options:\n"
    "  -n, --dry-run          list the cells, what each still needs and an estimated time,\n"
    "                         and check the corpora of those to run; run nothing\n"
    "  -s, --no-train         train and decode nothing: score the finished cells and write\n"
    "                         the table, the others marked not run / not finished (with\n"
    "                         their step), e.g. while a long table is half done\n"
    "  -O, --out DIR          where the table files go (default: runs/tables/<table name>)\n"
    "  -r, --runs DIR         parent of the run directories, DIR/<experiment name>\n"
    "                         (default: runs, as intrus run)\n"
    "  -p, --plugin-path DIRS colon-separated plugin directories searched first\n"
    "  -R, --row NAME         run only this row's cells (repeat for more rows); the other\n"
    "                         cells are not run, and are in the table if finished\n"
    "  -C, --column NAME      run only this column's cells (repeatable; with --row, the\n"
    "                         cells in both), e.g. one cell that fits a session\n"
    "  -q, --quiet            no training progress (the per-run lines stay)\n"
    "  -h, --help             this help\n";

struct table_args {
  const char *table, *out, *runs, *plugin_path;
  bool dry_run, no_train, quiet, help;
  int nrows, ncols; /* --row, --column */
  const char *rows[TABLE_MAX_ROWS], *cols[TABLE_MAX_COLUMNS];
};

/* One more --row / --column (optarg); -1 past what a table can have. */
static int name_add(const char **names, int *n, int max, const char *what, bool report) {
  if (*n == max) {
    if (report) fprintf(stderr, "intrus table: more than %d --%s\n", max, what);
    return -1;
  }
  names[(*n)++] = optarg;
  return 0;
}

/* The one parser of table's command line, on rank 0 (report: it prints what is wrong)
 * and on the other ranks of a data-parallel job (cli_table_file: silent, as rank 0
 * reports). */
static int parse_args(int argc, char **argv, bool report, struct table_args *a) {
  static const struct option longopts[] = {
      {"dry-run", no_argument, NULL, 'n'},         {"out", required_argument, NULL, 'O'},
      {"runs", required_argument, NULL, 'r'},      {"plugin-path", required_argument, NULL, 'p'},
      {"quiet", no_argument, NULL, 'q'},           {"help", no_argument, NULL, 'h'},
      {"no-train", no_argument, NULL, 's'},        {"row", required_argument, NULL, 'R'},
      {"column", required_argument, NULL, 'C'},
      {NULL, 0, NULL, 0}};
  memset(a, 0, sizeof *a);
  a->runs = "runs";
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "nsO:r:p:R:C:qh", longopts, NULL)) != -1) {
    switch (c) {
    case 'n': a->dry_run = true; break;
    case 's': a->no_train = true; break;
    case 'O': a->out = optarg; break;
    case 'r': a->runs = optarg; break;
    case 'p': a->plugin_path = optarg; break;
    case 'R':
      if (name_add(a->rows, &a->nrows, TABLE_MAX_ROWS, "row", report)) return INTRUS_EXIT_USAGE;
      break;
    case 'C':
      if (name_add(a->cols, &a->ncols, TABLE_MAX_COLUMNS, "column", report))
        return INTRUS_EXIT_USAGE;
      break;
    case 'q': a->quiet = true; break;
    case 'h': a->help = true; return INTRUS_EXIT_OK;
    default:
      if (report) fputs(table_usage, stderr);
      return INTRUS_EXIT_USAGE;
    }
  }
  if (optind != argc - 1) {
    if (report) fprintf(stderr, "intrus table: expected one table file\n%s", table_usage);
    return INTRUS_EXIT_USAGE;
  }
  a->table = argv[optind];
  return INTRUS_EXIT_OK;
}

int cli_table_file(int argc, char **argv, const char **file) {
  struct table_args a;
  opterr = 0; /* getopt's own messages too: rank 0 prints them */
  int rc = parse_args(argc, argv, false, &a);
  opterr = 1;
  *file = rc || a.help ? NULL : a.table;
  return *file ? INTRUS_EXIT_OK : INTRUS_EXIT_USAGE;
}

/* ---- progress with a prefix ------------------------------------------------------ */

/* Training and decoding print whole lines to their progress stream; under a table each
 * line gets "[k/N row column] " in front, so interleaved runs stay readable. */
struct prefixed {
  FILE *to;
  const char *prefix;
  bool at_line_start;
};

static ssize_t prefixed_write(void *c, const char *buf, size_t size) {
  struct prefixed *p = c;
  for (size_t i = 0; i < size; i++) {
    if (p->at_line_start) fputs(p->prefix, p->to);
    fputc(buf[i], p->to);
    p->at_line_start = buf[i] == '\n';
  }
  fflush(p->to);
  return (ssize_t)size;
}

/* ---- one cell -------------------------------------------------------------------- */

/* A lock of its own for the whole cell (training, decoding, scoring): two tables that
 * share a run take turns on it instead of both decoding into one test.hyp. */
static int lock_cell(const char *run_dir, const char *label, struct intrus_error *err) {
  char path[4200];
  if (run_dir_make(run_dir, err)) return -1;
  snprintf(path, sizeof path, "%s/.table.lock", run_dir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    intrus_error_set(err, INTRUS_ERR_IO, "%s: %s", path, strerror(errno));
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    fprintf(stderr, "%s waiting for another intrus table on %s\n", label, run_dir);
    if (flock(fd, LOCK_EX) != 0) {
      intrus_error_set(err, INTRUS_ERR_IO, "%s: lock: %s", path, strerror(errno));
      close(fd);
      return -1;
    }
  }
  return fd;
}

/* Runs cell (r, c) unless, once its lock is held, it turns out done (by another table,
 * or by an earlier cell of this one that names the same experiment). */
static enum intrus_status run_cell(const struct table_args *a, struct table_state *s, int r,
                                   int c, const char *label, struct intrus_error *err) {
  struct table_cell_state *cs = &s->cells[r][c];
  int fd = lock_cell(cs->run_dir, label, err);
  if (fd < 0) return err->status;
  table_cell_refresh(s, r, c);
  if (cs->state == CELL_DONE) {
    fprintf(stderr, "%s done meanwhile (%s)\n", label, cs->run_dir);
    close(fd);
    return INTRUS_OK;
  }
  enum intrus_status st;
  struct intrus_config *cfg = intrus_config_load_file(cs->experiment, err);
  if (!cfg) {
    close(fd);
    return err->status;
  }
  struct cli_experiment x;
  if ((st = intrus_cli_experiment(cfg, cs->run_dir, a->plugin_path, &x, err))) {
    intrus_config_free(cfg);
    close(fd);
    return st;
  }
  char prefix[300];
  snprintf(prefix, sizeof prefix, "%s ", label);
  struct prefixed p = {.to = stderr, .prefix = prefix, .at_line_start = true};
  static const cookie_io_functions_t io = {.write = prefixed_write};
  FILE *progress = a->quiet ? NULL : fopencookie(&p, "w", io);
  if (progress) setvbuf(progress, NULL, _IOLBF, 0);
  struct cli_run_result res;
  st = cli_run_experiment(cfg, &x, progress, 0, &res, err);
  if (progress) fclose(progress);
  intrus_plugin_search_free(x.search);
  intrus_config_free(cfg);
  close(fd);
  return st;
}

int intrus_cmd_table(int argc, char **argv) {
  struct table_args a;
  int rc = parse_args(argc, argv, true, &a);
  if (rc) return rc;
  if (a.help) {
    fputs(table_usage, stdout);
    return INTRUS_EXIT_OK;
  }
  struct intrus_error err = {0};
  struct table_spec *t;
  if (table_spec_load(a.table, &t, &err)) return intrus_cli_fail("table", &err);
  char out_dir[4200];
  if (a.out) snprintf(out_dir, sizeof out_dir, "%s", a.out);
  else snprintf(out_dir, sizeof out_dir, "runs/tables/%s", t->name);

  struct table_state *s = table_state_new(t, a.runs, a.plugin_path, &err);
  if (!s) {
    table_spec_free(t);
    return intrus_cli_fail("table", &err);
  }
  if (table_select(s, a.rows, a.nrows, a.cols, a.ncols, &err)) {
    table_state_free(s);
    table_spec_free(t);
    intrus_cli_fail("table", &err);
    return INTRUS_EXIT_USAGE;
  }
  table_print_plan(s, stdout);
  if (a.no_train) printf("--no-train: nothing above is trained or decoded; the table holds the finished cells\n");
  fflush(stdout);
  /* A dry run checks the warm starts' sources and the corpora too: it is what is run
   * before a table of days. */
  bool warm_bad = false;
  if (!a.no_train &&
      ((warm_bad = table_check_warm_sources(s, &err) != INTRUS_OK) || table_check_data(s, &err))) {
    table_state_free(s);
    table_spec_free(t);
    rc = intrus_cli_fail("table", &err);
    fprintf(stderr, "intrus table: nothing was run%s.",
            a.dry_run ? " (--dry-run: the table would stop here)" : "");
    if (!warm_bad)
      fprintf(stderr, " The corpora of experiments/small and experiments/paper come from\n"
                      "  scripts/build-mt-data.sh --out data/mt-full\n"
                      "  scripts/build-im2latex-data.sh --out data/im2latex-full\n"
                      "  scripts/build-caption-data.sh --out data/caption-full\n"
                      "(docs/guide.md, \"Data\").");
    fputc('\n', stderr);
    return rc;
  }
  if (a.dry_run) {
    table_state_free(s);
    table_spec_free(t);
    return INTRUS_EXIT_OK;
  }
  int todo = 0, k = 0, failed = 0;
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < t->ncols; c++) todo += table_cell_to_run(&s->cells[r][c]);
  /* Cells whose data a teacher distils, or whose parameters start from a checkpoint, run
   * last: the teacher may be a cell. */
  for (int pass = 0, r = 0; pass < 2 && !a.no_train; r = (r + 1) % t->nrows, pass += !r)
    for (int c = 0; c < t->ncols; c++) {
      struct table_cell_state *cs = &s->cells[r][c];
      if (!table_cell_to_run(cs) || (cs->distilled || cs->warm_started) != (pass == 1))
        continue;
      char label[256], eta[32];
      snprintf(label, sizeof label, "[%d/%d %s %s]", ++k, todo, t->rows[r].name,
               t->cols[c].name);
      table_duration(cs->estimate_s, eta, sizeof eta);
      if (cs->state == CELL_PARTIAL)
        fprintf(stderr, "%s %s: resuming %s at step %ld of %ld (about %s left)\n", label,
                cs->experiment, cs->run_dir, cs->step, cs->total_steps, eta);
      else
        fprintf(stderr, "%s %s: training into %s, %ld steps (about %s)\n", label,
                cs->experiment, cs->run_dir, cs->total_steps, eta);
      struct intrus_error e = {0};
      if (run_cell(&a, s, r, c, label, &e)) {
        /* The other cells still run; the table marks this one and the exit status says. */
        fprintf(stderr, "%s failed: %s\n", label, e.msg);
        snprintf(cs->error, sizeof cs->error, "%s", e.msg);
        cs->state = CELL_FAILED;
        failed++;
        continue;
      }
      table_cell_refresh(s, r, c);
    }
  enum intrus_status st = table_score(s, &err);
  if (!st) st = table_write(s, out_dir, &err);
  if (!st) {
    table_print_markdown(s, stdout);
    for (int c = 0; c < t->ncols; c++) {
      char line[512];
      if (table_order_summary(s, c, line, sizeof line)) printf("%s\n", line);
    }
    printf("table: %s/table.md, table.csv, table.json\n", out_dir);
    st = table_figures(s, out_dir, a.plugin_path, a.no_train, &err);
  }
  const int s_unscored = s->unscored;
  table_state_free(s);
  table_spec_free(t);
  if (st) return intrus_cli_fail("table", &err);
  if (s_unscored)
    fprintf(stderr, "intrus table: %d finished cell%s could not be scored (see above)\n",
            s_unscored, s_unscored == 1 ? "" : "s");
  if (failed)
    fprintf(stderr, "intrus table: %d run%s failed (see above); their cells are empty\n",
            failed, failed == 1 ? "" : "s");
  return failed || s_unscored ? INTRUS_EXIT_FAILURE : INTRUS_EXIT_OK;
}

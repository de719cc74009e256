/* intrus analyze time: decoding time against output length (the paper's Figure 4), for
 * trained models of either decoder, or from the TSV that bench/bench_intrus t writes.
 *
 * With models, every sentence is decoded alone (batch 1), as a user translating one
 * line at a time would: a decode's time is the whole of translating that line
 * (segmentation, encoder, search, detokenisation), its length the subword tokens of the
 * output (re-segmented with the target side's pipeline, so that both decoders count
 * alike). Times are grouped in buckets of output length; each decoder's curve joins the
 * buckets' mean lengths and mean times. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "intrus/fileio.h"
#include "search/translate.h"
#include "viz/plot.h"
#include "base/clock.h"

#define MAX_SERIES 8
#define MAX_POINTS 256

static const char time_usage[] =
    "Usage: intrus analyze time EXPERIMENT.cfg... -i SRC -o OUT.png [options]\n"
    "       intrus analyze time TIMES.tsv -o OUT.png [--title TEXT]\n"
    "\n"
    "Decoding time against output length, one curve per decoder, drawn into OUT.png and\n"
    "printed as a table. The first form decodes the first N lines of SRC with each\n"
    "experiment's trained model (up to 8: left-to-right, insertion, ...), one sentence at a\n"
    "time (batch 1), with its search settings; a time is the whole translation of the line,\n"
    "a length the output's subword tokens; times are averaged in buckets of output length.\n"
    "The second form draws the TSV that 'bench/bench_intrus t FILE.tsv' or --tsv writes\n"
    "(header 'decoder length ms_per_sentence').\n"
    "\n"
    "Options:\n"
    "  -i, --input SRC        source sentences, one per line (raw text, .gz read too)\n"
    "  -o, --out OUT.png      the chart\n"
    "  -n, --sentences N      decode the first N lines (default 200)\n"
    "  -w, --width W          tokens of output length per bucket (default 5)\n"
    "  -b, --beam N           every model's beam (default: each experiment's search.beam)\n"
    "  -L, --label NAME       the next experiment's name in the chart (default: its name)\n"
    "      --run-dir DIR      the next experiment's run directory (default:\n"
    "                         runs/<experiment name>)\n"
    "  -c, --checkpoint FILE  the next experiment's checkpoint (default: its run\n"
    "                         directory's checkpoint.ckpt; e.g. RUN_DIR/best.ckpt)\n"
    "      --tsv FILE         also write the buckets as the TSV the second form reads\n"
    "      --title TEXT       the chart's title\n"
    "  -p, --plugin-path DIRS colon-separated plugin directories searched first\n"
    "  -q, --quiet            no progress lines\n"
    "  -h, --help             this help\n";

enum { OPT_TITLE = 256, OPT_RUN_DIR, OPT_TSV };

#define NAME_MAX_LEN 128

struct time_series {
  char name[NAME_MAX_LEN];
  size_t n;
  double x[MAX_POINTS], y[MAX_POINTS];
};

/* ---- the TSV form ------------------------------------------------------------------ */

static enum intrus_status read_times(const char *path, struct time_series *ts, int *nts,
                                     struct intrus_error *err) {
  FILE *f = fopen(path, "r");
  if (!f) return intrus_error_set(err, INTRUS_ERR_IO, "%s: %s", path, strerror(errno));
  char line[512];
  long no = 0;
  enum intrus_status st = INTRUS_OK;
  *nts = 0;
  while (!st && fgets(line, sizeof line, f)) {
    no++;
    line[strcspn(line, "\r\n")] = '\0';
    if (no == 1) {
      if (strcmp(line, "decoder\tlength\tms_per_sentence") != 0)
        st = intrus_error_set(err, INTRUS_ERR_DATA, "%s:1: want the header 'decoder length "
                              "ms_per_sentence' (tab-separated) of bench_intrus t", path);
      continue;
    }
    char name[NAME_MAX_LEN];
    double x, y;
    int used = 0;
    if (sscanf(line, "%127[^\t]\t%lf\t%lf%n", name, &x, &y, &used) != 3 || line[used] ||
        !(x > 0) || !(y >= 0) || !isfinite(y)) {
      st = intrus_error_set(err, INTRUS_ERR_DATA, "%s:%ld: not 'decoder, length > 0, "
                            "milliseconds >= 0'", path, no);
      break;
    }
    int k = 0;
    while (k < *nts && strcmp(ts[k].name, name) != 0) k++;
    if (k == *nts) {
      if (k == MAX_SERIES) {
        st = intrus_error_set(err, INTRUS_ERR_DATA, "%s:%ld: more than %d decoders", path, no,
                              MAX_SERIES);
        break;
      }
      snprintf(ts[k].name, sizeof ts[k].name, "%s", name);
      ts[k].n = 0;
      (*nts)++;
    }
    if (ts[k].n == MAX_POINTS) {
      st = intrus_error_set(err, INTRUS_ERR_DATA, "%s:%ld: more than %d lengths for %s", path,
                            no, MAX_POINTS, name);
      break;
    }
    ts[k].x[ts[k].n] = x;
    ts[k].y[ts[k].n++] = y;
  }
  if (!st && no == 0) st = intrus_error_set(err, INTRUS_ERR_DATA, "%s: empty", path);
  if (!st && *nts == 0) st = intrus_error_set(err, INTRUS_ERR_DATA, "%s: no rows", path);
  fclose(f);
  return st;
}

static enum intrus_status draw(const char *out, const struct time_series *ts, int n,
                               const char *title, struct intrus_error *err) {
  struct plot_series ps[MAX_SERIES];
  for (int k = 0; k < n; k++) ps[k] = (struct plot_series){ts[k].name, ts[k].n, ts[k].x, ts[k].y};
  return intrus_plot_series(out, n, ps, "output length (subword tokens)",
                            "milliseconds per sentence", title, 900, 560, err);
}

/* ---- the models form --------------------------------------------------------------- */

/* One decoder's buckets: [b * width, (b + 1) * width) tokens; the last takes the rest. */
struct buckets {
  long count[MAX_POINTS];
  double ms[MAX_POINTS], len[MAX_POINTS];
  double total_ms;
  long sentences;
};

static int tokens_of(const char *seg) {
  int n = 0;
  for (const char *p = seg; *p;) {
    while (*p == ' ') p++;
    if (!*p) break;
    n++;
    while (*p && *p != ' ') p++;
  }
  return n;
}

/* Decodes lines[0..n) one at a time with experiment `path` (after one untimed line: the
 * first decode maps the arena and the caches). */
static enum intrus_status time_model(const char *path, const char *run_dir_arg,
                                     const char *ckpt_arg, const char *plugin_path,
                                     const char *input, int beam, char **lines, size_t n,
                                     int width, FILE *progress, char *name, size_t name_size,
                                     struct buckets *bk, struct intrus_error *err) {
  struct intrus_config *cfg = intrus_config_load_file(path, err);
  if (!cfg) return err->status ? err->status : INTRUS_ERR_CONFIG;
  struct cli_experiment x = {0};
  struct translator t = {0};
  char ckpt[4200];
  enum intrus_status st = intrus_cli_experiment(cfg, run_dir_arg, plugin_path, &x, err);
  if (!st) {
    if (ckpt_arg)
      snprintf(ckpt, sizeof ckpt, "%s", ckpt_arg);
    else
      snprintf(ckpt, sizeof ckpt, "%s/checkpoint.ckpt", x.run_dir);
    st = translator_open(cfg, x.run_dir, ckpt, x.search, &t, err);
  }
  if (!st && t.data.kind != DATA_PARALLEL)
    st = intrus_error_set(err, INTRUS_ERR_USAGE, "%s: analyze time decodes text (data.kind = "
                          "\"parallel\")", path);
  if (!st) {
    if (!name[0]) snprintf(name, name_size, "%s", x.name);
    st = translator_set_beam(&t, beam, "-b", err);
  }
  if (!st) {
    t.input_name = input;
    if (progress)
      fprintf(progress, "%s: decoding %zu sentences one at a time (beam %d, %s)\n", name, n,
              t.beam.beam, ckpt);
  }
  char **out = NULL, **seg = NULL;
  for (size_t i = 0; i <= n && !st; i++) {
    const size_t line = i == 0 ? 0 : i - 1; /* i = 0: the untimed first decode */
    double t0 = mono_s();
    st = translator_run(&t, &lines[line], 1, NULL, &out, NULL, err);
    double ms = 1e3 * (mono_s() - t0);
    if (!st) st = dataset_segment(&t.data, 1, out, 1, &seg, err);
    if (!st && i > 0) {
      int len = tokens_of(seg[0]), b = len / width;
      if (b >= MAX_POINTS) b = MAX_POINTS - 1;
      bk->count[b]++;
      bk->ms[b] += ms;
      bk->len[b] += len;
      bk->total_ms += ms;
      bk->sentences++;
    }
    if (out) dataset_lines_free(out, 1);
    if (seg) dataset_lines_free(seg, 1);
    out = seg = NULL;
    if (progress && i > 0 && (i % 100 == 0 || i == n))
      fprintf(progress, "%s: %zu/%zu\n", name, i, n), fflush(progress);
  }
  translator_close(&t);
  intrus_plugin_search_free(x.search);
  intrus_config_free(cfg);
  return st;
}

/* The buckets of every decoder as a markdown table, and as curves (mean length, mean
 * ms) in ts. */
static void report(const struct buckets *bk, char names[][NAME_MAX_LEN], int nm, int width,
                   struct time_series *ts) {
  printf("| decoder | output length | sentences | mean length | ms per sentence |\n"
         "|---|---|---:|---:|---:|\n");
  for (int k = 0; k < nm; k++) {
    snprintf(ts[k].name, sizeof ts[k].name, "%s", names[k]);
    ts[k].n = 0;
    for (int b = 0; b < MAX_POINTS; b++) {
      if (!bk[k].count[b]) continue;
      double len = bk[k].len[b] / bk[k].count[b], ms = bk[k].ms[b] / bk[k].count[b];
      char range[32];
      if (b == MAX_POINTS - 1)
        snprintf(range, sizeof range, "%d+", b * width);
      else
        snprintf(range, sizeof range, "%d-%d", b * width, (b + 1) * width - 1);
      printf("| %s | %s | %ld | %.1f | %.2f |\n", names[k], range, bk[k].count[b], len, ms);
      /* The chart's x axis starts at a length above 0: empty outputs sit at 0.5. */
      ts[k].x[ts[k].n] = len > 0 ? len : 0.5;
      ts[k].y[ts[k].n++] = ms;
    }
  }
  for (int k = 0; k < nm; k++)
    printf("%s: %ld sentences in %.1f s, %.2f sentences/s at batch 1\n", names[k],
           bk[k].sentences, bk[k].total_ms / 1e3,
           bk[k].total_ms > 0 ? 1e3 * bk[k].sentences / bk[k].total_ms : 0.0);
}

static enum intrus_status write_tsv(const char *path, const struct time_series *ts, int n,
                                    struct intrus_error *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  fprintf(f, "decoder\tlength\tms_per_sentence\n");
  for (int k = 0; k < n; k++)
    for (size_t j = 0; j < ts[k].n; j++)
      fprintf(f, "%s\t%.2f\t%.4f\n", ts[k].name, ts[k].x[j], ts[k].y[j]);
  enum intrus_status st = fclose(f) != 0 ? intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory")
                                         : intrus_file_write_atomic(path, buf, len, err);
  free(buf);
  return st;
}

static long parse_long(const char *opt, const char *s, long lo, long hi, bool *ok) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < lo || v > hi) {
    fprintf(stderr, "intrus analyze time: %s wants an integer in %ld..%ld, got '%s'\n", opt, lo,
            hi, s);
    *ok = false;
  }
  return v;
}

int intrus_analyze_time(int argc, char **argv) {
  static const struct option longopts[] = {
      {"input", required_argument, NULL, 'i'},      {"out", required_argument, NULL, 'o'},
      {"sentences", required_argument, NULL, 'n'},  {"width", required_argument, NULL, 'w'},
      {"beam", required_argument, NULL, 'b'},       {"label", required_argument, NULL, 'L'},
      {"run-dir", required_argument, NULL, OPT_RUN_DIR},
      {"checkpoint", required_argument, NULL, 'c'},
      {"tsv", required_argument, NULL, OPT_TSV},    {"title", required_argument, NULL, OPT_TITLE},
      {"plugin-path", required_argument, NULL, 'p'}, {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},             {NULL, 0, NULL, 0}};
  const char *out = NULL, *input = NULL, *tsv = NULL, *plugin_path = NULL;
  const char *title = "Decoding time against output length";
  const char *label[MAX_SERIES] = {0}, *run_dir[MAX_SERIES] = {0}, *ckpt[MAX_SERIES] = {0};
  int nlabel = 0, nrun = 0, nckpt = 0;
  long count = 200, width = 5, beam = 0;
  bool quiet = false, ok = true;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "i:o:n:w:b:L:c:p:qh", longopts, NULL)) != -1) {
    switch (c) {
    case 'i': input = optarg; break;
    case 'o': out = optarg; break;
    case 'n': count = parse_long("--sentences", optarg, 1, 1000000, &ok); break;
    case 'w': width = parse_long("--width", optarg, 1, 1000, &ok); break;
    case 'b': beam = parse_long("--beam", optarg, 1, 1024, &ok); break;
    case 'L':
      if (nlabel < MAX_SERIES) label[nlabel] = optarg;
      nlabel++;
      break;
    case OPT_RUN_DIR:
      if (nrun < MAX_SERIES) run_dir[nrun] = optarg;
      nrun++;
      break;
    case 'c':
      if (nckpt < MAX_SERIES) ckpt[nckpt] = optarg;
      nckpt++;
      break;
    case OPT_TSV: tsv = optarg; break;
    case OPT_TITLE: title = optarg; break;
    case 'p': plugin_path = optarg; break;
    case 'q': quiet = true; break;
    case 'h': fputs(time_usage, stdout); return INTRUS_EXIT_OK;
    default: fputs(time_usage, stderr); return INTRUS_EXIT_USAGE;
    }
  }
  if (!ok) return INTRUS_EXIT_USAGE;
  int nm = argc - optind;
  const char *first = nm > 0 ? argv[optind] : "";
  bool cfg_first = strlen(first) > 4 && strcmp(first + strlen(first) - 4, ".cfg") == 0;
  if (!out || nm < 1 || (!input && (nm != 1 || cfg_first))) {
    fprintf(stderr, "intrus analyze time: expected experiments and -i SRC, or one TSV; and -o "
                    "OUT.png\n%s", time_usage);
    return INTRUS_EXIT_USAGE;
  }
  if (nm > MAX_SERIES || nlabel > nm || nrun > nm || nckpt > nm) {
    fprintf(stderr, "intrus analyze time: at most %d experiments, and no more --label, "
                    "--run-dir or --checkpoint than experiments\n", MAX_SERIES);
    return INTRUS_EXIT_USAGE;
  }
  static struct time_series ts[MAX_SERIES];
  struct intrus_error err = {0};
  enum intrus_status st = INTRUS_OK;
  int nts = 0;
  if (!input) {
    if ((st = read_times(argv[optind], ts, &nts, &err)))
      return intrus_cli_fail("analyze time", &err);
    for (int k = 0; k < nts; k++) {
      printf("%s:", ts[k].name);
      for (size_t j = 0; j < ts[k].n; j++) printf(" %g:%.2f", ts[k].x[j], ts[k].y[j]);
      printf("  (length:ms)\n");
    }
  } else {
    char **lines = NULL;
    size_t nlines = 0, n;
    static struct buckets bk[MAX_SERIES];
    static char names[MAX_SERIES][NAME_MAX_LEN];
    memset(bk, 0, sizeof bk);
    if ((st = cli_check_writable(out, &err)) || (tsv && (st = cli_check_writable(tsv, &err))) ||
        (st = intrus_lines_read_any(input, &lines, &nlines, &err)))
      return intrus_cli_fail("analyze time", &err);
    if (nlines == 0) st = intrus_error_set(&err, INTRUS_ERR_DATA, "%s: no lines", input);
    n = nlines < (size_t)count ? nlines : (size_t)count;
    for (int k = 0; k < nm && !st; k++) {
      snprintf(names[k], sizeof names[k], "%s", label[k] ? label[k] : "");
      st = time_model(argv[optind + k], run_dir[k], ckpt[k], plugin_path, input, (int)beam,
                      lines, n, (int)width, quiet ? NULL : stderr, names[k], sizeof names[k],
                      &bk[k], &err);
    }
    if (lines) intrus_lines_free(lines, nlines);
    if (st) return intrus_cli_fail("analyze time", &err);
    report(bk, names, nm, (int)width, ts);
    nts = nm;
    if (tsv && (st = write_tsv(tsv, ts, nts, &err))) return intrus_cli_fail("analyze time", &err);
  }
  if ((st = draw(out, ts, nts, title, &err))) return intrus_cli_fail("analyze time", &err);
  printf("chart: %s\n", out);
  return INTRUS_EXIT_OK;
}

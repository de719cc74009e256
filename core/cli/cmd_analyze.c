/* intrus analyze order: relative generation index by word class (the paper's Figure 5),
 * from the order.tsv files of `intrus decode --trace`, as a table and a bar chart. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "viz/bars.h"
#include "viz/order_stats.h"
#include "viz/pos_tag.h"

#define MAX_FILES 16

static const char analyze_usage[] =
    "Usage: intrus analyze order ORDER.tsv... [options]\n"
    "\n"
    "When does an insertion model write each kind of word? Reads the order.tsv files of\n"
    "'intrus decode --trace DIR' (one per system, up to 16), joins BPE pieces into words\n"
    "and prints, per word class, the number of words and the mean relative generation\n"
    "index (0: written first, 1: written last; a word counts from its first-written\n"
    "piece) with its 95%% interval. Classes: punctuation, function words (a closed list\n"
    "for en, de, ru: articles, pronouns, prepositions, conjunctions, auxiliaries,\n"
    "particles) and content words; other languages get punctuation and words. With\n"
    "--pos, by part of speech instead (nouns, verbs, adjectives, adverbs, pronouns,\n"
    "prepositions, conjunctions, determiners, numerals, punctuation, other), from the\n"
    "Apertium analyser Debian packages for the language: en (apertium-eng-spa), ru\n"
    "(apertium-bel-rus); none for de. Each file's line also says how left-to-right its\n"
    "orders are: the mean over sentences of 2 or more words of Kendall's tau between the\n"
    "words' positions and the order they were begun in (1: left to right, -1: right to\n"
    "left, 0: no relation), and how many sentences were begun strictly either way.\n"
    "\n"
    "Options:\n"
    "  -l, --lang L        the language of the outputs (en, de, ru have word lists)\n"
    "      --pos           classes by part of speech (Apertium; --lang en or ru)\n"
    "      --pos-mode FILE the Apertium .mode file whose analyser to use (any language)\n"
    "  -L, --label NAME    the name of each file, in order (default: its folder)\n"
    "  -o, --out OUT.png   also draw a bar chart (cairo)\n"
    "      --title TEXT    the chart's title\n"
    "      --json          print JSON instead of the table\n"
    "  -h, --help          this help\n";

enum { OPT_TITLE = 256, OPT_JSON, OPT_POS, OPT_POS_MODE };

/* "runs/x/trace/order.tsv" -> "trace"; the folder names the system. */
static void default_label(const char *path, char *out, size_t n) {
  const char *end = strrchr(path, '/');
  if (!end) {
    snprintf(out, n, "%s", path);
    return;
  }
  const char *start = end;
  while (start > path && start[-1] != '/') start--;
  snprintf(out, n, "%.*s", (int)(end - start), start);
  if (!*out) snprintf(out, n, "%s", path);
}

static int analyze_order(int argc, char **argv) {
  static const struct option longopts[] = {
      {"lang", required_argument, NULL, 'l'}, {"label", required_argument, NULL, 'L'},
      {"out", required_argument, NULL, 'o'},  {"title", required_argument, NULL, OPT_TITLE},
      {"json", no_argument, NULL, OPT_JSON},  {"help", no_argument, NULL, 'h'},
      {"pos", no_argument, NULL, OPT_POS},    {"pos-mode", required_argument, NULL, OPT_POS_MODE},
      {NULL, 0, NULL, 0}};
  const char *lang = NULL, *out = NULL, *title = NULL, *labels[MAX_FILES], *pos_mode = NULL;
  bool pos = false;
  int nlabels = 0;
  bool json = false;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "l:L:o:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'l': lang = optarg; break;
    case 'L':
      if (nlabels == MAX_FILES) {
        fprintf(stderr, "intrus analyze order: at most %d --label\n", MAX_FILES);
        return INTRUS_EXIT_USAGE;
      }
      labels[nlabels++] = optarg;
      break;
    case 'o': out = optarg; break;
    case OPT_TITLE: title = optarg; break;
    case OPT_JSON: json = true; break;
    case OPT_POS: pos = true; break;
    case OPT_POS_MODE: pos = true; pos_mode = optarg; break;
    case 'h': printf(analyze_usage); return INTRUS_EXIT_OK;
    default: fprintf(stderr, analyze_usage); return INTRUS_EXIT_USAGE;
    }
  }
  int nfiles = argc - optind;
  if (nfiles < 1 || nfiles > MAX_FILES || (nlabels && nlabels != nfiles)) {
    fprintf(stderr,
            nfiles < 1 ? "intrus analyze order: expected order.tsv files\n"
            : nfiles > MAX_FILES
                ? "intrus analyze order: at most 16 files\n"
                : "intrus analyze order: %d --label for %d files (give one per file, or none)\n",
            nlabels, nfiles);
    return INTRUS_EXIT_USAGE;
  }
  if (pos && !pos_mode && !(pos_mode = pos_default_mode(lang))) {
    fprintf(stderr, "intrus analyze order: --pos needs --lang en or ru (Debian packages no "
                    "part-of-speech analyser for %s%s%s; --pos-mode FILE names an Apertium "
                    "mode), or use the word-list classes\n",
            lang ? "'" : "other languages", lang ? lang : "", lang ? "'" : "");
    return INTRUS_EXIT_USAGE;
  }
  bool have_list = word_list_known(lang);
  if (lang && !have_list && !pos)
    fprintf(stderr, "intrus analyze order: no function-word list for '%s' (there are for en, "
                    "de, ru): the classes are punctuation and words\n", lang);
  struct order_stats st[MAX_FILES];
  char names[MAX_FILES][256];
  memset(st, 0, sizeof st);
  long hmm_sent = 0, first_sent = 0, unknown = 0;
  for (int i = 0; i < nfiles; i++) {
    struct intrus_error err = {0};
    struct order_words w;
    memset(&w, 0, sizeof w);
    enum intrus_status rs = order_words_read(argv[optind + i], &w, &err);
    int *cls = rs ? NULL : malloc(((size_t)w.nwords + 1) * sizeof *cls);
    if (!rs && !cls) rs = intrus_error_set(&err, INTRUS_ERR_NOMEM, "out of memory");
    if (!rs && pos) {
      struct pos_tag_info info;
      rs = pos_tag_apertium(pos_mode, w.word, w.sent_start, w.nsent, cls, &info, &err);
      /* The analyser's punctuation is not always a tag of its own: the rule decides. */
      for (long j = 0; !rs && j < w.nwords; j++)
        if (word_classify(w.word[j], NULL) == WORD_PUNCT) cls[j] = POS_PUNCT;
      hmm_sent += info.hmm_sentences;
      first_sent += info.first_sentences;
      unknown += info.unknown;
      if (rs) intrus_error_prefix(&err, "%s", argv[optind + i]);
    } else if (!rs) {
      order_words_classify(&w, have_list ? lang : NULL, cls);
    }
    if (!rs) order_stats_add(&st[i], &w, cls);
    free(cls);
    order_words_free(&w);
    if (rs) return intrus_cli_fail("analyze order", &err);
    if (nlabels) snprintf(names[i], sizeof names[i], "%s", labels[i]);
    else default_label(argv[optind + i], names[i], sizeof names[i]);
  }
  int classes[ORDER_MAX_CLASSES], ncls = 0;
  if (pos) {
    for (int k = 0; k < POS_CLASSES; k++) {
      long n = 0;
      for (int i = 0; i < nfiles; i++) n += st[i].n[k];
      if (n) classes[ncls++] = k;
    }
  } else {
    for (int k = 0; k < WORD_CLASSES; k++)
      if (have_list || k != WORD_FUNCTION) classes[ncls++] = k;
  }
  const char *cname[ORDER_MAX_CLASSES];
  for (int j = 0; j < ncls; j++)
    cname[j] = pos ? pos_class_name((enum pos_class)classes[j])
                   : word_class_name((enum word_class)classes[j], have_list);
  double mean[MAX_FILES * ORDER_MAX_CLASSES], ci[MAX_FILES * ORDER_MAX_CLASSES];
  for (int i = 0; i < nfiles; i++)
    for (int j = 0; j < ncls; j++)
      mean[i * ncls + j] = order_stats_mean(&st[i], classes[j], &ci[i * ncls + j]);

  if (json) {
    printf("{\"lang\": ");
    if (have_list || (pos && lang)) cli_json_string(stdout, lang);
    else printf("null");
    printf(", \"classes_by\": ");
    if (pos) {
      cli_json_string(stdout, pos_mode);
      printf(", \"hmm_sentences\": %ld, \"first_reading_sentences\": %ld, "
             "\"unknown_words\": %ld", hmm_sent, first_sent, unknown);
    } else {
      printf("\"word list\"");
    }
    printf(", \"systems\": [");
    for (int i = 0; i < nfiles; i++) {
      printf("%s\n {\"name\": ", i ? "," : "");
      cli_json_string(stdout, names[i]);
      printf(", \"file\": ");
      cli_json_string(stdout, argv[optind + i]);
      printf(", \"sentences\": %ld, \"skipped\": %ld, \"words\": %ld, ", st[i].sentences,
             st[i].skipped, st[i].words);
      double tci, tau = order_stats_tau(&st[i], &tci);
      printf("\"order\": {\"sentences\": %ld, \"kendall_tau\": ", st[i].tau_n);
      if (isfinite(tau)) printf("%.4f", tau);
      else printf("null");
      printf(", \"ci95\": %.4f, \"left_to_right\": %ld, \"right_to_left\": %ld}, "
             "\"classes\": {",
             tci, st[i].l2r, st[i].r2l);
      for (int j = 0; j < ncls; j++) {
        int k = classes[j];
        printf("%s\"%s\": {\"words\": %ld, \"mean\": ", j ? ", " : "", cname[j], st[i].n[k]);
        if (isfinite(mean[i * ncls + j])) printf("%.4f", mean[i * ncls + j]);
        else printf("null");
        printf(", \"ci95\": %.4f}", ci[i * ncls + j]);
      }
      printf("}}");
    }
    printf("\n]}\n");
  } else {
    printf("| class |");
    for (int i = 0; i < nfiles; i++) printf(" %s: words | mean ± 95%% |", names[i]);
    printf("\n|---|");
    for (int i = 0; i < nfiles; i++) printf("---:|---:|");
    printf("\n");
    for (int j = 0; j < ncls; j++) {
      int k = classes[j];
      printf("| %s |", cname[j]);
      for (int i = 0; i < nfiles; i++) {
        printf(" %ld |", st[i].n[k]);
        if (isfinite(mean[i * ncls + j]))
          printf(" %.3f ± %.3f |", mean[i * ncls + j], ci[i * ncls + j]);
        else
          printf(" |");
      }
      printf("\n");
    }
    for (int i = 0; i < nfiles; i++) {
      printf("%s: %ld sentences, %ld words (%ld sentences of fewer than 2 tokens skipped)",
             names[i], st[i].sentences, st[i].words, st[i].skipped);
      double tci, tau = order_stats_tau(&st[i], &tci);
      if (isfinite(tau))
        printf("; word order against writing order over %ld sentences of 2+ words: "
               "Kendall's tau %.3f ± %.3f, %ld begun left to right, %ld right to left",
               st[i].tau_n, tau, tci, st[i].l2r, st[i].r2l);
      printf("\n");
    }
    if (pos)
      printf("parts of speech: %s; the HMM tagger's readings in %ld sentences, the first "
             "reading the analyser leaves in %ld (where the tagger crashed on a file, or the "
             "pair has none); %ld words unknown to the analyser (class other)\n",
             pos_mode, hmm_sent, first_sent, unknown);
  }
  if (out) {
    const char *cats[ORDER_MAX_CLASSES], *series[MAX_FILES];
    for (int j = 0; j < ncls; j++) cats[j] = cname[j];
    for (int i = 0; i < nfiles; i++) series[i] = names[i];
    struct bar_chart chart = {
        .title = title ? title : "When each kind of word is written",
        .ytitle = "relative generation index (0 = first, 1 = last)",
        .ncat = ncls, .nseries = nfiles, .categories = cats, .series = series,
        .value = mean, .error = ci, .ymin = 0.0, .ymax = 1.0, .width = 900, .height = 560};
    struct intrus_error err = {0};
    if (intrus_bars_draw(out, &chart, &err)) return intrus_cli_fail("analyze order", &err);
    if (!json) printf("chart: %s\n", out);
  }
  return INTRUS_EXIT_OK;
}

int intrus_cmd_analyze(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "order") == 0) return analyze_order(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "time") == 0) return intrus_analyze_time(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "states") == 0)
    return intrus_analyze_states(argc - 1, argv + 1);
  if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    printf("Usage: intrus analyze order ORDER.tsv... [options]   word classes by generation "
           "index\n       intrus analyze time EXP.cfg... -i SRC -o OUT.png  decoding time by "
           "output length\n       intrus analyze states EXP.cfg -i SRC -r REF  an insertion "
           "model's loss by state (k / n)\n(each has --help)\n");
    return INTRUS_EXIT_OK;
  }
  fprintf(stderr, "intrus analyze: expected a subcommand: order, time or states ('intrus "
                  "analyze --help')\n");
  return INTRUS_EXIT_USAGE;
}

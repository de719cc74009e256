/* intrus distill: a teacher's translations of its training sources as a parallel corpus
 * (sequence-level knowledge distillation). The work is cli_distill (distill.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_distill.h"

static const char distill_usage[] =
    "Usage: intrus distill TEACHER.cfg -o OUT_DIR [options]\n"
    "\n"
    "Decodes every line of the teacher experiment's training sources (before any\n"
    "data.max_len filter: a student filters its pairs itself) with the teacher's trained\n"
    "model and search settings, batched, and writes a corpus in the layout data.kind =\n"
    "\"parallel\" reads: OUT_DIR/train.SRC as it was, OUT_DIR/train.TGT the teacher's\n"
    "detokenised outputs (as intrus decode writes them), valid and test copied, and\n"
    "OUT_DIR/MANIFEST (the checkpoint's content fingerprint, the search settings, the\n"
    "sources' fingerprint, and the outputs' BLEU and length ratio against the original\n"
    "training references). Progress goes to stderr every chunk of lines, each saved as it\n"
    "finishes: a killed distillation run again resumes at the line it reached and ends\n"
    "with the bytes of an uninterrupted one. An OUT_DIR made with another checkpoint,\n"
    "search or sources is refused, naming what differs; one made with the same is left\n"
    "as it is.\n"
    "\n"
    "Options:\n"
    "  -o, --out DIR          the distilled corpus (required)\n"
    "  -r, --run-dir DIR      the teacher's training run (default: runs/<teacher name>)\n"
    "  -c, --checkpoint FILE  (default: RUN_DIR/checkpoint.ckpt, or best.ckpt when the\n"
    "                         teacher's eval.checkpoint = \"best\")\n"
    "  -b, --beam N           instead of the teacher's search.beam\n"
    "  -a, --alpha A          instead of the teacher's search.alpha (length normalisation)\n"
    "  -f, --finish-penalty B instead of the teacher's search.finish_penalty (subtracted\n"
    "                         from log p(end); longer outputs)\n"
    "      --chunk N          lines decoded between two saves (default 1000; a resumed\n"
    "                         distillation keeps the chunks it began with)\n"
    "  -p, --plugin-path DIRS colon-separated plugin directories searched first\n"
    "  -q, --quiet            no progress lines\n"
    "  -h, --help             this help\n";

static int bad_value(const char *opt, const char *want, const char *got) {
  fprintf(stderr, "intrus distill: %s wants %s, got '%s'\n", opt, want, got);
  return INTRUS_EXIT_USAGE;
}

int intrus_cmd_distill(int argc, char **argv) {
  static const struct option longopts[] = {
      {"out", required_argument, NULL, 'o'},        {"run-dir", required_argument, NULL, 'r'},
      {"checkpoint", required_argument, NULL, 'c'}, {"beam", required_argument, NULL, 'b'},
      {"alpha", required_argument, NULL, 'a'},      {"chunk", required_argument, NULL, 'k'},
      {"finish-penalty", required_argument, NULL, 'f'},
      {"plugin-path", required_argument, NULL, 'p'}, {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},             {NULL, 0, NULL, 0}};
  const char *out = NULL, *run_dir = NULL, *plugin_path = NULL;
  struct cli_distill_opts o = {0};
  bool quiet = false;
  int c;
  char *end;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:r:c:b:a:f:p:qh", longopts, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case 'r': run_dir = optarg; break;
    case 'c': o.checkpoint = optarg; break;
    case 'b': {
      long v = strtol(optarg, &end, 10);
      if (*end || end == optarg || v < 1 || v > 1024)
        return bad_value("--beam", "an integer in 1..1024", optarg);
      o.beam = (int)v;
      break;
    }
    case 'a':
      o.alpha = strtod(optarg, &end);
      if (*end || end == optarg || !(o.alpha >= 0 && o.alpha <= 10))
        return bad_value("--alpha", "a number in 0..10", optarg);
      o.has_alpha = true;
      break;
    case 'f':
      o.finish_penalty = strtod(optarg, &end);
      if (*end || end == optarg || !(o.finish_penalty >= 0 && o.finish_penalty <= 1e6))
        return bad_value("--finish-penalty", "a number in 0..1e6", optarg);
      o.has_finish_penalty = true;
      break;
    case 'k':
      errno = 0;
      o.chunk = strtol(optarg, &end, 10);
      if (errno || *end || end == optarg || o.chunk < 1)
        return bad_value("--chunk", "a positive number of lines", optarg);
      break;
    case 'p': plugin_path = optarg; break;
    case 'q': quiet = true; break;
    case 'h': fputs(distill_usage, stdout); return INTRUS_EXIT_OK;
    default: fputs(distill_usage, stderr); return INTRUS_EXIT_USAGE;
    }
  }
  if (optind != argc - 1 || !out) {
    fprintf(stderr, "intrus distill: expected one teacher experiment file and -o OUT_DIR\n%s",
            distill_usage);
    return INTRUS_EXIT_USAGE;
  }
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_file(argv[optind], &err);
  if (!cfg) return intrus_cli_fail("distill", &err);
  struct cli_experiment x = {0};
  struct cli_distill_result r;
  enum intrus_status st = intrus_cli_experiment(cfg, run_dir, plugin_path, &x, &err);
  intrus_config_free(cfg); /* cli_distill loads the teacher itself */
  if (!st) {
    o.teacher = argv[optind];
    o.teacher_run = x.run_dir;
    o.out_dir = out;
    o.search = x.search;
    o.progress = quiet ? NULL : stderr;
    st = cli_distill(&o, &r, &err);
  }
  intrus_plugin_search_free(x.search);
  if (st) return intrus_cli_fail("distill", &err);
  const struct distill_record *rec = &r.rec;
  if (r.reused)
    printf("%s: already distilled from %s (%s) with the same search and sources; left as it "
           "is\n", out, rec->teacher, rec->checkpoint_path);
  else if (r.resumed_at)
    printf("%s: distilled %zu lines (resumed at line %zu; %.1f s this time, every session in "
           "%s/distill.log)\n", out, rec->lines, r.resumed_at + 1, r.seconds, out);
  else
    printf("%s: distilled %zu lines in %.1f s\n", out, rec->lines, r.seconds);
  printf("teacher outputs against the training references: BLEU = %.2f  ratio = %.2f\n%s\n",
         rec->bleu, rec->ratio, rec->signature);
  return INTRUS_EXIT_OK;
}

/* intrus decode, and the test-set evaluation that intrus run ends with. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "trace_files.h"
#include "intrus/trace.h"
#include "config.h"
#include "eval/score.h"
#include "search/translate.h"
#include "base/clock.h"
#include "intrus/checkpoint.h"
#include "train/run_snapshots.h"

static const char decode_usage[] =
    "Usage: intrus decode EXPERIMENT.cfg [options]\n"
    "\n"
    "Translates raw text with the model trained by `intrus train EXPERIMENT.cfg`: the run\n"
    "directory's BPE codes, vocabulary and checkpoint; beam search as the experiment's\n"
    "`search` group says (default beam 4, alpha 1, at most 2*|src|+3 tokens).\n"
    "\n"
    "Options:\n"
    "  -o, --run-dir DIR      the training run (default: runs/<experiment name>)\n"
    "  -i, --input FILE       raw source text, one sentence per line (default: stdin;\n"
    "                         .gz accepted); image data (data.kind = \"images\"): a list\n"
    "                         of PNG files, one per line, relative to the list's folder\n"
    "  -O, --output FILE      detokenised translations (default: stdout)\n"
    "  -c, --checkpoint FILE  (default: RUN_DIR/checkpoint.ckpt)\n"
    "  -b, --beam N           override the beam size\n"
    "  -s, --set PATH=VALUE   change a setting of the experiment for this decode, e.g.\n"
    "                         --set search.slots=8 --set search.finish_penalty=2.0\n"
    "                         (repeatable; VALUE a number, true/false or a string)\n"
    "  -t, --trace DIR        write how each output was written to DIR (a left-to-right\n"
    "                         model appends a token a step, right-to-left prepends):\n"
    "                         trace.txt (every sentence's states, one line per step),\n"
    "                         order.tsv (the relative generation index of every output\n"
    "                         token) and sentence-N.png / .svg pictures (image-N.* for\n"
    "                         image inputs: the image above the steps)\n"
    "      --trace-pictures N pictures for the first N sentences (default 10; 0 = none)\n"
    "  -p, --plugin-path DIRS colon-separated plugin directories searched first\n"
    "  -q, --quiet            no progress lines\n"
    "  -h, --help             this help\n";

static enum intrus_status write_lines(const char *path, char *const *lines, size_t n,
                                      struct intrus_error *err) {
  size_t len = 0;
  for (size_t i = 0; i < n; i++) len += strlen(lines[i]) + 1;
  char *buf = malloc(len ? len : 1), *p = buf;
  if (!buf) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    size_t k = strlen(lines[i]);
    memcpy(p, lines[i], k);
    p[k] = '\n';
    p += k + 1;
  }
  enum intrus_status st = intrus_file_write_atomic(path, buf, len, err);
  free(buf);
  return st;
}

int intrus_cmd_decode(int argc, char **argv) {
  static const struct option longopts[] = {
      {"run-dir", required_argument, NULL, 'o'},     {"input", required_argument, NULL, 'i'},
      {"output", required_argument, NULL, 'O'},      {"checkpoint", required_argument, NULL, 'c'},
      {"beam", required_argument, NULL, 'b'},        {"plugin-path", required_argument, NULL, 'p'},
      {"quiet", no_argument, NULL, 'q'},             {"help", no_argument, NULL, 'h'},
      {"trace", required_argument, NULL, 't'},       {"trace-pictures", required_argument, NULL, 'P'},
      {"set", required_argument, NULL, 's'},         {NULL, 0, NULL, 0}};
  struct cli_sets sets = {.n = 0};
  const char *trace_dir = NULL;
  long pictures = 10;
  const char *run_dir_arg = NULL, *input = "/dev/stdin", *output = NULL, *ckpt_arg = NULL,
             *plugin_path = NULL;
  long beam = 0;
  bool quiet = false;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:i:O:c:b:p:t:s:qh", longopts, NULL)) != -1) {
    switch (c) {
    case 'o': run_dir_arg = optarg; break;
    case 'i': input = optarg; break;
    case 'O': output = optarg; break;
    case 'c': ckpt_arg = optarg; break;
    case 'b': {
      char *end;
      beam = strtol(optarg, &end, 10);
      if (*end || beam < 1 || beam > 1024) {
        fprintf(stderr, "intrus decode: --beam wants an integer in 1..1024, got '%s'\n", optarg);
        return INTRUS_EXIT_USAGE;
      }
      break;
    }
    case 'p': plugin_path = optarg; break;
    case 's':
      if (!cli_sets_add(&sets, "decode", optarg, true)) return INTRUS_EXIT_USAGE;
      break;
    case 't': trace_dir = optarg; break;
    case 'P': {
      char *end;
      pictures = strtol(optarg, &end, 10);
      if (*end || pictures < 0) {
        fprintf(stderr, "intrus decode: --trace-pictures wants a count >= 0, got '%s'\n", optarg);
        return INTRUS_EXIT_USAGE;
      }
      break;
    }
    case 'q': quiet = true; break;
    case 'h': fputs(decode_usage, stdout); return INTRUS_EXIT_OK;
    default: fputs(decode_usage, stderr); return INTRUS_EXIT_USAGE;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "intrus decode: expected one experiment file\n%s", decode_usage);
    return INTRUS_EXIT_USAGE;
  }
  struct intrus_error err = {0};
  struct intrus_config *cfg = cli_config_load(argv[optind], &sets, &err);
  if (!cfg) return intrus_cli_fail("decode", &err);
  char ckpt[4200];
  struct cli_experiment x = {0};
  struct translator t = {0};
  char **lines = NULL, **out = NULL;
  struct dataset_image_input *images = NULL;
  struct intrus_ins_hyp *traj = NULL;
  size_t n = 0;
  enum intrus_status st;
  if ((st = intrus_cli_experiment(cfg, run_dir_arg, plugin_path, &x, &err)) ||
      (output && (st = cli_check_writable(output, &err))))
    goto done;
  snprintf(ckpt, sizeof ckpt, "%s", ckpt_arg ? ckpt_arg : "");
  if (!ckpt_arg) snprintf(ckpt, sizeof ckpt, "%s/checkpoint.ckpt", x.run_dir);
  if ((st = translator_open(cfg, x.run_dir, ckpt, x.search, &t, &err))) goto done;
  if ((st = translator_set_beam(&t, (int)beam, "-b", &err))) goto done;
  t.input_name = input;
  if (t.data.kind == DATA_IMAGES) {
    if ((st = dataset_images_input_read(&t.data, input, &images, &err))) goto done;
    n = dataset_images_input_count(images);
  } else if ((st = intrus_lines_read_any(input, &lines, &n, &err))) {
    /* No input is no output (an empty stdin in a pipeline is not an error). */
    goto done;
  }
  if (trace_dir && !(traj = calloc(n ? n : 1, sizeof *traj))) {
    st = intrus_error_set(&err, INTRUS_ERR_NOMEM, "out of memory");
    goto done;
  }
  if (images && n)
    st = translate_images(t.model, &t.data, &t.beam, images, quiet ? NULL : stderr, &out, traj,
                          &err);
  else if (n)
    st = translator_run(&t, lines, n, quiet ? NULL : stderr, &out, traj, &err);
  if (st ||
      (trace_dir && (st = cli_traces_write(trace_dir, &t.data, images, traj, n, pictures, &err))))
    goto done;
  if (output) {
    st = write_lines(output, out, n, &err);
  } else {
    for (size_t i = 0; i < n; i++) printf("%s\n", out[i]);
    if (fflush(stdout) != 0)
      st = intrus_error_set(&err, INTRUS_ERR_IO, "cannot write the output: %s", strerror(errno));
  }
done:
  if (traj)
    for (size_t i = 0; i < n; i++) intrus_ins_hyp_free(&traj[i]);
  free(traj);
  if (lines) intrus_lines_free(lines, n);
  dataset_images_input_free(images);
  dataset_lines_free(out, n);
  translator_close(&t);
  intrus_plugin_search_free(x.search);
  intrus_config_free(cfg);
  return st ? intrus_cli_fail("decode", &err) : INTRUS_EXIT_OK;
}

enum intrus_status intrus_run_check_test(struct intrus_config *cfg, const char *run_dir,
                                         struct intrus_error *err) {
  const intrus_cfg *data_cfg;
  struct dataset d = {0};
  struct intrus_parallel_text test = {0};
  char src[4200], tgt[4200];
  enum intrus_status st;
  if ((st = intrus_cfg_group_req(intrus_config_root(cfg), "data", &data_cfg, err)) ||
      (st = dataset_configure(&d, data_cfg, intrus_config_filename(cfg), run_dir, err)))
    goto done;
  if (d.kind == DATA_IMAGES) {
    /* The list and the references, line counts only: the images are read after
     * training. */
    char **list = NULL, **refs[DATASET_MAX_REFS] = {0};
    size_t n = 0;
    int nrefs = 0;
    snprintf(src, sizeof src, "%s/test.img", d.dir);
    if (!(st = intrus_lines_read(src, &list, &n, err)) &&
        !(st = dataset_images_references(&d, "test", n, refs, &nrefs, err)))
      for (int r = 0; r < nrefs; r++) dataset_lines_free(refs[r], n);
    if (list) intrus_lines_free(list, n);
    goto done;
  }
  if (d.kind != DATA_PARALLEL) goto done;
  dataset_split_path(&d, "test", d.src_lang, src, sizeof src);
  dataset_split_path(&d, "test", d.tgt_lang, tgt, sizeof tgt);
  st = intrus_parallel_read(src, tgt, &test, err);
done:
  intrus_parallel_free(&test);
  dataset_free(&d);
  return st;
}

enum intrus_status cli_check_writable(const char *path, struct intrus_error *err) {
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: is a directory", path);
  char dir[4200];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  if (access(dir, W_OK | X_OK) != 0)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot write into %s: %s", path, dir,
                            strerror(errno));
  return INTRUS_OK;
}

/* eval.checkpoint = "average": RUN_DIR/average.ckpt, the mean of the snapshots in
 * RUN_DIR/snapshots (the last train.keep_checkpoints snapshot steps), written anew
 * each time so that it is always the mean of what the folder holds. */
static enum intrus_status average_snapshots(const char *run_dir, const char *out,
                                            FILE *progress, struct intrus_error *err) {
  long *steps;
  long n = run_snapshots_list(run_dir, &steps);
  if (n < 0) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  if (n == 0)
    return intrus_error_set(err, INTRUS_ERR_IO,
                            "%s/snapshots: no snapshots to average for eval.checkpoint = "
                            "\"average\" (train.keep_checkpoints writes them as it trains)",
                            run_dir);
  char(*names)[4300] = malloc((size_t)n * sizeof *names);
  const char **paths = malloc((size_t)n * sizeof *paths);
  enum intrus_status st = names && paths ? INTRUS_OK
                                         : intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  for (long i = 0; i < n && !st; i++) {
    run_snapshot_path(names[i], sizeof names[i], run_dir, steps[i]);
    paths[i] = names[i];
  }
  if (!st) st = intrus_ckpt_average(paths, (int)n, out, err);
  if (!st && progress)
    fprintf(progress, "averaged %ld snapshot%s (steps %ld-%ld) into %s\n", n, n == 1 ? "" : "s",
            steps[0], steps[n - 1], out);
  free(names);
  free(paths);
  free(steps);
  return st;
}

enum intrus_status intrus_run_test(struct intrus_config *cfg, const char *run_dir,
                                   const struct intrus_plugin_search *search, FILE *progress,
                                   struct run_scores *rs, struct intrus_error *err) {
  struct translator t = {0};
  struct intrus_parallel_text test = {0};
  char **hyps = NULL;
  char ckpt[4200], src[4200], tgt[4200], path[4200];
  const intrus_cfg *eval = NULL, *bleu = NULL, *cider = NULL;
  struct dataset_image_input *images = NULL;
  char **refs[DATASET_MAX_REFS] = {0};
  int nrefs = 0;
  size_t n = 0, ntraj = 0;
  struct intrus_ins_hyp *traj = NULL; /* each output's order: RUN_DIR/test.order.tsv */
  enum intrus_status st;
  memset(rs, 0, sizeof *rs);
  /* eval.checkpoint: the last checkpoint (default), the best by validation, or the
   * average of the snapshots train.keep_checkpoints kept. */
  static const char *const test_ckpts[] = {"last", "best", "average", NULL};
  int which = 0;
  if ((st = intrus_cfg_group(intrus_config_root(cfg), "eval", &eval, err)) ||
      (eval && (st = intrus_cfg_group(eval, "bleu", &bleu, err))) ||
      (eval && (st = intrus_cfg_group(eval, "cider", &cider, err))) ||
      (eval && (st = intrus_cfg_choice(eval, "checkpoint", "last", test_ckpts, &which, err))) ||
      (eval && (st = intrus_cfg_check_unknown(eval, err))))
    goto done;
  static const char *const ckpt_files[] = {"checkpoint.ckpt", "best.ckpt", "average.ckpt"};
  snprintf(ckpt, sizeof ckpt, "%s/%s", run_dir, ckpt_files[which]);
  if (which == 2 && (st = average_snapshots(run_dir, ckpt, progress, err))) goto done;
  if (which == 1 && access(ckpt, R_OK) != 0) {
    st = intrus_error_set(err, INTRUS_ERR_IO,
                          "%s: eval.checkpoint = \"best\", but training wrote no best.ckpt "
                          "(it needs at least one validation: train.valid_every)",
                          ckpt);
    goto done;
  }
  snprintf(rs->checkpoint, sizeof rs->checkpoint, "%s", ckpt_files[which]);
  if ((st = translator_open(cfg, run_dir, ckpt, search, &t, err)) ||
      (st = translator_set_beam(&t, 0, NULL, err)))
    goto done;
  if (t.data.kind == DATA_IMAGES) {
    /* Every reference counts (BLEU as the MSCOCO evaluation takes it, several per
     * image); CIDEr-D too for captions. */
    snprintf(src, sizeof src, "%s/test.img", t.data.dir);
    if ((st = dataset_images_input_read(&t.data, src, &images, err))) goto done;
    n = dataset_images_input_count(images);
    if ((st = dataset_images_references(&t.data, "test", n, refs, &nrefs, err))) goto done;
    if (progress)
      fprintf(progress, "decoding the test set (%zu images, beam %d) with %s\n", n, t.beam.beam,
              rs->checkpoint);
    if (!(traj = calloc(n ? n : 1, sizeof *traj))) {
      st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
      goto done;
    }
    ntraj = n;
    double t0 = mono_s();
    if ((st = translate_images(t.model, &t.data, &t.beam, images, progress, &hyps, traj, err)))
      goto done;
    rs->decode_s = mono_s() - t0;
    snprintf(path, sizeof path, "%s/test.order.tsv", run_dir);
    if ((st = cli_order_write(path, &t.data, traj, n, err))) goto done;
    snprintf(path, sizeof path, "%s/test.hyp", run_dir);
    if ((st = write_lines(path, hyps, n, err)) ||
        (st = score_corpus_refs(search, "bleu", bleu, hyps, refs, nrefs, n, &rs->bleu, err)) ||
        (t.data.tgt_text &&
         (st = score_corpus_refs(search, "cider", cider, hyps, refs, nrefs, n, &rs->cider, err))))
      goto done;
    rs->has_cider = t.data.tgt_text;
    rs->images = true;
    rs->references = nrefs;
    rs->sentences = n;
    snprintf(rs->hyp_path, sizeof rs->hyp_path, "%s", path);
    goto done;
  }
  dataset_split_path(&t.data, "test", t.data.src_lang, src, sizeof src);
  dataset_split_path(&t.data, "test", t.data.tgt_lang, tgt, sizeof tgt);
  if ((st = intrus_parallel_read(src, tgt, &test, err))) goto done;
  t.input_name = src;
  if (progress)
    fprintf(progress, "decoding the test set (%zu sentences, beam %d) with %s\n", test.n,
            t.beam.beam, rs->checkpoint);
  if (!(traj = calloc(test.n ? test.n : 1, sizeof *traj))) {
    st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    goto done;
  }
  ntraj = test.n;
  double t0 = mono_s();
  if ((st = translator_run(&t, test.src, test.n, progress, &hyps, traj, err))) goto done;
  rs->decode_s = mono_s() - t0;
  snprintf(path, sizeof path, "%s/test.order.tsv", run_dir);
  if ((st = cli_order_write(path, &t.data, traj, test.n, err))) goto done;
  snprintf(path, sizeof path, "%s/test.hyp", run_dir);
  if ((st = write_lines(path, hyps, test.n, err)) ||
      (st = score_corpus(search, "bleu", bleu, hyps, test.tgt, test.n, &rs->bleu, err)))
    goto done;
  rs->sentences = test.n;
  rs->references = 1;
  snprintf(rs->hyp_path, sizeof rs->hyp_path, "%s", path);
done:
  for (size_t i = 0; traj && i < ntraj; i++) intrus_ins_hyp_free(&traj[i]);
  free(traj);
  dataset_lines_free(hyps, images ? n : test.n);
  for (int r = 0; r < nrefs; r++) dataset_lines_free(refs[r], n);
  dataset_images_input_free(images);
  intrus_parallel_free(&test);
  translator_close(&t);
  return st;
}

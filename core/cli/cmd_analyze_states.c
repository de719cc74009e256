/* intrus analyze states: an insertion model's loss along uniformly random orders,
 * grouped by how much of the target is already written (k / n). Validation reports one
 * mean over every state; this says where a model loses: the first words, the middle, the
 * last missing ones, or the decision to finish. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "intrus/corpus.h"
#include "intrus/fileio.h"
#include "model/insertion_model.h"
#include "search/translate.h"

#define MAX_BINS 20

static const char states_usage[] =
    "Usage: intrus analyze states EXPERIMENT.cfg -i SRC -r REF [options]\n"
    "\n"
    "Scores an insertion model on the pairs (SRC line, REF line): for each pair one\n"
    "uniformly random order of the reference (the segmented target), and every state of\n"
    "it, k = 0..n tokens written. A state's loss is -log of the probability the model\n"
    "gives to all its correct insertions together (the main loss; validation's per-token\n"
    "loss is their mean over targets' tokens and finishes); at k = n it is -log p(finish).\n"
    "Prints, per bin of k / n, the states, their mean loss and the mean probability the\n"
    "model gives to finishing (at k < n: stopping with words still missing).\n"
    "\n"
    "Options:\n"
    "  -i, --input SRC        source sentences, one per line (raw text, .gz read too)\n"
    "  -r, --ref REF          their references, line-aligned\n"
    "  -o, --run-dir DIR      the run directory (BPE codes, vocabulary; default:\n"
    "                         runs/<experiment name>)\n"
    "  -c, --checkpoint FILE  the model (default: RUN_DIR/checkpoint.ckpt)\n"
    "  -b, --bins N           bins of k / n (default 5, at most 20)\n"
    "  -s, --seed S           the random orders' seed (default 1)\n"
    "  -O, --states FILE      also write every state as TSV: line, k, n, loss, log p(finish)\n"
    "  -p, --plugin-path DIRS colon-separated plugin directories searched first\n"
    "      --json             print JSON instead of the table\n"
    "  -q, --quiet            no progress lines\n"
    "  -h, --help             this help\n";

enum { OPT_JSON = 256 };

struct bin_acc {
  long states;
  double loss, pfinish;
};

struct states_job {
  struct intrus_model *model;
  intrus_ctx *ctx, *scratch;
  uint64_t seed;
  int nbins;
  struct bin_acc bins[MAX_BINS], complete;
  double loss_sum;
  long tokens_plus_finish, sentences, infinite;
  FILE *tsv;
  const size_t *line;
  FILE *progress;
  size_t done, total;
};

static void job_add(struct states_job *j, const struct ins_state_loss *o, size_t line) {
  struct bin_acc *a = o->k == o->n ? &j->complete : &j->bins[(long)o->k * j->nbins / o->n];
  a->states++;
  a->pfinish += exp((double)o->logp_finish);
  if (isfinite(o->loss)) {
    a->loss += o->loss;
    j->loss_sum += o->loss;
  } else {
    j->infinite++;
  }
  if (j->tsv)
    fprintf(j->tsv, "%zu\t%d\t%d\t%.6g\t%.6g\n", line + 1, o->k, o->n, (double)o->loss,
            (double)o->logp_finish);
}

static enum intrus_status job_batch(struct states_job *j, const struct intrus_corpus *c,
                                    const int32_t *idx, int count, struct intrus_error *err) {
  intrus_ctx_reset(j->ctx);
  struct intrus_src_batch sb;
  struct intrus_tgt_batch tb;
  intrus_corpus_fill_batch(c, j->ctx, idx, count, &sb, &tb);
  size_t nstates = 0;
  for (int b = 0; b < count; b++) nstates += (size_t)tb.lens[b] + 1;
  uint64_t *keys = malloc((size_t)count * sizeof *keys);
  struct ins_state_loss *out = malloc((nstates + 1) * sizeof *out);
  enum intrus_status st = INTRUS_OK;
  if (!keys || !out) st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  for (int b = 0; b < count && !st; b++) keys[b] = (uint64_t)j->line[idx[b]];
  if (!st) st = ins_state_losses(j->model, j->scratch, &sb, &tb, j->seed, keys, out, err);
  for (size_t s = 0; s < nstates && !st; s++) job_add(j, &out[s], j->line[idx[out[s].sent]]);
  for (int b = 0; b < count && !st; b++) j->tokens_plus_finish += tb.lens[b] + 1;
  free(keys);
  free(out);
  if (st) return st;
  j->sentences += count;
  j->done += (size_t)count;
  if (j->progress) {
    fprintf(j->progress, "scored %zu/%zu sentences\n", j->done, j->total);
    fflush(j->progress);
  }
  return INTRUS_OK;
}

static void print_table(const struct states_job *j, const char *exp, uint64_t seed) {
  long states = j->complete.states;
  for (int k = 0; k < j->nbins; k++) states += j->bins[k].states;
  printf("%s: %ld sentences, %ld states (one uniformly random order each, seed %llu)\n", exp,
         j->sentences, states, (unsigned long long)seed);
  printf("%-12s %8s %10s %15s\n", "k / n", "states", "mean loss", "mean p(finish)");
  for (int k = 0; k < j->nbins; k++) {
    const struct bin_acc *a = &j->bins[k];
    char name[32];
    snprintf(name, sizeof name, "%.2f-%.2f", (double)k / j->nbins, (double)(k + 1) / j->nbins);
    printf("%-12s %8ld %10.4f %15.4f\n", name, a->states, a->states ? a->loss / a->states : NAN,
           a->states ? a->pfinish / a->states : NAN);
  }
  const struct bin_acc *a = &j->complete;
  printf("%-12s %8ld %10.4f %15.4f   (loss: -log p(finish))\n", "complete", a->states,
         a->states ? a->loss / a->states : NAN, a->states ? a->pfinish / a->states : NAN);
  printf("per target token and finish (validation's measure): %.4f\n",
         j->tokens_plus_finish ? j->loss_sum / (double)j->tokens_plus_finish : NAN);
  if (j->infinite)
    printf("%ld states with no probability on any correct insertion (left out of the means)\n",
           j->infinite);
}

static void print_json(const struct states_job *j, const char *exp, uint64_t seed) {
  printf("{\"experiment\": \"%s\", \"seed\": %llu, \"sentences\": %ld, \"bins\": [", exp,
         (unsigned long long)seed, j->sentences);
  for (int k = 0; k < j->nbins; k++) {
    const struct bin_acc *a = &j->bins[k];
    printf("%s{\"from\": %.4g, \"to\": %.4g, \"states\": %ld, \"loss\": %.6g, "
           "\"p_finish\": %.6g}",
           k ? ", " : "", (double)k / j->nbins, (double)(k + 1) / j->nbins, a->states,
           a->states ? a->loss / a->states : 0.0, a->states ? a->pfinish / a->states : 0.0);
  }
  const struct bin_acc *a = &j->complete;
  printf("], \"complete\": {\"states\": %ld, \"loss\": %.6g, \"p_finish\": %.6g}, "
         "\"loss_per_token\": %.6g, \"infinite\": %ld}\n",
         a->states, a->states ? a->loss / a->states : 0.0,
         a->states ? a->pfinish / a->states : 0.0,
         j->tokens_plus_finish ? j->loss_sum / (double)j->tokens_plus_finish : 0.0,
         j->infinite);
}

static long parse_long(const char *opt, const char *s, long lo, long hi, bool *ok) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < lo || v > hi) {
    fprintf(stderr, "intrus analyze states: %s wants an integer in %ld..%ld, got '%s'\n", opt,
            lo, hi, s);
    *ok = false;
  }
  return v;
}

int intrus_analyze_states(int argc, char **argv) {
  static const struct option longopts[] = {
      {"input", required_argument, NULL, 'i'},      {"ref", required_argument, NULL, 'r'},
      {"run-dir", required_argument, NULL, 'o'},    {"checkpoint", required_argument, NULL, 'c'},
      {"bins", required_argument, NULL, 'b'},       {"seed", required_argument, NULL, 's'},
      {"states", required_argument, NULL, 'O'},     {"plugin-path", required_argument, NULL, 'p'},
      {"json", no_argument, NULL, OPT_JSON},        {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},             {NULL, 0, NULL, 0}};
  const char *input = NULL, *ref = NULL, *run_dir_arg = NULL, *ckpt_arg = NULL,
             *tsv_path = NULL, *plugin_path = NULL;
  long nbins = 5, seed = 1;
  bool json = false, quiet = false, ok = true;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "i:r:o:c:b:s:O:p:qh", longopts, NULL)) != -1) {
    switch (c) {
    case 'i': input = optarg; break;
    case 'r': ref = optarg; break;
    case 'o': run_dir_arg = optarg; break;
    case 'c': ckpt_arg = optarg; break;
    case 'b': nbins = parse_long("--bins", optarg, 1, MAX_BINS, &ok); break;
    case 's': seed = parse_long("--seed", optarg, 0, 0x7fffffffL, &ok); break;
    case 'O': tsv_path = optarg; break;
    case 'p': plugin_path = optarg; break;
    case OPT_JSON: json = true; break;
    case 'q': quiet = true; break;
    case 'h': fputs(states_usage, stdout); return INTRUS_EXIT_OK;
    default: fputs(states_usage, stderr); return INTRUS_EXIT_USAGE;
    }
  }
  if (!ok) return INTRUS_EXIT_USAGE;
  if (optind != argc - 1 || !input || !ref) {
    fprintf(stderr, "intrus analyze states: expected one experiment file, -i SRC and -r REF\n%s",
            states_usage);
    return INTRUS_EXIT_USAGE;
  }
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_file(argv[optind], &err);
  if (!cfg) return intrus_cli_fail("analyze states", &err);
  struct cli_experiment x = {0};
  struct translator t = {0};
  struct states_job j = {.nbins = (int)nbins, .seed = (uint64_t)seed,
                         .progress = quiet ? NULL : stderr};
  char **src = NULL, **tgt = NULL, **src_seg = NULL, **tgt_seg = NULL, ckpt[4200];
  size_t n_src = 0, n_tgt = 0, tsv_len = 0;
  char *tsv_buf = NULL;
  struct intrus_corpus *corpus = NULL;
  struct intrus_batcher *batcher = NULL;
  enum intrus_status st;
  if ((st = intrus_cli_experiment(cfg, run_dir_arg, plugin_path, &x, &err))) goto done;
  snprintf(ckpt, sizeof ckpt, "%s", ckpt_arg ? ckpt_arg : "");
  if (!ckpt_arg) snprintf(ckpt, sizeof ckpt, "%s/checkpoint.ckpt", x.run_dir);
  if ((st = translator_open(cfg, x.run_dir, ckpt, x.search, &t, &err))) goto done;
  if (!intrus_model_is_insertion(t.model) || t.data.kind != DATA_PARALLEL) {
    st = intrus_error_set(&err, INTRUS_ERR_USAGE,
                          "%s: states are an insertion model's on text (decoder \"insertion\", "
                          "data.kind \"parallel\")",
                          argv[optind]);
    goto done;
  }
  if ((st = intrus_lines_read_any(input, &src, &n_src, &err)) ||
      (st = intrus_lines_read_any(ref, &tgt, &n_tgt, &err)))
    goto done;
  if (n_src != n_tgt) {
    st = intrus_error_set(&err, INTRUS_ERR_DATA, "%s has %zu lines, %s %zu: they must align",
                          input, n_src, ref, n_tgt);
    goto done;
  }
  if ((st = dataset_segment(&t.data, 0, src, n_src, &src_seg, &err)) ||
      (st = dataset_segment(&t.data, 1, tgt, n_tgt, &tgt_seg, &err)))
    goto done;
  /* Empty pairs have no states worth scoring; sources are cut as decoding cuts them. */
  struct intrus_corpus_opts copts = {.max_len = t.max_src_len, .skip_empty = true};
  if ((st = intrus_corpus_encode((const char *const *)src_seg, (const char *const *)tgt_seg,
                                 n_src, t.data.src_vocab, t.data.tgt_vocab, &copts, &corpus,
                                 &err)))
    goto done;
  if (corpus->dropped_long || corpus->dropped_empty)
    fprintf(stderr,
            "intrus analyze states: %zu pairs left out (%zu with a side over %d subwords, %zu "
            "with an empty side)\n",
            corpus->dropped_long + corpus->dropped_empty, corpus->dropped_long, t.max_src_len,
            corpus->dropped_empty);
  if (tsv_path) {
    /* Written whole at the end (a temporary file renamed over it), so a failed run
     * leaves no half table. */
    if ((st = cli_check_writable(tsv_path, &err))) goto done;
    if (!(j.tsv = open_memstream(&tsv_buf, &tsv_len))) {
      st = intrus_error_set(&err, INTRUS_ERR_NOMEM, "out of memory");
      goto done;
    }
    fprintf(j.tsv, "line\tk\tn\tloss\tlogp_finish\n");
  }
  j.model = t.model;
  j.line = corpus->line;
  j.total = (size_t)corpus->n;
  j.ctx = intrus_ctx_create(0);
  j.scratch = intrus_ctx_create(0);
  intrus_ctx_set_training(j.ctx, false);
  intrus_ctx_set_grad(j.ctx, false);
  intrus_ctx_set_training(j.scratch, false);
  intrus_ctx_set_grad(j.scratch, false);
  batcher = intrus_batcher_create_sorted(corpus, t.batch_tokens);
  size_t nb = intrus_batcher_epoch_size(batcher, 0);
  for (size_t i = 0; i < nb && !st; i++) {
    const int32_t *idx;
    int count = intrus_batcher_get(batcher, 0, i, &idx);
    st = job_batch(&j, corpus, idx, count, &err);
  }
  if (j.tsv) {
    bool bad = fclose(j.tsv) != 0;
    j.tsv = NULL;
    if (!st && bad) st = intrus_error_set(&err, INTRUS_ERR_NOMEM, "out of memory");
    if (!st) st = intrus_file_write_atomic(tsv_path, tsv_buf, tsv_len, &err);
  }
  if (!st) {
    if (json)
      print_json(&j, x.name, (uint64_t)seed);
    else
      print_table(&j, x.name, (uint64_t)seed);
  }
done:
  if (j.tsv) fclose(j.tsv);
  free(tsv_buf);
  intrus_ctx_destroy(j.ctx);
  intrus_ctx_destroy(j.scratch);
  intrus_batcher_free(batcher);
  intrus_corpus_free(corpus);
  dataset_lines_free(src_seg, n_src);
  dataset_lines_free(tgt_seg, n_tgt);
  if (src) intrus_lines_free(src, n_src);
  if (tgt) intrus_lines_free(tgt, n_tgt);
  translator_close(&t);
  intrus_plugin_search_free(x.search);
  intrus_config_free(cfg);
  return st ? intrus_cli_fail("analyze states", &err) : INTRUS_EXIT_OK;
}

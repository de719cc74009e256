/* What `intrus run` does with an experiment, shared by `intrus run` and `intrus table`:
 * train (resuming), decode the test split, score it, write results.json. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_distill.h"
#include "intrus/fileio.h"
#include "train/run_log.h"

static bool is_parallel(const struct intrus_config *cfg) {
  const intrus_cfg *data;
  const char *kind = "";
  if (!intrus_cfg_group(intrus_config_root(cfg), "data", &data, NULL) && data)
    intrus_cfg_string(data, "kind", "", &kind, NULL);
  return strcmp(kind, "parallel") == 0 || strcmp(kind, "images") == 0;
}

/* "key": {"name": value, ...} of a score result. */
static void json_scores(FILE *f, const char *key, const struct score_result *r) {
  fprintf(f, ", \"%s\": {", key);
  for (int i = 0; i < r->count; i++) {
    fprintf(f, "%s", i ? ", " : "");
    cli_json_string(f, r->names[i]);
    fprintf(f, ": %.6g", r->values[i]);
  }
  fputc('}', f);
}

static enum intrus_status write_results(const struct cli_experiment *x,
                                        const struct cli_run_result *r, uint64_t fp,
                                        struct intrus_error *err) {
  char *json = NULL;
  size_t json_len = 0;
  FILE *f = open_memstream(&json, &json_len);
  if (!f) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  const struct intrus_train_result *res = &r->train;
  fputs("{\"experiment\": ", f);
  cli_json_string(f, x->name);
  fprintf(f, ", \"fingerprint\": \"%016" PRIx64 "\"", fp);
  fprintf(f, ", \"steps\": %ld, \"train_loss\": %.6f, \"valid_loss\": %.6f", res->steps_done,
          res->last_loss, res->valid_loss);
  if (!isnan(res->valid_bleu)) fprintf(f, ", \"valid_bleu\": %.4f", res->valid_bleu);
  /* Validation decodes over the whole run (every resume), from train.log. */
  if (r->valid_decodes > 0)
    fprintf(f, ", \"valid_decodes\": %d, \"valid_decode_s\": %.1f", r->valid_decodes,
            r->valid_decode_s);
  if (r->text) {
    fprintf(f, ", \"test_checkpoint\": ");
    cli_json_string(f, r->scores.checkpoint);
    fprintf(f, ", \"test_sentences\": %zu, \"test_decode_s\": %.1f", r->scores.sentences,
            r->scores.decode_s);
    json_scores(f, "test", &r->scores.bleu);
    fputs(", \"bleu_signature\": ", f);
    cli_json_string(f, r->scores.bleu.signature);
    fprintf(f, ", \"test_references\": %d", r->scores.references);
    if (r->scores.has_cider) {
      json_scores(f, "test_cider", &r->scores.cider);
      fputs(", \"cider_signature\": ", f);
      cli_json_string(f, r->scores.cider.signature);
    }
  }
  fputs("}\n", f);
  fclose(f);
  enum intrus_status st = intrus_file_write_atomic(r->results_path, json, json_len, err);
  free(json);
  return st;
}

enum intrus_status cli_run_experiment(struct intrus_config *cfg, const struct cli_experiment *x,
                                      FILE *progress, long max_steps,
                                      struct cli_run_result *out, struct intrus_error *err) {
  memset(out, 0, sizeof *out);
  /* Before training fills in defaults: the file's own settings, as the table reads them. */
  const uint64_t fp = intrus_config_results_fingerprint(cfg);
  enum intrus_status st;
  /* data.distill: the corpus is made (or checked) first, after the fingerprint. */
  if ((st = cli_distill_for(cfg, x->run_dir, x->search, progress, err)) ||
      (st = intrus_run_check_test(cfg, x->run_dir, err)))
    return st;
  struct intrus_train_options opt = {
      .run_dir = x->run_dir, .search = x->search, .progress = progress, .max_steps = max_steps};
  if ((st = intrus_train(cfg, &opt, &out->train, err))) return st;
  out->text = is_parallel(cfg);
  if (out->text && (st = intrus_run_test(cfg, x->run_dir, x->search, progress, &out->scores, err)))
    return st;
  snprintf(out->results_path, sizeof out->results_path, "%s/results.json", x->run_dir);
  char log[sizeof out->results_path];
  snprintf(log, sizeof log, "%s/train.log", x->run_dir);
  if ((st = run_log_column_sum(log, "valid_decode_s", &out->valid_decode_s, &out->valid_decodes,
                               err)))
    return st;
  return write_results(x, out, fp, err);
}

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "intrus/checkpoint.h"
#include "model/insertion_model.h"
#include "translate.h"

enum intrus_status translator_read_search(const intrus_cfg *root, struct translator *t,
                                          struct intrus_error *err) {
  const intrus_cfg *g;
  long long beam, b, batch_tokens, max_src_len, slots;
  double alpha, a, beta;
  enum intrus_status st;
  t->beam = intrus_beam_defaults();
  t->batch_tokens = 2000;
  t->max_src_len = 256;
  if ((st = intrus_cfg_group(root, "search", &g, err))) return st;
  if (!g) return INTRUS_OK;
  if ((st = intrus_cfg_int_range(g, "beam", t->beam.beam, 1, 1024, &beam, err)) ||
      (st = intrus_cfg_double_range(g, "alpha", t->beam.alpha, 0.0, 10.0, &alpha, err)) ||
      (st = intrus_cfg_double_range(g, "max_len_a", t->beam.max_len_a, 0.0, 100.0, &a, err)) ||
      (st = intrus_cfg_int_range(g, "max_len_b", t->beam.max_len_b, 0, 10000, &b, err)) ||
      (st = intrus_cfg_int_range(g, "batch_tokens", t->batch_tokens, 1, 1 << 24, &batch_tokens,
                                 err)) ||
      (st = intrus_cfg_bool(g, "prune", t->beam.prune, &t->beam.prune, err)) ||
      (st = intrus_cfg_bool(g, "finish_in_beam", t->beam.finish_in_beam,
                            &t->beam.finish_in_beam, err)) ||
      (st = intrus_cfg_int_range(g, "max_src_len", t->max_src_len, 1, 1 << 16, &max_src_len,
                                 err)) ||
      (st = intrus_cfg_int_range(g, "slots", 0, 0, 1 << 20, &slots, err)) ||
      (st = intrus_cfg_double_range(g, "finish_penalty", 0.0, 0.0, 1e6, &beta, err)) ||
      (st = intrus_cfg_check_unknown(g, err)))
    return st;
  t->search_cfg = g;
  t->beam.slots = (int)slots;
  t->beam.finish_penalty = beta;
  t->beam.beam = (int)beam;
  t->beam.alpha = (float)alpha;
  t->beam.max_len_a = (float)a;
  t->beam.max_len_b = (int)b;
  t->batch_tokens = batch_tokens;
  t->max_src_len = (int)max_src_len;
  return INTRUS_OK;
}

enum intrus_status translator_set_beam(struct translator *t, int beam, const char *source,
                                       struct intrus_error *err) {
  if (beam > 0) t->beam.beam = beam;
  if (t->beam.slots > 0 && t->beam.slots < t->beam.beam)
    return intrus_cfg_error(t->search_cfg, "slots", err,
                            "%d slots is fewer than the beam (%d%s%s): at least `beam` slots "
                            "per hypothesis, or 0 for every slot",
                            t->beam.slots, t->beam.beam, beam > 0 && source ? ", from " : "",
                            beam > 0 && source ? source : "");
  return INTRUS_OK;
}

enum intrus_status translator_open(struct intrus_config *cfg, const char *run_dir,
                                   const char *ckpt_path,
                                   const struct intrus_plugin_search *search,
                                   struct translator *t, struct intrus_error *err) {
  memset(t, 0, sizeof *t);
  const intrus_cfg *root = intrus_config_root(cfg), *data_cfg, *model_cfg;
  long long seed;
  enum intrus_status st;
  if ((st = intrus_cfg_int_range(root, "seed", 1, 0, INT64_MAX, &seed, err)) ||
      (st = intrus_cfg_group_req(root, "data", &data_cfg, err)) ||
      (st = dataset_configure(&t->data, data_cfg, intrus_config_filename(cfg), run_dir, err)) ||
      (st = intrus_cfg_group_req(root, "model", &model_cfg, err)) ||
      (st = translator_read_search(root, t, err)))
    return st;
  if (t->data.kind == DATA_SYNTHETIC)
    return intrus_error_set(err, INTRUS_ERR_CONFIG,
                            "%s: decoding needs text or image data (data.kind = \"parallel\" "
                            "or \"images\")",
                            intrus_config_filename(cfg));
  if ((st = dataset_load_pipeline(&t->data, run_dir, err)) ||
      (st = intrus_model_create(model_cfg, search, t->data.src_vocab_size,
                                t->data.tgt_vocab_size, (uint64_t)seed, &t->model, err)))
    return st;
  static const char *const fp_paths[] = {"data", "model"};
  uint64_t fp = intrus_config_fingerprint(cfg, fp_paths, 2), vocab_fp = 0;
  struct intrus_ckpt *ck;
  if ((st = intrus_ckpt_read(ckpt_path, true, fp, &ck, err))) return st;
  st = intrus_ckpt_check_finite(ck, intrus_model_params(t->model), false, err);
  if (!st) st = intrus_ckpt_get_params(ck, intrus_model_params(t->model), false, err);
  if (!st && (!intrus_ckpt_u64(ck, "vocab", &vocab_fp) || vocab_fp != t->data.vocab_fingerprint))
    st = intrus_error_set(err, INTRUS_ERR_FORMAT,
                          "%s: written with another vocabulary than the one in %s", ckpt_path,
                          run_dir);
  intrus_ckpt_free(ck);
  return st;
}

void translator_close(struct translator *t) {
  intrus_model_destroy(t->model);
  dataset_free(&t->data);
  memset(t, 0, sizeof *t);
}

enum intrus_status translator_run(struct translator *t, char *const *lines, size_t n,
                                  FILE *progress, char ***out, struct intrus_ins_hyp *traj,
                                  struct intrus_error *err) {
  return translate_lines(t->model, &t->data, &t->beam, t->batch_tokens, t->max_src_len,
                         t->input_name, NULL, lines, n, progress,
                         out, traj, err);
}

/* Insertion beam search over one batch: results[k] for sentence k of sb. */
static enum intrus_status insertion_batch(struct intrus_model *model, intrus_ctx *scratch,
                                          const struct intrus_src_batch *sb,
                                          const struct intrus_beam_opts *beam,
                                          struct intrus_ins_hyp *hyps,
                                          struct intrus_ins_search_stats *stats,
                                          struct intrus_error *err) {
  struct ins_model_scorer sc;
  int *max_steps = malloc((size_t)sb->batch * sizeof *max_steps);
  if (!max_steps) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  for (int b = 0; b < sb->batch; b++) {
    int srclen = sb->lens ? sb->lens[b] : sb->len;
    max_steps[b] = (int)(beam->max_len_a * srclen) + beam->max_len_b;
    if (max_steps[b] < 0) max_steps[b] = 0;
  }
  struct intrus_ins_search_opts o = {.beam = beam->beam, .alpha = beam->alpha,
                                     .prune = beam->prune, .slots = beam->slots,
                                     .finish_penalty = beam->finish_penalty,
                                     .finish_in_beam = beam->finish_in_beam,
                                     .canonical = intrus_model_canonical(model)};
  enum intrus_status st = ins_scorer_open(&sc, model, scratch, sb, err);
  if (!st) st = intrus_ins_beam_search(&sc.sc, sb->batch, max_steps, &o, hyps, stats, err);
  ins_scorer_close(&sc);
  free(max_steps);
  return st;
}

/* Cuts the segmented line (subwords separated by single spaces) after max tokens. */
/* Cuts one segmented line to max subword tokens; warns when it cuts, unless quiet. */
static bool cut_line(char *seg, int max, const char *name, size_t line, bool quiet) {
  int count = 0;
  char *cut = NULL;
  for (char *p = seg; *p;) {
    while (*p == ' ') p++;
    if (!*p) break;
    if (++count == max + 1) cut = p;
    while (*p && *p != ' ') p++;
  }
  if (!cut) return false;
  while (cut > seg && cut[-1] == ' ') cut--;
  *cut = '\0';
  if (!quiet)
    fprintf(stderr,
            "intrus: warning: %s:%zu: %d subword tokens; decoding the first %d "
            "(search.max_src_len)\n",
            name ? name : "input", line, count, max);
  return true;
}

/* Decoding one batch: result k of the batch goes to res[line[k]] (and its trajectory to
 * traj[line[k]]). */
struct decode_job {
  struct intrus_model *model;
  struct dataset *data;
  const struct intrus_beam_opts *beam;
  intrus_ctx *ctx, *scratch;
  char **res;
  struct intrus_ins_hyp *traj;
  struct intrus_ins_search_stats stats;
  struct intrus_str s;
  size_t done, n;
  time_t last;
  FILE *progress;
};

/* The input line of a batch's sentence k: map[idx[k]], or idx[k] without a map. */
static inline size_t batch_line(const int32_t *idx, const size_t *map, int k) {
  return map ? map[idx[k]] : (size_t)idx[k];
}

/* A left-to-right or right-to-left output as the insertions that wrote it, so that order
 * analyses and pictures take every decoder alike: step t appends (slot t) or, right to
 * left, prepends (slot 0) the t-th token generated. r->tokens are in generation order. */
static enum intrus_status order_trajectory(const struct intrus_beam_result *r, bool reverse,
                                           struct intrus_ins_hyp *h, struct intrus_error *err) {
  size_t n = (size_t)(r->len > 0 ? r->len : 1);
  h->len = r->len;
  h->logp = r->logp;
  h->score = r->score;
  h->tokens = malloc(n * sizeof *h->tokens);
  h->steps = malloc(n * sizeof *h->steps);
  if (!h->tokens || !h->steps) {
    intrus_ins_hyp_free(h);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  for (int t = 0; t < r->len; t++) {
    h->steps[t] = (struct intrus_ins_step){.slot = reverse ? 0 : t, .token = r->tokens[t]};
    h->tokens[reverse ? r->len - 1 - t : t] = r->tokens[t];
  }
  return INTRUS_OK;
}

/* Decodes one batch; sentence k of it is input line batch_line(idx, map, k). */
static enum intrus_status decode_batch(struct decode_job *j, const struct intrus_src_batch *sb,
                                       const int32_t *idx, const size_t *map,
                                       struct intrus_error *err) {
  const int count = sb->batch;
  enum intrus_status st;
  if (intrus_model_is_insertion(j->model)) {
    struct intrus_ins_hyp *h = calloc((size_t)count, sizeof *h);
    if (!h) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    st = insertion_batch(j->model, j->scratch, sb, j->beam, h, &j->stats, err);
    for (int k = 0; k < count && !st; k++) {
      dataset_detok(j->data, h[k].tokens, h[k].len, false, &j->s);
      j->res[batch_line(idx, map, k)] = strdup(j->s.s ? j->s.s : "");
      if (j->traj) {
        j->traj[batch_line(idx, map, k)] = h[k];
        memset(&h[k], 0, sizeof h[k]);
      }
    }
    for (int k = 0; k < count; k++) intrus_ins_hyp_free(&h[k]);
    free(h);
  } else {
    struct intrus_beam_result *r = calloc((size_t)count, sizeof *r);
    if (!r) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    bool reverse = intrus_model_direction(j->model) < 0;
    st = intrus_beam_search(j->model, j->ctx, sb, j->beam, r, err);
    for (int k = 0; k < count && !st; k++) {
      dataset_detok(j->data, r[k].tokens, r[k].len, reverse, &j->s);
      j->res[batch_line(idx, map, k)] = strdup(j->s.s ? j->s.s : "");
      if (j->traj && (st = order_trajectory(&r[k], reverse, &j->traj[batch_line(idx, map, k)],
                                            err)))
        break;
    }
    for (int k = 0; k < count; k++) free(r[k].tokens);
    free(r);
  }
  if (st) return st;
  j->done += (size_t)count;
  if (j->progress && (time(NULL) - j->last >= 10 || j->done == j->n)) {
    fprintf(j->progress, "decoded %zu/%zu %s\n", j->done, j->n,
            j->data->kind == DATA_IMAGES ? "images" : "sentences");
    fflush(j->progress);
    j->last = time(NULL);
  }
  return INTRUS_OK;
}

static enum intrus_status job_open(struct decode_job *j, struct intrus_model *model,
                                   struct dataset *data, const struct intrus_beam_opts *beam,
                                   size_t n, FILE *progress, struct intrus_ins_hyp *traj,
                                   struct intrus_error *err) {
  memset(j, 0, sizeof *j);
  j->model = model;
  j->data = data;
  j->beam = beam;
  j->n = n;
  j->progress = progress;
  j->traj = traj;
  j->last = time(NULL);
  if (!(j->res = calloc(n ? n : 1, sizeof *j->res)))
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  j->ctx = intrus_ctx_create(0);
  intrus_ctx_set_training(j->ctx, false);
  if (intrus_model_is_insertion(model)) j->scratch = intrus_ctx_create(0);
  return INTRUS_OK;
}

/* Ends a job: on success hands over the results (missing ones empty) and reports the
 * insertion search's time; on failure frees them. */
static enum intrus_status job_close(struct decode_job *j, enum intrus_status st, char ***out) {
  if (!st) {
    for (size_t i = 0; i < j->n; i++)
      if (!j->res[i]) j->res[i] = strdup("");
    if (intrus_model_is_insertion(j->model) && j->progress && j->n) {
      const struct intrus_ins_search_stats *t = &j->stats;
      fprintf(j->progress,
              "insertion search: %.1f s decoder (positions), %.1f s token softmax, %.1f s "
              "selection; token softmax at %ld of %ld slots (%.1f%%; %.1f%% skipped, %.1f%% "
              "of all for the finish bound alone)\n",
              t->positions_s, t->tokens_s, t->select_s, t->slots_scored, t->slots_total,
              100.0 * t->slots_scored / (t->slots_total ? t->slots_total : 1),
              100.0 * (t->slots_total - t->slots_scored) / (t->slots_total ? t->slots_total : 1),
              100.0 * t->slots_finish / (t->slots_total ? t->slots_total : 1));
      fflush(j->progress);
    }
    *out = j->res;
  } else if (j->res) {
    for (size_t i = 0; i < j->n; i++) free(j->res[i]);
    free(j->res);
  }
  intrus_str_free(&j->s);
  intrus_ctx_destroy(j->ctx);
  intrus_ctx_destroy(j->scratch);
  return st;
}

enum intrus_status translate_lines(struct intrus_model *model, struct dataset *data,
                                   const struct intrus_beam_opts *beam, long batch_tokens,
                                   int max_src_len, const char *src_name, bool *cut_warned,
                                   char *const *lines, size_t n, FILE *progress, char ***out,
                                   struct intrus_ins_hyp *traj, struct intrus_error *err) {
  char **seg = NULL;
  struct intrus_corpus *c = NULL;
  struct intrus_batcher *b = NULL;
  struct decode_job j;
  enum intrus_status st = job_open(&j, model, data, beam, n, progress, traj, err);
  if (st) return job_close(&j, st, out);
  if ((st = dataset_segment(data, 0, lines, n, &seg, err))) goto done;
  const bool quiet = cut_warned && *cut_warned;
  bool cut = false;
  for (size_t i = 0; i < n; i++) cut |= cut_line(seg[i], max_src_len, src_name, i + 1, quiet);
  if (cut && cut_warned) *cut_warned = true;
  if ((st = intrus_corpus_encode((const char *const *)seg, NULL, n, data->src_vocab, NULL, NULL,
                                 &c, err)))
    goto done;
  b = intrus_batcher_create_sorted(c, batch_tokens);
  size_t nb = intrus_batcher_epoch_size(b, 0);
  for (size_t i = 0; i < nb && !st; i++) {
    const int32_t *idx;
    int count = intrus_batcher_get(b, 0, i, &idx);
    intrus_ctx_reset(j.ctx);
    struct intrus_src_batch sb;
    intrus_corpus_fill_batch(c, j.ctx, idx, count, &sb, NULL);
    st = decode_batch(&j, &sb, idx, c->line, err);
  }
done:
  intrus_batcher_free(b);
  intrus_corpus_free(c);
  dataset_lines_free(seg, n);
  return job_close(&j, st, out);
}

static enum intrus_status image_batch(const struct intrus_src_batch *src, const int32_t *idx,
                                      int count, void *user, struct intrus_error *err) {
  (void)count; /* src->batch */
  return decode_batch(user, src, idx, NULL, err);
}

enum intrus_status translate_images(struct intrus_model *model, struct dataset *data,
                                    const struct intrus_beam_opts *beam,
                                    struct dataset_image_input *in, FILE *progress, char ***out,
                                    struct intrus_ins_hyp *traj, struct intrus_error *err) {
  struct decode_job j;
  enum intrus_status st =
      job_open(&j, model, data, beam, dataset_images_input_count(in), progress, traj, err);
  /* The decode job's ctx is reset per batch by the input's batches. */
  if (!st) st = dataset_images_input_batches(data, in, j.ctx, image_batch, &j, err);
  return job_close(&j, st, out);
}

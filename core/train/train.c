/* PACKAGE_VERSION comes from config.h; the fuzzers (tests/fuzz/run.sh) compile the core
 * without it. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intrus/checkpoint.h"
#include "intrus/model.h"
#include "intrus/optim.h"
#include "intrus/rng.h"
#include "intrus/train.h"
#include "model/warm_start.h"
#include "text/dataset.h"
#include "eval/score.h"
#include "train_phases.h"
#include "train_resume.h"
#include "run_dir.h"
#include "search/translate.h"
#include "dist/dist.h"
#include "base/clock.h"
#include "intrus/blas.h"
#include "tensor/ops_internal.h"

struct train_cfg {
  long steps, log_every, valid_every, checkpoint_every, batch_tokens, valid_bleu;
  long bleu_every;  /* steps between validation BLEU decodes (a multiple of valid_every) */
  int valid_beam;   /* beam of the validation decodes (0: the search group's) */
  int batch;
  long micro_tokens; /* micro_batch_tokens: a step's batch in pieces of at most this (0: whole) */
  bool has_phases;
  float label_smoothing;
  struct intrus_adam adam;
};

static enum intrus_status read_train(const intrus_cfg *root, struct train_cfg *t,
                                     struct intrus_error *err) {
  const intrus_cfg *g;
  long long steps, batch, batch_tokens, valid_bleu, warmup, log_every, valid_every, ckpt_every;
  long long bleu_every, valid_beam, micro_tokens;
  double lr, clip, smoothing, beta1, beta2;
  enum intrus_status st;
  if ((st = intrus_cfg_group_req(root, "train", &g, err))) return st;
  t->has_phases = intrus_cfg_has(g, "phases");
  if (t->has_phases && intrus_cfg_has(g, "steps"))
    return intrus_cfg_error(g, "steps", err,
                            "not with train.phases: each phase gives its own steps");
  if (t->has_phases) intrus_cfg_mark_read(g, "phases");
  /* With phases the steps are theirs: reading train.steps would put its default into
   * effective.cfg, which then could not be trained again (steps beside phases). */
  steps = 0;
  if ((!t->has_phases &&
       (st = intrus_cfg_int_range(g, "steps", 1000, 1, 1LL << 40, &steps, err))) ||
      (st = intrus_cfg_int_range(g, "batch", 32, 1, 1 << 20, &batch, err)) ||
      (st = intrus_cfg_int_range(g, "batch_tokens", 4000, 1, 1 << 24, &batch_tokens, err)) ||
      (st = intrus_cfg_int_range(g, "micro_batch_tokens", 0, 0, 1 << 24, &micro_tokens, err)) ||
      (st = intrus_cfg_double_range(g, "lr", 1.4e-3, 0.0, 10.0, &lr, err)) ||
      (st = intrus_cfg_int_range(g, "warmup", 16000, 0, 1LL << 40, &warmup, err)) ||
      (st = intrus_cfg_double_range(g, "beta1", 0.9, 0.0, 0.999999, &beta1, err)) ||
      (st = intrus_cfg_double_range(g, "beta2", 0.998, 0.0, 0.999999, &beta2, err)) ||
      (st = intrus_cfg_double_range(g, "clip", 0.0, 0.0, 1e9, &clip, err)) ||
      (st = intrus_cfg_double_range(g, "label_smoothing", 0.0, 0.0, 0.99, &smoothing, err)) ||
      (st = intrus_cfg_int_range(g, "log_every", 100, 1, 1LL << 40, &log_every, err)) ||
      (st = intrus_cfg_int_range(g, "valid_every", 1000, 1, 1LL << 40, &valid_every, err)) ||
      (st = intrus_cfg_int_range(g, "checkpoint_every", 1000, 1, 1LL << 40, &ckpt_every, err)) ||
      (st = intrus_cfg_int_range(g, "valid_bleu", 200, 0, 1 << 20, &valid_bleu, err)) ||
      (st = intrus_cfg_int_range(g, "valid_bleu_every", valid_every, 1, 1LL << 40, &bleu_every,
                                 err)) ||
      (st = intrus_cfg_int_range(g, "valid_beam", 0, 0, 1024, &valid_beam, err)) ||
      (st = intrus_cfg_check_unknown(g, err)))
    return st;
  if (bleu_every % valid_every)
    return intrus_cfg_error(g, "valid_bleu_every", err,
                            "must be a multiple of valid_every (%lld), got %lld", valid_every,
                            bleu_every);
  t->bleu_every = bleu_every;
  t->valid_beam = (int)valid_beam;
  t->steps = steps;
  t->batch = (int)batch;
  t->batch_tokens = batch_tokens;
  t->micro_tokens = micro_tokens;
  t->valid_bleu = valid_bleu;
  t->log_every = log_every;
  t->valid_every = valid_every;
  t->checkpoint_every = ckpt_every;
  t->label_smoothing = (float)smoothing;
  t->adam = intrus_adam_defaults();
  t->adam.base_lr = (float)lr;
  t->adam.warmup = (int)warmup;
  t->adam.beta1 = (float)beta1;
  t->adam.beta2 = (float)beta2;
  t->adam.clip_norm = (float)clip;
  return INTRUS_OK;
}

struct valid_acc {
  struct intrus_model *m;
  intrus_ctx *ctx, *scratch;
  const struct ins_train_spec *ins; /* insertion models: the validation policy */
  uint64_t seed;
  struct intrus_train_opts opts;
  double sum;
  long tokens;
};

/* Sentences b0..b1 of a batch as a batch of their own (views, no copies). */
static void batch_slice(const struct intrus_src_batch *sb, const struct intrus_tgt_batch *tb,
                        int b0, int b1, struct intrus_src_batch *s, struct intrus_tgt_batch *t) {
  *s = *sb;
  *t = *tb;
  s->batch = t->batch = b1 - b0;
  s->lens = sb->lens + b0;
  t->lens = tb->lens + b0;
  if (sb->tokens) s->tokens = sb->tokens + (size_t)b0 * sb->len;
  if (sb->pixels) s->pixels = sb->pixels + (size_t)b0 * sb->channels * sb->height * sb->width;
  if (sb->heights) s->heights = sb->heights + b0;
  if (sb->widths) s->widths = sb->widths + b0;
  t->tokens = tb->tokens + (size_t)b0 * tb->len;
}

/* Decoder rows the all-states validation of an insertion model may score at once: a
 * target of n tokens has n + 1 states of k + 2 rows each, and the token logits take a
 * vocabulary-wide row per slot with a correct insertion. Batches of short targets stay
 * under it; a validation pair of about 990 subwords needed 16.5 GB in one piece (Ru-En,
 * 2026-11-29). */
enum { VALID_MAX_ROWS = 1 << 17 };

static long all_states_rows(long n) { return (n + 1) * (n + 4) / 2; }

/* The insertion validation of a batch too large for VALID_MAX_ROWS: one sentence at a
 * time (as sentence first + b of the batch, so each keeps its order), its states in
 * windows of at most VALID_MAX_ROWS rows; the same state losses as the whole batch. The
 * batch lives in validate's batch context, so ctx is reset between pieces. */
static enum intrus_status valid_batch_pieces(struct valid_acc *a,
                                             const struct intrus_src_batch *src,
                                             const struct intrus_tgt_batch *tgt, uint64_t seed,
                                             struct intrus_error *err) {
  struct ins_train_spec spec = *a->ins;
  enum intrus_status st = INTRUS_OK;
  for (int b = 0; b < tgt->batch && !st; b++) {
    struct intrus_src_batch s1;
    struct intrus_tgt_batch t1;
    batch_slice(src, tgt, b, b + 1, &s1, &t1);
    const int n = tgt->lens[b];
    for (int lo = 0; lo <= n && !st;) {
      int hi = lo;
      long rows = 0;
      while (hi <= n && (hi == lo || rows + hi + 2 <= VALID_MAX_ROWS)) rows += hi++ + 2;
      spec.state_lo = lo;
      spec.state_hi = hi;
      intrus_ctx_reset(a->ctx);
      struct intrus_loss_out out;
      st = ins_train_loss_at(a->m, a->ctx, a->scratch, &s1, &t1, b, &spec, seed, &out, err);
      if (st) break;
      a->sum += out.nll_sum;
      if (lo == 0) a->tokens += out.tokens;
      lo = hi;
    }
  }
  return st;
}

/* Data-parallel: rank r scores batches r, r + N, ...; a batch's seed is its index's. */
static enum intrus_status valid_batch(const struct intrus_src_batch *src,
                                      const struct intrus_tgt_batch *tgt, long index, void *user,
                                      struct intrus_error *err) {
  struct valid_acc *a = user;
  struct intrus_loss_out out;
  const uint64_t seed = intrus_hash64(a->seed ^ 0x7a11dULL, (uint64_t)index);
  if (a->ins && a->ins->all_states) {
    long rows = 0;
    for (int b = 0; b < tgt->batch; b++) rows += all_states_rows(tgt->lens[b]);
    if (rows > VALID_MAX_ROWS) return valid_batch_pieces(a, src, tgt, seed, err);
  }
  intrus_ctx_reset(a->ctx);
  enum intrus_status st =
      a->ins ? ins_train_loss(a->m, a->ctx, a->scratch, src, tgt, a->ins, seed, &out, err)
             : intrus_model_loss(a->m, a->ctx, src, tgt, &a->opts, &out, err);
  if (st) return st;
  a->sum += out.nll_sum;
  a->tokens += out.tokens;
  return INTRUS_OK;
}

/* Per-token validation loss (no label smoothing, no dropout). Collective: the ranks
 * share the batches and sum their losses. */
static enum intrus_status validate(struct intrus_model *m, intrus_ctx *ctx, intrus_ctx *scratch,
                                   const struct train_phases *ph, struct dataset *d,
                                   const struct train_cfg *t, uint64_t seed, double *loss,
                                   struct intrus_error *err) {
  struct valid_acc a = {.m = m, .ctx = ctx, .scratch = scratch, .ins = ph->count ? &ph->valid : NULL,
                        .seed = seed, .opts = {.direction = intrus_model_direction(m)}};
  intrus_ctx_set_training(ctx, false);
  intrus_ctx_set_grad(ctx, false);
  /* The batches in a context of their own: the losses' ctx is reset under them. */
  intrus_ctx *bctx = intrus_ctx_create(0);
  enum intrus_status st =
      dataset_valid_batches(d, bctx, seed, t->batch, t->batch_tokens,
                            (struct dataset_share){dist_size(), dist_rank()}, valid_batch, &a, err);
  intrus_ctx_destroy(bctx);
  intrus_ctx_set_grad(ctx, true);
  if ((st = dist_agree(st, err))) return st;
  double sums[2] = {a.sum, (double)a.tokens};
  dist_sum_doubles(sums, 2);
  *loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
  return INTRUS_OK;
}

/* Whether validation measures BLEU at all: text or image data and train.valid_bleu > 0. */
static bool bleu_measured(const struct dataset *d, const struct train_cfg *t) {
  return d->kind != DATA_SYNTHETIC && t->valid_bleu > 0;
}

/* BLEU of the first train.valid_bleu validation sentences, decoded with the search
 * settings; NAN when not bleu_measured(). */
static enum intrus_status validate_bleu(struct intrus_model *m, struct dataset *d,
                                        const struct train_cfg *t, const struct translator *search,
                                        const struct intrus_plugin_search *plugins,
                                        const intrus_cfg *bleu_cfg, double *bleu,
                                        struct intrus_error *err) {
  *bleu = NAN;
  if (!bleu_measured(d, t)) return INTRUS_OK;
  char **hyps;
  struct intrus_beam_opts beam = search->beam;
  if (t->valid_beam > 0) beam.beam = t->valid_beam;
  if (d->kind == DATA_IMAGES) {
    /* The first valid_bleu validation images, against every reference. */
    struct dataset_image_input *in;
    enum intrus_status st = dataset_images_valid_input(d, (size_t)t->valid_bleu, &in, err);
    if (st) return st;
    size_t n = dataset_images_input_count(in);
    st = translate_images(m, d, &beam, in, NULL, &hyps, NULL, err);
    dataset_images_input_free(in);
    if (st) return st;
    struct score_result r;
    st = score_corpus_refs(plugins, "bleu", bleu_cfg, hyps, d->valid_refs, d->valid_nrefs, n, &r,
                           err);
    dataset_lines_free(hyps, n);
    if (!st) *bleu = r.values[0];
    return st;
  }
  size_t n = d->valid_text.n < (size_t)t->valid_bleu ? d->valid_text.n : (size_t)t->valid_bleu;
  char valid_name[4200];
  dataset_split_path(d, "valid", d->src_lang, valid_name, sizeof valid_name);
  enum intrus_status st =
      translate_lines(m, d, &beam, search->batch_tokens, search->max_src_len, valid_name,
                      d->valid_text.src, n, NULL, &hyps, NULL, err);
  if (st) return st;
  struct score_result r;
  st = score_corpus(plugins, "bleu", bleu_cfg, hyps, d->valid_text.tgt, n, &r, err);
  dataset_lines_free(hyps, n);
  if (!st) *bleu = r.values[0];
  return st;
}


/* Where a phased run stands (saved with every checkpoint, so a resumed run continues
 * the same phase with the same schedule). */
struct phase_state {
  long cur, start, sched_start, stale;
  double best;
};

static enum intrus_status put_phase_state(struct intrus_ckpt_writer *w,
                                          const struct phase_state *ps,
                                          struct intrus_error *err) {
  uint64_t best_bits;
  memcpy(&best_bits, &ps->best, sizeof best_bits);
  enum intrus_status st;
  if ((st = intrus_ckpt_put_u64(w, "phase", (uint64_t)ps->cur, err)) ||
      (st = intrus_ckpt_put_u64(w, "phase_start", (uint64_t)ps->start, err)) ||
      (st = intrus_ckpt_put_u64(w, "sched_start", (uint64_t)ps->sched_start, err)) ||
      (st = intrus_ckpt_put_u64(w, "phase_stale", (uint64_t)ps->stale, err)) ||
      (st = intrus_ckpt_put_u64(w, "phase_best", best_bits, err)))
    return st;
  return INTRUS_OK;
}

/* init_source: the warm start's source content (model.init), NULL without one. */
static enum intrus_status save_checkpoint(const char *path, uint64_t fp,
                                          struct intrus_model *m, long step, double last_loss,
                                          double best, uint64_t vocab_fp,
                                          const struct phase_state *ps, double train_s,
                                          const uint64_t *init_source, struct intrus_error *err) {
  uint64_t loss_bits, best_bits;
  memcpy(&loss_bits, &last_loss, sizeof loss_bits);
  memcpy(&best_bits, &best, sizeof best_bits);
  struct intrus_ckpt_writer *w;
  enum intrus_status st = intrus_ckpt_begin(path, fp, &w, err);
  if (st) return st;
  if ((st = intrus_ckpt_put_params(w, intrus_model_params(m), true, err)) ||
      (st = intrus_ckpt_put_u64(w, "step", (uint64_t)step, err)) ||
      (st = intrus_ckpt_put_u64(w, "last_loss", loss_bits, err)) ||
      (st = intrus_ckpt_put_u64(w, "vocab", vocab_fp, err)) ||
      (st = intrus_ckpt_put_u64(w, "best", best_bits, err)) ||
      (st = intrus_ckpt_put_u64(w, "train_ms", (uint64_t)llround(fmax(train_s, 0.0) * 1e3), err)) ||
      (st = put_phase_state(w, ps, err)) ||
      (init_source && (st = intrus_ckpt_put_u64(w, "init_source", *init_source, err)))) {
    intrus_ckpt_abort(w);
    return st;
  }
  return intrus_ckpt_commit(w, err);
}

/* After a step of a phased run: updates the phase's plateau count with the validation
 * score (NAN when there was none) and moves to the next phase when this one is over
 * (restarting Adam's moments and the schedule when the next phase asks for it).
 * Returns true when the phase changed. */
static bool advance_phase(const struct train_phases *ph, struct phase_state *ps, long step,
                          double score, struct intrus_params *params, FILE *progress) {
  const struct train_phase *p = &ph->phase[ps->cur];
  bool plateaued = false;
  if (!isnan(score) && p->plateau) {
    if (score > ps->best) {
      ps->best = score;
      ps->stale = 0;
    } else if (++ps->stale >= p->patience) {
      plateaued = true;
    }
  }
  if (!plateaued && step - ps->start < p->steps) return false;
  if (progress)
    fprintf(progress, "phase %s ended at step %ld (%s)\n", p->name, step,
            plateaued ? "validation stopped improving" : "its steps are done");
  ps->cur++;
  ps->start = step;
  ps->stale = 0;
  ps->best = -INFINITY;
  if (ps->cur < ph->count && ph->phase[ps->cur].restart_optimizer) {
    intrus_params_zero_moments(params);
    ps->sched_start = step;
  }
  if (progress && ps->cur < ph->count)
    fprintf(progress, "phase %s begins at step %ld\n", ph->phase[ps->cur].name, step);
  return true;
}

static void format_eta(char *buf, size_t n, double s) {
  if (!isfinite(s) || s < 0) s = 0;
  long t = (long)(s + 0.5);
  snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* Everything one training run holds, so that intrus_train reads as its steps. */
struct trainer {
  const struct intrus_train_options *opt;
  struct intrus_train_result *res;
  const char *name;
  long long seed;
  struct train_cfg tc;
  struct train_phases ph;
  struct dataset data;
  struct translator search;      /* the search settings, read and checked before training */
  const intrus_cfg *bleu_cfg;    /* eval.bleu, or NULL */
  struct intrus_model *model;
  struct intrus_params *params;
  intrus_ctx *ctx, *scratch;     /* scratch: insertion models' order-policy scoring */
  intrus_ctx *bctx;              /* the step's batch when it is split into micro-batches */
  FILE *log;
  int lock_fd;                   /* holds the run directory's lock; -1 before */
  uint64_t fp;                   /* config fingerprint every checkpoint carries */
  struct warm_source warm;       /* model.init */
  bool has_init_source;          /* warm-started: the source's content, in every checkpoint */
  uint64_t init_source;
  char ckpt_path[4096], best_path[4096];
  long step, stop;
  double best;                   /* best validation score: BLEU when measured, else -loss */
  struct phase_state ps;
  /* Wall seconds spent training (validation excluded) before this process, and in it. */
  double train_before, valid_time, t0;
  /* The progress window since the last log row. */
  double window_t, loss_sum;
  /* Where the progress line's rate is measured from: the start of this process or of
   * the phase, whichever is later (phases cost differently per step: INTRUS's sampled
   * steps 3-4 times its pretraining steps). */
  long eta_step0;
  double eta_t0;
  double last_lr;                /* the learning rate of the last update, for the log */
  long tokens_total, window_tokens, window_steps;
};


/* Reads the experiment (strictly: unknown keys are errors), prepares the data and the
 * vocabulary, and builds the model. */
static enum intrus_status trainer_setup(struct trainer *t, struct intrus_config *cfg,
                                        struct intrus_error *err) {
  const intrus_cfg *root = intrus_config_root(cfg);
  const char *plugin_path;
  const intrus_cfg *model_cfg, *data_cfg, *train_cfg, *eval_cfg = NULL;
  enum intrus_status st;
  if ((st = intrus_cfg_string(root, "name", "experiment", &t->name, err)) ||
      (st = intrus_cfg_int_range(root, "seed", 1, 0, INT64_MAX, &t->seed, err)) ||
      (st = intrus_cfg_string(root, "plugin_path", "", &plugin_path, err)) ||
      (st = intrus_cfg_group_req(root, "data", &data_cfg, err)) ||
      (st = dataset_configure(&t->data, data_cfg, intrus_config_filename(cfg), t->opt->run_dir,
                              err)) ||
      (st = read_train(root, &t->tc, err)) ||
      (st = intrus_cfg_group_req(root, "train", &train_cfg, err)) ||
      (t->tc.has_phases && (st = train_phases_read(train_cfg, t->opt->search, &t->ph, err))) ||
      (st = intrus_cfg_group_req(root, "model", &model_cfg, err)) ||
      /* Rank 0 alone owns the run directory; the other ranks only read it. */
      (dist_rank() == 0 && !t->opt->settings_only &&
       ((st = run_dir_make(t->opt->run_dir, err)) ||
        (st = run_dir_lock(t->opt->run_dir, &t->lock_fd, err)))) ||
      (!t->opt->settings_only &&
       (st = dataset_prepare(&t->data, t->opt->run_dir, t->tc.batch_tokens, (uint64_t)t->seed,
                             t->opt->progress, err))) ||
      /* Reading settings alone learns no vocabulary: the model gets a small stand-in. */
      (t->opt->settings_only && !t->data.src_vocab_size &&
       (t->data.src_vocab_size = t->data.tgt_vocab_size = 64) == 0) ||
      (st = intrus_model_create(model_cfg, t->opt->search, t->data.src_vocab_size,
                                t->data.tgt_vocab_size, (uint64_t)t->seed, &t->model, err)) ||
      (st = intrus_warm_source_read(model_cfg, intrus_config_filename(cfg), &t->warm, err)) ||
      (st = translator_read_search(root, &t->search, err)))
    return st;
  /* Refused now, not at the first validation decode. */
  if (t->search.beam.slots > 0 && t->tc.valid_beam > t->search.beam.slots)
    return intrus_cfg_error(train_cfg, "valid_beam", err,
                            "%d is more than search.slots = %d (at least `beam` slots)",
                            t->tc.valid_beam, t->search.beam.slots);
  if (intrus_model_is_insertion(t->model) != t->tc.has_phases)
    return t->tc.has_phases
               ? intrus_cfg_error(train_cfg, "phases", err,
                                  "phases (order policies) train insertion decoders; this "
                                  "model's decoder is not one")
               : intrus_cfg_error(train_cfg, NULL, err,
                                  "an insertion decoder trains in phases: give train.phases "
                                  "(see docs/intrus.md)");
  /* Training phases smooth their token terms as the baseline smooths its targets; the
   * validation loss, compared across runs, never does. */
  for (int i = 0; i < t->ph.count; i++) t->ph.phase[i].spec.label_smoothing = t->tc.label_smoothing;
  /* eval.checkpoint is intrus run's (which checkpoint decodes the test set); read here
   * too so that a bad value is refused before training rather than after it. */
  static const char *const test_ckpts[] = {"last", "best", NULL};
  int test_ckpt;
  const intrus_cfg *cider_cfg;
  if ((st = intrus_cfg_group(root, "eval", &eval_cfg, err)) ||
      (eval_cfg && (st = intrus_cfg_group(eval_cfg, "bleu", &t->bleu_cfg, err))) ||
      (eval_cfg && (st = intrus_cfg_group(eval_cfg, "cider", &cider_cfg, err))) ||
      (eval_cfg &&
       (st = intrus_cfg_choice(eval_cfg, "checkpoint", "last", test_ckpts, &test_ckpt, err))) ||
      (eval_cfg && (st = intrus_cfg_check_unknown(eval_cfg, err))) ||
      (st = intrus_cfg_check_unknown(root, err)))
    return st;
  static const char *const fp_paths[] = {"data", "model"};
  t->fp = intrus_config_fingerprint(cfg, fp_paths, 2);
  t->params = intrus_model_params(t->model);
  snprintf(t->ckpt_path, sizeof t->ckpt_path, "%s/checkpoint.ckpt", t->opt->run_dir);
  snprintf(t->best_path, sizeof t->best_path, "%s/best.ckpt", t->opt->run_dir);
  return INTRUS_OK;
}

/* Continues from the run's checkpoint.ckpt when there is one: parameters, Adam's
 * moments, step, best score, training time and where the phases stand. */
static enum intrus_status trainer_resume(struct trainer *t, struct intrus_error *err) {
  if (access(t->ckpt_path, F_OK) != 0) return INTRUS_OK;
  const char *path = t->ckpt_path;
  struct intrus_ckpt *ck;
  struct resume_state rs;
  int *patience = malloc(((size_t)t->ph.count + 1) * sizeof *patience);
  if (!patience) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  for (int i = 0; i < t->ph.count; i++) patience[i] = t->ph.phase[i].patience;
  struct resume_limits lim = {.total_steps = t->ph.count ? t->ph.total_steps : t->tc.steps,
                              .phases = t->ph.count, .patience = patience};
  enum intrus_status st = intrus_ckpt_read(path, true, t->fp, &ck, err);
  if (!st) {
    if (!(st = resume_state_read(ck, path, &lim, &rs, err)) &&
        !(st = intrus_ckpt_check_finite(ck, t->params, true, err)))
      st = intrus_ckpt_get_params(ck, t->params, true, err);
    intrus_ckpt_free(ck);
  }
  free(patience);
  if (st) return st;
  if (rs.vocab != t->data.vocab_fingerprint)
    return intrus_error_set(err, INTRUS_ERR_FORMAT,
                            "%s: written with another vocabulary than %s/vocab*.txt "
                            "(fingerprint 0x%016llx, vocabulary 0x%016llx)",
                            path, t->opt->run_dir, (unsigned long long)rs.vocab,
                            (unsigned long long)t->data.vocab_fingerprint);
  t->res->last_loss = rs.last_loss;
  t->has_init_source = rs.has_init_source;
  t->init_source = rs.init_source;
  t->best = rs.best;
  t->step = (long)rs.step;
  /* Checkpoints from before the record: the time before the resume is unknown. */
  if (rs.has_train_ms) t->train_before = (double)rs.train_ms / 1e3;
  if (rs.has_phase) {
    t->ps.cur = (long)rs.phase;
    t->ps.start = (long)rs.phase_start;
    t->ps.sched_start = (long)rs.sched_start;
    t->ps.stale = (long)rs.phase_stale;
    t->ps.best = rs.phase_best;
    /* A run extended by a phase after its last one ended begins that phase now: the
     * transition that applies restart_optimizer ran when the phase did not exist yet. */
    if (t->ps.cur < t->ph.count && t->ps.start == t->step && t->ps.sched_start != t->step &&
        t->ph.phase[t->ps.cur].restart_optimizer) {
      intrus_params_zero_moments(t->params);
      t->ps.sched_start = t->step;
    }
  }
  t->res->resumed_from = t->step;
  if (t->opt->progress)
    fprintf(t->opt->progress, "resuming %s from step %ld (%s)\n", t->name, t->step, path);
  return INTRUS_OK;
}

/* model.init: a fresh run starts from the source's matching parameters (warm_start.c);
 * a resumed run keeps its own and only checks that the source is the one it began from.
 * The source's content goes into every checkpoint of the run. */
static enum intrus_status trainer_warm_start(struct trainer *t, struct intrus_error *err) {
  if (!t->warm.given) return INTRUS_OK;
  if (t->step)
    return intrus_warm_source_recheck(&t->warm, t->has_init_source, t->init_source,
                                      t->ckpt_path, t->opt->progress, err);
  char vocab[4200] = "data.vocab";
  if (t->data.kind != DATA_SYNTHETIC)
    snprintf(vocab, sizeof vocab, "%s/vocab*.txt", t->opt->run_dir);
  t->has_init_source = true;
  return intrus_warm_start(t->model, &t->warm, t->data.vocab_fingerprint, vocab,
                           t->opt->run_dir, t->opt->progress, &t->init_source, err);
}

/* Once a resume is accepted (a refused one leaves the run as it was): writes the
 * effective config, opens train.log (appending on a resume) and works out the last step
 * of this run. */
static enum intrus_status trainer_start(struct trainer *t, struct intrus_config *cfg,
                                        struct intrus_error *err) {
  char path[4096];
  enum intrus_status st;
  if (dist_rank() == 0) {
    snprintf(path, sizeof path, "%s/effective.cfg", t->opt->run_dir);
    if ((st = intrus_config_write(cfg, path, err))) return st;
    snprintf(path, sizeof path, "%s/train.log", t->opt->run_dir);
    if (t->step && (st = run_log_trim(path, t->step, err))) return st;
    if (!(t->log = fopen(path, t->step ? "a" : "w")))
      return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!t->step)
      fprintf(t->log,
              "step\tloss\tlr\ttokens_per_s\tvalid_loss\tvalid_bleu\ttrain_s\tvalid_decode_s\n");
  }
  t->ctx = intrus_ctx_create(0);
  if (t->tc.micro_tokens) t->bctx = intrus_ctx_create(0);
  if (t->ph.count) t->scratch = intrus_ctx_create(0);
  t->stop = t->ph.count ? t->ph.total_steps : t->tc.steps;
  /* A phased run that stopped after its last phase ended early is complete. */
  if (t->ph.count && t->ps.cur >= t->ph.count) t->stop = t->step;
  if (t->opt->max_steps > 0 && t->opt->max_steps < t->stop) t->stop = t->opt->max_steps;
  /* -n below the step already reached: nothing to train (never a range like 5..3). */
  if (t->stop < t->step) t->stop = t->step;
  if (dist_rank() == 0 && t->stop > t->step) {
    const struct run_session rs = {.from_step = t->step,
                                   .threads = intrus_blas_threads(),
                                   .ranks = dist_size(),
                                   .kernels = intrus_x86_level_name(intrus_x86_level()),
                                   .blas_core = intrus_blas_corename(),
                                   .version = PACKAGE_VERSION};
    if ((st = run_dir_note_session(t->opt->run_dir, &rs, err))) return st;
  }
  t->t0 = t->window_t = t->eta_t0 = mono_s();
  t->eta_step0 = t->step;
  if (t->opt->progress && t->stop > t->step) {
    fprintf(t->opt->progress, "training %s: %zu parameters, steps %ld..%ld", t->name,
            intrus_params_numel(t->params), t->step + 1, t->stop);
    if (dist_size() > 1)
      fprintf(t->opt->progress, ", data-parallel over %d ranks", dist_size());
    fputc('\n', t->opt->progress);
  }
  return INTRUS_OK;
}

/* Rank 0's parameters, Adam's moments and where the run stands, copied to every rank
 * after rank 0 resumed (or initialised) them: all ranks start the same. */
static void trainer_share(struct trainer *t) {
  if (dist_size() == 1) return;
  const size_t n = intrus_params_numel(t->params);
  dist_bcast(intrus_params_values(t->params), n * sizeof(float));
  dist_bcast(intrus_params_adam_m(t->params), n * sizeof(float));
  dist_bcast(intrus_params_adam_v(t->params), n * sizeof(float));
  struct {
    long step, resumed_from;
    double best, train_before, last_loss;
    struct phase_state ps;
  } s = {t->step, t->res->resumed_from, t->best, t->train_before, t->res->last_loss, t->ps};
  dist_bcast(&s, sizeof s);
  t->step = s.step;
  t->res->resumed_from = s.resumed_from;
  t->best = s.best;
  t->train_before = s.train_before;
  t->res->last_loss = s.last_loss;
  t->ps = s.ps;
}

/* Every rank must train the same experiment: its results fingerprint, compared across
 * the ranks. */
static enum intrus_status check_same_config(struct intrus_config *cfg, struct intrus_error *err) {
  const int N = dist_size();
  if (N == 1) return INTRUS_OK;
  uint64_t mine = intrus_config_results_fingerprint(cfg);
  uint64_t *all = malloc((size_t)N * sizeof *all);
  if (!all) abort(); /* a few bytes per rank; and every rank must reach the gather */
  dist_gather_u64(mine, all);
  enum intrus_status st = INTRUS_OK;
  for (int r = 1; r < N && !st; r++)
    if (all[r] != all[0])
      st = intrus_error_set(err, INTRUS_ERR_CONFIG,
                            "rank %d's experiment (%s on that rank) differs from rank 0's "
                            "(settings fingerprint %016llx against %016llx): start every rank "
                            "with the same experiment file, on a file system all of them see",
                            r, r == dist_rank() ? intrus_config_filename(cfg) : "its file",
                            (unsigned long long)all[r], (unsigned long long)all[0]);
  free(all);
  return st;
}

/* What the step's loss is a mean over, for sentences b0..b1: states, or under
 * weight = "length" trajectory states (insertion, ins_train_units), or target tokens with
 * EOS (autoregressive). */
static long loss_units(const struct trainer *t, const struct intrus_tgt_batch *tb, int b0,
                       int b1) {
  if (t->ph.count) return ins_train_units(&t->ph.phase[t->ps.cur].spec, tb->lens + b0, b1 - b0);
  long n = 0;
  for (int b = b0; b < b1; b++) n += tb->lens[b] + 1;
  return n;
}

/* The loss of sentences b0..b1 of the step's batch, recorded on t->ctx's tape. */
static enum intrus_status piece_loss(struct trainer *t, const struct intrus_src_batch *sb,
                                     const struct intrus_tgt_batch *tb, int b0, int b1,
                                     struct intrus_loss_out *out, struct intrus_error *err) {
  struct intrus_src_batch s;
  struct intrus_tgt_batch g;
  batch_slice(sb, tb, b0, b1, &s, &g);
  uint64_t seed = (uint64_t)t->seed;
  struct intrus_train_opts topts = {.direction = intrus_model_direction(t->model),
                                    .label_smoothing = t->tc.label_smoothing};
  return t->ph.count ? ins_train_loss_at(t->model, t->ctx, t->scratch, &s, &g, b0,
                                         &t->ph.phase[t->ps.cur].spec,
                                         intrus_hash64(seed, (uint64_t)t->step), out, err)
                     : intrus_model_loss(t->model, t->ctx, &s, &g, &topts, out, err);
}

/* This rank's share of a batch: the consecutive sentences [*b0, *b1) whose target
 * tokens (EOS included) start in its 1/N of the batch's, so that every rank gets about
 * as many tokens. One rank: the whole batch. */
static void rank_share(const struct intrus_tgt_batch *tb, int *b0, int *b1) {
  const int N = dist_size(), r = dist_rank();
  *b0 = 0;
  *b1 = tb->batch;
  if (N == 1) return;
  long total = 0;
  for (int b = 0; b < tb->batch; b++) total += tb->lens[b] + 1;
  /* Sentence b belongs to the rank r with r * total <= N * (tokens before b) < (r + 1) * total. */
  long before = 0;
  int lo = tb->batch, hi = tb->batch;
  for (int b = 0; b < tb->batch; b++) {
    long k = before * N / (total ? total : 1);
    if (k >= r && lo == tb->batch) lo = b;
    if (k >= r + 1) {
      hi = b;
      break;
    }
    before += tb->lens[b] + 1;
  }
  *b0 = lo < hi ? lo : hi;
  *b1 = hi;
}

/* The forward and backward passes of this rank's share of the step's batch, the
 * gradients left in the parameter block; *sum and *tokens are its share of the loss
 * and of the target tokens. With micro_batch_tokens the share's sentences are taken in
 * consecutive pieces of at most that many target tokens (one sentence at least). Each
 * piece's loss, weighted by its share of the whole batch's states or tokens, is
 * backpropagated before the next is built, so the gradients of every piece of every
 * rank add up to the whole batch's (up to float summation order; dropout masks differ)
 * while only one piece's activations are held. */
static enum intrus_status step_local(struct trainer *t, double *sum, long *tokens,
                                     struct intrus_error *err) {
  intrus_ctx *ctx = t->ctx, *bctx = t->bctx ? t->bctx : t->ctx;
  uint64_t seed = (uint64_t)t->seed;
  intrus_ctx_reset(ctx);
  if (bctx != ctx) intrus_ctx_reset(bctx);
  struct intrus_src_batch sb;
  struct intrus_tgt_batch tb;
  /* Every rank builds the whole batch (the step alone says which), then takes its share:
   * the batches, and so the training, do not depend on the number of ranks. */
  dataset_train_batch(&t->data, bctx, seed, t->step, t->tc.batch, &sb, &tb);
  const long total = loss_units(t, &tb, 0, tb.batch);
  int r0, r1;
  rank_share(&tb, &r0, &r1);
  struct intrus_loss_out out;
  *sum = 0.0;
  *tokens = 0;
  intrus_params_zero_grad(t->params);
  for (int b0 = r0, piece = 0; b0 < r1; piece++) {
    int b1 = r1;
    if (t->tc.micro_tokens) {
      b1 = b0 + 1;
      for (long n = tb.lens[b0]; b1 < r1 && n + tb.lens[b1] <= t->tc.micro_tokens; b1++)
        n += tb.lens[b1];
    }
    if (piece) intrus_ctx_reset(ctx);
    intrus_ctx_set_training(ctx, true);
    /* A piece's dropout stream follows its first sentence; the first piece's is the
     * unsplit step's. */
    intrus_ctx_set_seed(ctx, b0 ? intrus_hash64(seed, (uint64_t)b0) : seed, (uint64_t)t->step);
    enum intrus_status st = piece_loss(t, &sb, &tb, b0, b1, &out, err);
    if (st) return st;
    intrus_tensor *l = out.loss;
    if (b1 - b0 < tb.batch) {
      const double w = (double)loss_units(t, &tb, b0, b1) / (double)(total ? total : 1);
      l = intrus_scale(ctx, l, (float)w);
    }
    intrus_backward(ctx, l);
    *sum += l->data[0];
    *tokens += out.tokens;
    b0 = b1;
  }
  return INTRUS_OK;
}

/* Adam's settings for the current phase: train's, with the phase's own lr and warm-up. */
static struct intrus_adam phase_adam(const struct trainer *t) {
  struct intrus_adam a = t->tc.adam;
  if (t->ph.count && t->ps.cur < t->ph.count) {
    const struct train_phase *p = &t->ph.phase[t->ps.cur];
    if (p->has_lr) a.base_lr = (float)p->lr;
    if (p->has_warmup) a.warmup = (int)p->warmup;
  }
  return a;
}

/* One optimizer step on the step's batch; *loss is its training loss. Collective: the
 * ranks agree that each computed its share, sum the gradients and take the same step. */
static enum intrus_status trainer_step(struct trainer *t, double *loss, struct intrus_error *err) {
  double sums[2];
  long tokens;
  enum intrus_status st = step_local(t, &sums[0], &tokens, err);
  if ((st = dist_agree(st, err))) return st;
  if (dist_size() > 1) {
    sums[1] = (double)tokens;
    dist_sum_floats(intrus_params_grads(t->params), intrus_params_numel(t->params));
    dist_sum_doubles(sums, 2);
    tokens = (long)sums[1];
  }
  /* The phase is that of this step: it advances only after the step is logged. */
  struct intrus_adam adam = phase_adam(t);
  intrus_adam_step(t->params, &adam, t->step - t->ps.sched_start);
  t->last_lr = intrus_lr_at(&adam, t->step - t->ps.sched_start);
  *loss = sums[0];
  if (!isfinite(*loss))
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "training diverged at step %ld (loss %g): lower train.lr", t->step,
                            *loss);
  t->step++;
  t->res->last_loss = *loss;
  t->tokens_total += tokens;
  t->window_tokens += tokens;
  t->window_steps++;
  t->loss_sum += *loss;
  return INTRUS_OK;
}

/* One progress line and one train.log row for the window since the last. */
static void trainer_log(struct trainer *t, bool validated, double vloss, double vbleu,
                        bool new_best, double train_s, double decode_s) {
  const struct intrus_train_options *opt = t->opt;
  long step = t->step;
  double now = mono_s(), tps = t->window_tokens / fmax(now - t->window_t, 1e-9);
  double loss = t->loss_sum / t->window_steps;
  double lr = t->last_lr;
  char eta[32];
  /* The ETA covers the phase at hand, at its own speed; the steps of later phases are
   * named, not timed: how fast they run is not known before they start. */
  long phase_end = t->stop, later = 0;
  if (t->ph.count && t->ps.cur < t->ph.count) {
    phase_end = t->ps.start + t->ph.phase[t->ps.cur].steps;
    if (phase_end > t->stop) phase_end = t->stop;
    for (long j = t->ps.cur + 1; j < t->ph.count; j++) later += t->ph.phase[j].steps;
    if (later > t->stop - phase_end) later = t->stop - phase_end;
  }
  format_eta(eta, sizeof eta,
             (phase_end - step) * (now - t->eta_t0) / (double)(step - t->eta_step0));
  if (opt->progress) {
    fprintf(opt->progress, "step %ld/%ld  ", step, t->stop);
    if (t->ph.count) fprintf(opt->progress, "[%s]  ", t->ph.phase[t->ps.cur].name);
    fprintf(opt->progress, "loss %.4f  lr %.2e  %.0f tok/s  ETA %s", loss, lr, tps, eta);
    if (later > 0) fprintf(opt->progress, " (+%ld steps of later phases)", later);
    if (validated) fprintf(opt->progress, "  valid %.4f", vloss);
    if (!isnan(vbleu))
      fprintf(opt->progress, "  BLEU %.2f (decoded in %.1f s)", vbleu, decode_s);
    if (new_best) fprintf(opt->progress, "  (best)");
    fputc('\n', opt->progress);
    fflush(opt->progress);
  }
  fprintf(t->log, "%ld\t%.6f\t%.6g\t%.1f\t", step, loss, lr, tps);
  if (validated) fprintf(t->log, "%.6f", vloss);
  fputc('\t', t->log);
  if (!isnan(vbleu)) fprintf(t->log, "%.2f", vbleu);
  fprintf(t->log, "\t%.1f\t", train_s);
  if (!isnan(decode_s)) fprintf(t->log, "%.1f", decode_s);
  fputc('\n', t->log);
  fflush(t->log);
  t->window_t = now;
  t->window_tokens = t->window_steps = 0;
  t->loss_sum = 0.0;
}

/* What follows a step: validation when due (loss, and BLEU when due), the log row, the
 * phase schedule, and the checkpoints (best.ckpt on a new best score). */
static enum intrus_status trainer_after_step(struct trainer *t, struct intrus_error *err) {
  long step = t->step;
  const struct train_cfg *tc = &t->tc;
  bool validate_now = step % tc->valid_every == 0 || step == t->stop;
  bool bleu_now = validate_now && (step % tc->bleu_every == 0 || step == t->stop);
  double vloss = NAN, vbleu = NAN, decode_s = NAN, tv = mono_s();
  enum intrus_status st;
  if (validate_now &&
      (st = validate(t->model, t->ctx, t->scratch, &t->ph, &t->data, tc, (uint64_t)t->seed,
                     &vloss, err)))
    return st;
  /* Validation BLEU: rank 0 decodes, the others wait for its score. */
  if (bleu_now) {
    double td = mono_s();
    st = dist_rank() == 0 ? validate_bleu(t->model, &t->data, tc, &t->search, t->opt->search,
                                          t->bleu_cfg, &vbleu, err)
                          : INTRUS_OK;
    if ((st = dist_agree(st, err))) return st;
    dist_bcast(&vbleu, sizeof vbleu);
    if (bleu_measured(&t->data, tc)) decode_s = mono_s() - td;
  }
  /* A non-finite score would pass every comparison of the plateau rule and of best.ckpt
   * silently; the run stops here instead, before the checkpoint of this step. */
  if (validate_now && !isfinite(vloss))
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "validation loss at step %ld is %g: training diverged; lower "
                            "train.lr (the last checkpoint is from before this step)",
                            step, vloss);
  if (bleu_now && bleu_measured(&t->data, tc) && !isfinite(vbleu))
    return intrus_error_set(err, INTRUS_ERR_INVALID, "validation BLEU at step %ld is %g", step,
                            vbleu);
  /* The score best.ckpt and the plateau rule follow: BLEU where it is measured at all
   * (validations without it then leave both alone), else minus the loss. */
  double vscore = !validate_now ? NAN : bleu_measured(&t->data, tc) ? vbleu : -vloss;
  t->valid_time += mono_s() - tv;
  double train_s = t->train_before + mono_s() - t->t0 - t->valid_time;
  bool new_best = false;
  if (!isnan(vscore) && vscore > t->best) {
    t->best = vscore;
    new_best = true;
  }
  const bool lead = dist_rank() == 0;
  if (lead && (step % tc->log_every == 0 || step == t->stop || validate_now))
    trainer_log(t, validate_now, vloss, vbleu, new_best, train_s, decode_s);
  if (validate_now) {
    t->res->valid_loss = vloss;
    t->res->valid_bleu = vbleu;
  }
  if (t->ph.count && advance_phase(&t->ph, &t->ps, step, vscore, t->params, t->opt->progress)) {
    if (t->ps.cur >= t->ph.count) t->stop = step;
    t->eta_step0 = step;
    t->eta_t0 = mono_s();
  }
  /* Checkpoints: rank 0 writes them; the others learn whether it could. */
  st = INTRUS_OK;
  if (lead && new_best)
    st = save_checkpoint(t->best_path, t->fp, t->model, step, t->res->last_loss, t->best,
                         t->data.vocab_fingerprint, &t->ps, train_s,
                         t->has_init_source ? &t->init_source : NULL, err);
  if (lead && !st && (step % tc->checkpoint_every == 0 || step == t->stop))
    st = save_checkpoint(t->ckpt_path, t->fp, t->model, step, t->res->last_loss, t->best,
                         t->data.vocab_fingerprint, &t->ps, train_s,
                         t->has_init_source ? &t->init_source : NULL, err);
  return dist_agree(st, err);
}

static void trainer_free(struct trainer *t) {
  if (t->log) fclose(t->log);
  if (t->lock_fd >= 0) close(t->lock_fd);
  intrus_ctx_destroy(t->scratch);
  train_phases_free(&t->ph);
  intrus_ctx_destroy(t->ctx);
  intrus_ctx_destroy(t->bctx);
  intrus_model_destroy(t->model);
  dataset_free(&t->data);
}

enum intrus_status intrus_train(struct intrus_config *cfg, const struct intrus_train_options *opt,
                                struct intrus_train_result *res, struct intrus_error *err) {
  memset(res, 0, sizeof *res);
  res->valid_bleu = NAN;
  struct trainer t = {.opt = opt, .res = res, .lock_fd = -1, .best = -INFINITY,
                     .ps = {.best = -INFINITY}};
  enum intrus_status st;
  const bool lead = dist_rank() == 0;
  const double sum_s0 = dist_sum_seconds();
  if (opt->settings_only) {
    st = trainer_setup(&t, cfg, err);
    goto done;
  }
  if (lead && dist_size() > 1) {
    /* The followers wait for this (core/cli/dist_follow.c) and then join the agreements
     * below in the same order. */
    struct dist_job job = {.kind = DIST_TRAIN, .max_steps = opt->max_steps};
    snprintf(job.experiment, sizeof job.experiment, "%s", intrus_config_filename(cfg));
    snprintf(job.run_dir, sizeof job.run_dir, "%s", opt->run_dir);
    size_t used = 0;
    for (int i = 0; opt->search && i < intrus_plugin_search_count(opt->search); i++) {
      int w = snprintf(job.plugin_dirs + used, sizeof job.plugin_dirs - used, "%s%s",
                       i ? ":" : "", intrus_plugin_search_dir(opt->search, i));
      if (w < 0 || (size_t)w >= sizeof job.plugin_dirs - used) break;
      used += (size_t)w;
    }
    dist_job_send(&job);
  }
  /* Rank 0 sets up first (it learns the vocabulary and writes it into the run
   * directory), the others then read what it wrote. */
  st = lead ? trainer_setup(&t, cfg, err) : INTRUS_OK;
  if ((st = dist_agree(st, err))) goto done;
  st = lead ? INTRUS_OK : trainer_setup(&t, cfg, err);
  if ((st = dist_agree(st, err)) || (st = check_same_config(cfg, err))) goto done;
  st = lead ? trainer_resume(&t, err) : INTRUS_OK;
  if (!st && lead) st = trainer_warm_start(&t, err);
  if ((st = dist_agree(st, err))) goto done;
  trainer_share(&t);
  st = trainer_start(&t, cfg, err);
  if ((st = dist_agree(st, err))) goto done;
  while (t.step < t.stop) {
    double loss;
    if ((st = trainer_step(&t, &loss, err))) goto done;
    if (opt->on_step) opt->on_step(t.step, loss, opt->user);
    if ((st = trainer_after_step(&t, err))) goto done;
  }
  res->steps_done = t.step;
  res->seconds = mono_s() - t.t0;
  res->ranks = dist_size();
  res->sum_seconds = dist_sum_seconds() - sum_s0;
  res->tokens_per_s = t.tokens_total / fmax(res->seconds, 1e-9);
  /* A run that was already complete still reports its validation loss. */
  if (res->resumed_from == t.step && t.step > 0)
    st = validate(t.model, t.ctx, t.scratch, &t.ph, &t.data, &t.tc, (uint64_t)t.seed,
                  &res->valid_loss, err);
done:
  trainer_free(&t);
  return st;
}

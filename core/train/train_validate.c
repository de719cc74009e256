/* Validation during training: the per-token loss of the validation set, shared out
 * over the ranks, and the BLEU of its first train.valid_bleu sentences. */
#include <math.h>

#include "intrus/model.h"
#include "intrus/rng.h"
#include "dist/dist.h"
#include "eval/score.h"
#include "search/translate.h"
#include "train_internal.h"

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
void train_batch_slice(const struct intrus_src_batch *sb, const struct intrus_tgt_batch *tb,
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
 * batch lives in train_validate's batch context, so ctx is reset between pieces. */
static enum intrus_status valid_batch_pieces(struct valid_acc *a,
                                             const struct intrus_src_batch *src,
                                             const struct intrus_tgt_batch *tgt, uint64_t seed,
                                             struct intrus_error *err) {
  struct ins_train_spec spec = *a->ins;
  enum intrus_status st = INTRUS_OK;
  for (int b = 0; b < tgt->batch && !st; b++) {
    struct intrus_src_batch s1;
    struct intrus_tgt_batch t1;
    train_batch_slice(src, tgt, b, b + 1, &s1, &t1);
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
enum intrus_status train_validate(struct intrus_model *m, intrus_ctx *ctx, intrus_ctx *scratch,
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
bool train_bleu_measured(const struct dataset *d, const struct train_cfg *t) {
  return d->kind != DATA_SYNTHETIC && t->valid_bleu > 0;
}

/* BLEU of the first train.valid_bleu validation sentences, decoded with the search
 * settings; NAN when not train_bleu_measured(). */
enum intrus_status train_validate_bleu(struct intrus_model *m, struct dataset *d,
                                       const struct train_cfg *t, const struct translator *search,
                                       const struct intrus_plugin_search *plugins,
                                       const intrus_cfg *bleu_cfg, double *bleu,
                                       struct intrus_error *err) {
  *bleu = NAN;
  if (!train_bleu_measured(d, t)) return INTRUS_OK;
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
                      &d->valid_cut_warned, d->valid_text.src, n, NULL, &hyps, NULL, err);
  if (st) return st;
  struct score_result r;
  st = score_corpus(plugins, "bleu", bleu_cfg, hyps, d->valid_text.tgt, n, &r, err);
  dataset_lines_free(hyps, n);
  if (!st) *bleu = r.values[0];
  return st;
}

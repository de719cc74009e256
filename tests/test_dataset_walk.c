/* dataset_train_batch finds step s's batch by walking the epochs from the first; the
 * sizes of the epochs it has seen are remembered, so that walk costs nothing after the
 * first time. What must not change is the batch: step s gets the same pairs whatever
 * was asked before it. Checked for parallel text (a small corpus written here) and
 * for images (the bundled image-to-LaTeX set), steps asked in ascending order (as
 * training does) and in descending order (every earlier epoch recomputed after a
 * later one). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "intrus/config.h"
#include "intrus/corpus.h"
#include "intrus/rng.h"
#include "intrus/tensor.h"
#include "testutil.h"
#include "text/dataset.h"

/* A hash of everything a batch hands the model. */
static uint64_t batch_hash(const struct intrus_src_batch *s, const struct intrus_tgt_batch *t) {
  uint64_t h = INTRUS_FNV_INIT;
  h = intrus_fnv1a(h, &s->batch, sizeof s->batch);
  h = intrus_fnv1a(h, &t->len, sizeof t->len);
  h = intrus_fnv1a(h, t->lens, (size_t)t->batch * sizeof *t->lens);
  h = intrus_fnv1a(h, t->tokens, (size_t)t->batch * (size_t)t->len * sizeof *t->tokens);
  if (s->pixels) {
    h = intrus_fnv1a(h, s->heights, (size_t)s->batch * sizeof *s->heights);
    h = intrus_fnv1a(h, s->widths, (size_t)s->batch * sizeof *s->widths);
  } else {
    h = intrus_fnv1a(h, s->lens, (size_t)s->batch * sizeof *s->lens);
    h = intrus_fnv1a(h, s->tokens, (size_t)s->batch * (size_t)s->len * sizeof *s->tokens);
  }
  return h;
}

static struct dataset *open_dataset(const char *cfg_text, const char *run_dir, long max_tokens) {
  struct intrus_error err = {0};
  struct intrus_config *cfg = intrus_config_load_string(cfg_text, "walk.cfg", &err);
  EXPECT(cfg != NULL, "config: %s", err.msg);
  if (!cfg) return NULL;
  const intrus_cfg *data = NULL;
  struct dataset *d = calloc(1, sizeof *d);
  enum intrus_status st = intrus_cfg_group_req(intrus_config_root(cfg), "data", &data, &err);
  if (st == INTRUS_OK) st = dataset_configure(d, data, "walk.cfg", NULL, &err);
  if (st == INTRUS_OK) st = dataset_prepare(d, run_dir, max_tokens, 7, NULL, &err);
  EXPECT(st == INTRUS_OK, "dataset: %s", err.msg);
  intrus_config_free(cfg);
  if (st != INTRUS_OK) {
    dataset_free(d);
    free(d);
    return NULL;
  }
  return d;
}

/* Steps 0..n-1 asked of two datasets of the same config, one ascending, one descending:
 * the same batch at every step. */
static void check_walk(const char *what, const char *cfg_text, long max_tokens, long n) {
  /* Each dataset its own run directory (BPE codes, vocabularies) in test_tmpdir. */
  char dir1[1024], dir2[1040];
  snprintf(dir1, sizeof dir1, "%s", test_tmp_path(what));
  snprintf(dir2, sizeof dir2, "%s-again", dir1);
  if (mkdir(dir1, 0700) != 0 || mkdir(dir2, 0700) != 0) {
    fprintf(stderr, "cannot make %s, %s: %s\n", dir1, dir2, strerror(errno));
    exit(99);
  }
  struct dataset *a = open_dataset(cfg_text, dir1, max_tokens);
  struct dataset *b = open_dataset(cfg_text, dir2, max_tokens);
  if (a && b) {
    uint64_t *ha = malloc((size_t)n * sizeof *ha);
    if (a->batcher)
      EXPECT(n > 2 * (long)intrus_batcher_epoch_size(a->batcher, 0),
             "%s: %ld steps do not cross two epochs of %zu batches", what, n,
             intrus_batcher_epoch_size(a->batcher, 0));
    intrus_ctx *ctx = intrus_ctx_create(0);
    struct intrus_src_batch s;
    struct intrus_tgt_batch t;
    for (long k = 0; k < n; k++) {
      intrus_ctx_reset(ctx);
      dataset_train_batch(a, ctx, 7, k, 0, &s, &t);
      ha[k] = batch_hash(&s, &t);
    }
    int bad = 0;
    long first_bad = -1;
    for (long k = n; k-- > 0;) {
      intrus_ctx_reset(ctx);
      dataset_train_batch(b, ctx, 7, k, 0, &s, &t);
      if (batch_hash(&s, &t) != ha[k]) {
        bad++;
        first_bad = k;
      }
    }
    EXPECT(bad == 0, "%s: %d of %ld steps differ between ascending and descending walks "
           "(first %ld)", what, bad, n, first_bad);
    /* Epochs differ: the walk crossed epoch boundaries into reshuffled epochs. */
    int repeats = 0;
    for (long k = 1; k < n; k++) repeats += ha[k] == ha[0];
    EXPECT(repeats < n / 4, "%s: step 0's batch repeats %d times in %ld steps", what,
           repeats, n);
    intrus_ctx_destroy(ctx);
    free(ha);
  }
  if (a) dataset_free(a), free(a);
  if (b) dataset_free(b), free(b);
}

/* A small parallel corpus of random words: 240 pairs of 1 to 12 words. */
static void write_corpus(const char *dir) {
  struct intrus_rng r;
  intrus_rng_seed(&r, 11);
  const char *side[2] = {"src", "tgt"};
  for (int f = 0; f < 2; f++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/train.%s", dir, side[f]);
    FILE *o = fopen(path, "w");
    for (int i = 0; i < 240 && o; i++) {
      int len = 1 + (int)intrus_rng_below(&r, 12);
      for (int w = 0; w < len; w++)
        fprintf(o, "%sw%d", w ? " " : "", (int)intrus_rng_below(&r, 40));
      fputc('\n', o);
    }
    if (!o || fclose(o) != 0) {
      fprintf(stderr, "cannot write %s\n", path);
      exit(99);
    }
    snprintf(path, sizeof path, "%s/valid.%s", dir, side[f]);
    test_write_file(path, "w1 w2\nw3\n");
  }
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-test-dataset-walk-XXXXXX")) return 99;
  const char *corpus = test_tmpdir;
  write_corpus(corpus);
  char cfg[8192];
  /* 60 tokens a batch: a few pairs each, so 200 steps cross several epochs (checked). */
  snprintf(cfg, sizeof cfg,
           "data: { kind = \"parallel\"; dir = \"%s\"; src = \"src\"; tgt = \"tgt\";"
           " bpe_merges = 20; joint_vocab = true; max_len = 64; };",
           corpus);
  check_walk("parallel", cfg, 60, 200);

  /* The bundled image-to-LaTeX set (1,084 training formulas), a few images a batch
   * (batch_pixels 32768): 600 steps reach past its first epoch. */
  snprintf(cfg, sizeof cfg,
           "data: { kind = \"images\"; dir = \"%s/data/im2latex\"; tgt = \"tex\";"
           " channels = 1; targets = \"tokens\"; max_len = 150; batch_pixels = 32768; };",
           test_srcdir());
  check_walk("images", cfg, 4000, 600);
  test_remove_tmpdir();
  return test_finish("test_dataset_walk");
}

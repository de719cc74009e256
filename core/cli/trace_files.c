/* Decoding orders as files (trace_files.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "intrus/fileio.h"
#include "intrus/text.h"
#include "intrus/trace.h"
#include "trace_files.h"

/* Writes a memory stream's contents to path atomically and closes the stream. */
static enum intrus_status flush_memstream(FILE *f, char **buf, size_t *len, const char *path,
                                          struct intrus_error *err) {
  if (fclose(f) != 0) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  enum intrus_status st = intrus_file_write_atomic(path, *buf, *len, err);
  free(*buf);
  *buf = NULL;
  return st;
}

static const char order_header[] = "sentence\tposition\ttoken\tstep\trelative_index\n";

/* Line i's rows of order.tsv; rel and when have room for h->len. The generation index
 * depends on the steps' slots only. */
static void order_rows(FILE *order, const struct dataset *data, const struct intrus_ins_hyp *h,
                       size_t i, double *rel, int *when) {
  struct intrus_trace tr = {.len = h->len, .steps = h->steps};
  intrus_trace_relative_index(&tr, rel, when);
  for (int j = 0; j < h->len; j++) {
    const char *w = intrus_vocab_token(data->tgt_vocab, h->tokens[j]);
    fprintf(order, "%zu\t%d\t%s\t%d\t%.4f\n", i + 1, j + 1, w ? w : "<unk>", when[j], rel[j]);
  }
}

/* The display text of every step's token (words[t] for steps[t]). */
static void step_words(const struct dataset *data, const struct intrus_ins_hyp *h,
                       const char **words) {
  for (int t = 0; t < h->len; t++) {
    const char *w = intrus_vocab_token(data->tgt_vocab, h->steps[t].token);
    words[t] = w ? w : "<unk>";
  }
}

enum intrus_status cli_traces_write(const char *dir, const struct dataset *data,
                                    const struct dataset_image_input *images,
                                    const struct intrus_ins_hyp *traj, size_t n, long pictures,
                                    struct intrus_error *err) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot create directory: %s", dir,
                            strerror(errno));
  char *tbuf = NULL, *obuf = NULL, path[4200];
  size_t tlen = 0, olen = 0;
  FILE *text = open_memstream(&tbuf, &tlen), *order = open_memstream(&obuf, &olen);
  enum intrus_status st = INTRUS_OK;
  if (!text || !order) {
    if (text) fclose(text);
    if (order) fclose(order);
    free(tbuf);
    free(obuf);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  fputs(order_header, order);
  for (size_t i = 0; i < n && !st; i++) {
    const struct intrus_ins_hyp *h = &traj[i];
    const char **words = malloc((size_t)(h->len ? h->len : 1) * sizeof *words);
    double *rel = malloc((size_t)(h->len ? h->len : 1) * sizeof *rel);
    int *when = malloc((size_t)(h->len ? h->len : 1) * sizeof *when);
    if (!words || !rel || !when) {
      st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    } else {
      step_words(data, h, words);
      struct intrus_trace tr = {.len = h->len, .steps = h->steps, .words = words};
      st = intrus_trace_write_text(text, NULL, (int)i + 1, &tr, err);
      if (!st) order_rows(order, data, h, i, rel, when);
      float *pix = NULL;
      if (images && (long)i < pictures) {
        pix = dataset_images_input_pixels(data, images, i, &tr.image_channels, &tr.image_height,
                                          &tr.image_width);
        if (!pix) st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
        tr.image = pix;
      }
      for (const char *ext = ".png"; !st && (long)i < pictures && ext;
           ext = strcmp(ext, ".png") == 0 ? ".svg" : NULL) {
        snprintf(path, sizeof path, "%s/%s-%zu%s", dir, images ? "image" : "sentence", i + 1,
                 ext);
        st = intrus_trace_draw(path, &tr, err);
      }
      free(pix);
    }
    free(words);
    free(rel);
    free(when);
  }
  snprintf(path, sizeof path, "%s/trace.txt", dir);
  enum intrus_status st2 = flush_memstream(text, &tbuf, &tlen, path, err);
  if (!st) st = st2;
  snprintf(path, sizeof path, "%s/order.tsv", dir);
  st2 = flush_memstream(order, &obuf, &olen, path, st ? NULL : err);
  return st ? st : st2;
}

enum intrus_status cli_order_write(const char *path, const struct dataset *data,
                                   const struct intrus_ins_hyp *traj, size_t n,
                                   struct intrus_error *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *order = open_memstream(&buf, &len);
  if (!order) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  fputs(order_header, order);
  int longest = 1;
  for (size_t i = 0; i < n; i++)
    if (traj[i].len > longest) longest = traj[i].len;
  double *rel = malloc((size_t)longest * sizeof *rel);
  int *when = malloc((size_t)longest * sizeof *when);
  enum intrus_status st = INTRUS_OK;
  if (!rel || !when) st = intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n && !st; i++) order_rows(order, data, &traj[i], i, rel, when);
  free(rel);
  free(when);
  enum intrus_status st2 = flush_memstream(order, &buf, &len, path, st ? NULL : err);
  return st ? st : st2;
}

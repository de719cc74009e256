/* Internal to the image data sets: dataset_images.c reads a split, dataset_images_batch.c
 * cuts it into batches; both see the split's layout. */
#ifndef INTRUS_DATASET_IMAGES_INTERNAL_H
#define INTRUS_DATASET_IMAGES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataset.h"

struct image_split {
  /* images */
  size_t n_images;
  int *h, *w;
  uint8_t **pix;     /* [C, h, w] samples, 0..255 */
  /* pairs: an image and one of its targets */
  size_t n;
  int32_t *image;    /* [n] */
  int32_t *ids;      /* targets' token ids, CSR */
  int64_t *off;      /* [n + 1] */
  int32_t max_tgt;
  size_t dropped_long, dropped_empty;
  /* epoch cache of the training batches */
  uint64_t epoch;
  bool have_epoch;
  size_t n_batches;
  int32_t *order;    /* pairs in batch order */
  size_t *start;     /* [n_batches + 1] */
  /* batches per epoch for the epochs computed so far, so that walking the epochs from
   * the first (dataset_images_train_batch) recomputes none of them */
  size_t *esize;
  size_t nesize, esize_cap;
};

/* Reads the PNGs listed in list (paths relative to base) into s's images
 * (dataset_images.c; the decoding inputs of dataset_images_batch.c read theirs too). */
enum intrus_status dataset_images_read_list(const struct dataset *d, const char *list,
                                            const char *base, struct image_split *s,
                                            struct intrus_error *err);

#endif

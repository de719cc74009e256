/* Internal to checkpoints: what the writer (checkpoint_write.c), the reader
 * (checkpoint_read.c) and the parameter sets (checkpoint.c) share. The format's
 * constants live here so the writer and the reader cannot drift apart; the writer's and
 * the loaded checkpoint's structs live here because the parameter sets name the file in
 * their messages and look records up by name. */
#ifndef INTRUS_CHECKPOINT_INTERNAL_H
#define INTRUS_CHECKPOINT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "intrus/checkpoint.h"
#include "intrus/status.h"

#define CKPT_MAGIC "INTRUSCK"
#define CKPT_MAGIC_LEN 8
#define CKPT_HEADER_LEN 24 /* magic, u32 version, u64 fingerprint, u32 count */
#define CKPT_VERSION_OFFSET 8
#define CKPT_COUNT_OFFSET 20
#define CKPT_SUM_LEN 8
#define CKPT_NAME_MAX 4096
#define CKPT_MAX_DIMS 4
#define CKPT_TYPE_TENSOR 1
#define CKPT_TYPE_U64 2

/* ---- name index: open addressing over an array of C strings owned by the caller -- */

struct ckpt_name_index {
  size_t cap;   /* a power of two; 0 before the first insert */
  size_t used;
  size_t *slot; /* 1 + position in the owner's name array; 0 marks an empty slot */
};

/* Position of key in names, or SIZE_MAX when absent. */
size_t ckpt_name_index_find(const struct ckpt_name_index *ix, char *const *names,
                            const char *key);
/* Adds names[pos], which must not be present yet. False when out of memory. */
bool ckpt_name_index_insert(struct ckpt_name_index *ix, char *const *names, size_t pos);

/* ---- writer -------------------------------------------------------------------- */

struct intrus_ckpt_writer {
  FILE *f;            /* NULL once a write failed and the temporary file is gone */
  char *path, *tmp;
  uint64_t fingerprint;
  uint64_t bytes;     /* written so far, header included */
  char **names;       /* of the records written, for refusing duplicates */
  size_t count, cap;
  struct ckpt_name_index index;
  bool failed;
  struct intrus_error failure; /* the first write error, repeated by every later call */
};

/* ---- reader -------------------------------------------------------------------- */

struct ckpt_record {
  uint8_t type;
  int ndim;
  int shape[CKPT_MAX_DIMS];
  size_t n;           /* floats */
  const float *data;  /* into floats of the checkpoint */
  uint64_t value;
};

struct intrus_ckpt {
  char *path;          /* for the messages of intrus_ckpt_get_params */
  uint64_t fingerprint;
  uint64_t checksum;   /* the file's trailing FNV-1a, verified */
  size_t count;
  struct ckpt_record *recs;
  char **names;        /* into name_block */
  char *name_block;
  float *floats;       /* every tensor's data, 64-byte aligned */
  struct ckpt_name_index index;
};

/* The record named name, or NULL. */
const struct ckpt_record *ckpt_find_record(const struct intrus_ckpt *c, const char *name);

#endif

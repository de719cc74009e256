/* Warm start (`model.init = { checkpoint = "PATH"; }`, warm_start.c): a fresh run's
 * model begins from another run's checkpoint wherever a parameter's name and shape
 * agree; everything else keeps its own initialisation. */
#ifndef INTRUS_WARM_START_H
#define INTRUS_WARM_START_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "intrus/config.h"
#include "intrus/model.h"
#include "intrus/status.h"

struct warm_source {
  bool given;              /* the model group has `init` */
  const intrus_cfg *group; /* model.init, for messages that name its line */
  char path[4096];         /* model.init.checkpoint, resolved against the experiment file */
};

/* Reads model.init of the model group strictly (one setting, `checkpoint`, a non-empty
 * string); ws->given is false when the group has no `init`. A relative path is taken
 * from the directory of exp_path, as data.dir is; with exp_path NULL it stays as
 * written. Nothing is added to the group when it is absent, so the fingerprints of
 * runs without it do not change. */
enum intrus_status intrus_warm_source_read(const intrus_cfg *model, const char *exp_path,
                                           struct warm_source *ws, struct intrus_error *err);

/* A fresh run's warm start. Reads the source checkpoint, refuses it when its vocabulary
 * fingerprint is not vocab_fp (vocab_where says where this run's vocabulary is, for the
 * message), copies every parameter of m the source has under the same name and shape
 * (and the token output layer by the rule in warm_start.c), and prints what was copied
 * and what was not to progress (unless NULL) and to RUN_DIR/warm_start.txt. A source
 * that matches no parameter at all is refused. *content is the source file's checksum
 * (intrus_ckpt_checksum), which the run records in its checkpoints. */
enum intrus_status intrus_warm_start(struct intrus_model *m, const struct warm_source *ws,
                                     uint64_t vocab_fp, const char *vocab_where,
                                     const char *run_dir, FILE *progress, uint64_t *content,
                                     struct intrus_error *err);

/* A resumed run keeps its own parameters; this only checks that the source is still the
 * one the run began from. recorded: the content its checkpoint (ckpt_path) records
 * (has_record false: it records none). A source with another content is refused, naming
 * the setting, both contents and the run; a source that is gone is noted on progress
 * and the run goes on (its parameters are its own). */
enum intrus_status intrus_warm_source_recheck(const struct warm_source *ws, bool has_record,
                                              uint64_t recorded, const char *ckpt_path,
                                              FILE *progress, struct intrus_error *err);

#endif

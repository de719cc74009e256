/* A trained model with its text pipeline, ready to translate raw lines: what
 * `intrus decode` and `intrus run` share. */
#ifndef INTRUS_TRANSLATE_H
#define INTRUS_TRANSLATE_H

#include <stdio.h>

#include "text/dataset.h"
#include "intrus/model.h"
#include "intrus/insertion.h"
#include "intrus/search.h"

struct translator {
  struct dataset data;
  struct intrus_model *model;
  struct intrus_beam_opts beam;
  long batch_tokens;
  int max_src_len;        /* search.max_src_len: longer inputs are cut, with a warning */
  const char *input_name; /* named in those warnings (NULL: "input") */
  const intrus_cfg *search_cfg; /* the `search` group (NULL: none), for errors naming it */
};

/* Reads the experiment's `data`, `model` and optional `search` group
 *   search: { beam = 4; alpha = 1.0; max_len_a = 2.0; max_len_b = 3; batch_tokens = 2000;
 *             prune = true (insertion models: exact pruning of the token softmax);
 *             max_src_len = 256 (subword tokens of an input line decoded; more are cut) };
 * loads the run directory's BPE codes and vocabularies, and the checkpoint ckpt_path
 * (refused if it was written for another model configuration or vocabulary). */
enum intrus_status translator_open(struct intrus_config *cfg, const char *run_dir,
                                   const char *ckpt_path,
                                   const struct intrus_plugin_search *search,
                                   struct translator *t, struct intrus_error *err);
void translator_close(struct translator *t);

/* Reads (and checks) only the optional `search` group into t->beam / t->batch_tokens;
 * training calls it so that a typo there fails before hours of training, not after. */
enum intrus_status translator_read_search(const intrus_cfg *root, struct translator *t,
                                          struct intrus_error *err);

/* Sets the beam (beam > 0: a command-line override such as `-b`, named by `source` in the
 * error; 0: keep the experiment's search.beam) and checks it against search.slots, which
 * must leave every hypothesis at least `beam` slots. Every decode calls it once its beam
 * is final: the check cannot be made when the search group is read, because `-b 1` may
 * make `slots = 2` valid for an experiment whose own beam is 4. */
enum intrus_status translator_set_beam(struct translator *t, int beam, const char *source,
                                       struct intrus_error *err);

/* Translates n raw lines; *out gets n malloc'd detokenised lines (dataset_lines_free). */
/* traj: NULL, or n entries that receive each line's trajectory (free each with
 * intrus_ins_hyp_free): an insertion model's insertions; a left-to-right model's
 * tokens each appended (step t at slot t), a right-to-left model's each prepended (slot
 * 0), tokens[] in reading order either way. */
enum intrus_status translator_run(struct translator *t, char *const *lines, size_t n,
                                  FILE *progress, char ***out, struct intrus_ins_hyp *traj,
                                  struct intrus_error *err);

/* The same for any model and text pipeline (training uses it for validation BLEU). A
 * line of more than max_src_len subword tokens is cut to its first max_src_len, with a
 * warning on stderr naming src_name and the line: memory and time grow with the length,
 * and without a bound one long line could ask for terabytes. A caller that decodes the
 * same lines again and again (training's validation) passes cut_warned: the warnings are
 * printed while it is false, and it is set once a line was cut; NULL warns every time. */
enum intrus_status translate_lines(struct intrus_model *model, struct dataset *data,
                                   const struct intrus_beam_opts *beam, long batch_tokens,
                                   int max_src_len, const char *src_name, bool *cut_warned,
                                   char *const *lines, size_t n, FILE *progress, char ***out,
                                   struct intrus_ins_hyp *traj, struct intrus_error *err);

/* The same for image inputs (data.kind = "images"): *out gets one line per image of
 * in, in its order. */
enum intrus_status translate_images(struct intrus_model *model, struct dataset *data,
                                    const struct intrus_beam_opts *beam,
                                    struct dataset_image_input *in, FILE *progress, char ***out,
                                    struct intrus_ins_hyp *traj, struct intrus_error *err);

#endif

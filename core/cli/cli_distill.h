/* Sequence-level distillation: `intrus distill` (cmd_distill.c) and the corpus an
 * experiment's data.distill asks for, made before it trains (distill.c). The corpus and
 * its MANIFEST: text/distill.h. */
#ifndef INTRUS_CLI_DISTILL_H
#define INTRUS_CLI_DISTILL_H

#include <stdbool.h>
#include <stdio.h>

#include "cli.h"
#include "text/distill.h"

/* Lines decoded between two saves of a distillation under way. */
enum { CLI_DISTILL_CHUNK = 1000 };

struct cli_distill_opts {
  const char *teacher;     /* the teacher's experiment file */
  const char *teacher_run; /* its run directory */
  const char *checkpoint;  /* NULL: TEACHER_RUN/checkpoint.ckpt, or best.ckpt when the
                            * teacher's eval.checkpoint = "best" */
  const char *out_dir;     /* the corpus */
  int beam;                /* 0: the teacher's search.beam */
  bool has_alpha;
  double alpha;            /* when has_alpha: instead of the teacher's search.alpha */
  bool has_finish_penalty;
  double finish_penalty;   /* when has_finish_penalty: instead of the teacher's
                            * search.finish_penalty */
  long chunk;              /* 0: CLI_DISTILL_CHUNK; a resumed distillation keeps its own */
  const char *src, *tgt;   /* the languages the corpus is for (NULL: the teacher's) */
  const struct intrus_plugin_search *search;
  FILE *progress;          /* NULL: quiet */
};

struct cli_distill_result {
  bool reused;        /* out_dir already held the corpus of this checkpoint, search, sources */
  size_t resumed_at;  /* lines a partial distillation had decoded (0: started afresh) */
  double seconds;     /* this invocation's decoding */
  struct distill_record rec; /* what out_dir/MANIFEST says */
};

/* Decodes every line of the teacher's training sources (every one: a data.max_len filter
 * is the student's to apply) with the teacher's search, in chunks of rec.chunk lines
 * saved as they finish (OUT/train.TGT.partial and OUT/distill.progress, each replaced
 * atomically), so that a killed distillation resumes at the line it reached and ends
 * with the same bytes; then writes OUT/train.TGT, copies the training sources, valid
 * and test, scores the outputs against the training references with BLEU (the teacher's
 * eval.bleu settings) and writes OUT/MANIFEST. A corpus or partial distillation made with
 * another checkpoint, search or sources is refused, naming what differs. */
enum intrus_status cli_distill(const struct cli_distill_opts *o, struct cli_distill_result *r,
                               struct intrus_error *err);

/* Whether cfg's data group names a teacher (data.distill; *present), and its settings
 * resolved for an experiment whose run directory is run_dir. */
enum intrus_status cli_distill_teacher_of(struct intrus_config *cfg, const char *run_dir,
                                          bool *present, struct dataset_distill *dd,
                                          struct intrus_error *err);

/* The experiment whose corpus a distilled one is made from, and its run directory:
 * data.distill's teachers followed from experiment (run directory run_dir) to the first
 * whose data names no teacher (experiment itself when its data names none). */
enum intrus_status cli_distill_origin(const char *experiment, const char *run_dir,
                                      char *exp_out, char *run_out, size_t n,
                                      struct intrus_error *err);

/* The data an experiment is tested on, configured: for one whose data names a teacher,
 * its origin's (cli_distill_origin: a distilled corpus's valid and test splits are the
 * origin's references, and the committed files score without the distilled corpus);
 * for any other, its own. Freed by cli_origin_data_free (also after a failure). */
#include "text/dataset.h"
struct cli_origin_data {
  char experiment[4200], run_dir[4200]; /* the origin and its run directory */
  struct intrus_config *cfg;            /* the origin's experiment, loaded */
  struct dataset d;                     /* its data group, configured */
};
enum intrus_status cli_origin_data(const char *experiment, const char *run_dir,
                                   struct cli_origin_data *o, struct intrus_error *err);
void cli_origin_data_free(struct cli_origin_data *o);

/* What `intrus run`, `train` and `table` do before training an experiment whose data
 * names a teacher: make its corpus (or resume making it), reuse it when the teacher's
 * checkpoint, search and sources are those it was made from, refuse it when not; the
 * teacher must be trained. Nothing for other experiments. */
enum intrus_status cli_distill_for(struct intrus_config *cfg, const char *run_dir,
                                   const struct intrus_plugin_search *search, FILE *progress,
                                   struct intrus_error *err);

#endif

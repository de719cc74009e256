/* A distilled corpus (sequence-level knowledge distillation, Kim and Rush 2016): the
 * training sources of a teacher experiment with the teacher's translations as targets,
 * valid and test copied from the teacher's corpus. It is a function of the teacher's
 * checkpoint, its search settings and the source lines, so all three are fingerprinted
 * in the corpus's MANIFEST and a stale corpus is refused (core/text/distill.c).
 *
 * `intrus distill` makes one (core/cli/distill.c); an experiment names one by data.dir,
 * or by its teacher:
 *   data: { kind = "parallel"; src = "en"; tgt = "de";
 *           distill = { teacher = "l2r.cfg";   (relative to this experiment file)
 *                       beam = 4; alpha = 1.0;  (default: the teacher's search)
 *                       finish_penalty = 2.0;   (default: the teacher's search)
 *                       run_dir = "...";        (the teacher's run; default: beside this
 *                                                experiment's run, RUNS/<teacher name>)
 *                       dir = "..."; };         (the corpus; default TEACHER_RUN/distill,
 *                                                distill-b<beam>-a<alpha>-f<penalty> with
 *                                                overrides)
 *           ... };
 * which `intrus run`, `train` and `table` distil first when needed. */
#ifndef INTRUS_DISTILL_H
#define INTRUS_DISTILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "intrus/config.h"
#include "intrus/status.h"

/* data.distill of an experiment, resolved. */
struct dataset_distill {
  char teacher[4096];     /* the teacher's experiment file */
  char teacher_run[4096]; /* its run directory */
  char dir[4096];         /* the distilled corpus */
  int beam;               /* 0: the teacher's search.beam */
  bool has_alpha;
  double alpha;           /* when has_alpha: instead of the teacher's search.alpha */
  bool has_finish_penalty;
  double finish_penalty;  /* when has_finish_penalty: instead of the teacher's
                           * search.finish_penalty */
};

/* Reads the data.distill group g (strictly, filling in no defaults, so that the
 * experiment's fingerprints stay those of its file). exp_path: the experiment file,
 * against whose directory teacher, run_dir and dir are resolved; run_dir: the
 * experiment's own run directory (NULL: runs/<name>), whose parent holds the teacher's
 * run by default. Loads the teacher's file for its name. */
enum intrus_status dataset_distill_read(const intrus_cfg *g, const char *exp_path,
                                        const char *run_dir, struct dataset_distill *out,
                                        struct intrus_error *err);

/* The directory that holds a run directory: "runs" for "runs/x", "." for "x" (NULL:
 * "runs", where `intrus run` puts its runs). */
void dataset_runs_parent(const char *run_dir, char *out, size_t n);

/* What a distilled corpus is a function of, and what was measured when it was made: the
 * corpus's MANIFEST, and (with done and targets) the progress record of a distillation
 * under way. */
struct distill_search {
  int beam, max_len_b, max_src_len, slots;
  float alpha, max_len_a;
  double finish_penalty;
  bool prune, finish_in_beam;
};
struct distill_record {
  /* compared before a corpus or a partial distillation is reused */
  uint64_t checkpoint; /* FNV-1a of the teacher checkpoint file's bytes */
  uint64_t tokenizer;  /* of the teacher run's tokenizer.txt (its BPE and vocabulary) */
  uint64_t sources;    /* of the training source lines */
  uint64_t valid, test; /* of the bytes of the two files of each split copied */
  size_t lines;
  char src[16], tgt[16];
  struct distill_search search;
  /* for the record */
  char teacher[4200], checkpoint_path[4200];
  long chunk, batch_tokens;
  /* the progress record: lines decoded so far and the FNV-1a of their text */
  size_t done;
  uint64_t targets;
  /* the finished corpus: the outputs against the original training references */
  bool scored;
  double bleu, ratio;
  char signature[256];
};

/* Writes rec to path (atomically): progress (done, targets) or, finished, the scores. */
enum intrus_status distill_record_write(const char *path, const struct distill_record *rec,
                                        bool progress, struct intrus_error *err);
/* Reads what distill_record_write wrote (INTRUS_ERR_FORMAT naming the file and line that
 * is damaged). */
enum intrus_status distill_record_read(const char *path, struct distill_record *rec,
                                       struct intrus_error *err);
/* Whether a corpus recorded as was can stand for one made now: false, with every
 * difference named in why ("the teacher's checkpoint X: ...; search.beam: 4 when it was
 * made, 2 now"). */
bool distill_record_matches(const struct distill_record *was, const struct distill_record *now,
                            char *why, size_t n);

#endif

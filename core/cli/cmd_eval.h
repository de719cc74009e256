/* What the files of `intrus eval` share (cmd_eval.c: the dispatcher, option and JSON
 * helpers; cmd_eval_run.c: reading the files and scoring them; cmd_eval_bleu.c,
 * cmd_eval_cider.c, cmd_eval_bootstrap.c: one subcommand each). Internal to the intrus
 * command, not installed. */
#ifndef INTRUS_CLI_CMD_EVAL_H
#define INTRUS_CLI_CMD_EVAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "intrus/eval.h"

#define MAX_REFS 64

enum metric { METRIC_BLEU, METRIC_CIDER };

struct eval_args {
  enum metric metric;
  const char *refs[MAX_REFS];
  int nrefs;
  const char *hyp, *hyp2, *tok, *smooth, *plugin_path;
  bool lc, json;
  double sigma; /* CIDEr-D */
  long bootstrap;
  uint64_t seed;
};

/* getopt codes of the long options without a short form. */
enum { OPT_HYP2 = 1000, OPT_SEED, OPT_SIGMA };

/* cmd_eval.c: option parsing shared by the metrics. */
/* "intrus <cmd>: <message>" and where to find help; cmd is "eval bleu", "eval cider" or
 * "eval bootstrap" (the bootstrap hands its shared options to the metric's parser). */
int usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The options both metrics have: -r, -i, --hyp2, -b, --seed, -j, -p. Returns -1 when c
 * is not one of them, else -2 to go on or an exit code. own is the metric's own command
 * ("eval bleu", "eval cider"): --bootstrap is called --samples in other commands. */
int common_option(const char *cmd, const char *own, int c, struct eval_args *a);
/* What every metric checks once its options are read. -1 to go on, or an exit code. */
int finish_args(const char *cmd, int argc, char **argv, struct eval_args *a);

/* cmd_eval.c: output shared by the metrics. */
double score_value(const struct intrus_eval_scores *sc, const char *name);
/* A double as Python's json module writes a float (repr: the shortest text that reads
 * back to the same value, with a ".0" when it is integral). */
void json_number(FILE *f, double x);
/* sacreBLEU's "score": float(f'{score:.2f}'). */
void json_score(FILE *f, double x);
/* The resampling fields of a system's JSON object (sacreBLEU's names). */
void json_confidence(FILE *f, const char *indent, const struct intrus_bootstrap_system *sys);
/* The signature spelt out as keys (nrefs, case, ..., version), as sacreBLEU does. */
void json_signature_keys(FILE *f, const char *indent, const char *signature);

/* cmd_eval_run.c */
/* Scores a.hyp (and with a.hyp2, the paired bootstrap of both) with a.metric's plugin;
 * cmd names the command in error messages. */
int eval_run(const char *cmd, struct eval_args a);

/* cmd_eval_bleu.c */
/* Returns -1 to go on, or an exit code. cmd names the command in usage errors. */
int parse_bleu_args(const char *cmd, int argc, char **argv, struct eval_args *a);
void text_system(FILE *f, const char *label, const struct intrus_eval_scores *sc,
                 const struct intrus_bootstrap_system *sys);
void json_system(FILE *f, const char *indent, const struct intrus_eval_scores *sc,
                 const char *signature, const struct intrus_bootstrap_system *sys);
int cmd_bleu(int argc, char **argv);

/* cmd_eval_cider.c */
int parse_cider_args(const char *cmd, int argc, char **argv, struct eval_args *a);
void cider_text_system(FILE *f, const char *label, const struct intrus_eval_scores *sc,
                       const struct intrus_bootstrap_system *sys);
void cider_json_system(FILE *f, const char *indent, const struct intrus_eval_scores *sc,
                       const char *signature, const struct intrus_bootstrap_system *sys);
int cmd_cider(int argc, char **argv);

/* cmd_eval_bootstrap.c */
int cmd_bootstrap(int argc, char **argv);

#endif

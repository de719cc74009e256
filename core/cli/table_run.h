/* The state of a results table's cells (table_run.c; how long each should take,
 * table_estimate.c; its data, table_data.c; which run now and the plan, table_plan.c),
 * their scores and significance (table_score.c) and the files written from them
 * (table_write.c). */
#ifndef INTRUS_TABLE_RUN_H
#define INTRUS_TABLE_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "table_spec.h"

enum { TABLE_MAX_PHASES = 8 }; /* phases timed apart; later ones are not estimated */

enum table_cell_kind {
  CELL_EMPTY,   /* the row has no experiment for this column */
  CELL_NEW,     /* nothing trained yet */
  CELL_PARTIAL, /* a checkpoint, but no results of these settings yet */
  CELL_DONE,    /* results.json of these settings and test.hyp */
  CELL_FAILED   /* running it failed (error) */
};

struct table_cell_state {
  enum table_cell_kind state;
  char experiment[4200], name[CLI_NAME_MAX + 1], run_dir[4200];
  long step, total_steps;   /* checkpoint step; steps the experiment trains (at most) */
  double train_s;           /* training seconds so far (train.log), NAN if none */
  int setups;               /* distinct CPU / threads / ranks / kernels / OpenBLAS core in
                             * its sessions.tsv (0: none recorded): its train_s mixes the
                             * speeds of that many, and an interrupted run is bitwise the
                             * uninterrupted one only with one */
  int nphases;              /* train.phases, or 1 */
  long phase_left[TABLE_MAX_PHASES];     /* steps each phase still trains */
  double phase_factor[TABLE_MAX_PHASES]; /* cost model: a step's decoder cost in
                                          * left-to-right steps */
  double phase_rate[TABLE_MAX_PHASES];   /* s/step in its own train.log's rows, NAN if none */
  double phase_gflop[TABLE_MAX_PHASES];  /* cost model: a step of each phase, GFLOP */
  bool measured;            /* every phase still to train timed from a train.log */
  double estimate_s;        /* training time still to go */
  uint64_t phase_key[TABLE_MAX_PHASES]; /* what a step of each phase costs depends on
                                          * (table_phase_key in table_estimate.c); 0: not known */
  /* The training data: what the run learnt from (its tokenizer.txt) and what the corpus
   * holds now. The corpora are rebuilt from an archive whose packages drift, and a table
   * can take days: a cell trained on other data than its column's others is no
   * comparison, and nothing else would show it. */
  bool data_recorded, data_known;
  uint64_t data_trained, data_now;
  /* data.distill: trained on a teacher's outputs for the column's training sources, so
   * other training data by design, and tested on the column's own references; such cells
   * run after the others (their teacher may be one). */
  bool distilled;
  /* model.init: warm-started from a checkpoint, which may be another cell's run; such
   * cells run after the others too, so that a table's teacher row trains first. */
  bool warm_started;
  char warm_source[4096]; /* its source checkpoint's path, as the trainer resolves it */
  char warm_missing[1024]; /* "FILE:LINE: model.init.checkpoint: ..." when that file is
                            * not there when the table starts; empty when it is */
  char error[1024];
  bool held; /* outside --row / --column: not run by this invocation, scored if done */
  /* table_score: */
  bool scored;
  double score, ratio;
  char signature[256];
  bool tested;              /* compared with the baseline row's cell of this column */
  double p_value;           /* sacreBLEU paired-bs p (two-sided) */
  double baseline_score;    /* the baseline's score in the same comparison */
  int b_better, samples;
};

/* Not trained to the end yet: new, or half-trained. */
static inline bool table_cell_unfinished(const struct table_cell_state *cs) {
  return cs->state == CELL_NEW || cs->state == CELL_PARTIAL;
}
/* What this invocation trains: unfinished, and not held by --row / --column. */
static inline bool table_cell_to_run(const struct table_cell_state *cs) {
  return !cs->held && table_cell_unfinished(cs);
}

enum { TABLE_MAX_KNOWN = 256 };  /* phases of other runs remembered for their speed */
enum { TABLE_MAX_CORPORA = 64 }; /* training splits whose fingerprint is remembered */

/* A phase of a run in the runs directory that is no cell of this table (another table's,
 * or one trained by hand): its speed times the cells' phases of the same key. */
struct table_known_phase {
  uint64_t key;
  double rate;   /* s/step */
  double gflop;  /* the cost model's step of that phase (factor included) */
  double mtime;  /* its train.log's: where several runs have the key, the latest counts */
};

/* Two rows of one column that are both scored and both have the paper's number: the
 * paper's order of the two against ours, and whether ours is significant (a paired
 * bootstrap between the two rows, not against the baseline). A table's claims are
 * orderings (INTRUS above left-to-right, one ablation above another), and its numbers
 * come from other corpora: these pairs are what can be compared. */
struct table_pair {
  int col, hi, lo;  /* rows; hi has the higher paper number (the earlier row on a tie) */
  bool tested;      /* bootstrapped: the two outputs have the same references */
  double p_value;   /* sacreBLEU's paired-bs p */
};

enum table_order {
  ORDER_SAME,       /* ours ranks the two as the paper does */
  ORDER_REVERSED,
  ORDER_TIE_OURS,   /* equal scores here, different in the paper */
  ORDER_TIE_PAPER   /* equal in the paper: no order to reproduce */
};

enum { TABLE_MAX_PAIRS = TABLE_MAX_ROWS * (TABLE_MAX_ROWS - 1) / 2 * TABLE_MAX_COLUMNS };

struct table_state {
  const struct table_spec *t;
  char runs[4096];
  const char *plugin_path;
  double peak_gflops; /* sgemm probe for the cost model; 0 until needed (no run timed) */
  struct table_cell_state cells[TABLE_MAX_ROWS][TABLE_MAX_COLUMNS];
  bool scanned; /* the runs directory's other runs read into known (scan_other_runs) */
  int nknown;
  struct table_known_phase known[TABLE_MAX_KNOWN];
  int ncorpora; /* training splits fingerprinted so far, by their paths */
  struct { uint64_t paths, fp; } corpora[TABLE_MAX_CORPORA];
  int npairs;   /* table_score: every pair of scored rows with paper numbers, by column */
  int unscored; /* table_score: finished cells it could not score (marked failed) */
  struct table_pair pairs[TABLE_MAX_PAIRS];
};

/* Loads every cell's experiment file (a file that does not parse is an error here,
 * before any training) and finds what each still needs. NULL on error. */
struct table_state *table_state_new(const struct table_spec *t, const char *runs,
                                    const char *plugin_path, struct intrus_error *err);
void table_state_free(struct table_state *s);
/* The corpus files of every cell still to run are readable (INTRUS_ERR_DATA naming the
 * first missing one, the row and the column). */
enum intrus_status table_check_data(const struct table_state *s, struct intrus_error *err);
/* The warm-start source of every new warm-started cell still to run is there, or in the
 * run directory of a cell this invocation trains first (INTRUS_ERR_DATA naming the
 * checkpoint, the setting's file, the row and the column). */
enum intrus_status table_check_warm_sources(const struct table_state *s,
                                            struct intrus_error *err);
/* Holds every cell outside the named rows and columns (none named: holds nothing),
 * except cells that share their run with a cell not held; names are table_spec row /
 * column names, an unknown one INTRUS_ERR_INVALID listing the table's names. */
enum intrus_status table_select(struct table_state *s, const char *const *rows, int nrows,
                                const char *const *cols, int ncols, struct intrus_error *err);
/* Looks at cell (r, c)'s run directory again (after running it). */
void table_cell_refresh(struct table_state *s, int r, int c);
/* One line per cell: state, run directory, steps, estimated time; and the total. */
void table_print_plan(const struct table_state *s, FILE *f);
/* One line per finding, each begun with prefix: a cell trained on other data than its
 * corpus holds now, and a column whose cells were trained on different data. Returns how
 * many. */
int table_data_notes(const struct table_state *s, FILE *f, const char *prefix);
/* "0x1f1d156a" (the fingerprint's first 32 bits), "not recorded", "(now 0x...)"... */
void table_data_text(const struct table_cell_state *cs, char *out, size_t n);
/* "42 s", "17 min", "2.5 h"; "?" for NAN. */
void table_duration(double sec, char *out, size_t n);

/* Scores every done cell's test.hyp, tests each row against the baseline row, and each
 * pair of scored rows with the paper's numbers against each other (s->pairs). */
enum intrus_status table_score(struct table_state *s, struct intrus_error *err);

/* table_order.c: a pair's order here against the paper's; significant: tested, p below
 * the table's level and the scores differ. */
enum table_order table_pair_order(const struct table_state *s, const struct table_pair *p);
bool table_pair_significant(const struct table_state *s, const struct table_pair *p);
/* "En-Ru: 5 of 6 pairs of rows ordered as in the paper (4 of them significantly), 1
 * reversed (1 significantly)": column c's pairs, NULL-free text; false if it has none. */
bool table_order_summary(const struct table_state *s, int c, char *out, size_t n);
/* table.md's section: the summary of each column, then one line per pair. */
void table_order_markdown(const struct table_state *s, FILE *f);

/* OUT/table.md, table.csv, table.json (each atomically). */
enum intrus_status table_write(const struct table_state *s, const char *out_dir,
                               struct intrus_error *err);
void table_print_markdown(const struct table_state *s, FILE *f);

#endif

/* The plugin ABI. A plugin is a libtool module that exports exactly one symbol,
 *
 *     const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(<module>) = { ... };
 *
 * where <module> is the module's file name without ".la" (e.g. encoder_transformer):
 * libltdl looks the descriptor up as "<module>_LTX_intrus_plugin_desc". Modules are
 * named <kind>_<name> (encoder_transformer, decoder_autoregressive, order_uniform,
 * eval_bleu), so the loader finds a plugin from the kind and name an experiment gives.
 *
 * Compatibility: the loader accepts a descriptor whose abi_major equals the core's and
 * whose abi_minor is not newer. Minor versions only append slots to the end of a
 * vtable; a slot marked optional may be NULL. */
#ifndef INTRUS_PLUGIN_H
#define INTRUS_PLUGIN_H

#include <stdint.h>

#include "intrus/config.h"
#include "intrus/insertion.h"
#include "intrus/params.h"
#include "intrus/status.h"
#include "intrus/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define INTRUS_ABI_MAJOR 1
#define INTRUS_ABI_MINOR 9

#define INTRUS_PLUGIN_DESC(module) module##_LTX_intrus_plugin_desc
#define INTRUS_PLUGIN_SYMBOL "intrus_plugin_desc"
#define INTRUS_PLUGIN_EXPORT __attribute__((visibility("default")))

enum intrus_plugin_kind {
  INTRUS_KIND_ENCODER = 1,
  INTRUS_KIND_DECODER = 2,
  INTRUS_KIND_ORDER = 3,
  INTRUS_KIND_EVALUATOR = 4
};

/* "encoder", "decoder", "order", "eval" (the module-name prefix); NULL if unknown. */
const char *intrus_plugin_kind_name(enum intrus_plugin_kind kind);

struct intrus_plugin_desc {
  uint32_t abi_major;
  uint32_t abi_minor;
  const char *name;     /* as written in experiments: "transformer" */
  const char *version;  /* the plugin's own version: "1.0.0" */
  enum intrus_plugin_kind kind;
  const char *summary;  /* one line for `intrus plugins` */
  const void *vtable;   /* struct intrus_<kind>_vtable for kind */
};

/* ---- what encoder and decoder plugins see ------------------------------------ */

/* Special token ids shared by every vocabulary. BOS doubles as the insertion
 * decoder's NULL token. */
enum { INTRUS_PAD = 0, INTRUS_UNK = 1, INTRUS_BOS = 2, INTRUS_EOS = 3, INTRUS_NUM_SPECIAL = 4 };

struct intrus_model_init {
  const intrus_cfg *cfg;          /* the plugin's own group, e.g. model.encoder */
  struct intrus_params *params;   /* register parameters here (before finalize) */
  const char *prefix;             /* parameter name prefix: "encoder." or "decoder." */
  int d_model;                    /* width shared by encoder and decoder */
  int src_vocab, tgt_vocab;       /* sizes including the special tokens */
};

/* A batch of sources: token sequences or images. */
struct intrus_src_batch {
  int batch, len;
  const int32_t *tokens;          /* [batch, len], padded with INTRUS_PAD; NULL for images */
  const int *lens;                /* [batch] */
  int channels, height, width;    /* images: pixels [batch, channels, height, width] */
  const float *pixels;
  /* ABI 1.9 (which also adds intrus_cfg_ints and intrus_cfg_bools to config.h, for
   * plugins' list settings): images: [batch] each image's own height and width; it fills rows
   * 0 .. heights[b]-1 and columns 0 .. widths[b]-1 of its [height, width] plane, the
   * rest is padding (INTRUS_IMAGE_PAD_DEFAULT, white). NULL: no image is padded. An
   * encoder of images carries this through its pools into intrus_memory.mask. */
  const int *heights, *widths;
};

/* What an encoder hands the decoder. */
struct intrus_memory {
  intrus_tensor *states;          /* [batch, len, d_model] */
  const uint8_t *mask;            /* [batch, len], 1 = a real position; arena memory */
  int batch, len;
};

/* A batch of targets in reading order, without BOS/EOS. */
struct intrus_tgt_batch {
  int batch, len;
  const int32_t *tokens;          /* [batch, len], padded with INTRUS_PAD */
  const int *lens;                /* [batch] */
};

struct intrus_train_opts {
  int direction;                  /* autoregressive: +1 left-to-right, -1 right-to-left */
  float label_smoothing;
};

struct intrus_loss_out {
  intrus_tensor *loss;            /* scalar to minimise (mean over target tokens) */
  double nll_sum;                 /* loss * tokens (label-smoothed when smoothing is on) */
  long tokens;                    /* tokens (incl. EOS) the sum is over */
};

struct intrus_encoder_vtable {
  enum intrus_status (*create)(const struct intrus_model_init *init, void **self,
                               struct intrus_error *err);
  void (*destroy)(void *self);
  enum intrus_status (*encode)(void *self, intrus_ctx *ctx, const struct intrus_src_batch *src,
                               struct intrus_memory *out, struct intrus_error *err);
};

struct intrus_decoder_vtable {
  enum intrus_status (*create)(const struct intrus_model_init *init, void **self,
                               struct intrus_error *err);
  void (*destroy)(void *self);
  /* Training loss of a batch under teacher forcing. */
  enum intrus_status (*loss)(void *self, intrus_ctx *ctx, const struct intrus_memory *mem,
                             const struct intrus_tgt_batch *tgt,
                             const struct intrus_train_opts *opts, struct intrus_loss_out *out,
                             struct intrus_error *err);

  /* ABI 1.1, optional (NULL when the decoder has no incremental mode): left-to-right
   * step decoding for search strategies. The decoder only steps and keeps its state
   * (caches); choosing hypotheses is the search's business.
   *
   * start: prepares a state for mem->batch sentences with `rows_per_sentence`
   * hypothesis rows each (row r belongs to sentence r / rows_per_sentence). The state
   * copies what it needs from mem: the caller may reset ctx between steps. */
  enum intrus_status (*start)(void *self, intrus_ctx *ctx, const struct intrus_memory *mem,
                              int rows_per_sentence, int max_steps, void **state,
                              struct intrus_error *err);
  /* One step for every row: row r first takes over the cache of row parents[r] (parents
   * NULL = unchanged), then consumes tokens[r] (INTRUS_BOS at the first step) and writes
   * log-probabilities of the next token, [rows, tgt_vocab], to logp. */
  enum intrus_status (*step)(void *self, void *state, intrus_ctx *ctx, const int32_t *parents,
                             const int32_t *tokens, float *logp, struct intrus_error *err);
  /* Frees a state made by start or ins_start. */
  void (*finish)(void *self, void *state);

  /* ABI 1.2, optional (NULL unless the decoder is an insertion decoder; its `loss`,
   * `start` and `step` are then NULL). Read these slots only from a plugin whose
   * abi_minor is at least 2: older vtables end above.
   *
   * ins_hidden: the decoder's final (normalised) states for a batch of partial outputs,
   * [sum_s (k_s + 2), d_model], each state's positions (NULL, y1..yk, EOS) consecutive
   * and in state order; state s reads memory row states->sent[s]. Recorded on the tape
   * when ctx's grad is on (training). */
  enum intrus_status (*ins_hidden)(void *self, intrus_ctx *ctx, const struct intrus_memory *mem,
                                   const struct intrus_ins_states *states,
                                   intrus_tensor **hidden, struct intrus_error *err);
  /* The output layer W: d -> V+1 as two parameters: w_token [d, V] (columns 0..V-1)
   * and w_pos [d, 1] (column V, the position logit). */
  void (*ins_output)(void *self, intrus_tensor **w_token, intrus_tensor **w_pos);
  /* For search and scoring without grad: ins_start copies what it needs from mem and
   * precomputes the cross-attention keys and values once; ins_step is ins_hidden against
   * that cache (the caller may reset ctx between calls; `finish` frees the state). */
  enum intrus_status (*ins_start)(void *self, intrus_ctx *ctx, const struct intrus_memory *mem,
                                  void **state, struct intrus_error *err);
  enum intrus_status (*ins_step)(void *self, void *state, intrus_ctx *ctx,
                                 const struct intrus_ins_states *states, intrus_tensor **hidden,
                                 struct intrus_error *err);

  /* ABI 1.5, optional (read only from plugins of minor 5 or later; NULL: the core runs
   * ins_step and keeps the rows it needs). ins_step for callers that read only some
   * rows: hidden is [nrows, d_model], the final states of rows[0..nrows) (ascending
   * indices into ins_step's rows). A decoder can then run its last layer's queries,
   * feed-forward and final norm on those rows alone; keys and values still come from
   * every row, so the result equals those rows of ins_step's. */
  enum intrus_status (*ins_step_rows)(void *self, void *state, intrus_ctx *ctx,
                                      const struct intrus_ins_states *states, int nrows,
                                      const int *rows, intrus_tensor **hidden,
                                      struct intrus_error *err);

  /* ABI 1.7, optional (NULL, or a plugin older than minor 7: false). True when
   * ins_output's w_token is stored transposed, [V, d], as when it is the decoder's own
   * embedding table (tied embeddings); the core then reads it as its transpose. */
  bool (*ins_output_transposed)(void *self);
};

/* ---- order policies (ABI 1.2) ------------------------------------------------
 * A policy turns a batch of targets into trajectories: for each sentence, the order in
 * which its tokens are inserted, starting from the empty output. Policies that need
 * the model (sampled, argmax) score states through the scorer the core passes in. */
struct intrus_order_vtable {
  /* cfg: the policy's settings group (may be NULL: all defaults). */
  enum intrus_status (*create)(const intrus_cfg *cfg, void **self, struct intrus_error *err);
  void (*destroy)(void *self);
  /* True when trajectories() uses the scorer (the core then runs the model for it). */
  bool (*needs_model)(void *self);
  /* steps[batch->off[b] + t] receives sentence b's t-th insertion, for t < its length.
   * scorer is NULL when needs_model() is false. */
  enum intrus_status (*trajectories)(void *self, const struct intrus_order_batch *batch,
                                     const struct intrus_ins_scorer *scorer,
                                     struct intrus_ins_step *steps, struct intrus_error *err);
};

/* ---- evaluators (ABI 1.1) ----------------------------------------------------
 * An evaluator turns each segment (a hypothesis and its references) into a fixed-size
 * vector of sufficient statistics; corpus scores are computed from the sum of those
 * vectors over segments. That split lets the core run paired bootstrap resampling
 * for any metric: resample segments, sum their statistics, score. */

#define INTRUS_EVAL_MAX_SCORES 16

struct intrus_eval_scores {
  int count;
  const char *names[INTRUS_EVAL_MAX_SCORES];  /* "BLEU", "P1".."P4", "BP", "ratio", ... */
  double values[INTRUS_EVAL_MAX_SCORES];
  char signature[256];  /* e.g. sacreBLEU's "nrefs:1|case:mixed|eff:no|tok:13a|..." */
};

struct intrus_evaluator_vtable {
  /* cfg: the evaluator's settings group (may be NULL: all defaults). */
  enum intrus_status (*create)(const intrus_cfg *cfg, void **self, struct intrus_error *err);
  void (*destroy)(void *self);
  /* Doubles per segment. */
  int (*stats_size)(void *self);
  /* Optional (may be NULL): sees every segment's references once before any
   * segment_stats call (for metrics with corpus-level weights, e.g. CIDEr-D's document
   * frequencies). refs[i] has nrefs strings. */
  enum intrus_status (*prepare)(void *self, int nseg, const char *const *const *refs,
                                int nrefs, struct intrus_error *err);
  /* hyp and refs are detokenised UTF-8 lines. stats: stats_size doubles. */
  enum intrus_status (*segment_stats)(void *self, const char *hyp, const char *const *refs,
                                      int nrefs, double *stats, struct intrus_error *err);
  /* Corpus scores from statistics summed over segments. */
  enum intrus_status (*score)(void *self, const double *sum, struct intrus_eval_scores *out,
                              struct intrus_error *err);
};

/* ---- loading ---------------------------------------------------------------- */

struct intrus_plugin;         /* an opened module */
struct intrus_plugin_search;  /* an ordered list of directories */

struct intrus_plugin_search *intrus_plugin_search_create(void);
void intrus_plugin_search_free(struct intrus_plugin_search *s);
/* Appends the directories of a colon-separated list (empty entries are skipped). */
void intrus_plugin_search_add(struct intrus_plugin_search *s, const char *dirs);
/* Appends $INTRUS_PLUGIN_PATH, then the installed pkglibdir, then (only for a binary
 * running uninstalled from its build tree) the build tree's plugins/ directory. */
void intrus_plugin_search_add_defaults(struct intrus_plugin_search *s);
int intrus_plugin_search_count(const struct intrus_plugin_search *s);
const char *intrus_plugin_search_dir(const struct intrus_plugin_search *s, int i);

/* Opens <kind>_<name> from the first directory that has it and checks its descriptor
 * (ABI, kind, name). Not found: the error lists the plugins of that kind available. */
enum intrus_status intrus_plugin_load(const struct intrus_plugin_search *s,
                                      enum intrus_plugin_kind kind, const char *name,
                                      struct intrus_plugin **out, struct intrus_error *err);
/* Opens one module file (.la or .so) and checks its ABI. Errors name the path and
 * carry lt_dlerror(). */
enum intrus_status intrus_plugin_open(const char *path, struct intrus_plugin **out,
                                      struct intrus_error *err);
void intrus_plugin_close(struct intrus_plugin *p);

const struct intrus_plugin_desc *intrus_plugin_descriptor(const struct intrus_plugin *p);
const char *intrus_plugin_file(const struct intrus_plugin *p);

/* Calls fn for every module file found along the path (first occurrence of each module
 * name wins). desc is NULL and problem says why when a module could not be opened. */
typedef void (*intrus_plugin_visit_fn)(const char *path, const struct intrus_plugin_desc *desc,
                                       const char *problem, void *user);
enum intrus_status intrus_plugin_list(const struct intrus_plugin_search *s,
                                      intrus_plugin_visit_fn fn, void *user,
                                      struct intrus_error *err);

#ifdef __cplusplus
}
#endif
#endif

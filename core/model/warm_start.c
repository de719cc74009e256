/* Warm start: a fresh run's model takes the parameters of another run's checkpoint
 * wherever name and shape agree (DESIGN section 7; beyond the paper). Its use: the
 * left-to-right baseline's encoder and decoder layers into an INTRUS model of the same
 * width and depth. Both decoders build their layers with the same calls of nn.c under
 * the same prefix, so `encoder.*`, `decoder.embed`, `decoder.layer<i>.*` (self- and
 * cross-attention, feed-forward, their norms) and `decoder.final_norm.*` have the same
 * names and shapes in both and are copied as they are.
 *
 * The output layer is the one thing the two decoders name differently. The baseline's
 * token projection is `decoder.proj.w` [d, V], or, with tie_embeddings, its embedding
 * table `decoder.embed` [V, d] read transposed (no proj.w then); the insertion decoder's
 * is `decoder.out_token` [d, V] beside its position column `decoder.out_pos` [d, 1]
 * (the V+1-th column of DESIGN section 4). The rule, printed with every warm start:
 * a target token output layer that the source lacks under its own name takes the
 * source's under the other name, or, when the source has neither, the transpose of the
 * source's `decoder.embed` (the logits h . embed[v] of a tied baseline are then the
 * target's h . out_token[:, v] exactly). Renaming a parameter instead would have made
 * every finished run's checkpoint unreadable. A tied target reads its embedding, which
 * is copied by name; the position column and whatever else the source lacks
 * (`decoder.slot_next` of pair slots, an encoder of another kind) keep their own
 * initialisation, which depends only on (seed, name): bit for bit a fresh run's. */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intrus/checkpoint.h"
#include "intrus/fileio.h"
#include "intrus/params.h"
#include "checkpoint_internal.h"
#include "warm_start.h"

enum intrus_status intrus_warm_source_read(const intrus_cfg *model, const char *exp_path,
                                           struct warm_source *ws, struct intrus_error *err) {
  memset(ws, 0, sizeof *ws);
  if (!intrus_cfg_has(model, "init")) return INTRUS_OK;
  const char *path;
  enum intrus_status st;
  if ((st = intrus_cfg_group_req(model, "init", &ws->group, err)) ||
      (st = intrus_cfg_string_req(ws->group, "checkpoint", &path, err)) ||
      (st = intrus_cfg_check_unknown(ws->group, err)))
    return st;
  if (!path[0])
    return intrus_cfg_error(ws->group, "checkpoint", err,
                            "is empty: give the path of a checkpoint (relative to the "
                            "experiment file)");
  int n;
  if (path[0] == '/' || !exp_path) {
    n = snprintf(ws->path, sizeof ws->path, "%s", path);
  } else {
    /* Relative to the experiment file, as data.dir: experiments run from any directory. */
    char *copy = strdup(exp_path);
    if (!copy) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    n = snprintf(ws->path, sizeof ws->path, "%s/%s", dirname(copy), path);
    free(copy);
  }
  if (n < 0 || (size_t)n >= sizeof ws->path)
    return intrus_cfg_error(ws->group, "checkpoint", err, "path too long");
  ws->given = true;
  return INTRUS_OK;
}

/* ---- the copy -------------------------------------------------------------------- */

/* The token output layer under its two names (see the top of the file). */
static const char *const token_output[2] = {"decoder.out_token", "decoder.proj.w"};

static const struct ckpt_record *param_record(const struct intrus_ckpt *c, const char *name) {
  char key[CKPT_NAME_MAX + 1];
  if (snprintf(key, sizeof key, "param/%s", name) >= (int)sizeof key) return NULL;
  const struct ckpt_record *r = ckpt_find_record(c, key);
  return r && r->type == CKPT_TYPE_TENSOR ? r : NULL;
}

static bool same_shape(const struct ckpt_record *r, const intrus_tensor *t) {
  return r->ndim == t->ndim && memcmp(r->shape, t->shape, (size_t)t->ndim * sizeof(int)) == 0;
}

static void put_shape(FILE *f, int ndim, const int *shape) {
  fputc('[', f);
  for (int d = 0; d < ndim; d++) fprintf(f, "%s%d", d ? ", " : "", shape[d]);
  fputc(']', f);
}

/* Where a parameter of the model comes from. */
enum source_kind {
  FROM_SAME,       /* the source's parameter of the same name and shape */
  FROM_OTHER_NAME, /* the source's token output layer under the other name */
  FROM_TRANSPOSED, /* the transpose of the source's decoder.embed (a tied source) */
  KEEP_ABSENT,     /* kept: the source has nothing for it */
  KEEP_SHAPE       /* kept: the source's parameter has another shape */
};

struct choice {
  enum source_kind kind;
  const struct ckpt_record *rec; /* what is copied, or the mismatched record */
  const char *rec_name;          /* its parameter name */
};

static int token_output_index(const char *name) {
  for (int i = 0; i < 2; i++)
    if (!strcmp(name, token_output[i])) return i;
  return -1;
}

static struct choice choose(const struct intrus_ckpt *c, const intrus_tensor *t) {
  const struct ckpt_record *r = param_record(c, t->name);
  if (r) return (struct choice){same_shape(r, t) ? FROM_SAME : KEEP_SHAPE, r, t->name};
  int k = token_output_index(t->name);
  if (k < 0 || t->ndim != 2) return (struct choice){KEEP_ABSENT, NULL, NULL};
  const char *other = token_output[1 - k];
  if ((r = param_record(c, other)))
    return (struct choice){same_shape(r, t) ? FROM_OTHER_NAME : KEEP_SHAPE, r, other};
  if ((r = param_record(c, "decoder.embed"))) {
    bool fits = r->ndim == 2 && r->shape[0] == t->shape[1] && r->shape[1] == t->shape[0];
    return (struct choice){fits ? FROM_TRANSPOSED : KEEP_SHAPE, r, "decoder.embed"};
  }
  return (struct choice){KEEP_ABSENT, NULL, NULL};
}

/* Writes a list of names, comma-separated, wrapped under a four-space indent. */
static void put_name(FILE *f, const char *name, int *col) {
  int len = (int)strlen(name);
  if (*col > 4 && *col + 2 + len > 96) {
    fputs(",\n    ", f);
    *col = 4;
  } else if (*col > 4) {
    fputs(", ", f);
    *col += 2;
  }
  fputs(name, f);
  *col += len;
}

/* The copy itself and its report (what intrus_warm_start prints). Checks everything
 * (finite values of what is to be copied) before it copies anything. */
static enum intrus_status copy_params(struct intrus_params *p, const struct intrus_ckpt *c,
                                      const char *source, FILE *rep, struct intrus_error *err) {
  const size_t n = intrus_params_count(p);
  struct choice *ch = calloc(n ? n : 1, sizeof *ch);
  bool *used = calloc(c->count ? c->count : 1, sizeof *used);
  if (!ch || !used) {
    free(ch);
    free(used);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  size_t copied = 0, values = 0, values_all = 0, kept = 0, by_rule = 0;
  enum intrus_status st = INTRUS_OK;
  for (size_t i = 0; i < n && !st; i++) {
    const intrus_tensor *t = intrus_params_at(p, i);
    ch[i] = choose(c, t);
    values_all += intrus_shape_numel(t->ndim, t->shape);
    if (ch[i].rec) used[ch[i].rec - c->recs] = true;
    if (ch[i].kind >= KEEP_ABSENT) {
      kept++;
      continue;
    }
    copied++;
    values += ch[i].rec->n;
    by_rule += ch[i].kind != FROM_SAME;
    for (size_t j = 0; j < ch[i].rec->n; j++)
      if (!isfinite(ch[i].rec->data[j])) {
        st = intrus_error_set(err, INTRUS_ERR_FORMAT,
                              "%s: parameter '%s' holds non-finite values (NaN or Inf): the "
                              "source run diverged or the file is damaged",
                              source, ch[i].rec_name);
        break;
      }
  }
  if (!st && copied == 0)
    st = intrus_error_set(err, INTRUS_ERR_FORMAT,
                          "%s: no parameter of this model has its name and shape there (a "
                          "model of another width, or not the kind of model this one is)",
                          source);
  if (st) {
    free(ch);
    free(used);
    return st;
  }
  for (size_t i = 0; i < n; i++) {
    intrus_tensor *t = intrus_params_at(p, i);
    const struct ckpt_record *r = ch[i].rec;
    if (ch[i].kind == FROM_SAME || ch[i].kind == FROM_OTHER_NAME) {
      memcpy(t->data, r->data, r->n * sizeof(float));
    } else if (ch[i].kind == FROM_TRANSPOSED) {
      const int rows = t->shape[0], cols = t->shape[1]; /* [d, V] from [V, d] */
      for (int a = 0; a < rows; a++)
        for (int b = 0; b < cols; b++)
          t->data[(size_t)a * cols + b] = r->data[(size_t)b * rows + a];
    }
  }

  fprintf(rep, "  copied %zu of %zu parameters (%zu of %zu values)\n", copied, n, values,
          values_all);
  fprintf(rep, "  by name and shape (%zu):\n    ", copied - by_rule);
  int col = 4;
  for (size_t i = 0; i < n; i++)
    if (ch[i].kind == FROM_SAME) put_name(rep, intrus_params_at(p, i)->name, &col);
  fputc('\n', rep);
  if (by_rule) {
    fprintf(rep, "  by the output-layer rule (%zu; the token columns of the output layer from "
                 "the source's token\n  output layer, the position column keeps its own "
                 "initialisation):\n",
            by_rule);
    for (size_t i = 0; i < n; i++) {
      const intrus_tensor *t = intrus_params_at(p, i);
      if (ch[i].kind != FROM_OTHER_NAME && ch[i].kind != FROM_TRANSPOSED) continue;
      fprintf(rep, "    %s ", t->name);
      put_shape(rep, t->ndim, t->shape);
      fprintf(rep, " <- %s ", ch[i].rec_name);
      put_shape(rep, ch[i].rec->ndim, ch[i].rec->shape);
      fputs(ch[i].kind == FROM_TRANSPOSED
                ? " transposed (the source ties its output layer to its embedding)\n"
                : "\n",
            rep);
    }
  }
  fprintf(rep, "  kept their own initialisation (%zu):%s", kept, kept ? "\n" : " none\n");
  for (size_t i = 0; i < n; i++) {
    const intrus_tensor *t = intrus_params_at(p, i);
    if (ch[i].kind < KEEP_ABSENT) continue;
    fprintf(rep, "    %s ", t->name);
    put_shape(rep, t->ndim, t->shape);
    if (ch[i].kind == KEEP_ABSENT) {
      fputs(": not in the source\n", rep);
    } else {
      fputs(": shape mismatch, ", rep);
      put_shape(rep, ch[i].rec->ndim, ch[i].rec->shape);
      fprintf(rep, " in the source (%s)\n", ch[i].rec_name);
    }
  }
  size_t unused = 0;
  for (size_t i = 0; i < c->count; i++)
    unused += !used[i] && c->recs[i].type == CKPT_TYPE_TENSOR &&
              !strncmp(c->names[i], "param/", 6);
  fprintf(rep, "  source parameters not used (%zu):%s", unused, unused ? "\n" : " none\n");
  for (size_t i = 0; i < c->count; i++) {
    if (used[i] || c->recs[i].type != CKPT_TYPE_TENSOR || strncmp(c->names[i], "param/", 6))
      continue;
    fprintf(rep, "    %s ", c->names[i] + 6);
    put_shape(rep, c->recs[i].ndim, c->recs[i].shape);
    fputc('\n', rep);
  }
  free(ch);
  free(used);
  return INTRUS_OK;
}

/* An error about the source, said at model.init.checkpoint's line. */
static enum intrus_status source_error(const struct warm_source *ws, struct intrus_error *err) {
  char msg[INTRUS_ERROR_MSG_MAX];
  snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
  enum intrus_status st = err ? err->status : INTRUS_ERR_FORMAT;
  intrus_cfg_error(ws->group, "checkpoint", err, "%s", msg);
  if (err) err->status = st;
  return st;
}

enum intrus_status intrus_warm_start(struct intrus_model *m, const struct warm_source *ws,
                                     uint64_t vocab_fp, const char *vocab_where,
                                     const char *run_dir, FILE *progress, uint64_t *content,
                                     struct intrus_error *err) {
  struct intrus_ckpt *c;
  enum intrus_status st = intrus_ckpt_read(ws->path, false, 0, &c, err);
  if (st) return source_error(ws, err);
  uint64_t src_vocab = 0, step = 0;
  if (!intrus_ckpt_u64(c, "vocab", &src_vocab)) {
    intrus_ckpt_free(c);
    return intrus_cfg_error(ws->group, "checkpoint", err,
                            "%s has no 'vocab' record: not a checkpoint of a training run",
                            ws->path);
  }
  if (src_vocab != vocab_fp) {
    intrus_ckpt_free(c);
    return intrus_cfg_error(ws->group, "checkpoint", err,
                            "%s was trained with another vocabulary than this run's (%s): "
                            "vocabulary fingerprint 0x%016llx against 0x%016llx; a warm start "
                            "needs the same data settings and training split, or "
                            "data.vocab_from naming the source's run",
                            ws->path, vocab_where, (unsigned long long)src_vocab,
                            (unsigned long long)vocab_fp);
  }
  char *text = NULL;
  size_t len = 0;
  FILE *rep = open_memstream(&text, &len);
  if (!rep) {
    intrus_ckpt_free(c);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  *content = intrus_ckpt_checksum(c);
  fprintf(rep, "warm start (model.init.checkpoint) from %s\n  content 0x%016llx", ws->path,
          (unsigned long long)*content);
  if (intrus_ckpt_u64(c, "step", &step)) fprintf(rep, ", its step %llu", (unsigned long long)step);
  fputc('\n', rep);
  st = copy_params(intrus_model_params(m), c, ws->path, rep, err);
  intrus_ckpt_free(c);
  fclose(rep);
  if (st) {
    free(text);
    return source_error(ws, err);
  }
  if (progress) {
    fputs(text, progress);
    fflush(progress);
  }
  /* train.log is a table other commands parse; the report gets a file of its own. */
  char path[4200];
  snprintf(path, sizeof path, "%s/warm_start.txt", run_dir);
  st = intrus_file_write_atomic(path, text, len, err);
  free(text);
  return st;
}

enum intrus_status intrus_warm_source_recheck(const struct warm_source *ws, bool has_record,
                                              uint64_t recorded, const char *ckpt_path,
                                              FILE *progress, struct intrus_error *err) {
  if (!has_record)
    return intrus_cfg_error(ws->group, "checkpoint", err,
                            "%s records no warm-start source (no 'init_source' record), though "
                            "its fingerprint says it was trained with model.init: the checkpoint "
                            "is damaged or was written by another program",
                            ckpt_path);
  if (access(ws->path, F_OK) != 0) {
    if (progress)
      fprintf(progress,
              "warm start: the source %s is gone; the run resumes with its own parameters "
              "(it began from content 0x%016llx)\n",
              ws->path, (unsigned long long)recorded);
    return INTRUS_OK;
  }
  uint64_t now;
  if (intrus_ckpt_file_checksum(ws->path, &now, err)) return source_error(ws, err);
  if (now != recorded)
    return intrus_cfg_error(ws->group, "checkpoint", err,
                            "%s has changed since this run began from it (content 0x%016llx, "
                            "the run's %s records 0x%016llx): the run would no longer be the "
                            "experiment it is; train into another run directory (-o), or "
                            "restore the source",
                            ws->path, (unsigned long long)now, ckpt_path,
                            (unsigned long long)recorded);
  return INTRUS_OK;
}

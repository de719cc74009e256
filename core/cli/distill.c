/* Making a distilled corpus: the teacher's training sources decoded with its search, in
 * chunks saved as they finish, so that a killed distillation resumes where it stopped
 * and ends with the bytes an uninterrupted one writes (each chunk is decoded as one call
 * of translate_lines, the same lines whether resumed or not). cli_distill.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli_distill.h"
#include "eval/score.h"
#include "intrus/corpus.h"
#include "intrus/fileio.h"
#include "intrus/rng.h"
#include "search/translate.h"
#include "table_run.h"
#include "train/run_dir.h"

/* What a distillation reads of its teacher, and the record of the corpus it would make. */
struct teacher {
  struct intrus_config *cfg;
  struct translator t;
  struct intrus_parallel_text train; /* the sources, and the references BLEU is against */
  char paths[3][2][4200];            /* train, valid, test; source, target */
  char ckpt[4200];
  struct distill_record now;
  int run_lock;                      /* the teacher's run, held: its checkpoint stays put */
};

static const char *const splits[3] = {"train", "valid", "test"};

/* The checkpoint the teacher's results are decoded with: eval.checkpoint. */
static enum intrus_status teacher_checkpoint(const struct cli_distill_opts *o,
                                             const struct intrus_config *cfg, char *out,
                                             size_t n, struct intrus_error *err) {
  if (o->checkpoint) {
    snprintf(out, n, "%s", o->checkpoint);
    return INTRUS_OK;
  }
  static const char *const ckpts[] = {"last", "best", NULL};
  const intrus_cfg *eval = NULL;
  int which = 0;
  enum intrus_status st;
  if ((st = intrus_cfg_group(intrus_config_root(cfg), "eval", &eval, err)) ||
      (eval && (st = intrus_cfg_choice(eval, "checkpoint", "last", ckpts, &which, err))))
    return st;
  snprintf(out, n, "%s/%s", o->teacher_run, which ? "best.ckpt" : "checkpoint.ckpt");
  return INTRUS_OK;
}

/* FNV-1a of the bytes of both files of a split. */
static enum intrus_status split_fp(char paths[2][4200], uint64_t *fp, struct intrus_error *err) {
  uint64_t two[2];
  enum intrus_status st;
  if ((st = dataset_file_fp(paths[0], &two[0], err)) || (st = dataset_file_fp(paths[1], &two[1], err)))
    return st;
  *fp = intrus_fnv1a(INTRUS_FNV_INIT, two, sizeof two);
  return INTRUS_OK;
}

/* Loads the teacher (its model from the checkpoint, its search with the overrides) and
 * its training pairs, and fills in the record of the corpus they make. */
static enum intrus_status teacher_open(const struct cli_distill_opts *o, struct teacher *tc,
                                       struct intrus_error *err) {
  enum intrus_status st;
  if (!(tc->cfg = intrus_config_load_file(o->teacher, err))) return err->status;
  if ((st = teacher_checkpoint(o, tc->cfg, tc->ckpt, sizeof tc->ckpt, err))) return st;
  if (access(tc->ckpt, R_OK) != 0)
    return intrus_error_set(err, INTRUS_ERR_IO,
                            "the teacher %s is not trained: %s: %s (train it first: intrus run "
                            "%s)",
                            o->teacher, tc->ckpt, strerror(errno), o->teacher);
  /* A teacher still training would change its checkpoint under the distillation. */
  if ((st = run_dir_lock(o->teacher_run, &tc->run_lock, err)))
    return intrus_error_prefix(err, "the teacher's run (still training?)");
  if ((st = translator_open(tc->cfg, o->teacher_run, tc->ckpt, o->search, &tc->t, err)))
    return st;
  if (tc->t.data.kind != DATA_PARALLEL)
    return intrus_error_set(err, INTRUS_ERR_CONFIG,
                            "%s: distillation needs a teacher of parallel text (data.kind = "
                            "\"parallel\")",
                            o->teacher);
  if ((st = translator_set_beam(&tc->t, o->beam, "the distillation's beam", err))) return st;
  if (o->has_alpha) tc->t.beam.alpha = (float)o->alpha;
  if (o->has_finish_penalty) tc->t.beam.finish_penalty = o->finish_penalty;
  for (int s = 0; s < 3; s++)
    for (int side = 0; side < 2; side++)
      dataset_split_path(&tc->t.data, splits[s], side ? tc->t.data.tgt_lang : tc->t.data.src_lang,
                         tc->paths[s][side], sizeof tc->paths[s][side]);
  if ((st = intrus_parallel_read(tc->paths[0][0], tc->paths[0][1], &tc->train, err))) return st;
  struct distill_record *r = &tc->now;
  memset(r, 0, sizeof *r);
  char tok[4200];
  snprintf(tok, sizeof tok, "%s/tokenizer.txt", o->teacher_run);
  if ((st = dataset_file_fp(tc->ckpt, &r->checkpoint, err)) ||
      (access(tok, F_OK) == 0 && (st = dataset_file_fp(tok, &r->tokenizer, err))) ||
      (st = split_fp(tc->paths[1], &r->valid, err)) || (st = split_fp(tc->paths[2], &r->test, err)))
    return st;
  r->sources = INTRUS_FNV_INIT;
  for (size_t i = 0; i < tc->train.n; i++)
    r->sources = intrus_fnv1a(r->sources, tc->train.src[i], strlen(tc->train.src[i]) + 1);
  r->lines = tc->train.n;
  snprintf(r->src, sizeof r->src, "%s", tc->t.data.src_lang);
  snprintf(r->tgt, sizeof r->tgt, "%s", tc->t.data.tgt_lang);
  const struct intrus_beam_opts *b = &tc->t.beam;
  r->search = (struct distill_search){.beam = b->beam, .alpha = b->alpha,
                                      .max_len_a = b->max_len_a, .max_len_b = b->max_len_b,
                                      .prune = b->prune, .finish_in_beam = b->finish_in_beam,
                                      .max_src_len = tc->t.max_src_len, .slots = b->slots,
                                      .finish_penalty = b->finish_penalty};
  snprintf(r->teacher, sizeof r->teacher, "%s", o->teacher);
  snprintf(r->checkpoint_path, sizeof r->checkpoint_path, "%s", tc->ckpt);
  r->batch_tokens = tc->t.batch_tokens;
  return INTRUS_OK;
}

static void teacher_close(struct teacher *tc) {
  intrus_parallel_free(&tc->train);
  translator_close(&tc->t);
  if (tc->run_lock >= 0) close(tc->run_lock);
  intrus_config_free(tc->cfg);
}

/* ---- the corpus directory ------------------------------------------------------------ */

struct corpus_dir {
  const char *dir;
  char manifest[4200], progress[4200], partial[4200], log[4200], targets[4200];
  int lock;
};

static void corpus_paths(struct corpus_dir *c, const char *dir, const char *tgt) {
  c->dir = dir;
  snprintf(c->manifest, sizeof c->manifest, "%s/MANIFEST", dir);
  snprintf(c->progress, sizeof c->progress, "%s/distill.progress", dir);
  snprintf(c->partial, sizeof c->partial, "%s/train.%s.partial", dir, tgt);
  snprintf(c->log, sizeof c->log, "%s/distill.log", dir);
  snprintf(c->targets, sizeof c->targets, "%s/train.%s", dir, tgt);
}

/* What a distillation leaves before its first progress record: its lock, its log, the
 * partial targets and the temporary files of an atomic write cut short. */
static bool own_file(const char *name) {
  size_t n = strlen(name);
  return !strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, ".lock") ||
         !strcmp(name, "distill.log") || strstr(name, ".tmp.") ||
         (!strncmp(name, "train.", 6) && n > 8 && !strcmp(name + n - 8, ".partial"));
}

/* A directory that is no distillation's (other files in it, but no MANIFEST nor
 * progress record) is not written into: it could be a corpus whose files these would
 * replace. */
static enum intrus_status corpus_claim(struct corpus_dir *c, const char *tgt,
                                       struct intrus_error *err) {
  enum intrus_status st;
  if ((st = run_dir_make(c->dir, err))) return st;
  if (access(c->manifest, F_OK) != 0 && access(c->progress, F_OK) != 0) {
    DIR *d = opendir(c->dir);
    if (!d)
      return intrus_error_set(err, INTRUS_ERR_IO, "%s: %s", c->dir, strerror(errno));
    const struct dirent *e;
    const char *other = NULL;
    while (!other && (e = readdir(d)))
      if (!own_file(e->d_name)) other = e->d_name;
    if (other) {
      char name[256];
      snprintf(name, sizeof name, "%s", other);
      closedir(d);
      return intrus_error_set(err, INTRUS_ERR_IO,
                              "%s holds %s but no distillation (no MANIFEST or distill.progress): "
                              "give a new or empty directory",
                              c->dir, name);
    }
    closedir(d);
  }
  /* dataset_split_path reads SPLIT.LANG.gz before SPLIT.LANG. */
  char gz[4200];
  snprintf(gz, sizeof gz, "%s/train.%s.gz", c->dir, tgt);
  if (access(gz, F_OK) == 0)
    return intrus_error_set(err, INTRUS_ERR_IO,
                            "%s would be read instead of the distilled targets: give a new or "
                            "empty directory",
                            gz);
  if ((st = run_dir_lock(c->dir, &c->lock, err)))
    return intrus_error_prefix(err, "the distilled corpus");
  return INTRUS_OK;
}

/* Copies a file byte for byte into dir under its own name. */
static enum intrus_status copy_into(const char *path, const char *dir, struct intrus_error *err) {
  char *buf = NULL, to[4200];
  size_t len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return intrus_error_set(err, INTRUS_ERR_IO, "%s: %s", path, strerror(errno));
  FILE *m = open_memstream(&buf, &len);
  char block[65536];
  size_t k;
  while (m && (k = fread(block, 1, sizeof block, f)) > 0) fwrite(block, 1, k, m);
  bool bad = ferror(f);
  fclose(f);
  if (!m || fclose(m) != 0) {
    free(buf);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  enum intrus_status st = INTRUS_OK;
  if (bad) st = intrus_error_set(err, INTRUS_ERR_IO, "%s: read error", path);
  const char *base = strrchr(path, '/');
  snprintf(to, sizeof to, "%s/%s", dir, base ? base + 1 : path);
  if (!st) st = intrus_file_write_atomic(to, buf, len, err);
  free(buf);
  return st;
}

/* The decoded lines so far, one "\n"-ended line each, and their FNV-1a. */
struct targets {
  char *buf;
  size_t len, cap, lines;
  uint64_t fp;
};

static void targets_add(struct targets *t, const char *line) {
  size_t k = strlen(line);
  if (t->len + k + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 1 << 16;
    while (cap < t->len + k + 1) cap *= 2;
    char *b = realloc(t->buf, cap);
    if (!b) abort(); /* as xalloc does: the lines decoded are not worth a half state */
    t->buf = b;
    t->cap = cap;
  }
  memcpy(t->buf + t->len, line, k);
  t->buf[t->len + k] = '\n';
  t->fp = intrus_fnv1a(t->fp, t->buf + t->len, k + 1);
  t->len += k + 1;
  t->lines++;
}

/* A partial distillation: its record must match the one it would be now, and the
 * partial targets file must hold the lines it records (a kill between the two writes
 * leaves more: those are dropped and decoded again). */
static enum intrus_status resume(const struct corpus_dir *c, const struct distill_record *now,
                                 struct distill_record *was, struct targets *t,
                                 struct intrus_error *err) {
  enum intrus_status st = distill_record_read(c->progress, was, err);
  if (st) return st;
  char why[2048];
  if (!distill_record_matches(was, now, why, sizeof why))
    return intrus_error_set(err, INTRUS_ERR_DATA,
                            "%s: the distillation under way there was begun with another "
                            "checkpoint, search or sources than the teacher has now: %s. Delete "
                            "%s and %s to start it again",
                            c->dir, why, c->progress, c->partial);
  char **lines = NULL;
  size_t n = 0;
  if (was->done && (st = intrus_lines_read_any(c->partial, &lines, &n, err))) return st;
  if (n < was->done)
    st = intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: %zu lines, but %s records %zu", c->partial,
                          n, c->progress, was->done);
  for (size_t i = 0; i < was->done && !st; i++) targets_add(t, lines[i]);
  if (!st && t->fp != was->targets)
    st = intrus_error_set(err, INTRUS_ERR_FORMAT,
                          "%s: its first %zu lines are not those %s records (damaged); delete "
                          "both to start again",
                          c->partial, was->done, c->progress);
  intrus_lines_free(lines, n);
  return st;
}

/* DIR/distill.log: one line per invocation that decoded, with its seconds. */
static enum intrus_status write_log(const struct corpus_dir *c, const char *before, size_t from,
                                    size_t to, double seconds, struct intrus_error *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  if (before && *before) fputs(before, f);
  else fputs("# intrus distill: the lines each invocation decoded and its wall seconds\n", f);
  fprintf(f, "lines %zu-%zu seconds %.1f\n", from + 1, to, seconds);
  fclose(f);
  enum intrus_status st = intrus_file_write_atomic(c->log, buf, len, err);
  free(buf);
  return st;
}

/* After the last chunk: the targets, the copies, the scores, the MANIFEST. */
static enum intrus_status finish(const struct cli_distill_opts *o, struct teacher *tc,
                                 const struct corpus_dir *c, const struct targets *t,
                                 struct distill_record *rec, struct intrus_error *err) {
  enum intrus_status st;
  if ((st = intrus_file_write_atomic(c->targets, t->buf, t->len, err)) ||
      (st = copy_into(tc->paths[0][0], c->dir, err)))
    return st;
  for (int s = 1; s < 3; s++)
    for (int side = 0; side < 2; side++)
      if ((st = copy_into(tc->paths[s][side], c->dir, err))) return st;
  /* The outputs against the references they replace (the teacher's BLEU settings). */
  char **hyps = NULL;
  size_t n = 0;
  const intrus_cfg *eval = NULL, *bleu = NULL;
  struct score_result sr;
  if ((st = intrus_lines_read_any(c->targets, &hyps, &n, err))) return st;
  if (n != tc->train.n)
    st = intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: %zu lines written, %zu read back",
                          c->targets, tc->train.n, n);
  if (!st && !(st = intrus_cfg_group(intrus_config_root(tc->cfg), "eval", &eval, err)) &&
      !(eval && (st = intrus_cfg_group(eval, "bleu", &bleu, err))))
    st = score_corpus(o->search, "bleu", bleu, hyps, tc->train.tgt, n, &sr, err);
  intrus_lines_free(hyps, n);
  if (st) return st;
  rec->scored = true;
  for (int i = 0; i < sr.count; i++) {
    if (!strcmp(sr.names[i], "BLEU")) rec->bleu = sr.values[i];
    if (!strcmp(sr.names[i], "ratio")) rec->ratio = sr.values[i];
  }
  snprintf(rec->signature, sizeof rec->signature, "%s", sr.signature);
  rec->targets = t->fp;
  if ((st = distill_record_write(c->manifest, rec, false, err))) return st;
  unlink(c->partial);
  unlink(c->progress);
  return INTRUS_OK;
}

/* Decodes the lines from rec->done on, chunk by chunk, saving after each. */
static enum intrus_status decode_rest(const struct cli_distill_opts *o, struct teacher *tc,
                                      const struct corpus_dir *c, struct distill_record *rec,
                                      struct targets *t, double *seconds,
                                      struct intrus_error *err) {
  const size_t n = tc->train.n, from = rec->done;
  char *log_before = NULL, name[4400];
  size_t log_len = 0;
  if (access(c->log, F_OK) == 0 && intrus_file_read_all(c->log, &log_before, &log_len, err))
    return err->status;
  if (log_before) log_before[log_len] = '\0';
  const double t0 = mono_s();
  enum intrus_status st = INTRUS_OK;
  for (size_t at = from; at < n && !st; at += (size_t)rec->chunk) {
    const size_t k = n - at < (size_t)rec->chunk ? n - at : (size_t)rec->chunk;
    char **out = NULL;
    snprintf(name, sizeof name, "%s, lines %zu-%zu", tc->paths[0][0], at + 1, at + k);
    st = translate_lines(tc->t.model, &tc->t.data, &tc->t.beam, tc->t.batch_tokens,
                         tc->t.max_src_len, name, NULL, tc->train.src + at, k, NULL, &out, NULL, err);
    if (st) break;
    for (size_t i = 0; i < k; i++) targets_add(t, out[i]);
    dataset_lines_free(out, k);
    rec->done = at + k;
    rec->targets = t->fp;
    *seconds = mono_s() - t0;
    if ((st = intrus_file_write_atomic(c->partial, t->buf, t->len, err)) ||
        (st = distill_record_write(c->progress, rec, true, err)) ||
        (st = write_log(c, log_before, from, rec->done, *seconds, err)))
      break;
    if (o->progress) {
      const double rate = (double)(rec->done - from) / (*seconds > 0 ? *seconds : 1e-9);
      char eta[32];
      table_duration((double)(n - rec->done) / rate, eta, sizeof eta);
      fprintf(o->progress, "distill: %zu/%zu lines (%.0f%%), %.1f lines/s, about %s left\n",
              rec->done, n, 100.0 * (double)rec->done / (double)n, rate, eta);
      fflush(o->progress);
    }
  }
  free(log_before);
  return st;
}

enum intrus_status cli_distill(const struct cli_distill_opts *o, struct cli_distill_result *r,
                               struct intrus_error *err) {
  memset(r, 0, sizeof *r);
  struct teacher tc = {.run_lock = -1};
  struct corpus_dir c = {.lock = -1};
  struct targets t = {.fp = INTRUS_FNV_INIT};
  struct distill_record *rec = &r->rec;
  char why[2048];
  enum intrus_status st = teacher_open(o, &tc, err);
  if (st) goto done;
  if ((o->src && strcmp(o->src, tc.now.src)) || (o->tgt && strcmp(o->tgt, tc.now.tgt))) {
    st = intrus_error_set(err, INTRUS_ERR_CONFIG, "the teacher %s translates %s into %s, not %s "
                          "into %s", o->teacher, tc.now.src, tc.now.tgt, o->src ? o->src : "?",
                          o->tgt ? o->tgt : "?");
    goto done;
  }
  corpus_paths(&c, o->out_dir, tc.now.tgt);
  if ((st = corpus_claim(&c, tc.now.tgt, err))) goto done;
  if (access(c.manifest, F_OK) == 0) {
    /* Made before: reused as it is, or refused. */
    if ((st = distill_record_read(c.manifest, rec, err))) goto done;
    if (!distill_record_matches(rec, &tc.now, why, sizeof why)) {
      st = intrus_error_set(err, INTRUS_ERR_DATA,
                            "%s was distilled with another checkpoint, search or sources than "
                            "the teacher has now: %s. Delete it (or name another directory) to "
                            "distil again",
                            o->out_dir, why);
      goto done;
    }
    r->reused = true;
    unlink(c.partial); /* a kill between the MANIFEST and these left them */
    unlink(c.progress);
    goto done;
  }
  if (access(c.progress, F_OK) == 0) {
    if ((st = resume(&c, &tc.now, rec, &t, err))) goto done;
    r->resumed_at = rec->done;
    if (o->progress && o->chunk && o->chunk != rec->chunk)
      fprintf(o->progress, "distill: resuming in chunks of %ld lines, as begun (not %ld)\n",
              rec->chunk, o->chunk);
  } else {
    *rec = tc.now;
    rec->chunk = o->chunk ? o->chunk : CLI_DISTILL_CHUNK;
    rec->done = 0;
    rec->targets = t.fp;
  }
  if (o->progress) {
    fprintf(o->progress,
            "distill: %s line %zu of %zu training sources of %s (%s) with beam %d, alpha %g, "
            "finish penalty %g into %s, saved every %ld lines\n",
            r->resumed_at ? "resuming at" : "decoding from", rec->done + 1, tc.train.n,
            o->teacher, tc.ckpt, tc.t.beam.beam, (double)tc.t.beam.alpha,
            tc.t.beam.finish_penalty, o->out_dir, rec->chunk);
    fflush(o->progress);
  }
  if ((st = decode_rest(o, &tc, &c, rec, &t, &r->seconds, err)) ||
      (st = finish(o, &tc, &c, &t, rec, err)))
    goto done;
done:
  free(t.buf);
  if (c.lock >= 0) close(c.lock);
  teacher_close(&tc);
  return st;
}

enum intrus_status cli_distill_teacher_of(struct intrus_config *cfg, const char *run_dir,
                                          bool *present, struct dataset_distill *dd,
                                          struct intrus_error *err) {
  const intrus_cfg *data = NULL, *g = NULL;
  enum intrus_status st;
  *present = false;
  if ((st = intrus_cfg_group(intrus_config_root(cfg), "data", &data, err)) ||
      (data && (st = intrus_cfg_group(data, "distill", &g, err))) || !g)
    return st;
  *present = true;
  return dataset_distill_read(g, intrus_config_filename(cfg), run_dir, dd, err);
}

enum intrus_status cli_distill_origin(const char *experiment, const char *run_dir,
                                      char *exp_out, char *run_out, size_t n,
                                      struct intrus_error *err) {
  snprintf(exp_out, n, "%s", experiment);
  snprintf(run_out, n, "%s", run_dir);
  for (int depth = 0;; depth++) {
    struct intrus_config *cfg = intrus_config_load_file(exp_out, err);
    if (!cfg) return err->status;
    struct dataset_distill dd;
    bool present;
    enum intrus_status st = cli_distill_teacher_of(cfg, run_out, &present, &dd, err);
    intrus_config_free(cfg);
    if (st || !present) return st;
    if (depth == 8)
      return intrus_error_set(err, INTRUS_ERR_CONFIG,
                              "%s: data.distill's teachers go round in a circle", experiment);
    snprintf(exp_out, n, "%s", dd.teacher);
    snprintf(run_out, n, "%s", dd.teacher_run);
  }
}

enum intrus_status cli_origin_data(const char *experiment, const char *run_dir,
                                   struct cli_origin_data *o, struct intrus_error *err) {
  memset(o, 0, sizeof *o);
  const intrus_cfg *data;
  enum intrus_status st = cli_distill_origin(experiment, run_dir, o->experiment, o->run_dir,
                                             sizeof o->experiment, err);
  if (st) return st;
  if (!(o->cfg = intrus_config_load_file(o->experiment, err))) return err->status;
  if ((st = intrus_cfg_group_req(intrus_config_root(o->cfg), "data", &data, err))) return st;
  return dataset_configure(&o->d, data, intrus_config_filename(o->cfg), o->run_dir, err);
}

void cli_origin_data_free(struct cli_origin_data *o) {
  dataset_free(&o->d);
  if (o->cfg) intrus_config_free(o->cfg);
  memset(o, 0, sizeof *o);
}

enum intrus_status cli_distill_for(struct intrus_config *cfg, const char *run_dir,
                                   const struct intrus_plugin_search *search, FILE *progress,
                                   struct intrus_error *err) {
  struct dataset_distill dd;
  bool present;
  const intrus_cfg *data;
  const char *src, *tgt;
  enum intrus_status st = cli_distill_teacher_of(cfg, run_dir, &present, &dd, err);
  if (st || !present) return st;
  if ((st = intrus_cfg_group_req(intrus_config_root(cfg), "data", &data, err)) ||
      (st = intrus_cfg_string_req(data, "src", &src, err)) ||
      (st = intrus_cfg_string_req(data, "tgt", &tgt, err)))
    return st;
  struct cli_distill_opts o = {.teacher = dd.teacher, .teacher_run = dd.teacher_run,
                               .out_dir = dd.dir, .beam = dd.beam, .has_alpha = dd.has_alpha,
                               .alpha = dd.alpha, .has_finish_penalty = dd.has_finish_penalty,
                               .finish_penalty = dd.finish_penalty, .src = src, .tgt = tgt,
                               .search = search,
                               .progress = progress};
  struct cli_distill_result r;
  if ((st = cli_distill(&o, &r, err)))
    return intrus_error_prefix(err, "%s: data.distill", intrus_config_filename(cfg));
  if (progress) {
    if (r.reused)
      fprintf(progress, "distill: %s holds the corpus of this teacher, search and sources "
                        "(teacher BLEU %.2f, ratio %.2f on the training references)\n",
              dd.dir, r.rec.bleu, r.rec.ratio);
    else
      fprintf(progress, "distill: %s done in %.0f s: teacher BLEU %.2f, ratio %.2f on the "
                        "training references\n",
              dd.dir, r.seconds, r.rec.bleu, r.rec.ratio);
    fflush(progress);
  }
  return INTRUS_OK;
}

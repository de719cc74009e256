/* A distilled corpus's settings (data.distill) and its MANIFEST: where the corpus is,
 * and what it was made from, so that a corpus made by another checkpoint, search or
 * source text is refused rather than trained on. distill.h. */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distill.h"
#include "intrus/corpus.h"
#include "intrus/fileio.h"

/* path as it is when absolute, else relative to the directory of exp_path. */
static void resolve(const char *path, const char *exp_path, char *out, size_t n) {
  if (path[0] == '/' || !exp_path) {
    snprintf(out, n, "%s", path);
    return;
  }
  char copy[4096];
  snprintf(copy, sizeof copy, "%s", exp_path);
  const char *dir = dirname(copy);
  if (!strcmp(dir, ".")) snprintf(out, n, "%s", path); /* as the command line names it */
  else snprintf(out, n, "%s/%s", dir, path);
}

void dataset_runs_parent(const char *run_dir, char *out, size_t n) {
  if (!run_dir) {
    snprintf(out, n, "runs");
    return;
  }
  char copy[4096];
  snprintf(copy, sizeof copy, "%s", run_dir);
  size_t len = strlen(copy);
  while (len > 1 && copy[len - 1] == '/') copy[--len] = '\0';
  snprintf(out, n, "%s", dirname(copy));
}

/* The teacher's name, as intrus_cli_experiment reads it: its run is RUNS/<name>. */
static enum intrus_status teacher_name(const intrus_cfg *g, const char *teacher, char *name,
                                       size_t n, struct intrus_error *err) {
  struct intrus_error e = {0};
  struct intrus_config *cfg = intrus_config_load_file(teacher, &e);
  if (!cfg)
    return intrus_cfg_error(g, "teacher", err, "the teacher experiment: %s", e.msg);
  const char *s;
  enum intrus_status st = intrus_cfg_string(intrus_config_root(cfg), "name", "experiment", &s, &e);
  if (!st && (!*s || strchr(s, '/') || !strcmp(s, ".") || !strcmp(s, "..")))
    st = intrus_error_set(&e, INTRUS_ERR_CONFIG, "%s: name '%s' is no run directory name",
                          teacher, s);
  if (!st) snprintf(name, n, "%s", s);
  intrus_config_free(cfg);
  return st ? intrus_cfg_error(g, "teacher", err, "%s", e.msg) : INTRUS_OK;
}

enum intrus_status dataset_distill_read(const intrus_cfg *g, const char *exp_path,
                                        const char *run_dir, struct dataset_distill *out,
                                        struct intrus_error *err) {
  memset(out, 0, sizeof *out);
  const char *teacher, *dir = NULL, *teacher_run = NULL;
  long long beam = 0;
  enum intrus_status st;
  /* Optional settings are read only when present: a default filled into the tree would
   * change the experiment's fingerprints. */
  if ((st = intrus_cfg_string_req(g, "teacher", &teacher, err)) ||
      (intrus_cfg_has(g, "beam") && (st = intrus_cfg_int_range(g, "beam", 1, 1, 1024, &beam, err))) ||
      (intrus_cfg_has(g, "alpha") &&
       (st = intrus_cfg_double_range(g, "alpha", 0, 0.0, 10.0, &out->alpha, err))) ||
      (intrus_cfg_has(g, "finish_penalty") &&
       (st = intrus_cfg_double_range(g, "finish_penalty", 0, 0.0, 1e6, &out->finish_penalty,
                                     err))) ||
      (intrus_cfg_has(g, "dir") && (st = intrus_cfg_string_req(g, "dir", &dir, err))) ||
      (intrus_cfg_has(g, "run_dir") && (st = intrus_cfg_string_req(g, "run_dir", &teacher_run, err))) ||
      (st = intrus_cfg_check_unknown(g, err)))
    return st;
  out->beam = (int)beam;
  out->has_alpha = intrus_cfg_has(g, "alpha");
  out->has_finish_penalty = intrus_cfg_has(g, "finish_penalty");
  resolve(teacher, exp_path, out->teacher, sizeof out->teacher);
  if (teacher_run) {
    resolve(teacher_run, exp_path, out->teacher_run, sizeof out->teacher_run);
  } else {
    char name[256], parent[4096];
    if ((st = teacher_name(g, out->teacher, name, sizeof name, err))) return st;
    dataset_runs_parent(run_dir, parent, sizeof parent);
    if (snprintf(out->teacher_run, sizeof out->teacher_run, "%s/%s", parent, name) >=
        (int)sizeof out->teacher_run)
      return intrus_cfg_error(g, "teacher", err, "the teacher's run directory is too long");
  }
  if (dir) {
    resolve(dir, exp_path, out->dir, sizeof out->dir);
    return INTRUS_OK;
  }
  /* One corpus per search: the teacher's own, or the overrides in the name. */
  char tail[64] = "";
  if (out->beam) snprintf(tail, sizeof tail, "-b%d", out->beam);
  if (out->has_alpha)
    snprintf(tail + strlen(tail), sizeof tail - strlen(tail), "-a%g", out->alpha);
  if (out->has_finish_penalty)
    snprintf(tail + strlen(tail), sizeof tail - strlen(tail), "-f%g", out->finish_penalty);
  if (snprintf(out->dir, sizeof out->dir, "%s/distill%s", out->teacher_run, tail) >=
      (int)sizeof out->dir)
    return intrus_cfg_error(g, NULL, err, "the distilled corpus's directory is too long");
  return INTRUS_OK;
}

/* ---- MANIFEST and progress record -------------------------------------------------- */

static void put_fp(FILE *f, const char *key, uint64_t v) {
  fprintf(f, "%s 0x%016" PRIx64 "\n", key, v);
}

enum intrus_status distill_record_write(const char *path, const struct distill_record *r,
                                        bool progress, struct intrus_error *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  fprintf(f, progress ? "# intrus distill under way: where it stands (it resumes from here)\n"
                      : "# A distilled corpus (intrus distill): train.%s holds the teacher's "
                        "translations of train.%s.\n# intrus compares the teacher with these "
                        "lines before it reuses the corpus.\n",
          r->tgt, r->src);
  fprintf(f, "teacher %s\ncheckpoint_file %s\n", r->teacher, r->checkpoint_path);
  put_fp(f, "checkpoint", r->checkpoint);
  put_fp(f, "tokenizer", r->tokenizer);
  fprintf(f, "search.beam %d\nsearch.alpha %.9g\nsearch.max_len_a %.9g\nsearch.max_len_b %d\n"
             "search.prune %s\nsearch.finish_in_beam %s\nsearch.max_src_len %d\n"
             "search.slots %d\nsearch.finish_penalty %.17g\n",
          r->search.beam, (double)r->search.alpha, (double)r->search.max_len_a,
          r->search.max_len_b, r->search.prune ? "true" : "false",
          r->search.finish_in_beam ? "true" : "false", r->search.max_src_len, r->search.slots,
          r->search.finish_penalty);
  fprintf(f, "src %s\ntgt %s\n", r->src, r->tgt);
  put_fp(f, "sources", r->sources);
  fprintf(f, "lines %zu\n", r->lines);
  put_fp(f, "valid", r->valid);
  put_fp(f, "test", r->test);
  fprintf(f, "chunk %ld\nbatch_tokens %ld\n", r->chunk, r->batch_tokens);
  if (progress) {
    fprintf(f, "done %zu\n", r->done);
    put_fp(f, "targets", r->targets);
  } else {
    put_fp(f, "targets", r->targets);
    if (r->scored)
      fprintf(f, "bleu %.4f\nratio %.4f\nbleu_signature %s\n", r->bleu, r->ratio, r->signature);
  }
  if (fclose(f) != 0) {
    free(buf);
    return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  }
  enum intrus_status st = intrus_file_write_atomic(path, buf, len, err);
  free(buf);
  return st;
}

/* Line `key VALUE` of text (VALUE to the end of the line, at most n - 1 bytes); false
 * when absent. */
static bool lookup(const char *text, const char *key, char *val, size_t n) {
  size_t k = strlen(key);
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (!strncmp(p, key, k) && p[k] == ' ') {
      const char *v = p + k + 1, *end = strchr(v, '\n');
      size_t l = end ? (size_t)(end - v) : strlen(v);
      if (l >= n) l = n - 1;
      memcpy(val, v, l);
      val[l] = '\0';
      return true;
    }
  return false;
}

struct field_reader {
  const char *text, *path;
  struct intrus_error *err;
  enum intrus_status st;
};

/* The value of key, or NULL after setting the error once (the first missing or bad key
 * is named). */
static const char *field(struct field_reader *fr, const char *key, char *val, size_t n) {
  if (fr->st) return NULL;
  if (lookup(fr->text, key, val, n)) return val;
  fr->st = intrus_error_set(fr->err, INTRUS_ERR_FORMAT, "%s: damaged (no '%s' line)", fr->path,
                            key);
  return NULL;
}

static void bad(struct field_reader *fr, const char *key, const char *val) {
  if (!fr->st)
    fr->st = intrus_error_set(fr->err, INTRUS_ERR_FORMAT, "%s: damaged ('%s %s')", fr->path,
                              key, val);
}

static uint64_t get_u64(struct field_reader *fr, const char *key, int base) {
  char v[128], *end;
  if (!field(fr, key, v, sizeof v)) return 0;
  errno = 0;
  unsigned long long x = strtoull(v, &end, base);
  if (errno || end == v || *end || v[0] == '-') bad(fr, key, v);
  return x;
}

static double get_double(struct field_reader *fr, const char *key) {
  char v[128], *end;
  if (!field(fr, key, v, sizeof v)) return 0;
  double x = strtod(v, &end);
  if (end == v || *end) bad(fr, key, v);
  return x;
}

static bool get_bool(struct field_reader *fr, const char *key) {
  char v[16];
  if (!field(fr, key, v, sizeof v)) return false;
  if (strcmp(v, "true") && strcmp(v, "false")) bad(fr, key, v);
  return !strcmp(v, "true");
}

enum intrus_status distill_record_read(const char *path, struct distill_record *r,
                                       struct intrus_error *err) {
  memset(r, 0, sizeof *r);
  char *text = NULL;
  size_t len;
  enum intrus_status st = intrus_file_read_all(path, &text, &len, err);
  if (st) return st;
  text[len] = '\0';
  struct field_reader fr = {.text = text, .path = path, .err = err};
  field(&fr, "teacher", r->teacher, sizeof r->teacher);
  field(&fr, "checkpoint_file", r->checkpoint_path, sizeof r->checkpoint_path);
  r->checkpoint = get_u64(&fr, "checkpoint", 16);
  r->tokenizer = get_u64(&fr, "tokenizer", 16);
  r->search.beam = (int)get_u64(&fr, "search.beam", 10);
  r->search.alpha = (float)get_double(&fr, "search.alpha");
  r->search.max_len_a = (float)get_double(&fr, "search.max_len_a");
  r->search.max_len_b = (int)get_u64(&fr, "search.max_len_b", 10);
  r->search.prune = get_bool(&fr, "search.prune");
  r->search.finish_in_beam = get_bool(&fr, "search.finish_in_beam");
  r->search.max_src_len = (int)get_u64(&fr, "search.max_src_len", 10);
  /* Recorded since 2026-12-05: a corpus made before was made without either (both 0). */
  char v0[64];
  if (lookup(text, "search.slots", v0, sizeof v0))
    r->search.slots = (int)get_u64(&fr, "search.slots", 10);
  if (lookup(text, "search.finish_penalty", v0, sizeof v0))
    r->search.finish_penalty = get_double(&fr, "search.finish_penalty");
  field(&fr, "src", r->src, sizeof r->src);
  field(&fr, "tgt", r->tgt, sizeof r->tgt);
  r->sources = get_u64(&fr, "sources", 16);
  r->lines = (size_t)get_u64(&fr, "lines", 10);
  r->valid = get_u64(&fr, "valid", 16);
  r->test = get_u64(&fr, "test", 16);
  r->chunk = (long)get_u64(&fr, "chunk", 10);
  r->batch_tokens = (long)get_u64(&fr, "batch_tokens", 10);
  r->targets = get_u64(&fr, "targets", 16);
  char v[256];
  if (lookup(text, "done", v, sizeof v)) r->done = (size_t)get_u64(&fr, "done", 10);
  if (lookup(text, "bleu", v, sizeof v)) {
    r->scored = true;
    r->bleu = get_double(&fr, "bleu");
    r->ratio = get_double(&fr, "ratio");
    field(&fr, "bleu_signature", r->signature, sizeof r->signature);
  }
  if (!fr.st && (r->chunk < 1 || r->done > r->lines))
    fr.st = intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: damaged (chunk %ld, done %zu of %zu)",
                             path, r->chunk, r->done, r->lines);
  free(text);
  return fr.st;
}

/* Appends "; " (after the first) and the formatted text to why. */
static void say(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t n, const char *fmt, ...) {
  size_t at = strlen(why);
  if (at && at + 2 < n) {
    strcpy(why + at, "; ");
    at += 2;
  }
  if (at >= n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why + at, n - at, fmt, ap);
  va_end(ap);
}

bool distill_record_matches(const struct distill_record *was, const struct distill_record *now,
                            char *why, size_t n) {
  why[0] = '\0';
  if (was->checkpoint != now->checkpoint)
    say(why, n, "the teacher's checkpoint %s is not the one it was made with (content "
                "0x%016" PRIx64 ", recorded 0x%016" PRIx64 ")",
        now->checkpoint_path, now->checkpoint, was->checkpoint);
  if (was->tokenizer != now->tokenizer)
    say(why, n, "the teacher run's BPE codes and vocabulary (tokenizer.txt) changed");
  const struct distill_search *a = &was->search, *b = &now->search;
  if (a->beam != b->beam) say(why, n, "search.beam: %d when it was made, %d now", a->beam, b->beam);
  if (a->alpha != b->alpha)
    say(why, n, "search.alpha: %g when it was made, %g now", (double)a->alpha, (double)b->alpha);
  if (a->max_len_a != b->max_len_a)
    say(why, n, "search.max_len_a: %g when it was made, %g now", (double)a->max_len_a,
        (double)b->max_len_a);
  if (a->max_len_b != b->max_len_b)
    say(why, n, "search.max_len_b: %d when it was made, %d now", a->max_len_b, b->max_len_b);
  if (a->prune != b->prune)
    say(why, n, "search.prune: %s when it was made, %s now", a->prune ? "true" : "false",
        b->prune ? "true" : "false");
  if (a->finish_in_beam != b->finish_in_beam)
    say(why, n, "search.finish_in_beam: %s when it was made, %s now",
        a->finish_in_beam ? "true" : "false", b->finish_in_beam ? "true" : "false");
  if (a->max_src_len != b->max_src_len)
    say(why, n, "search.max_src_len: %d when it was made, %d now", a->max_src_len,
        b->max_src_len);
  if (a->slots != b->slots)
    say(why, n, "search.slots: %d when it was made, %d now", a->slots, b->slots);
  if (a->finish_penalty != b->finish_penalty)
    say(why, n, "search.finish_penalty: %g when it was made, %g now", a->finish_penalty,
        b->finish_penalty);
  if (strcmp(was->src, now->src) || strcmp(was->tgt, now->tgt))
    say(why, n, "the languages: %s-%s when it was made, %s-%s now", was->src, was->tgt, now->src,
        now->tgt);
  if (was->sources != now->sources || was->lines != now->lines)
    say(why, n, "the training sources changed (%zu lines when it was made, %zu now)", was->lines,
        now->lines);
  if (was->valid != now->valid) say(why, n, "the teacher's validation files changed");
  if (was->test != now->test) say(why, n, "the teacher's test files changed");
  return why[0] == '\0';
}

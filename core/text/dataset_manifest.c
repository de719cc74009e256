/* RUN_DIR/tokenizer.txt: what made a run's BPE codes and vocabularies, so that they are
 * never used for other data or settings than the ones that learnt them. The checkpoint
 * already carries the vocabulary's fingerprint, but not the codes', and nothing tied
 * either to the training data or to data.bpe_merges: a failed first run's files were
 * silently reused by the next, an edited bpe.codes was accepted by decode and train, and
 * a changed bpe_merges kept the old codes while effective.cfg showed the new value.
 *
 * One "key value" line each: settings (languages, merges, joint vocabulary), train (the
 * training split's lines), and the FNV-1a of every tokenizer file's bytes. Written
 * atomically, last, once the whole data preparation succeeded. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "intrus/corpus.h"
#include "intrus/fileio.h"
#include "intrus/rng.h"

#define MANIFEST "tokenizer.txt"

static uint64_t settings_fp(const struct dataset *d) {
  char buf[128];
  int n = snprintf(buf, sizeof buf, "%s|%s|%d|%d", d->src_lang, d->tgt_lang, d->bpe_merges,
                   d->joint);
  return intrus_fnv1a(INTRUS_FNV_INIT, buf, (size_t)n);
}

uint64_t dataset_train_fp(const struct intrus_parallel_text *train) {
  uint64_t h = INTRUS_FNV_INIT;
  for (size_t i = 0; i < train->n; i++) {
    h = intrus_fnv1a(h, train->src[i], strlen(train->src[i]) + 1);
    h = intrus_fnv1a(h, train->tgt[i], strlen(train->tgt[i]) + 1);
  }
  return h;
}

/* The tokenizer files of d's run directory (two when the vocabulary is joint, else four). */
static int files(const struct dataset *d, const char *run_dir, char paths[4][4200],
                 const char *names[4]) {
  static const char *const joint[] = {"bpe.codes", "vocab.txt"};
  static const char *const split[] = {"bpe.src.codes", "bpe.tgt.codes", "vocab.src.txt",
                                      "vocab.tgt.txt"};
  int n = d->joint ? 2 : 4;
  for (int i = 0; i < n; i++) {
    names[i] = d->joint ? joint[i] : split[i];
    snprintf(paths[i], sizeof paths[i], "%s/%s", run_dir, names[i]);
  }
  return n;
}

enum intrus_status dataset_file_fp(const char *path, uint64_t *fp, struct intrus_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  uint64_t h = INTRUS_FNV_INIT;
  char buf[65536];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, f)) > 0) h = intrus_fnv1a(h, buf, k);
  bool bad = ferror(f);
  fclose(f);
  if (bad) return intrus_error_set(err, INTRUS_ERR_IO, "%s: read error", path);
  *fp = h;
  return INTRUS_OK;
}

bool dataset_manifest_exists(const char *run_dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/" MANIFEST, run_dir);
  return access(path, F_OK) == 0;
}

enum intrus_status dataset_manifest_write(const struct dataset *d, const char *run_dir,
                                          uint64_t train_fp, struct intrus_error *err) {
  char paths[4][4200], text[1024], path[4200];
  const char *names[4];
  int n = files(d, run_dir, paths, names);
  size_t len = (size_t)snprintf(text, sizeof text,
                                "# what made this run's tokenizer files; intrus checks them "
                                "against it wherever they are read\n"
                                "settings 0x%016" PRIx64 "\ntrain 0x%016" PRIx64 "\n",
                                settings_fp(d), train_fp);
  for (int i = 0; i < n; i++) {
    uint64_t fp;
    enum intrus_status st = dataset_file_fp(paths[i], &fp, err);
    if (st) return st;
    len += (size_t)snprintf(text + len, sizeof text - len, "%s 0x%016" PRIx64 "\n", names[i], fp);
  }
  snprintf(path, sizeof path, "%s/" MANIFEST, run_dir);
  return intrus_file_write_atomic(path, text, len, err);
}

/* The value of key in the manifest's text; false when absent. */
static bool lookup(const char *text, const char *key, uint64_t *v) {
  size_t k = strlen(key);
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (!strncmp(p, key, k) && p[k] == ' ') {
      char *end;
      *v = strtoull(p + k + 1, &end, 16);
      return end != p + k + 1;
    }
  return false;
}

/* RUN_DIR/tokenizer.txt's text (it is a few lines) into text; its path into path. false
 * when it cannot be opened (errno says why). */
static bool manifest_read(const char *run_dir, char path[4200], char text[2048]) {
  snprintf(path, 4200, "%s/" MANIFEST, run_dir);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  size_t len = fread(text, 1, 2047, f);
  fclose(f);
  text[len] = '\0';
  return true;
}

bool dataset_manifest_train(const char *run_dir, uint64_t *train_fp) {
  char path[4200], text[2048];
  return manifest_read(run_dir, path, text) && lookup(text, "train", train_fp);
}

/* dataset_manifest_check with the advice its errors end with. */
static enum intrus_status check(const struct dataset *d, const char *run_dir,
                                const uint64_t *train_fp, const char *fresh,
                                struct intrus_error *err) {
  char path[4200], text[2048];
  if (!manifest_read(run_dir, path, text))
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  uint64_t want, settings, train;
  if (!lookup(text, "settings", &settings) || !lookup(text, "train", &train))
    return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: damaged (no 'settings' or 'train' line)",
                            path);
  if (settings != settings_fp(d))
    return intrus_error_set(err, INTRUS_ERR_DATA,
                            "%s: the BPE codes and vocabulary there were made with other data "
                            "settings (src, tgt, bpe_merges or joint_vocab) than the experiment "
                            "now has; %s",
                            run_dir, fresh);
  if (train_fp && train != *train_fp)
    return intrus_error_set(err, INTRUS_ERR_DATA,
                            "%s: the BPE codes and vocabulary there were learnt from other "
                            "training data than %s holds now; %s",
                            run_dir, d->dir, fresh);
  char paths[4][4200];
  const char *names[4];
  int n = files(d, run_dir, paths, names);
  for (int i = 0; i < n; i++) {
    uint64_t fp;
    enum intrus_status st;
    if (!lookup(text, names[i], &want))
      return intrus_error_set(err, INTRUS_ERR_FORMAT, "%s: damaged (no line for %s)", path,
                              names[i]);
    if ((st = dataset_file_fp(paths[i], &fp, err))) return st;
    if (fp != want)
      return intrus_error_set(err, INTRUS_ERR_DATA,
                              "%s: changed since it was made (fingerprint 0x%016" PRIx64
                              ", recorded 0x%016" PRIx64 " in %s); %s",
                              paths[i], fp, want, path, fresh);
  }
  return INTRUS_OK;
}

enum intrus_status dataset_manifest_check(const struct dataset *d, const char *run_dir,
                                          const uint64_t *train_fp, struct intrus_error *err) {
  return check(d, run_dir, train_fp,
               "train into a new run directory (-o) or delete this one to start over", err);
}

enum intrus_status dataset_manifest_adopt(const struct dataset *d, const char *from_dir,
                                          const char *run_dir, struct intrus_error *err) {
  enum intrus_status st =
      check(d, from_dir, NULL, "data.vocab_from must name a run of the same src, tgt, "
            "bpe_merges and joint_vocab, its files as it made them", err);
  if (st) return intrus_error_prefix(err, "data.vocab_from");
  char from[4][4200], to[4][4200];
  const char *names[4];
  int n = files(d, from_dir, from, names);
  files(d, run_dir, to, names);
  for (int i = 0; i < n && !st; i++) {
    char *buf = NULL;
    size_t len = 0;
    if (!(st = intrus_file_read_all(from[i], &buf, &len, err)))
      st = intrus_file_write_atomic(to[i], buf, len, err);
    free(buf);
  }
  return st;
}

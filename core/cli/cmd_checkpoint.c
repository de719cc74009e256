/* `intrus checkpoint`: what a checkpoint file holds, a copy of it without the optimizer
 * state, the size to keep or share a trained model (a third of the bytes) that decodes,
 * distils and warm-starts exactly as the original, and the average of several. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "intrus/checkpoint.h"

static const char checkpoint_usage[] =
    "Usage: intrus checkpoint info FILE\n"
    "       intrus checkpoint strip FILE -o OUT\n"
    "       intrus checkpoint average FILE... -o OUT\n"
    "\n"
    "info: the model configuration's fingerprint, the content fingerprint (the file's\n"
    "checksum: what a warm start and a distillation record), the parameters (tensors and\n"
    "values), whether Adam's moments are kept, and the run-state integers (step, ...).\n"
    "\n"
    "strip: writes OUT, a copy of FILE without Adam's moments (the \"adam_m/\" and\n"
    "\"adam_v/\" records), the parameters, integers and fingerprint as they were: it\n"
    "decodes, distils and warm-starts as FILE does but cannot resume a run. OUT may be\n"
    "FILE (read whole first, then replaced by a temporary file, fsync and rename). Its\n"
    "content fingerprint differs from FILE's. A run's best.ckpt is written stripped\n"
    "already; its checkpoint.ckpt keeps the moments for resuming.\n"
    "\n"
    "average: writes OUT, the element-wise mean of the parameters of the FILEs\n"
    "(checkpoints of one model: the same configuration fingerprint, parameters and\n"
    "shapes), with the last FILE's integers and without moments, and a record\n"
    "averaged = the number of FILEs. E.g. the snapshots a run keeps with\n"
    "train.keep_checkpoints (RUN_DIR/snapshots/), which eval.checkpoint = \"average\"\n"
    "averages itself.\n"
    "\n"
    "Options:\n"
    "  -o, --out OUT   where strip and average write\n"
    "  -h, --help      this help\n"
    "\n"
    "Exit status: 0 success, 2 usage error, 5 a file that cannot be read or written.\n";

static int usage_error(const char *why) {
  fprintf(stderr, "intrus checkpoint: %s\n%s", why, checkpoint_usage);
  return INTRUS_EXIT_USAGE;
}

static int fail(struct intrus_error *err) {
  fprintf(stderr, "intrus checkpoint: %s\n", err->msg);
  return INTRUS_EXIT_DATA;
}

static int info(const char *path) {
  struct intrus_error err = {0};
  struct intrus_ckpt *c;
  if (intrus_ckpt_read(path, false, 0, &c, &err)) return fail(&err);
  size_t params = 0, values = 0, moments = 0;
  for (size_t i = 0; i < intrus_ckpt_count(c); i++) {
    const char *name = intrus_ckpt_name(c, i);
    int ndim, shape[4];
    if (!intrus_ckpt_tensor(c, name, &ndim, shape)) continue;
    if (intrus_ckpt_is_moment(name)) {
      moments++;
      continue;
    }
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    params++;
    values += n;
  }
  struct stat sb;
  printf("%s: %lld bytes\n", path, stat(path, &sb) ? -1LL : (long long)sb.st_size);
  printf("configuration fingerprint 0x%016" PRIx64 "\n", intrus_ckpt_fingerprint(c));
  printf("content fingerprint       0x%016" PRIx64 "\n", intrus_ckpt_checksum(c));
  printf("parameters: %zu tensors, %zu values\n", params, values);
  printf("Adam's moments: %s\n",
         moments ? "kept (resumable)" : "none (decodes and warm-starts only)");
  for (size_t i = 0; i < intrus_ckpt_count(c); i++) {
    const char *name = intrus_ckpt_name(c, i);
    uint64_t v;
    if (!intrus_ckpt_u64(c, name, &v)) continue;
    /* Integers as stored; those holding a double's bits are shown as the double. */
    if (!strcmp(name, "last_loss") || !strcmp(name, "best") || !strcmp(name, "phase_best")) {
      double d;
      memcpy(&d, &v, sizeof d);
      printf("%s = %.6g\n", name, d);
    } else if (!strcmp(name, "vocab") || !strcmp(name, "init_source")) {
      printf("%s = 0x%016" PRIx64 "\n", name, v);
    } else {
      printf("%s = %" PRIu64 "\n", name, v);
    }
  }
  intrus_ckpt_free(c);
  return INTRUS_EXIT_OK;
}

static int run_subcommand(const char *sub, const char **files, int nfiles, const char *out) {
  struct intrus_error err = {0};
  if (!strcmp(sub, "average")) {
    if (!nfiles) return usage_error("average needs at least one checkpoint FILE");
    if (!out) return usage_error("average needs -o OUT");
    if (intrus_ckpt_average(files, nfiles, out, &err)) return fail(&err);
    printf("%s: the mean of %d checkpoint%s' parameters\n", out, nfiles,
           nfiles == 1 ? "" : "s");
    return INTRUS_EXIT_OK;
  }
  if (strcmp(sub, "info") && strcmp(sub, "strip")) {
    fprintf(stderr, "intrus checkpoint: unknown subcommand '%s'\n", sub);
    return usage_error("expected info, strip or average");
  }
  if (!nfiles) return usage_error("expected a checkpoint FILE");
  if (nfiles > 1) return usage_error("expected one FILE");
  if (!strcmp(sub, "info")) {
    if (out) return usage_error("info takes no -o");
    return info(files[0]);
  }
  if (!out) return usage_error("strip needs -o OUT");
  size_t dropped = 0;
  if (intrus_ckpt_strip_moments(files[0], out, &dropped, &err)) return fail(&err);
  printf("%s: %s without Adam's moments (%zu records left out)\n", out, files[0], dropped);
  return INTRUS_EXIT_OK;
}

int intrus_cmd_checkpoint(int argc, char **argv) {
  if (argc < 2) return usage_error("expected info, strip or average");
  const char *sub = argv[1];
  if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
    fputs(checkpoint_usage, stdout);
    return INTRUS_EXIT_OK;
  }
  /* The FILEs are gathered in place at argv[2..]: each goes no later than where it was. */
  const char *out = NULL, **files = (const char **)argv + 2;
  int nfiles = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(checkpoint_usage, stdout);
      return INTRUS_EXIT_OK;
    } else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) {
      if (++i == argc) return usage_error("-o wants a file");
      out = argv[i];
    } else if (!strncmp(argv[i], "--out=", 6)) {
      out = argv[i] + 6;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "intrus checkpoint: unknown option '%s'\n", argv[i]);
      return usage_error("see the options below");
    } else {
      files[nfiles++] = argv[i];
    }
  }
  return run_subcommand(sub, files, nfiles, out);
}

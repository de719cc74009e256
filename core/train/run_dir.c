/* The run directory as training keeps it: created with its parents, held by one
 * training process at a time, and its train.log cut back to the checkpoint a resume
 * starts from. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "intrus/fileio.h"
#include "intrus/rng.h"
#include "run_dir.h"

enum intrus_status run_dir_make(const char *dir, struct intrus_error *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s", dir);
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
      return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot create directory: %s", path,
                              strerror(errno));
    *p = '/';
  }
  if (mkdir(path, 0777) != 0 && errno != EEXIST)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot create directory: %s", path,
                            strerror(errno));
  return INTRUS_OK;
}

/* One training process per run directory: two would interleave train.log and race on
 * the checkpoints. An flock on RUN_DIR/.lock, which the kernel drops when the process
 * ends however it ends; the file says who holds it. */
enum intrus_status run_dir_lock(const char *run_dir, int *fd_out, struct intrus_error *err) {
  char path[4200], holder[256] = "";
  snprintf(path, sizeof path, "%s/.lock", run_dir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    ssize_t n = e == EWOULDBLOCK ? pread(fd, holder, sizeof holder - 1, 0) : -1;
    close(fd);
    if (e != EWOULDBLOCK)
      return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot lock: %s", path, strerror(e));
    holder[n > 0 ? n : 0] = '\0';
    holder[strcspn(holder, "\n")] = '\0';
    return intrus_error_set(err, INTRUS_ERR_IO,
                            "%s is in use by another training process (%s); wait for it to "
                            "end or train into another directory (-o)",
                            run_dir, holder[0] ? holder : "holder unknown");
  }
  char host[128] = "?", line[400];
  gethostname(host, sizeof host - 1);
  time_t now = time(NULL);
  struct tm tm;
  char when[64] = "";
  if (localtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  int len = snprintf(line, sizeof line, "pid %ld on %s since %s\n", (long)getpid(), host, when);
  if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)len, 0) != len) {
    /* The lock holds without the note; only the message to a second process is poorer. */
  }
  *fd_out = fd;
  return INTRUS_OK;
}

/* On a resume from step `step`: drops the rows train.log got after that checkpoint (a
 * killed run logs steps it then loses), so the resumed run's rows follow on without
 * repeats. Rewritten atomically; a missing log is started afresh by the caller. */
enum intrus_status run_log_trim(const char *path, long step, struct intrus_error *err) {
  FILE *f = fopen(path, "r");
  if (!f)
    return errno == ENOENT ? INTRUS_OK
                           : intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open: %s", path,
                                              strerror(errno));
  char *keep = NULL, *line = NULL;
  size_t keep_len = 0, cap = 0;
  FILE *out = open_memstream(&keep, &keep_len);
  bool dropped = false;
  ssize_t n;
  while (out && (n = getline(&line, &cap, f)) > 0) {
    char *end;
    long row = strtol(line, &end, 10);
    /* The header and anything that is not a step row are kept as they are. */
    if (end != line && *end == '\t' && row > step) {
      dropped = true;
      continue;
    }
    fwrite(line, 1, (size_t)n, out);
  }
  free(line);
  bool read_ok = !ferror(f);
  fclose(f);
  if (!out) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  fclose(out);
  enum intrus_status st = INTRUS_OK;
  if (!read_ok) st = intrus_error_set(err, INTRUS_ERR_IO, "%s: read error", path);
  else if (dropped) st = intrus_file_write_atomic(path, keep, keep_len, err);
  free(keep);
  return st;
}

/* The CPU's model name, "unknown" where /proc/cpuinfo does not say. */
static void cpu_model(char *out, size_t n) {
  snprintf(out, n, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *v = strchr(line, ':');
    if (!v) break;
    v += strspn(v + 1, " \t") + 1;
    snprintf(out, n, "%.*s", (int)strcspn(v, "\n"), v);
    break;
  }
  fclose(f);
}

/* A field without the tabs and newlines that would shift the columns. */
static void tsv_field(char *s) {
  for (; *s; s++)
    if (*s == '\t' || *s == '\n' || *s == '\r') *s = ' ';
}

enum intrus_status run_dir_note_session(const char *dir, const struct run_session *rs,
                                        struct intrus_error *err) {
  char path[4200], host[128] = "?", cpu[256], when[64] = "?", row[1024];
  snprintf(path, sizeof path, "%s/sessions.tsv", dir);
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = '\0';
  cpu_model(cpu, sizeof cpu);
  tsv_field(host);
  tsv_field(cpu);
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  struct stat sb;
  const bool fresh = stat(path, &sb) != 0 || sb.st_size == 0;
  int len = snprintf(row, sizeof row, "%s%s\t%ld\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n",
                     fresh ? "start\tfrom_step\tthreads\tranks\tkernels\tblas_core\t"
                             "version\thost\tcpu\n"
                           : "",
                     when, rs->from_step, rs->threads, rs->ranks, rs->kernels, rs->blas_core,
                     rs->version, host, cpu);
  if (len < 0 || (size_t)len >= sizeof row) len = (int)strlen(row);
  /* One append of the whole row: a killed process leaves a whole row or none. */
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  ssize_t w = write(fd, row, (size_t)len);
  int e = errno;
  if (w == len && fsync(fd) != 0) {
    e = errno;
    w = -1;
  }
  close(fd);
  if (w != len)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot write: %s", path, strerror(e));
  return INTRUS_OK;
}

int run_dir_count_setups(const char *dir) {
  char path[4300], line[1024];
  snprintf(path, sizeof path, "%s/sessions.tsv", dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  enum { MAX_SEEN = 64, FIELDS = 9 };
  uint64_t seen[MAX_SEEN];
  int n = 0;
  bool header = true;
  while (fgets(line, sizeof line, f)) {
    if (header) {
      header = false;
      continue;
    }
    /* run_dir_note_session's columns: start, from_step, threads, ranks, kernels,
     * blas_core, version, host, cpu */
    char *field[FIELDS] = {0};
    int k = 0;
    for (char *save = NULL, *tok = strtok_r(line, "\t\n", &save); tok && k < FIELDS;
         tok = strtok_r(NULL, "\t\n", &save))
      field[k++] = tok;
    if (k < FIELDS) continue;
    uint64_t h = INTRUS_FNV_INIT;
    for (int i = 2; i <= 5; i++) h = intrus_fnv1a(h, field[i], strlen(field[i]) + 1);
    h = intrus_fnv1a(h, field[8], strlen(field[8]) + 1);
    bool dup = false;
    for (int i = 0; i < n && !dup; i++) dup = seen[i] == h;
    if (!dup && n < MAX_SEEN) seen[n++] = h;
  }
  fclose(f);
  return n;
}

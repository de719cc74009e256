/* Writing files so that a crash leaves either the old or the new content: every result,
 * checkpoint, vocabulary and config intrus writes goes through here. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intrus/fileio.h"

/* fsync of the directory holding path, so that the rename itself is durable. Returns 0
 * or an errno value. */
int intrus_fsync_parent_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir;
  if (!slash) dir = strdup(".");
  else if (slash == path) dir = strdup("/");
  else dir = strndup(path, (size_t)(slash - path));
  if (!dir) return ENOMEM;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free(dir);
  if (fd < 0) return errno;
  int e = fsync(fd) != 0 ? errno : 0;
  close(fd);
  /* Some filesystems cannot sync a directory at all; there is nothing more to do there. */
  if (e == EINVAL || e == ENOTSUP) e = 0;
  return e;
}

enum intrus_status intrus_file_write_atomic(const char *path, const void *data, size_t len,
                                            struct intrus_error *err) {
  size_t tl = strlen(path) + 32;
  char *tmp = malloc(tl);
  if (!tmp) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    int e = errno;
    enum intrus_status st = intrus_error_set(err, INTRUS_ERR_IO,
                                             "cannot write '%s': cannot create '%s': %s", path,
                                             tmp, strerror(e));
    free(tmp);
    return st;
  }
  int e = 0;
  const char *p = data;
  while (len > 0 && !e) {
    ssize_t w = write(fd, p, len);
    if (w < 0) {
      if (errno != EINTR) e = errno;
      continue;
    }
    p += w;
    len -= (size_t)w;
  }
  if (!e && fsync(fd) != 0) e = errno;
  if (close(fd) != 0 && !e) e = errno;
  if (!e && rename(tmp, path) != 0) e = errno;
  if (e) {
    unlink(tmp);
    free(tmp);
    return intrus_error_set(err, INTRUS_ERR_IO, "cannot write '%s': %s", path, strerror(e));
  }
  free(tmp);
  if ((e = intrus_fsync_parent_dir(path)) != 0)
    return intrus_error_set(err, INTRUS_ERR_IO,
                            "'%s' written, but its directory cannot be synced (it may not "
                            "survive a crash): %s",
                            path, strerror(e));
  return INTRUS_OK;
}


/* The plugin search path (plugin.h's intrus_plugin_search_*): the directories
 * plugin_loader.c looks for modules in, in order, each once: --plugin-path, the
 * experiment's plugin_path, $INTRUS_PLUGIN_PATH, $(pkglibdir), and the build tree's
 * plugins/ when this process runs from its build tree. */
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/plugin.h"
#include "base/xalloc.h"
#include "plugin_search.h"

/* ---- search path -------------------------------------------------------------- */

struct intrus_plugin_search *intrus_plugin_search_create(void) {
  struct intrus_plugin_search *s = xmalloc(sizeof *s);
  s->dirs = NULL;
  s->n = s->cap = 0;
  return s;
}

void intrus_plugin_search_free(struct intrus_plugin_search *s) {
  if (!s) return;
  for (int i = 0; i < s->n; i++) free(s->dirs[i]);
  free(s->dirs);
  free(s);
}

/* Appends one directory unless it is already on the path: the same directory often
 * arrives twice (INTRUS_PLUGIN_PATH naming the build tree that the defaults add too),
 * and a repeated entry would only be searched again and printed twice. */
static void search_add_one(struct intrus_plugin_search *s, const char *dir, size_t len) {
  while (len > 1 && dir[len - 1] == '/') len--;  /* "a/" and "a" are one directory */
  if (len == 0) return;
  for (int i = 0; i < s->n; i++)
    if (strlen(s->dirs[i]) == len && !memcmp(s->dirs[i], dir, len)) return;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 8;
    s->dirs = xrealloc(s->dirs, (size_t)s->cap * sizeof *s->dirs);
  }
  s->dirs[s->n++] = xstrndup(dir, len);
}

void intrus_plugin_search_add(struct intrus_plugin_search *s, const char *dirs) {
  if (!dirs) return;
  for (const char *p = dirs;;) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : strlen(p);
    search_add_one(s, p, len);
    if (!colon) break;
    p = colon + 1;
  }
}

/* True when dir (already canonical) is base/sub after canonicalising base/sub. */
static bool same_dir(const char *dir, const char *base, const char *sub) {
  char want[PATH_MAX + 32], real[PATH_MAX];
  snprintf(want, sizeof want, "%s%s", base, sub);
  return realpath(want, real) && !strcmp(real, dir);
}

/* Whether this process runs uninstalled out of the build tree. Only then may the build
 * tree's plugins be found by default: an installed intrus must never pick up modules
 * from a stale build directory that happens to still exist. Libtool wrapper scripts
 * exec the real binary from .libs/, so those directories count too. */
static bool build_tree_check(void) {
  char exe[PATH_MAX];
  if (!realpath("/proc/self/exe", exe)) return false;
  char *slash = strrchr(exe, '/');
  if (!slash) return false;
  *slash = '\0';
  static const char *const subdirs[] = {"",       "/.libs",  "/tests",
                                        "/tests/.libs", "/bench", "/bench/.libs"};
  for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++)
    if (same_dir(exe, INTRUS_BUILDDIR, subdirs[i])) return true;
  return false;
}

/* Decided once per process: `make` rebuilding intrus while a long `intrus table` runs
 * leaves /proc/self/exe pointing at a deleted file, and every cell after the first then
 * failed to find the build tree's plugins. */
static pthread_once_t build_tree_once = PTHREAD_ONCE_INIT;
static bool build_tree;
static void build_tree_init(void) { build_tree = build_tree_check(); }

static bool running_from_build_tree(void) {
  pthread_once(&build_tree_once, build_tree_init);
  return build_tree;
}

void intrus_plugin_search_add_defaults(struct intrus_plugin_search *s) {
  intrus_plugin_search_add(s, getenv("INTRUS_PLUGIN_PATH"));
  /* Single directories, not colon lists: added as they are. */
  search_add_one(s, INTRUS_PKGLIBDIR, strlen(INTRUS_PKGLIBDIR));
  if (running_from_build_tree())
    search_add_one(s, INTRUS_BUILDDIR "/plugins", strlen(INTRUS_BUILDDIR "/plugins"));
}

int intrus_plugin_search_count(const struct intrus_plugin_search *s) { return s->n; }

const char *intrus_plugin_search_dir(const struct intrus_plugin_search *s, int i) {
  return i >= 0 && i < s->n ? s->dirs[i] : NULL;
}

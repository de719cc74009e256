/* Finding, opening and checking plugin modules (the "loading" half of plugin.h; the
 * directories searched are plugin_search.c's).
 *
 * Modules are libtool modules opened through libltdl, which reads the .la file to find
 * the shared object (in .libs/ for an uninstalled build) and resolves the descriptor as
 * "<module>_LTX_intrus_plugin_desc", so every plugin can export a symbol of its own name
 * while the loader asks for the one fixed name INTRUS_PLUGIN_SYMBOL.
 *
 * libltdl keeps global state (its handle list and a last-error string) and is not
 * thread-safe, so every call into it happens under one mutex; that also keeps an
 * lt_dlerror() text paired with the call that caused it. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <ltdl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intrus/plugin.h"
#include "base/xalloc.h"
#include "plugin_search.h"

struct intrus_plugin {
  lt_dlhandle handle;
  const struct intrus_plugin_desc *desc;
  char *path;
};

/* Module-name prefixes, indexed by enum intrus_plugin_kind. */
static const char *const kind_names[] = {NULL, "encoder", "decoder", "order", "eval"};
#define NUM_KINDS ((int)(sizeof kind_names / sizeof kind_names[0]))

const char *intrus_plugin_kind_name(enum intrus_plugin_kind kind) {
  return (int)kind > 0 && (int)kind < NUM_KINDS ? kind_names[kind] : NULL;
}

/* ---- small helpers ------------------------------------------------------------ */

static char *join_path(const char *dir, const char *name, const char *ext) {
  size_t n = strlen(dir) + 1 + strlen(name) + strlen(ext) + 1;
  char *p = xmalloc(n);
  snprintf(p, n, "%s/%s%s", dir, name, ext);
  return p;
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t ls = strlen(s), lx = strlen(suffix);
  return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

/* The kind whose "<prefix>_" starts module name m, or 0. */
static int module_kind(const char *m) {
  for (int k = 1; k < NUM_KINDS; k++) {
    size_t l = strlen(kind_names[k]);
    if (!strncmp(m, kind_names[k], l) && m[l] == '_' && m[l + 1]) return k;
  }
  return 0;
}

/* ---- opening one module --------------------------------------------------------- */

static pthread_mutex_t ltdl_lock = PTHREAD_MUTEX_INITIALIZER;
static int ltdl_users;  /* open plugins; libltdl is initialised while this is > 0 */

/* Both called with ltdl_lock held. libltdl is initialised on the first open and shut
 * down when the last plugin closes, so a process that loads plugins and closes them
 * all leaves nothing of libltdl behind. */
static bool ltdl_acquire(char *why, size_t whylen) {
  if (ltdl_users == 0 && lt_dlinit() != 0) {
    const char *e = lt_dlerror();
    snprintf(why, whylen, "cannot initialise libltdl: %s", e ? e : "unknown error");
    return false;
  }
  ltdl_users++;
  return true;
}

static void ltdl_release(void) {
  if (--ltdl_users == 0) lt_dlexit();
}

/* The shared object a .la file names, where libltdl would look for it: .libs/ next to
 * an uninstalled archive, next to it, or its recorded libdir. NULL with a reason in
 * out when the archive names none or it is in none of those places. */
static char *la_shared_object(const char *la, char *out, size_t cap) {
  FILE *f = fopen(la, "r");
  if (!f) {
    snprintf(out, cap, "cannot read the file: %s", strerror(errno));
    return NULL;
  }
  char *line = NULL, *dlname = NULL, *libdir = NULL;
  size_t len = 0;
  while (getline(&line, &len, f) > 0) {
    char **dst = !strncmp(line, "dlname='", 8)   ? &dlname
                 : !strncmp(line, "libdir='", 8) ? &libdir
                                                 : NULL;
    char *end = dst ? strchr(line + 8, '\'') : NULL;
    if (end && !*dst) *dst = xstrndup(line + 8, (size_t)(end - line - 8));
  }
  free(line);
  fclose(f);

  char *found = NULL;
  if (!dlname) {
    snprintf(out, cap, "not a libtool module file: it has no dlname= line");
  } else if (!*dlname) {
    snprintf(out, cap, "it names no shared object: the module was built static-only (link it "
                       "with -rpath and build shared)");
  } else {
    const char *slash = strrchr(la, '/');
    char *dir = slash ? xstrndup(la, (size_t)(slash - la)) : xstrdup(".");
    char *tries[3] = {join_path(dir, ".libs/", dlname), join_path(dir, dlname, ""),
                      libdir && *libdir ? join_path(libdir, dlname, "") : NULL};
    for (int i = 0; i < 3; i++) {
      if (!found && tries[i] && access(tries[i], F_OK) == 0) found = tries[i];
      else free(tries[i]);
    }
    if (!found)
      snprintf(out, cap, "the shared object it names, %s, is in none of %s/.libs, %s%s%s", dlname,
               dir, dir, libdir && *libdir ? ", " : "", libdir ? libdir : "");
    free(dir);
  }
  free(dlname);
  free(libdir);
  return found;
}

/* libltdl tries several loaders and locations and keeps only the last failure, so a
 * corrupt or unlinkable module is often reported as just "file not found". When that
 * happens, find out why ourselves: unreadable file, a .la naming a missing shared
 * object, or the dynamic linker's own reason (bad ELF header, missing dependency,
 * undefined symbol), which dlopen() on the shared object gives directly. */
static void failure_detail(const char *path, char *out, size_t cap) {
  out[0] = '\0';
  if (access(path, R_OK) != 0) {
    snprintf(out, cap, "cannot read the file: %s", strerror(errno));
    return;
  }
  char *so = NULL;
  if (has_suffix(path, ".la") && !(so = la_shared_object(path, out, cap))) return;
  /* libltdl has just failed to open this file, so this dlopen almost always fails
   * too; if it does not, close it again at once (the libltdl error stands). */
  void *h = dlopen(so ? so : path, RTLD_LAZY | RTLD_LOCAL);
  if (h) {
    dlclose(h);
  } else {
    const char *e = dlerror();
    snprintf(out, cap, "%s", e ? e : "");
  }
  free(so);
}

/* Opens path and checks the descriptor's ABI and fields. On failure writes the reason
 * (without the path) to why and returns NULL. Called with ltdl_lock held. */
static struct intrus_plugin *open_locked(const char *path, enum intrus_status *st, char *why,
                                         size_t whylen) {
  *st = INTRUS_ERR_PLUGIN;
  if (!ltdl_acquire(why, whylen)) return NULL;

  lt_dladvise advise;
  lt_dlhandle h = NULL;
  (void)lt_dlerror(); /* drop a stale message, e.g. from an earlier failed lt_dlsym */
  if (lt_dladvise_init(&advise) == 0) {
    /* ext: accept ".la" or the platform's shared-object suffix. local: keep each
     * plugin's symbols out of the global namespace so two plugins that happen to
     * define the same helper cannot bind to each other's copy. */
    if (lt_dladvise_ext(&advise) == 0 && lt_dladvise_local(&advise) == 0)
      h = lt_dlopenadvise(path, advise);
    lt_dladvise_destroy(&advise);
  }
  if (!h) {
    const char *e = lt_dlerror();
    char detail[INTRUS_ERROR_MSG_MAX / 2];
    failure_detail(path, detail, sizeof detail);
    snprintf(why, whylen, "cannot load plugin: %s%s%s%s", e ? e : "libltdl gave no reason",
             *detail ? " (" : "", detail, *detail ? ")" : "");
    ltdl_release();
    return NULL;
  }

  const lt_dlinfo *info = lt_dlgetinfo(h);
  const char *module = info && info->name ? info->name : "<module>";
  const struct intrus_plugin_desc *d = lt_dlsym(h, INTRUS_PLUGIN_SYMBOL);
  if (!d) {
    snprintf(why, whylen,
             "not an intrus plugin: it exports no descriptor %s_LTX_%s (declare it as "
             "INTRUS_PLUGIN_EXPORT const struct intrus_plugin_desc INTRUS_PLUGIN_DESC(%s); "
             "the name must match the module file name)",
             module, INTRUS_PLUGIN_SYMBOL, module);
    goto fail;
  }
  /* abi_major and abi_minor lead the struct in every ABI, so they are safe to read
   * before anything else; the other fields mean something only once they match. */
  if (d->abi_major != INTRUS_ABI_MAJOR) {
    snprintf(why, whylen,
             "plugin ABI %u.%u is not compatible with this intrus (ABI %d.%d): rebuild the "
             "plugin against this version",
             (unsigned)d->abi_major, (unsigned)d->abi_minor, INTRUS_ABI_MAJOR, INTRUS_ABI_MINOR);
    goto fail;
  }
  if (d->abi_minor > INTRUS_ABI_MINOR) {
    snprintf(why, whylen,
             "plugin ABI %u.%u is newer than this intrus (ABI %d.%d): upgrade intrus or "
             "rebuild the plugin against this version",
             (unsigned)d->abi_major, (unsigned)d->abi_minor, INTRUS_ABI_MAJOR, INTRUS_ABI_MINOR);
    goto fail;
  }
  const char *missing = !d->name || !*d->name ? "name"
                        : !d->version          ? "version"
                        : !d->vtable           ? "vtable"
                                               : NULL;
  if (missing) {
    snprintf(why, whylen, "malformed plugin descriptor: %s is not set", missing);
    goto fail;
  }
  if (!intrus_plugin_kind_name(d->kind)) {
    snprintf(why, whylen, "malformed plugin descriptor: unknown kind %d", (int)d->kind);
    goto fail;
  }

  struct intrus_plugin *p = xmalloc(sizeof *p);
  p->handle = h;
  p->desc = d;
  p->path = xstrdup(path);
  *st = INTRUS_OK;
  return p;

fail:
  lt_dlclose(h);
  ltdl_release();
  return NULL;
}

static struct intrus_plugin *open_module(const char *path, enum intrus_status *st, char *why,
                                         size_t whylen) {
  pthread_mutex_lock(&ltdl_lock);
  struct intrus_plugin *p = open_locked(path, st, why, whylen);
  pthread_mutex_unlock(&ltdl_lock);
  return p;
}

enum intrus_status intrus_plugin_open(const char *path, struct intrus_plugin **out,
                                      struct intrus_error *err) {
  char why[INTRUS_ERROR_MSG_MAX];
  enum intrus_status st;
  *out = open_module(path, &st, why, sizeof why);
  if (!*out) return intrus_error_set(err, st, "%s: %s", path, why);
  return INTRUS_OK;
}

void intrus_plugin_close(struct intrus_plugin *p) {
  if (!p) return;
  pthread_mutex_lock(&ltdl_lock);
  lt_dlclose(p->handle);
  ltdl_release();
  pthread_mutex_unlock(&ltdl_lock);
  free(p->path);
  free(p);
}

const struct intrus_plugin_desc *intrus_plugin_descriptor(const struct intrus_plugin *p) {
  return p->desc;
}

const char *intrus_plugin_file(const struct intrus_plugin *p) { return p->path; }

/* A module whose descriptor claims another kind or name than its file name would be
 * found under one name and behave as another; reject it. Returns false and fills why. */
static bool matches_module(const struct intrus_plugin_desc *d, const char *module, char *why,
                           size_t whylen) {
  const char *kn = intrus_plugin_kind_name(d->kind);
  size_t kl = strlen(kn);
  if (!strncmp(module, kn, kl) && module[kl] == '_' && !strcmp(module + kl + 1, d->name))
    return true;
  snprintf(why, whylen,
           "its descriptor declares the %s plugin '%s', so the module must be named %s_%s "
           "(or change the descriptor's kind and name to match the file name %s)",
           kn, d->name, kn, d->name, module);
  return false;
}

/* ---- scanning directories ------------------------------------------------------- */

struct module_entry {
  char *module;  /* file name without extension: encoder_template */
  char *path;
};

struct module_list {
  struct module_entry *v;
  size_t n, cap;
};

static void modules_free(struct module_list *l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->v[i].module);
    free(l->v[i].path);
  }
  free(l->v);
}

static int entry_cmp(const void *a, const void *b) {
  return strcmp(((const struct module_entry *)a)->module, ((const struct module_entry *)b)->module);
}

static struct module_entry *modules_find(const struct module_list *l, const char *module) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->v[i].module, module)) return &l->v[i];
  return NULL;
}

static void modules_push(struct module_list *l, char *module, char *path) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 16;
    l->v = xrealloc(l->v, l->cap * sizeof *l->v);
  }
  l->v[l->n].module = module;
  l->v[l->n].path = path;
  l->n++;
}

typedef void (*dir_problem_fn)(const char *dir, const char *problem, void *user);

/* Appends the modules of every directory of s (of the given kind, or all kinds when
 * kind is 0) to out, the first directory's module winning over a later one of the same
 * name. Within a directory ".la" beats ".so": an installed plugin has both, and the .la
 * is what libtool and libltdl treat as the module. Missing directories are normal
 * (pkglibdir before `make install`) and skipped quietly; unreadable ones go to bad. */
static void collect_modules(const struct intrus_plugin_search *s, int kind,
                            struct module_list *out, dir_problem_fn bad, void *user) {
  for (int i = 0; i < s->n; i++) {
    DIR *d = opendir(s->dirs[i]);
    if (!d) {
      if (errno != ENOENT && errno != ENOTDIR && bad) {
        char problem[256];
        snprintf(problem, sizeof problem, "cannot read plugin directory: %s", strerror(errno));
        bad(s->dirs[i], problem, user);
      }
      continue;
    }
    struct module_list here = {0};
    for (struct dirent *e; (e = readdir(d));) {
      const char *name = e->d_name;
      bool la = has_suffix(name, ".la");
      if (!la && !has_suffix(name, ".so")) continue;
      size_t stem = strlen(name) - 3;
      char *module = xstrndup(name, stem);
      int k = module_kind(module);
      if (!k || (kind && k != kind)) {
        free(module);
        continue;
      }
      struct module_entry *old = modules_find(&here, module);
      if (old) {
        if (la) {
          free(old->path);
          old->path = join_path(s->dirs[i], name, "");
        }
        free(module);
        continue;
      }
      modules_push(&here, module, join_path(s->dirs[i], name, ""));
    }
    closedir(d);
    /* readdir order is arbitrary; sorting makes listings and messages reproducible. */
    if (here.n) qsort(here.v, here.n, sizeof *here.v, entry_cmp);
    for (size_t j = 0; j < here.n; j++) {
      if (modules_find(out, here.v[j].module)) {
        free(here.v[j].module);
        free(here.v[j].path);
      } else {
        modules_push(out, here.v[j].module, here.v[j].path);
      }
    }
    free(here.v);
  }
}

/* ---- loading by kind and name ---------------------------------------------------- */

/* Appends to buf (of size cap, holding len bytes) what fits of a formatted string. */
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
  if (*len >= cap - 1) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
  va_end(ap);
  if (n > 0) *len = *len + (size_t)n < cap - 1 ? *len + (size_t)n : cap - 1;
}

static enum intrus_status not_found(const struct intrus_plugin_search *s,
                                    enum intrus_plugin_kind kind, const char *name,
                                    struct intrus_error *err) {
  const char *kn = intrus_plugin_kind_name(kind);
  char msg[INTRUS_ERROR_MSG_MAX];
  size_t len = 0;
  append(msg, sizeof msg, &len, "no %s plugin named '%s' (searched: ", kn, name);
  if (s->n == 0) append(msg, sizeof msg, &len, "no directories");
  for (int i = 0; i < s->n; i++) append(msg, sizeof msg, &len, "%s%s", i ? ", " : "", s->dirs[i]);
  append(msg, sizeof msg, &len, "; available %s plugins: ", kn);

  struct module_list mods = {0};
  collect_modules(s, kind, &mods, NULL, NULL);
  if (mods.n == 0) append(msg, sizeof msg, &len, "none");
  /* Sorted across directories too, so the list reads like a menu. */
  if (mods.n) qsort(mods.v, mods.n, sizeof *mods.v, entry_cmp);
  for (size_t i = 0; i < mods.n; i++)
    append(msg, sizeof msg, &len, "%s%s", i ? ", " : "", mods.v[i].module + strlen(kn) + 1);
  modules_free(&mods);
  append(msg, sizeof msg, &len, ")");
  return intrus_error_set(err, INTRUS_ERR_PLUGIN, "%s", msg);
}

/* Plugin names become file names and C identifiers (the LTX symbol), so only letters,
 * digits and '_' are allowed; this also keeps a name like "../x" from leaving the
 * search directories. */
static bool valid_name(const char *name) {
  if (!*name) return false;
  for (const char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '_'))
      return false;
  return true;
}

enum intrus_status intrus_plugin_load(const struct intrus_plugin_search *s,
                                      enum intrus_plugin_kind kind, const char *name,
                                      struct intrus_plugin **out, struct intrus_error *err) {
  *out = NULL;
  const char *kn = intrus_plugin_kind_name(kind);
  if (!kn) return intrus_error_set(err, INTRUS_ERR_INVALID, "unknown plugin kind %d", (int)kind);
  if (!name || !valid_name(name))
    return intrus_error_set(err, INTRUS_ERR_PLUGIN,
                            "invalid %s plugin name '%s': use letters, digits and '_' only", kn,
                            name ? name : "(null)");

  size_t mlen = strlen(kn) + 1 + strlen(name) + 1;
  char *module = xmalloc(mlen);
  snprintf(module, mlen, "%s_%s", kn, name);
  static const char *const exts[] = {".la", ".so"};
  for (int i = 0; i < s->n; i++) {
    for (size_t e = 0; e < sizeof exts / sizeof exts[0]; e++) {
      char *path = join_path(s->dirs[i], module, exts[e]);
      if (access(path, F_OK) != 0) {
        free(path);
        continue;
      }
      /* The first module found is the one used, even if it turns out broken: falling
       * through to a later directory would silently run a different build than the one
       * the user put first on the path. */
      enum intrus_status st = intrus_plugin_open(path, out, err);
      if (st == INTRUS_OK) {
        char why[INTRUS_ERROR_MSG_MAX];
        if (!matches_module((*out)->desc, module, why, sizeof why)) {
          st = intrus_error_set(err, INTRUS_ERR_PLUGIN, "%s: %s", path, why);
          intrus_plugin_close(*out);
          *out = NULL;
        }
      }
      free(path);
      free(module);
      return st;
    }
  }
  free(module);
  return not_found(s, kind, name, err);
}

/* ---- listing ------------------------------------------------------------------- */

struct list_ctx {
  intrus_plugin_visit_fn fn;
  void *user;
};

static void report_dir(const char *dir, const char *problem, void *user) {
  struct list_ctx *lc = user;
  lc->fn(dir, NULL, problem, lc->user);
}

enum intrus_status intrus_plugin_list(const struct intrus_plugin_search *s,
                                      intrus_plugin_visit_fn fn, void *user,
                                      struct intrus_error *err) {
  (void)err; /* every problem is per module or per directory and goes to fn */
  struct list_ctx lc = {fn, user};
  struct module_list mods = {0};
  collect_modules(s, 0, &mods, report_dir, &lc);
  for (size_t i = 0; i < mods.n; i++) {
    char why[INTRUS_ERROR_MSG_MAX];
    enum intrus_status st;
    struct intrus_plugin *p = open_module(mods.v[i].path, &st, why, sizeof why);
    if (!p) {
      fn(mods.v[i].path, NULL, why, user);
      continue;
    }
    if (matches_module(p->desc, mods.v[i].module, why, sizeof why))
      fn(mods.v[i].path, p->desc, NULL, user);
    else
      fn(mods.v[i].path, NULL, why, user);
    intrus_plugin_close(p);
  }
  modules_free(&mods);
  return INTRUS_OK;
}

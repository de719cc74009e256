/* Apertium as a part-of-speech tagger (see pos_tag.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "viz/pos_tag.h"

const char *pos_class_name(enum pos_class c) {
  static const char *const names[POS_CLASSES] = {
      "nouns",        "verbs",       "adjectives", "adverbs",     "pronouns", "prepositions",
      "conjunctions", "determiners", "numerals",   "punctuation", "other"};
  return c >= 0 && c < POS_CLASSES ? names[c] : "?";
}

/* Apertium's tag names (the pairs' .dix symbol definitions) by class. */
enum pos_class pos_class_of_analysis(const char *a) {
  static const struct {
    const char *tag;
    enum pos_class cls;
  } tags[] = {{"n", POS_NOUN},        {"np", POS_NOUN},       {"vblex", POS_VERB},
              {"vbser", POS_VERB},    {"vbhaver", POS_VERB},  {"vbmod", POS_VERB},
              {"vaux", POS_VERB},     {"vbdo", POS_VERB},     {"adj", POS_ADJ},
              {"adv", POS_ADV},       {"preadv", POS_ADV},    {"prn", POS_PRON},
              {"pr", POS_ADP},        {"cnjcoo", POS_CONJ},   {"cnjsub", POS_CONJ},
              {"cnjadv", POS_CONJ},   {"det", POS_DET},       {"predet", POS_DET},
              {"num", POS_NUM},       {"cm", POS_PUNCT},      {"sent", POS_PUNCT},
              {"lpar", POS_PUNCT},    {"rpar", POS_PUNCT},    {"lquot", POS_PUNCT},
              {"rquot", POS_PUNCT},   {"guio", POS_PUNCT},    {"apos", POS_PUNCT},
              {"punct", POS_PUNCT}};
  if (!a || *a == '*' || *a == '#' || *a == '@') return POS_OTHER;
  const char *lt = strchr(a, '<');
  if (!lt) return POS_OTHER;
  const char *gt = strchr(lt, '>');
  if (!gt) return POS_OTHER;
  size_t n = (size_t)(gt - lt - 1);
  for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
    if (strlen(tags[i].tag) == n && strncmp(tags[i].tag, lt + 1, n) == 0) return tags[i].cls;
  return POS_OTHER;
}

const char *pos_default_mode(const char *lang) {
  if (!lang) return NULL;
  if (strcmp(lang, "en") == 0) return "/usr/share/apertium/modes/eng-spa.mode";
  if (strcmp(lang, "ru") == 0) return "/usr/share/apertium/modes/rus-bel.mode";
  return NULL;
}

/* The shell pipeline: the text deformatter (without the period it would add at the end)
 * and the mode's stages up to its tagger; with_tagger keeps the tagger, told to print
 * surface forms (-p). NULL when the mode has no analyser stage. */
static char *pipeline(const char *mode, bool with_tagger, bool *has_tagger) {
  /* The prefix, and per stage " |" and " -p" at most: within twice the mode's length. */
  char *out = xmalloc(2 * strlen(mode) + 64);
  strcpy(out, "apertium-destxt -n");
  *has_tagger = false;
  const char *s = mode;
  int stages = 0;
  while (*s) {
    const char *bar = strchr(s, '|');
    size_t n = bar ? (size_t)(bar - s) : strlen(s);
    char stage[4096];
    snprintf(stage, sizeof stage, "%.*s", (int)n, s);
    char *t = strstr(stage, "apertium-tagger");
    if (t) {
      *has_tagger = true;
      if (!with_tagger) break;
    }
    /* $1 and $2 are the apertium script's option slots: empty here. */
    for (char *d; (d = strstr(stage, "$1")) || (d = strstr(stage, "$2"));) d[0] = d[1] = ' ';
    strcat(out, " |");
    if (t) { /* -p after the program's word (which may be a quoted path) */
      char *after = t;
      while (*after && *after != ' ' && *after != '\t') after++;
      char rest[4096];
      snprintf(rest, sizeof rest, "%s", after);
      *after = '\0';
      strcat(out, stage);
      strcat(out, " -p");
      strcat(out, rest);
    } else {
      strcat(out, stage);
    }
    stages++;
    if (t) break;
    if (!bar) break;
    s = bar + 1;
  }
  if (stages == 0) {
    free(out);
    return NULL;
  }
  return out;
}

/* Runs cmd with its input from path; its whole output, or NULL when it fails. */
static char *run(const char *cmd, const char *in_path) {
  size_t n = strlen(cmd) + strlen(in_path) + 32;
  char *full = xmalloc(n);
  snprintf(full, n, "(%s) < '%s' 2>/dev/null", cmd, in_path);
  FILE *p = popen(full, "r");
  free(full);
  if (!p) return NULL;
  size_t len = 0, cap = 1 << 16;
  char *buf = xmalloc(cap);
  size_t got;
  while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += got;
    if (cap - len < 2) buf = xrealloc(buf, cap *= 2);
  }
  buf[len] = '\0';
  int status = pclose(p);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* Copies the text of [s, end) without Apertium's backslash escapes and without spaces. */
static size_t unescape(const char *s, const char *end, char *out) {
  size_t n = 0;
  for (; s < end; s++) {
    if (*s == '\\' && s + 1 < end) s++;
    else if (*s == ' ') continue;
    out[n++] = *s;
  }
  out[n] = '\0';
  return n;
}

/* The next unescaped c in [s, end), or end. */
static const char *find_unescaped(const char *s, const char *end, char c) {
  for (; s < end; s++) {
    if (*s == '\\') {
      if (++s == end) break;
      continue;
    }
    if (*s == c) return s;
  }
  return end;
}

/* Matches the lexical units of out to the words: each unit's surface, spaces removed,
 * must be the next characters of the words' concatenation; a word takes the class of
 * the unit its first character is in. */
static enum intrus_status align(const char *out, char *const *words, long nwords, int *cls,
                                long *unknown, struct intrus_error *err) {
  size_t total = 0;
  for (long i = 0; i < nwords; i++) total += strlen(words[i]);
  char *concat = xmalloc(total + 1);
  size_t *start = xmalloc(((size_t)nwords + 1) * sizeof *start);
  size_t pos = 0;
  for (long i = 0; i < nwords; i++) {
    start[i] = pos;
    size_t l = strlen(words[i]);
    memcpy(concat + pos, words[i], l);
    pos += l;
    cls[i] = POS_OTHER;
  }
  concat[total] = '\0';
  start[nwords] = total;
  char *surface = xmalloc(strlen(out) + 1);
  enum intrus_status st = INTRUS_OK;
  const char *s = out, *end = out + strlen(out);
  long w = 0;
  pos = 0;
  *unknown = 0;
  while (s < end && !st) {
    if (*s == '[') {
      /* A superblank: formatting, except that apertium-destxt moves some characters of
       * the text into one ('~' becomes "[~]"): what matches the words there is theirs. */
      const char *close = find_unescaped(s + 1, end, ']');
      size_t bl = unescape(s + 1, close, surface);
      if (bl && pos + bl <= total && memcmp(concat + pos, surface, bl) == 0) pos += bl;
      s = close < end ? close + 1 : end;
      continue;
    }
    if (*s == ' ' || *s == '\n' || *s == '\t') {
      s++;
      continue;
    }
    const char *u_end = s + 1, *analysis = NULL;
    size_t sl;
    if (*s == '^') {
      u_end = find_unescaped(s + 1, end, '$');
      const char *slash = find_unescaped(s + 1, u_end, '/');
      sl = unescape(s + 1, slash, surface);
      analysis = slash < u_end ? slash + 1 : NULL;
    } else { /* text outside a unit: one character */
      if (*s == '\\' && s + 1 < end) u_end = s + 2;
      sl = unescape(s, u_end, surface);
    }
    if (pos + sl > total || memcmp(concat + pos, surface, sl) != 0) {
      st = intrus_error_set(err, INTRUS_ERR_DATA,
                            "the tagger's output does not match the words: '%s' where the "
                            "words have '%.*s' (after %zu of %zu characters)",
                            surface, (int)(sl < 64 ? sl : 64), concat + pos, pos, total);
      break;
    }
    enum pos_class c = POS_OTHER;
    if (analysis) {
      char first[256];
      const char *a_end = find_unescaped(analysis, u_end, '/');
      snprintf(first, sizeof first, "%.*s", (int)(a_end - analysis), analysis);
      c = pos_class_of_analysis(first);
      if (first[0] == '*') (*unknown)++;
    }
    for (; w < nwords && start[w] < pos + sl; w++)
      if (start[w] >= pos) cls[w] = c;
    pos += sl;
    s = analysis || *s == '^' ? (u_end < end ? u_end + 1 : end) : u_end;
  }
  if (!st && pos != total)
    st = intrus_error_set(err, INTRUS_ERR_DATA,
                          "the tagger's output ends after %zu of the words' %zu characters",
                          pos, total);
  free(surface);
  free(start);
  free(concat);
  return st;
}

/* Writes the sentences, one a line, to a new temporary file (under $TMPDIR, else /tmp)
 * whose name goes to path. */
static enum intrus_status write_input(char *const *words, const long *sent_start, long nsent,
                                      char *path, size_t size, struct intrus_error *err) {
  const char *dir = getenv("TMPDIR");
  snprintf(path, size, "%s/intrus-pos.XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot make a temporary file: %s", path,
                            strerror(errno));
  FILE *in = fdopen(fd, "w");
  for (long i = 0; in && i < nsent; i++) {
    for (long j = sent_start[i]; j < sent_start[i + 1]; j++)
      fprintf(in, "%s%s", j > sent_start[i] ? " " : "", words[j]);
    fputc('\n', in);
  }
  if (!in || fclose(in) != 0) {
    if (!in) close(fd);
    unlink(path);
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: cannot write", path);
  }
  return INTRUS_OK;
}

/* Runs cmd on the input file and classes the words by its output. *ran is false when the
 * pipeline failed (a crash); a mismatch between its output and the words is an error. */
static enum intrus_status tag_with(const char *cmd, const char *in_path, char *const *words,
                                   long nwords, int *cls, long *unknown, bool *ran,
                                   struct intrus_error *err) {
  char *out = run(cmd, in_path);
  *ran = out != NULL;
  if (!out) return INTRUS_OK;
  enum intrus_status st = align(out, words, nwords, cls, unknown, err);
  free(out);
  return st;
}

enum intrus_status pos_tag_apertium(const char *mode_file, char *const *words,
                                    const long *sent_start, long nsent, int *cls,
                                    struct pos_tag_info *info, struct intrus_error *err) {
  memset(info, 0, sizeof *info);
  char *mode = NULL;
  size_t len = 0;
  FILE *f = fopen(mode_file, "r");
  if (!f)
    return intrus_error_set(err, INTRUS_ERR_IO, "%s: %s (Debian packages the English "
                            "analyser in apertium-eng-spa, the Russian one in "
                            "apertium-bel-rus)", mode_file, strerror(errno));
  ssize_t got = getline(&mode, &len, f);
  fclose(f);
  if (got <= 0) {
    free(mode);
    return intrus_error_set(err, INTRUS_ERR_DATA, "%s: empty Apertium mode file", mode_file);
  }
  mode[strcspn(mode, "\r\n")] = '\0';
  bool has_tagger;
  char *tagger_cmd = pipeline(mode, true, &has_tagger); /* the analyser, without a tagger */
  char *analyser_cmd = has_tagger ? pipeline(mode, false, &has_tagger) : NULL;
  free(mode);
  enum intrus_status st = INTRUS_OK;
  bool ran = false;
  long nwords = sent_start[nsent];
  char in_path[4200];
  if (!tagger_cmd || (has_tagger && !analyser_cmd)) {
    st = intrus_error_set(err, INTRUS_ERR_DATA, "%s: no analyser stage in the mode", mode_file);
  } else if (nsent > 0 && !(st = write_input(words, sent_start, nsent, in_path, sizeof in_path,
                                             err))) {
    /* The whole file at once. Where the tagger crashes on it, the whole file takes the
     * first readings, so that one file's words are classed one way: Debian 12's rus-bel
     * tagger crashes on some sentences ("Мама мыла раму ."), 170 of the first 300 of
     * data/mt-full/en-ru's test set, too many to tag around. */
    st = tag_with(tagger_cmd, in_path, words, nwords, cls, &info->unknown, &ran, err);
    if (!st && ran) {
      info->hmm_sentences = has_tagger ? nsent : 0;
      info->first_sentences = has_tagger ? 0 : nsent;
    } else if (!st && has_tagger) {
      st = tag_with(analyser_cmd, in_path, words, nwords, cls, &info->unknown, &ran, err);
      if (!st && ran) info->first_sentences = nsent;
    }
    if (!st && !ran)
      st = intrus_error_set(err, INTRUS_ERR_IO, "cannot run the Apertium pipeline of %s "
                            "(is the apertium package installed?): %s", mode_file,
                            has_tagger ? analyser_cmd : tagger_cmd);
    unlink(in_path);
  }
  free(tagger_cmd);
  free(analyser_cmd);
  return st;
}

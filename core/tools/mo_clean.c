/* Cleaning one catalog entry into an English/translation pair, or into the reason it is
 * dropped: the text heuristics of intrus-mocorpus (UI accelerators, placeholders,
 * translator credits, untranslated copies, the target script), kept apart from the
 * file format (mo.c) and from the corpus they feed (mo_corpus.c). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "mo.h"
#include "mo_internal.h"

/* ---------------------------------------------------------------- text helpers */

/* Decodes the code point at s (valid UTF-8 assumed, NUL-terminated); returns its length. */
int mo_cp_at(const char *s, utf8proc_int32_t *cp) {
  utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)s, -1, cp);
  if (n <= 0) { /* cannot happen after mo_valid_text; step one byte to stay safe */
    *cp = (unsigned char)*s;
    return 1;
  }
  return (int)n;
}

static int is_letter(utf8proc_int32_t cp) {
  utf8proc_category_t c = utf8proc_category(cp);
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}
int mo_is_alnum_cp(utf8proc_int32_t cp) {
  utf8proc_category_t c = utf8proc_category(cp);
  return is_letter(cp) || (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}
static int is_space_cp(utf8proc_int32_t cp) {
  if (cp == ' ' || (cp >= '\t' && cp <= '\r')) return 1;
  utf8proc_category_t c = utf8proc_category(cp);
  return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

/* An accelerator marks the next character, a letter or digit in any script
 * (translations mark their own letters: "_Файл"); "&«" or "_ " are text. */
static int accel_target(const char *s) {
  if (!*s) return 0;
  utf8proc_int32_t cp;
  mo_cp_at(s, &cp);
  return mo_is_alnum_cp(cp);
}


int mo_valid_text(const char *s, size_t len) {
  const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
  size_t i = 0;
  while (i < len) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t n = utf8proc_iterate(p + i, (utf8proc_ssize_t)(len - i), &cp);
    if (n <= 0) return 0;
    if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || (cp >= 0x7f && cp < 0xa0))
      return 0;
    i += (size_t)n;
  }
  return 1;
}

void mo_collapse_space(char *s) {
  char *w = s;
  int pending = 0; /* a space is owed before the next visible character */
  for (const char *r = s; *r;) {
    utf8proc_int32_t cp;
    int n = mo_cp_at(r, &cp);
    if (is_space_cp(cp)) {
      pending = w != s;
    } else {
      if (pending) *w++ = ' ';
      pending = 0;
      memmove(w, r, (size_t)n);
      w += n;
    }
    r += n;
  }
  *w = '\0';
}

void mo_strip_context_prefix(char *s) {
  /* Wesnoth disambiguates strings as "race+female^Elvish Sorceress" and, like its
   * runtime, everything up to the last caret goes (prefixes may hold spaces). */
  char *caret = strrchr(s, '^');
  if (caret) memmove(s, caret + 1, strlen(caret + 1) + 1);
}

int mo_is_wesnoth_catalog(const char *path) {
  const char *base = strrchr(path, '/');
  return !strncmp(base ? base + 1 : path, "wesnoth", 7);
}

/* "(_F)", "(&F)", "(~F)", also in full-width parentheses: CJK and Arabic translations
 * keep the English mnemonic letter in brackets after the word. */
static size_t bracket_accel(const char *s) {
  static const char *const lparen[] = {"(", "\xef\xbc\x88"};
  static const char *const rparen[] = {")", "\xef\xbc\x89"};
  for (int k = 0; k < 2; k++) {
    size_t lo = strlen(lparen[k]);
    if (strncmp(s, lparen[k], lo)) continue;
    const char *p = s + lo;
    if (*p != '_' && *p != '&' && *p != '~') continue;
    if (!isalnum((unsigned char)p[1])) continue;
    p += 2;
    for (int m = 0; m < 2; m++) {
      size_t lc = strlen(rparen[m]);
      if (!strncmp(p, rparen[m], lc)) return (size_t)(p - s) + lc;
    }
  }
  return 0;
}

/* "&amp;", "&#38;", "&#x26;": HTML entities, which are text, not accelerators. */
static int is_entity(const char *s) {
  const char *p = s + 1;
  if (*p == '#') {
    p++;
    if (*p == 'x' || *p == 'X') p++;
    if (!isxdigit((unsigned char)*p)) return 0;
    while (isxdigit((unsigned char)*p)) p++;
  } else {
    if (!isalpha((unsigned char)*p)) return 0;
    while (isalnum((unsigned char)*p)) p++;
  }
  return *p == ';';
}

void mo_strip_accelerators(char *s) {
  /* Bracketed mnemonics first, with the space before them. */
  char *w = s;
  for (const char *r = s; *r;) {
    size_t n = bracket_accel(r);
    if (n) {
      while (w > s && w[-1] == ' ') w--;
      r += n;
    } else {
      *w++ = *r++;
    }
  }
  *w = '\0';

  /* GTK's "_Open": strip only when the string has exactly one underscore, so identifiers
   * such as LD_LIBRARY_PATH or file_name_%d stay intact. */
  char *u = strchr(s, '_');
  if (u && !strchr(u + 1, '_') && accel_target(u + 1))
    memmove(u, u + 1, strlen(u + 1) + 1);

  /* KDE's and LibreOffice's "&Open" ("&&" is a literal ampersand) and "~Open". */
  w = s;
  for (const char *r = s; *r;) {
    if (r[0] == '&' && r[1] == '&') {
      *w++ = '&';
      r += 2;
    } else if (r[0] == '&' && accel_target(r + 1) && !is_entity(r)) {
      r++;
    } else if (r[0] == '~' && accel_target(r + 1)) {
      r++;
    } else {
      *w++ = *r++;
    }
  }
  *w = '\0';
}

/* Length of a placeholder or tag at s, 0 if none: printf conversions (%s, %1$d, %-5.2f,
 * %'d, %(name)s), Qt's %1 and %L1, {0} and {name}, $1 / $name / ${name}, <tags> and
 * entities. */
static size_t placeholder(const char *s) {
  const char *p = s + 1;
  switch (*s) {
  case '%':
    if (*p == '(') {
      const char *q = strchr(p, ')');
      if (!q) return 0;
      p = q + 1;
    } else if (*p == 'L' && isdigit((unsigned char)p[1])) {
      p++;
      while (isdigit((unsigned char)*p)) p++;
      return (size_t)(p - s);
    } else if (isdigit((unsigned char)*p)) {
      const char *q = p;
      while (isdigit((unsigned char)*q)) q++;
      if (*q == '$')
        p = q + 1; /* %1$s: positional */
      else if (!*q || !strchr(".hlLqjztdiouxXeEfFgGaAcspn", *q))
        return (size_t)(q - s); /* Qt's %1; "%10d" falls through as a width */
    }
    while (*p && strchr("-+#0'I", *p)) p++;
    while (isdigit((unsigned char)*p) || *p == '*') p++;
    if (*p == '.') {
      p++;
      while (isdigit((unsigned char)*p) || *p == '*') p++;
    }
    while (*p && strchr("hlLqjzt", *p)) p++;
    if (*p && strchr("diouxXeEfFgGaAcspnm%@", *p)) return (size_t)(p + 1 - s);
    return 0;
  case '{':
    while (isalnum((unsigned char)*p) || *p == '_' || *p == '.' || *p == ':') p++;
    return *p == '}' ? (size_t)(p + 1 - s) : 0;
  case '$':
    if (*p == '{') {
      const char *q = strchr(p, '}');
      return q ? (size_t)(q + 1 - s) : 0;
    }
    if (!isalnum((unsigned char)*p) && *p != '_') return 0;
    while (isalnum((unsigned char)*p) || *p == '_') p++;
    return (size_t)(p - s);
  case '<':
    if (!isalpha((unsigned char)*p) && *p != '/' && *p != '!') return 0;
    {
      const char *q = strchr(p, '>');
      return q ? (size_t)(q + 1 - s) : 0;
    }
  case '&':
    if (!is_entity(s)) return 0;
    return (size_t)(strchr(s, ';') + 1 - s);
  default:
    return 0;
  }
}

int mo_is_format_only(const char *s) {
  while (*s) {
    size_t n = placeholder(s);
    if (n) {
      s += n;
      continue;
    }
    utf8proc_int32_t cp;
    s += mo_cp_at(s, &cp);
    if (is_letter(cp)) return 0;
  }
  return 1;
}

int mo_count_words(const char *s) {
  int words = 0, in_word = 0, counted = 0;
  while (*s) {
    utf8proc_int32_t cp;
    s += mo_cp_at(s, &cp);
    if (is_space_cp(cp)) {
      in_word = 0;
      continue;
    }
    if (!in_word) counted = 0;
    in_word = 1;
    if (!counted && mo_is_alnum_cp(cp)) {
      words++;
      counted = 1;
    }
  }
  return words;
}

static int in_script(utf8proc_int32_t c, enum mo_script script) {
  switch (script) {
  case MO_SCRIPT_CYRILLIC:
    return (c >= 0x0400 && c <= 0x052f) || (c >= 0x1c80 && c <= 0x1c8f) ||
           (c >= 0x2de0 && c <= 0x2dff) || (c >= 0xa640 && c <= 0xa69f);
  case MO_SCRIPT_JAPANESE: /* kana, CJK ideographs (with extensions), half-width kana */
    return (c >= 0x3040 && c <= 0x30ff) || (c >= 0x31f0 && c <= 0x31ff) ||
           (c >= 0x3400 && c <= 0x4dbf) || (c >= 0x4e00 && c <= 0x9fff) ||
           (c >= 0xf900 && c <= 0xfaff) || (c >= 0xff66 && c <= 0xff9f) ||
           (c >= 0x20000 && c <= 0x2ffff);
  case MO_SCRIPT_ARABIC: /* Arabic, supplement, extended-A, presentation forms A and B */
    return (c >= 0x0600 && c <= 0x06ff) || (c >= 0x0750 && c <= 0x077f) ||
           (c >= 0x08a0 && c <= 0x08ff) || (c >= 0xfb50 && c <= 0xfdff) ||
           (c >= 0xfe70 && c <= 0xfeff);
  case MO_SCRIPT_ANY:
    return 1;
  }
  return 0;
}

int mo_has_script(const char *s, enum mo_script script) {
  if (script == MO_SCRIPT_ANY) return 1;
  while (*s) {
    utf8proc_int32_t cp;
    s += mo_cp_at(s, &cp);
    if (in_script(cp, script)) return 1;
  }
  return 0;
}

enum mo_script mo_script_for_lang(const char *lang) {
  /* "ru", "ru_RU", "ja@...": the script follows the language, whatever the region. */
  size_t n = strcspn(lang, "_-@.");
  if (n == 2 && !strncmp(lang, "ru", 2)) return MO_SCRIPT_CYRILLIC;
  if (n == 2 && !strncmp(lang, "ja", 2)) return MO_SCRIPT_JAPANESE;
  if (n == 2 && !strncmp(lang, "ar", 2)) return MO_SCRIPT_ARABIC;
  return MO_SCRIPT_ANY;
}

const char *mo_verdict_name(enum mo_verdict v) {
  static const char *const names[MO_NVERDICTS] = {
      "kept",         "header",    "encoding", "credits", "empty", "format-only",
      "identical",    "script",    "length",   "duplicate"};
  return (unsigned)v < MO_NVERDICTS ? names[v] : "unknown";
}

/* Translator credits: GNOME's "translator-credits" msgid, KDE's "Your names" / "Your
 * emails" under the "NAME OF TRANSLATORS" / "EMAIL OF TRANSLATORS" contexts. Their
 * "translations" are lists of people, not translations. */
static int is_credits(const char *ctx, size_t ctx_len, const char *id) {
  static const char *const ids[] = {"translator-credit", "translator_credit",
                                    "translator credit", "translatorcredit"};
  for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
    if (strcasestr(id, ids[i])) return 1;
  if (!strcmp(id, "Your names") || !strcmp(id, "Your emails")) return 1;
  static const char tr[] = "OF TRANSLATORS";
  for (size_t p = 0; p + sizeof tr - 1 <= ctx_len; p++)
    if (!memcmp(ctx + p, tr, sizeof tr - 1)) return 1;
  return 0;
}

/* KDE 3 put contexts in the msgid as "_: context\n"; strip it like a msgctxt. */
static void strip_kde3_context(char *s) {
  if (strncmp(s, "_: ", 3)) return;
  char *nl = strchr(s, '\n');
  if (nl) memmove(s, nl + 1, strlen(nl + 1) + 1);
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

int mo_clean_entry(const struct mo_filter *f, const struct mo_entry *e, char **src, char **tgt,
                   enum mo_verdict *verdict) {
  *src = *tgt = NULL;
  if (e->id_len == 0) {
    *verdict = MO_DROP_HEADER;
    return 0;
  }
  /* The text follows the context (before 0x04); the singular ends at the first NUL,
   * and so does the first plural form of the translation. */
  const char *id = e->id, *ctx = e->id;
  size_t id_len = strnlen(e->id, e->id_len), ctx_len = 0;
  const char *eot = memchr(id, '\x04', id_len);
  if (eot) {
    ctx_len = (size_t)(eot - id);
    id_len -= ctx_len + 1;
    id = eot + 1;
  }
  size_t str_len = strnlen(e->str, e->str_len);
  if (!mo_valid_text(id, id_len) || !mo_valid_text(e->str, str_len) ||
      !mo_valid_text(ctx, ctx_len)) {
    *verdict = MO_DROP_ENCODING;
    return 0;
  }
  char *s = dup_n(id, id_len), *t = dup_n(e->str, str_len);
  if (!s || !t) {
    free(s);
    free(t);
    return -1;
  }
  enum mo_verdict v = MO_KEEP;
  if (is_credits(ctx, ctx_len, s)) {
    v = MO_DROP_CREDITS;
  } else {
    char *both[2] = {s, t};
    for (int k = 0; k < 2; k++) {
      strip_kde3_context(both[k]);
      if (f->caret_context) mo_strip_context_prefix(both[k]);
      mo_strip_accelerators(both[k]);
      mo_collapse_space(both[k]);
    }
    int words = mo_count_words(s);
    if (!*s || !*t)
      v = MO_DROP_EMPTY;
    else if (mo_is_format_only(s) || mo_is_format_only(t))
      v = MO_DROP_FORMAT_ONLY;
    else if (!strcmp(s, t))
      v = MO_DROP_IDENTICAL;
    else if (!mo_has_script(t, f->script))
      v = MO_DROP_SCRIPT;
    else if (words < f->min_words || words > f->max_words)
      v = MO_DROP_LENGTH;
  }
  *verdict = v;
  if (v != MO_KEEP) {
    free(s);
    free(t);
    return 0;
  }
  *src = s;
  *tgt = t;
  return 0;
}

/* The text side of the BLEU plugin (see eval_bleu.c's top comment for what is
 * reproduced and why): code point buffers, Python's whitespace and str.lower(), and
 * sacreBLEU's 13a tokenizer, all at code point granularity as Python's are. */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "bleu_text.h"
#include "../common/unicode_case.h"

/* ---- code point buffers --------------------------------------------------------- */

void cps_push(struct cps *b, uint32_t c) {
  if (b->oom) return;
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 64;
    uint32_t *v = realloc(b->v, cap * sizeof *v);
    if (!v) {
      b->oom = true;
      return;
    }
    b->v = v;
    b->cap = cap;
  }
  b->v[b->n++] = c;
}

void cps_free(struct cps *b) {
  free(b->v);
  memset(b, 0, sizeof *b);
}

void cps_swap(struct cps *a, struct cps *b) {
  struct cps t = *a;
  *a = *b;
  *b = t;
}

/* ---- Python string semantics ------------------------------------------------------ */

/* str.isspace(): the code points str.split() and str.rstrip() treat as whitespace
 * (bidirectional class WS, B or S, or category Zs). The set is fixed since Unicode 6.3
 * dropped U+180E; note U+200B and U+FEFF are not in it. */
bool py_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

/* str.lower(). Simple per-code-point lowercasing plus the only two places where
 * Python's full lowercasing differs from it: U+0130 (the one unconditional
 * multi-character mapping of SpecialCasing.txt) and the final sigma context. */
void py_lower(const struct cps *in, struct cps *out) {
  out->n = 0;
  for (size_t i = 0; i < in->n; i++) {
    uint32_t c = in->v[i];
    if (c == 0x130) {
      cps_push(out, 'i');
      cps_push(out, 0x307);
    } else if (c == 0x3A3) {
      cps_push(out, unicase_final_sigma(in->v, in->n, i) ? 0x3C2 : 0x3C3);
    } else {
      cps_push(out, (uint32_t)utf8proc_tolower((utf8proc_int32_t)c));
    }
  }
}

/* ---- the 13a tokenizer (mteval-v13a as in sacreBLEU's tokenizer_13a.py) ------------ */

/* line.replace(pat, rep) for an ASCII pattern and a replacement no longer than it, so
 * the result can be written over the input from the left. Like str.replace it is one
 * left-to-right pass with no rescanning of replaced text. */
static void replace_all(struct cps *s, const char *pat, const char *rep) {
  size_t pl = strlen(pat), rl = strlen(rep), w = 0, r = 0;
  while (r < s->n) {
    size_t k = 0;
    while (k < pl && r + k < s->n && s->v[r + k] == (unsigned char)pat[k]) k++;
    if (k == pl) {
      for (size_t m = 0; m < rl; m++) s->v[w++] = (unsigned char)rep[m];
      r += pl;
    } else {
      s->v[w++] = s->v[r++];
    }
  }
  s->n = w;
}

static bool is_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static bool is_period_comma(uint32_t c) { return c == '.' || c == ','; }

/* The character class [\{-\~\[-\` -\&\(-\+\:-\@\/] of the first regex: { | } ~ [ \ ] ^
 * _ ` space ! " # $ % & ( ) * + : ; < = > ? @ / (not ' , - . nor digits or letters). */
static bool punct_13a(uint32_t c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
         (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

/* The four regexes of TokenizerRegexp, applied in order to " " + line + " ". Each
 * pattern has a fixed length of one or two code points, so Python's leftmost,
 * non-overlapping re.sub is the scan below: try a match at i; on a match emit the
 * replacement and continue after the match, else copy one code point. Patterns see
 * code points, as Python's str regexes do ([^0-9] is one whole code point). */
void tokenize_13a(struct cps *s, struct cps *tmp) {
  replace_all(s, "<skipped>", "");
  replace_all(s, "-\n", "");
  replace_all(s, "\n", " ");
  replace_all(s, "&quot;", "\"");
  replace_all(s, "&amp;", "&");
  replace_all(s, "&lt;", "<");
  replace_all(s, "&gt;", ">");

  /* ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 ", on the padded line */
  tmp->n = 0;
  cps_push(tmp, ' ');
  cps_push(tmp, ' ');
  cps_push(tmp, ' ');  /* the leading pad space is itself in the class */
  for (size_t i = 0; i < s->n; i++) {
    if (punct_13a(s->v[i])) {
      cps_push(tmp, ' ');
      cps_push(tmp, s->v[i]);
      cps_push(tmp, ' ');
    } else {
      cps_push(tmp, s->v[i]);
    }
  }
  cps_push(tmp, ' ');
  cps_push(tmp, ' ');
  cps_push(tmp, ' ');
  cps_swap(s, tmp);

  /* ([^0-9])([\.,]) -> "\1 \2 ": period and comma unless preceded by a digit */
  tmp->n = 0;
  for (size_t i = 0; i < s->n;) {
    if (i + 1 < s->n && !is_digit(s->v[i]) && is_period_comma(s->v[i + 1])) {
      cps_push(tmp, s->v[i]);
      cps_push(tmp, ' ');
      cps_push(tmp, s->v[i + 1]);
      cps_push(tmp, ' ');
      i += 2;
    } else {
      cps_push(tmp, s->v[i++]);
    }
  }
  cps_swap(s, tmp);

  /* ([\.,])([^0-9]) -> " \1 \2": period and comma unless followed by a digit */
  tmp->n = 0;
  for (size_t i = 0; i < s->n;) {
    if (i + 1 < s->n && is_period_comma(s->v[i]) && !is_digit(s->v[i + 1])) {
      cps_push(tmp, ' ');
      cps_push(tmp, s->v[i]);
      cps_push(tmp, ' ');
      cps_push(tmp, s->v[i + 1]);
      i += 2;
    } else {
      cps_push(tmp, s->v[i++]);
    }
  }
  cps_swap(s, tmp);

  /* ([0-9])(-) -> "\1 \2 ": dash when preceded by a digit */
  tmp->n = 0;
  for (size_t i = 0; i < s->n;) {
    if (i + 1 < s->n && is_digit(s->v[i]) && s->v[i + 1] == '-') {
      cps_push(tmp, s->v[i]);
      cps_push(tmp, ' ');
      cps_push(tmp, '-');
      cps_push(tmp, ' ');
      i += 2;
    } else {
      cps_push(tmp, s->v[i++]);
    }
  }
  cps_swap(s, tmp);
}

/* Reversible tokenizer: utf8proc for normalisation, categories and grapheme clusters;
 * MeCab for Japanese word segmentation.
 *
 * Rules, applied to the NFC form of the line:
 *  - The unit is the extended grapheme cluster (utf8proc_grapheme_break_stateful), so a
 *    base letter is never separated from its combining marks (Arabic harakat,
 *    Devanagari matras) and an emoji ZWJ sequence, skin-tone modifier or flag stays
 *    whole. A cluster's kind is the kind of its first code point.
 *  - Separators: Unicode spaces (Zs, Zl, Zp), tab and the other C0/C1 controls, U+FEFF
 *    (a byte-order mark is not content) and the joiner U+FFED itself (reserved for
 *    marking; keeping it would make the output ambiguous). Separators end a token and
 *    are not written. A separator never absorbs following marks: " \u0301" is a space
 *    and then a cluster of its own.
 *  - Word characters: letters, marks, numbers (L*, M*, N*) and format characters (Cf:
 *    soft hyphen, ZWNJ, bidi marks, which belong to the word they sit in). Adjacent
 *    word clusters form one token. Apostrophes are punctuation like any other, so
 *    "don't" -> don ￭' ￭t and "l'homme" -> l ￭' ￭homme, and so are the separators in
 *    numbers: "3.14" -> 3 ￭. ￭14 (uniform and reversible; BPE learns the rest).
 *  - Everything else (P*, S*, private use, unassigned) is one token per cluster, except
 *    that a run of the same punctuation character stays together ("...", "--", "!!").
 *    '@' is never merged: "@@" at the end of a token is the BPE continuation mark.
 *  - "ja": each word token containing kana or kanji is segmented by MeCab; its pieces
 *    are glued to each other (joiner on all but the first). MeCab's cuts are kept only
 *    where they fall on cluster boundaries.
 *  - A token that touched its left neighbour in the text starts with INTRUS_JOINER. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mecab.h>
#include <utf8proc.h>

#include "intrus/status.h"
#include "intrus/text.h"

#define JOINER_CP 0xFFED
#define JOINER_LEN 3

enum cp_kind { K_SEP, K_WORD, K_SYM };

struct intrus_tokenizer {
  char lang[16];
  mecab_t *mecab; /* "ja" only; a tagger is not safe to share between threads */
  utf8proc_int32_t *cps; /* NFC code points of the current line */
  size_t cps_cap;
  size_t *cstart; /* "ja": byte offsets of cluster starts in the open word token */
  size_t cstart_len, cstart_cap;
  struct intrus_str piece; /* "ja": copy of a word token handed to MeCab */
};

static enum cp_kind kind_of(utf8proc_int32_t c) {
  if (c < 0x80) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      return K_WORD;
    if (c <= 0x20 || c == 0x7F) return K_SEP;
    return K_SYM;
  }
  if (c == JOINER_CP || c == 0xFEFF) return K_SEP;
  switch (utf8proc_category(c)) {
  case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
  case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
  case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
  case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
  case UTF8PROC_CATEGORY_CF:
    return K_WORD;
  case UTF8PROC_CATEGORY_ZS: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
  case UTF8PROC_CATEGORY_CC:
    return K_SEP;
  default:
    return K_SYM;
  }
}

/* Punctuation whose runs stay one token: connectors, dashes and "other" punctuation
 * ("...", "--", "!!", "//"). Brackets and quotes are not merged ("((" opens twice), nor
 * symbols (a run of emoji is several tokens), nor '@' (BPE mark). */
static bool run_mergeable(utf8proc_int32_t c) {
  if (c == '@') return false;
  utf8proc_category_t cat = utf8proc_category(c);
  return cat == UTF8PROC_CATEGORY_PC || cat == UTF8PROC_CATEGORY_PD ||
         cat == UTF8PROC_CATEGORY_PO;
}

/* Kana and CJK ideographs: a word token with one of these goes to MeCab. Latin or digit
 * runs stay whole, whatever MeCab would do with them. */
static bool is_japanese(utf8proc_int32_t c) {
  return (c >= 0x3005 && c <= 0x3007) || (c >= 0x3040 && c <= 0x30FF) ||
         (c >= 0x31F0 && c <= 0x31FF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) ||
         (c >= 0xFF66 && c <= 0xFF9F) || (c >= 0x20000 && c <= 0x3FFFF);
}

static bool charset_is_utf8(const char *cs) {
  char norm[8];
  size_t n = 0;
  for (; cs && *cs && n < sizeof norm - 1; cs++)
    if (*cs != '-' && *cs != '_')
      norm[n++] = (char)(*cs >= 'A' && *cs <= 'Z' ? *cs - 'A' + 'a' : *cs);
  norm[n] = '\0';
  return cs && !*cs && strcmp(norm, "utf8") == 0;
}

enum intrus_status intrus_tokenizer_create(const char *lang, struct intrus_tokenizer **out,
                                           struct intrus_error *err) {
  *out = NULL;
  size_t n = lang ? strlen(lang) : 0;
  bool ok = n >= 2 && n < sizeof ((struct intrus_tokenizer *)0)->lang;
  for (size_t i = 0; ok && i < n; i++)
    ok = (lang[i] >= 'a' && lang[i] <= 'z') || (lang[i] >= 'A' && lang[i] <= 'Z') ||
         ((lang[i] == '-' || lang[i] == '_') && i >= 2);
  if (!ok)
    return intrus_error_set(err, INTRUS_ERR_INVALID,
                            "tokenizer language \"%s\" is not a language code like \"en\"",
                            lang ? lang : "(null)");
  struct intrus_tokenizer *t = calloc(1, sizeof *t);
  if (!t) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++)
    t->lang[i] = (char)(lang[i] >= 'A' && lang[i] <= 'Z' ? lang[i] - 'A' + 'a' : lang[i]);
  /* "ja", "ja-JP", "ja_JP" all mean Japanese. */
  if (strncmp(t->lang, "ja", 2) == 0 && (n == 2 || t->lang[2] == '-' || t->lang[2] == '_')) {
    /* mecab_new2("") reads /etc/mecabrc (or $MECABRC) to find the system dictionary. */
    t->mecab = mecab_new2("");
    if (!t->mecab) {
      /* MeCab's own message is often empty (e.g. when no mecabrc is found). */
      const char *why = mecab_strerror(NULL);
      bool have_why = why && *why;
      enum intrus_status st = intrus_error_set(
          err, INTRUS_ERR_UNSUPPORTED,
          "Japanese tokenization needs MeCab and a UTF-8 dictionary, which could not be "
          "loaded%s%s%s: apt-get install libmecab-dev mecab-ipadic-utf8",
          have_why ? " (" : "", have_why ? why : "", have_why ? ")" : "");
      free(t);
      return st;
    }
    const mecab_dictionary_info_t *d = mecab_dictionary_info(t->mecab);
    if (!d || !charset_is_utf8(d->charset)) {
      /* An EUC-JP dictionary (plain mecab-ipadic) would silently mis-segment UTF-8. */
      enum intrus_status st = intrus_error_set(
          err, INTRUS_ERR_UNSUPPORTED,
          "MeCab's dictionary %s is in %s, not UTF-8: apt-get install libmecab-dev "
          "mecab-ipadic-utf8",
          d && d->filename ? d->filename : "(unknown)", d && d->charset ? d->charset : "?");
      mecab_destroy(t->mecab);
      free(t);
      return st;
    }
  }
  *out = t;
  return INTRUS_OK;
}

void intrus_tokenizer_free(struct intrus_tokenizer *t) {
  if (!t) return;
  if (t->mecab) mecab_destroy(t->mecab);
  free(t->cps);
  free(t->cstart);
  intrus_str_free(&t->piece);
  free(t);
}

/* Decodes and NFC-normalises line into t->cps; returns the code point count or a
 * negative utf8proc error. The line has been validated already. */
static utf8proc_ssize_t to_nfc(struct intrus_tokenizer *t, const char *line, size_t len) {
  bool ascii = true;
  for (size_t i = 0; i < len && ascii; i++) ascii = (unsigned char)line[i] < 0x80;
  if (len > (size_t)PTRDIFF_MAX / 16) return UTF8PROC_ERROR_OVERFLOW;
  /* NFC never produces more code points than there are bytes, but the decomposition
   * that precedes composition can (Hangul syllables, some Indic letters). */
  size_t want = len ? len : 1;
  for (;;) {
    if (want > t->cps_cap) {
      utf8proc_int32_t *p = realloc(t->cps, want * sizeof *p);
      if (!p) return UTF8PROC_ERROR_NOMEM;
      t->cps = p;
      t->cps_cap = want;
    }
    if (ascii) { /* ASCII is its own NFC: skip utf8proc's normaliser */
      for (size_t i = 0; i < len; i++) t->cps[i] = (unsigned char)line[i];
      return (utf8proc_ssize_t)len;
    }
    const utf8proc_option_t opt = UTF8PROC_COMPOSE | UTF8PROC_STABLE;
    utf8proc_ssize_t n = utf8proc_decompose((const utf8proc_uint8_t *)line,
                                            (utf8proc_ssize_t)len, t->cps,
                                            (utf8proc_ssize_t)t->cps_cap, opt);
    if (n < 0) return n;
    if ((size_t)n <= t->cps_cap) return utf8proc_normalize_utf32(t->cps, n, opt);
    want = (size_t)n;
  }
}

static void put_cp(struct intrus_str *out, utf8proc_int32_t c) {
  out->len += (size_t)utf8proc_encode_char(c, (utf8proc_uint8_t *)out->s + out->len);
}

static void put_sep(struct intrus_str *out, bool glued) {
  out->s[out->len++] = ' ';
  if (glued) {
    memcpy(out->s + out->len, INTRUS_JOINER, JOINER_LEN);
    out->len += JOINER_LEN;
  }
}

static enum intrus_status cstart_push(struct intrus_tokenizer *t, size_t off) {
  if (t->cstart_len == t->cstart_cap) {
    size_t cap = t->cstart_cap ? 2 * t->cstart_cap : 64;
    size_t *p = realloc(t->cstart, cap * sizeof *p);
    if (!p) return INTRUS_ERR_NOMEM;
    t->cstart = p;
    t->cstart_cap = cap;
  }
  t->cstart[t->cstart_len++] = off;
  return INTRUS_OK;
}

/* Re-emits the word token out->s[start..] as MeCab's segments. Cuts are kept only at
 * recorded cluster starts, so a cluster is never split; the output cannot grow past the
 * space reserved by the caller because every cluster had room for a separator. */
static enum intrus_status mecab_split(struct intrus_tokenizer *t, struct intrus_str *out,
                                      size_t start, struct intrus_error *err) {
  size_t n = out->len - start;
  intrus_str_clear(&t->piece);
  intrus_str_append(&t->piece, out->s + start, n);
  const char *src = t->piece.s;
  const mecab_node_t *node = mecab_sparse_tonode2(t->mecab, src, n);
  if (!node)
    return intrus_error_set(err, INTRUS_ERR_DATA, "MeCab failed: %s",
                            mecab_strerror(t->mecab));
  out->len = start;
  size_t from = 0, ci = 1; /* cstart[0] == 0 is the token start, never a cut */
  for (; node; node = node->next) {
    if (node->stat != MECAB_NOR_NODE && node->stat != MECAB_UNK_NODE) continue;
    uintptr_t p = (uintptr_t)node->surface, base = (uintptr_t)src;
    if (p <= base || p >= base + n) continue;
    size_t cut = p - base;
    while (ci < t->cstart_len && t->cstart[ci] < cut) ci++;
    if (ci == t->cstart_len || t->cstart[ci] != cut) continue;
    memcpy(out->s + out->len, src + from, cut - from);
    out->len += cut - from;
    put_sep(out, true);
    from = cut;
  }
  memcpy(out->s + out->len, src + from, n - from);
  out->len += n - from;
  return INTRUS_OK;
}

enum intrus_status intrus_tokenize(struct intrus_tokenizer *t, const char *line, size_t len,
                                   struct intrus_str *out, struct intrus_error *err) {
  intrus_str_clear(out);
  intrus_str_append(out, "", 0);
  long bad = intrus_utf8_invalid_at(line, len);
  if (bad >= 0)
    return intrus_error_set(err, INTRUS_ERR_DATA, "invalid UTF-8 at byte %ld", bad);
  utf8proc_ssize_t n = to_nfc(t, line, len);
  if (n == UTF8PROC_ERROR_NOMEM) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
  if (n < 0)
    return intrus_error_set(err, INTRUS_ERR_DATA, "cannot normalise line: %s",
                            utf8proc_errmsg(n));
  /* Worst case per code point: 4 bytes of UTF-8 plus a space and a joiner before it.
   * Reserving once lets the loop write without bounds checks. */
  size_t need = (size_t)n * (4 + 1 + JOINER_LEN) + 1;
  if (need > out->cap) {
    char *p = realloc(out->s, need);
    if (!p) return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
    out->s = p;
    out->cap = need;
  }

  const utf8proc_int32_t *cp = t->cps;
  utf8proc_int32_t gstate = 0;
  enum cp_kind open = K_SEP; /* kind of the token being written; K_SEP: none */
  utf8proc_int32_t run_cp = -1; /* K_SYM: first code point, for merging runs */
  bool space = false;           /* a separator since the last token character */
  bool ja_word = false;         /* "ja": the open word token has kana/kanji */
  size_t tok_start = 0;
  enum cp_kind prev = K_SEP;
  for (utf8proc_ssize_t i = 0; i < n; i++) {
    utf8proc_int32_t c = cp[i];
    enum cp_kind k = kind_of(c);
    /* The stateful break function must see every pair in order (regional indicator
     * parity, emoji ZWJ sequences), so it is called before the separator override.
     * Between two ASCII characters there is always a break (CR LF are separators) and
     * nothing to remember: resetting the state is exact and saves the lookups. */
    bool brk = true;
    if (i > 0 && (cp[i - 1] >= 0x80 || c >= 0x80))
      brk = utf8proc_grapheme_break_stateful(cp[i - 1], c, &gstate);
    else
      gstate = 0;
    if (k == K_SEP || prev == K_SEP) brk = true;
    prev = k;
    if (k == K_SEP) {
      space = true;
      continue;
    }
    if (brk) {
      bool cont = !space && ((open == K_WORD && k == K_WORD) ||
                             (open == K_SYM && k == K_SYM && c == run_cp && run_mergeable(c)));
      if (!cont) {
        if (t->mecab && open == K_WORD && ja_word) {
          enum intrus_status st = mecab_split(t, out, tok_start, err);
          if (st != INTRUS_OK) {
            intrus_str_clear(out);
            return st;
          }
        }
        if (open != K_SEP) put_sep(out, !space);
        open = k;
        run_cp = c;
        tok_start = out->len;
        ja_word = false;
        t->cstart_len = 0;
      }
      if (t->mecab && k == K_WORD && cstart_push(t, out->len - tok_start) != INTRUS_OK) {
        intrus_str_clear(out);
        return intrus_error_set(err, INTRUS_ERR_NOMEM, "out of memory");
      }
      space = false;
    }
    if (t->mecab && open == K_WORD && !ja_word && is_japanese(c)) ja_word = true;
    put_cp(out, c);
  }
  if (t->mecab && open == K_WORD && ja_word) {
    enum intrus_status st = mecab_split(t, out, tok_start, err);
    if (st != INTRUS_OK) {
      intrus_str_clear(out);
      return st;
    }
  }
  out->s[out->len] = '\0';
  return INTRUS_OK;
}

void intrus_detokenize(const char *tokens, size_t len, struct intrus_str *out) {
  intrus_str_clear(out);
  intrus_str_append(out, "", 0);
  bool glue_next = false; /* the previous token ended in the BPE mark "@@" */
  size_t i = 0;
  while (i < len) {
    while (i < len && tokens[i] == ' ') i++;
    if (i == len) break;
    size_t j = i;
    while (j < len && tokens[j] != ' ') j++;
    const char *tok = tokens + i;
    size_t n = j - i;
    i = j;
    bool glued = glue_next;
    if (n >= JOINER_LEN && memcmp(tok, INTRUS_JOINER, JOINER_LEN) == 0) {
      glued = true;
      tok += JOINER_LEN;
      n -= JOINER_LEN;
    }
    /* The joiner is stripped first: BPE may have split it off a word ("￭@@ b"). */
    glue_next = n >= 2 && tok[n - 2] == '@' && tok[n - 1] == '@';
    if (glue_next) n -= 2;
    if (out->len > 0 && !glued) intrus_str_append(out, " ", 1);
    intrus_str_append(out, tok, n);
  }
}

/* Tokenizer: exact token sequences per language, reversibility (a table of realistic
 * lines and thousands of random ones), strict UTF-8 validation with byte offsets, BPE
 * mark removal on detokenization, and MeCab's segmentation of Japanese. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <utf8proc.h>

#include "intrus/text.h"
#include "testutil.h"

#define J INTRUS_JOINER

struct tok_case {
  const char *in, *want;
};

static void check_cases(struct intrus_tokenizer *t, const char *lang,
                        const struct tok_case *cases, size_t n) {
  struct intrus_str out = {0};
  struct intrus_error err = {0};
  for (size_t i = 0; i < n; i++) {
    enum intrus_status st = intrus_tokenize(t, cases[i].in, strlen(cases[i].in), &out, &err);
    EXPECT(st == INTRUS_OK, "%s: \"%s\": %s", lang, cases[i].in, err.msg);
    if (st != INTRUS_OK) continue;
    EXPECT(strcmp(out.s, cases[i].want) == 0, "%s: \"%s\" -> \"%s\", want \"%s\"", lang,
           cases[i].in, out.s, cases[i].want);
  }
  intrus_str_free(&out);
}

/* NFC of s, with every whitespace run collapsed to one ASCII space and trimmed: what
 * detokenize(tokenize(s)) must give back. */
static char *expected_round_trip(const char *s) {
  utf8proc_uint8_t *nfc = utf8proc_NFC((const utf8proc_uint8_t *)s);
  if (!nfc) return NULL;
  char *r = malloc(strlen((char *)nfc) + 1);
  size_t n = 0;
  bool space = false;
  for (const char *p = (const char *)nfc; *p; p++) {
    if (*p == ' ' || *p == '\t') {
      space = n > 0;
      continue;
    }
    if (space) r[n++] = ' ';
    space = false;
    r[n++] = *p;
  }
  r[n] = '\0';
  free(nfc);
  return r;
}

/* Whether every joiner-marked token of tok starts at an extended grapheme cluster
 * boundary of text (its detokenized form): a cluster must never be split between
 * tokens. Boundaries at spaces are not checked, since " " + mark is split on purpose. */
static bool joins_on_clusters(const char *tok, const char *text) {
  size_t n = strlen(text);
  bool *brk = calloc(n + 1, sizeof *brk);
  utf8proc_int32_t prev = -1, state = 0, c;
  for (size_t i = 0; i < n;) {
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)text + i, -1, &c);
    if (k <= 0) break;
    brk[i] = prev < 0 || utf8proc_grapheme_break_stateful(prev, c, &state);
    prev = c;
    i += (size_t)k;
  }
  brk[n] = true;
  bool ok = true;
  size_t pos = 0;
  for (const char *p = tok; *p && ok;) {
    size_t len = strcspn(p, " ");
    if (len >= 3 && memcmp(p, INTRUS_JOINER, 3) == 0) {
      ok = pos <= n && brk[pos];
      pos += len - 3;
    } else {
      pos += (pos > 0) + len;
    }
    p += len;
    if (*p == ' ') p++;
  }
  free(brk);
  return ok && pos == n;
}

/* Returns whether the round trip held; reports the first few failures. */
static bool check_round_trip(struct intrus_tokenizer *t, const char *lang, const char *s) {
  static int reported;
  struct intrus_str tok = {0}, back = {0};
  struct intrus_error err = {0};
  char *want = expected_round_trip(s);
  bool ok = want && intrus_tokenize(t, s, strlen(s), &tok, &err) == INTRUS_OK;
  if (ok) {
    intrus_detokenize(tok.s, tok.len, &back);
    ok = strcmp(back.s, want) == 0 && strlen(back.s) == back.len &&
         joins_on_clusters(tok.s, back.s);
    /* Tokens are separated by exactly one space, none leading or trailing. */
    ok = ok && (tok.len == 0 || (tok.s[0] != ' ' && tok.s[tok.len - 1] != ' ')) &&
         !strstr(tok.s, "  ");
  }
  /* Only the first failures are reported; callers count the rest. */
  if (!ok) reported++;
  EXPECT(ok || reported > 10, "%s round trip: \"%s\" -> \"%s\" -> \"%s\" (%s)", lang, s,
         tok.s ? tok.s : "", back.s ? back.s : "", err.msg);
  free(want);
  intrus_str_free(&tok);
  intrus_str_free(&back);
  return ok;
}

static void test_str(void) {
  struct intrus_str b = {0};
  EXPECT(b.s == NULL, "fresh string has storage");
  intrus_str_append(&b, "", 0);
  EXPECT(b.s && b.s[0] == '\0' && b.len == 0, "empty append does not give \"\"");
  for (int i = 0; i < 1000; i++) intrus_str_append(&b, "abc", 3);
  EXPECT(b.len == 3000 && strlen(b.s) == 3000 && memcmp(b.s + 2997, "abc", 3) == 0,
         "len %zu", b.len);
  intrus_str_clear(&b);
  EXPECT(b.len == 0 && b.s[0] == '\0', "clear left %zu bytes", b.len);
  intrus_str_append(&b, "xy", 1);
  EXPECT(strcmp(b.s, "x") == 0, "append of a prefix gave \"%s\"", b.s);
  intrus_str_free(&b);
  EXPECT(b.s == NULL && b.len == 0 && b.cap == 0, "free did not reset");
}

static void test_utf8(void) {
  static const struct {
    const char *s;
    size_t len;
    long want;
  } cases[] = {
      {"", 0, -1},
      {"plain ASCII text that is longer than eight bytes", 48, -1},
      {"Gr\xc3\xbc\xc3\x9f" "e \xe2\x82\xac \xf0\x9f\x98\x80", 16, -1},
      {"\xef\xbf\xbf\xf4\x8f\xbf\xbf", 7, -1}, /* U+FFFF, U+10FFFF: valid */
      {"a\0b", 3, -1},                        /* NUL is a valid code point */
      {"abc\x80", 4, 3},                      /* stray continuation byte */
      {"ab\xc0\xaf", 4, 2},                   /* overlong '/' */
      {"\xc1\xbf", 2, 0},                     /* overlong */
      {"xx\xe0\x80\xaf", 5, 2},               /* overlong 3-byte */
      {"\xf0\x80\x80\xaf", 4, 0},             /* overlong 4-byte */
      {"abcdefgh\xed\xa0\x80", 11, 8},        /* surrogate U+D800 */
      {"\xed\xbf\xbf", 3, 0},                 /* surrogate U+DFFF */
      {"\xed\x9f\xbf", 3, -1},                /* U+D7FF: valid */
      {"\xf4\x90\x80\x80", 4, 0},             /* U+110000 */
      {"\xf5\x80\x80\x80", 4, 0},
      {"\xff", 1, 0},
      {"ok \xc3", 4, 3},                      /* truncated at the end */
      {"ok \xe2\x82", 5, 3},
      {"ok \xf0\x9f\x98", 6, 3},
      {"\xe2\x28\xa1", 3, 0},                 /* bad second byte */
      {"\xf0\x9f\x28\x80", 4, 0},             /* bad third byte */
      {"\xc3\xa9\xc3", 3, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    long got = intrus_utf8_invalid_at(cases[i].s, cases[i].len);
    EXPECT(got == cases[i].want, "case %zu: invalid_at = %ld, want %ld", i, got,
           cases[i].want);
  }
}

static void test_invalid_lines(struct intrus_tokenizer *t) {
  struct intrus_str out = {0};
  struct intrus_error err = {0};
  const char line[] = "Sch\xc3\xb6n und \xed\xa0\x80 kaputt";
  enum intrus_status st = intrus_tokenize(t, line, sizeof line - 1, &out, &err);
  EXPECT(st == INTRUS_ERR_DATA, "surrogate accepted: %d", st);
  EXPECT_CONTAINS(err.msg, "byte 11");
  EXPECT(out.len == 0, "output not cleared on error");
  const char trunc[] = "ends in \xe2\x82";
  st = intrus_tokenize(t, trunc, sizeof trunc - 1, &out, &err);
  EXPECT(st == INTRUS_ERR_DATA, "truncated sequence accepted: %d", st);
  EXPECT_CONTAINS(err.msg, "byte 8");
  intrus_str_free(&out);
}

static void test_generic(void) {
  struct intrus_tokenizer *t = NULL;
  struct intrus_error err = {0};
  EXPECT(intrus_tokenizer_create("en", &t, &err) == INTRUS_OK, "%s", err.msg);
  if (!t) return;
  static const struct tok_case en[] = {
      {"", ""},
      {"   \t ", ""},
      {"Hello, world!", "Hello " J ", world " J "!"},
      {"  Hello \t  world  ", "Hello world"},
      {"don't", "don " J "' " J "t"},
      {"It costs $3.14 (or 1,000 yen).",
       "It costs $ " J "3 " J ". " J "14 ( " J "or 1 " J ", " J "000 yen " J ") " J "."},
      {"Wait... what?!", "Wait " J "... what " J "? " J "!"},
      {"a -- b", "a -- b"},
      {"((x))", "( " J "( " J "x " J ") " J ")"},
      {"~/.config/foo.conf",
       "~ " J "/ " J ". " J "config " J "/ " J "foo " J ". " J "conf"},
      {"https://example.com/a_b?x=1",
       "https " J ": " J "// " J "example " J ". " J "com " J "/ " J "a " J "_ " J "b " J
       "? " J "x " J "= " J "1"},
      {"user@@host @@", "user " J "@ " J "@ " J "host @ " J "@"},
      {"\"Quoted\" text", "\" " J "Quoted " J "\" text"},
      {"e\xcc\x81t\xc3\xa9", "été"},                    /* NFC composes é */
      {"a\xc2\xa0" "b\xe2\x80\x83" "c\xe3\x80\x80" "d", "a b c d"}, /* NBSP, em, ideographic */
      {"x\xef\xbb\xbfy \xef\xbf\xad z", "x y z"}, /* BOM and a stray joiner separate */
      {"tab\there\x01" "ctl", "tab here ctl"},
      {"a \xcc\x81" "b", "a \xcc\x81" "b"}, /* a mark after a space starts a token */
      {"x²+y²", "x² " J "+ " J "y²"},                      /* No is a number */
      {"Ex\xc2\xad" "ample", "Ex\xc2\xad" "ample"},             /* soft hyphen stays */
  };
  check_cases(t, "en", en, sizeof en / sizeof *en);

  static const struct tok_case de[] = {
      {"Grüße aus Straßburg!", "Grüße aus Straßburg " J "!"},
      {"„Schön“, sagte sie.", "„ " J "Schön " J "“ " J ", sagte sie " J "."},
      {"Gru\xcc\x88\xc3\x9f" "e", "Grüße"}, /* decomposed umlaut */
  };
  check_cases(t, "de", de, sizeof de / sizeof *de);

  static const struct tok_case ru[] = {
      {"Привет, мир!", "Привет " J ", мир " J "!"},
      /* «йога» — слово, with й written as и + U+0306, composed by NFC */
      {"\xc2\xab\xd0\xb8\xcc\x86\xd0\xbe\xd0\xb3\xd0\xb0\xc2\xbb \xe2\x80\x94 \xd1\x81\xd0\xbb\xd0\xbe\xd0\xb2\xd0\xbe",
       "« " J "йога " J "» — слово"},
  };
  check_cases(t, "ru", ru, sizeof ru / sizeof *ru);

  static const struct tok_case ar[] = {
      /* مَرْحَبًا، كيف حالك؟ : diacritics stay with their letters */
      {"\xd9\x85\xd9\x8e\xd8\xb1\xd9\x92\xd8\xad\xd9\x8e\xd8\xa8\xd9\x8b\xd8\xa7\xd8\x8c "
       "كيف حالك؟",
       "\xd9\x85\xd9\x8e\xd8\xb1\xd9\x92\xd8\xad\xd9\x8e\xd8\xa8\xd9\x8b\xd8\xa7 " J "، "
       "كيف حالك " J "؟"},
      /* Arabic-Indic digits ٣٫١٤ : the decimal separator U+066B is punctuation */
      {"٣٫١٤", "٣ " J "٫ " J "١٤"},
      /* نمی‌خواهم (Persian, ZWNJ inside the word) stays one token */
      {"\xd9\x86\xd9\x85\xdb\x8c\xe2\x80\x8c\xd8\xae\xd9\x88\xd8\xa7\xd9\x87\xd9\x85",
       "\xd9\x86\xd9\x85\xdb\x8c\xe2\x80\x8c\xd8\xae\xd9\x88\xd8\xa7\xd9\x87\xd9\x85"},
  };
  check_cases(t, "ar", ar, sizeof ar / sizeof *ar);

  static const struct tok_case misc[] = {
      /* नमस्ते। : the virama and vowel signs stay, the danda splits */
      {"\xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87\xe0\xa5\xa4",
       "\xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87 " J "।"},
      /* family emoji (ZWJ sequence) and a waving hand with skin tone: one cluster each */
      {"Hi\xf0\x9f\x91\x8b\xf0\x9f\x8f\xbd! \xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7ok",
       "Hi " J "\xf0\x9f\x91\x8b\xf0\x9f\x8f\xbd " J "! "
       "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 " J "ok"},
      /* flags DE JP: regional indicators pair up; a run of emoji is not merged */
      {"🇩🇪🇯🇵😂😂", "🇩🇪 " J "🇯🇵 " J "😂 " J "😂"},
      /* keycap 1️⃣ is a digit cluster; ❤️ keeps its variation selector */
      {"1\xef\xb8\x8f\xe2\x83\xa3\xe2\x9d\xa4\xef\xb8\x8f",
       "1\xef\xb8\x8f\xe2\x83\xa3 " J "\xe2\x9d\xa4\xef\xb8\x8f"},
      /* without MeCab, a Japanese run is one token; 。 splits */
      {"私は学生です。", "私は学生です " J "。"},
  };
  check_cases(t, "misc", misc, sizeof misc / sizeof *misc);

  static const char *lines[] = {
      "The quick brown fox (aged 3.5) jumped over 1,000 lazy dogs -- twice!",
      "Don't forget: ~/.config/intrus/foo.conf, not /etc/foo.conf; see https://x.org/a?b=c&d=e#f.",
      "\"Well,\" she said, 'it's 9:30 p.m.' [sic] {x} <y> 50% #tag @user $5 \xe2\x82\xac" "7 © 2024...",
      "Die Straße heißt „Am Grünen Üfer“ (Nr. 12a).",
      "В 2023 году «Спутник» — точно!",
      "\xd9\x85\xd9\x8e\xd8\xb1\xd9\x92\xd8\xad\xd9\x8e\xd8\xa8\xd9\x8b\xd8\xa7\xd8\x8c \xd9\x83\xd9\x8a\xd9\x81 \xd8\xad\xd8\xa7\xd9\x84\xd9\x83\xd8\x9f (\xd9\xa1\xd9\xa2\xd9\xa3)",
      "私は学生です。「東京」に住んでいます！",
      "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7\xe2\x80\x8d\xf0\x9f\x91\xa6 family\xf0\x9f\x8e\x89\xf0\x9f\x8e\x89 \xf0\x9f\x87\xa9\xf0\x9f\x87\xaa" "2:1",
      "Cafe\xcc\x81 na\xc3\xafve co\xc3\xb6perate \xe2\x80\x94 r\xc3\xa9sum\xc3\xa9 \xe2\x80\x98quoted\xe2\x80\x99",
      "  leading\tand odd   spacing  ",
  };
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) check_round_trip(t, "en", lines[i]);

  test_invalid_lines(t);
  intrus_tokenizer_free(t);
}

/* Random strings over a mixed alphabet, joined by single spaces; the round trip must
 * give back their NFC form exactly. */
static void test_random_round_trip(void) {
  static const char *alphabet[] = {
      "a", "Z", "é", "ß", "ж", "Я", "7", "0",
      ".", ",", "-", "'", "!", "?", "(", ")", "/", "~", "@", "$", "\"", ":", "_", "+",
      "…", "—", "«", "。", "「",
      "私", "学", "は", "カ", "ｶ",
      "ع", "ل", "\xd9\x8e", "\xd9\x92", "،", "٣",     /* fatha, sukun */
      "क", "\xe0\xa5\x8d", "\xe0\xa4\xbf",             /* virama, vowel sign i */
      "😀", "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", "\xe2\x80\x8d", /* 👍 + tone, ZWJ */
      "🇩", "🇪", "\xef\xb8\x8f", "❤",                  /* regional indicators, VS16 */
      "\xcc\x81", "\xcc\x88", "\xcc\xa3", "ᄀ", "ᅡ", /* combining acute, diaeresis,
                                                    dot below; conjoining jamo */
      " ", " ", " ", " ",
  };
  const size_t na = sizeof alphabet / sizeof *alphabet;
  uint64_t rng = 0x9E3779B97F4A7C15u;
  struct intrus_tokenizer *tok[2] = {NULL, NULL};
  struct intrus_error err = {0};
  EXPECT(intrus_tokenizer_create("de", &tok[0], &err) == INTRUS_OK, "%s", err.msg);
  if (intrus_tokenizer_create("ja", &tok[1], &err) != INTRUS_OK) tok[1] = NULL;
  char buf[512];
  int failures = 0, runs = 0;
  for (int iter = 0; iter < 4000; iter++) {
    size_t n = 0;
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    int len = 1 + (int)(rng % 40);
    bool last_space = true;
    for (int k = 0; k < len; k++) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      const char *a = alphabet[rng % na];
      if (a[0] == ' ' && last_space) continue; /* single spaces only */
      last_space = a[0] == ' ';
      size_t al = strlen(a);
      memcpy(buf + n, a, al);
      n += al;
    }
    while (n > 0 && buf[n - 1] == ' ') n--;
    buf[n] = '\0';
    for (int w = 0; w < 2; w++) {
      if (!tok[w]) continue;
      runs++;
      if (!check_round_trip(tok[w], w ? "ja random" : "de random", buf)) failures++;
    }
  }
  EXPECT(failures == 0, "%d of %d random round trips failed", failures, runs);
  intrus_tokenizer_free(tok[0]);
  intrus_tokenizer_free(tok[1]);
}

static void test_japanese(void) {
  struct intrus_tokenizer *t = NULL;
  struct intrus_error err = {0};
  enum intrus_status st = intrus_tokenizer_create("ja", &t, &err);
  if (st == INTRUS_ERR_UNSUPPORTED) {
    /* The message must tell the user what to install. */
    EXPECT_CONTAINS(err.msg, "mecab-ipadic-utf8");
    fprintf(stderr, "MeCab unavailable, Japanese cases skipped: %s\n", err.msg);
    return;
  }
  EXPECT(st == INTRUS_OK, "ja: %s", err.msg);
  if (!t) return;
  /* Segments pinned against mecab-ipadic-utf8 2.7.0. */
  static const struct tok_case ja[] = {
      /* 私は学生です。 -> 私 ￭は ￭学生 ￭です ￭。 */
      {"私は学生です。", "私 " J "は " J "学生 " J "です " J "。"},
      /* 今日はいい天気ですね -> 今日 ￭は ￭いい ￭天気 ￭です ￭ね */
      {"今日はいい天気ですね", "今日 " J "は " J "いい " J "天気 " J "です " J "ね"},
      /* iPhoneを買った。 -> iPhone ￭を ￭買っ ￭た ￭。 */
      {"iPhoneを買った。", "iPhone " J "を " J "買っ " J "た " J "。"},
      /* Latin text in "ja" is not given to MeCab: Hello123 stays whole */
      {"Hello123 world.", "Hello123 world " J "."},
      /* 東京 タワー : the space is kept as a plain separator */
      {"東京 タワー", "東京 タワー"},
  };
  check_cases(t, "ja", ja, sizeof ja / sizeof *ja);
  static const char *lines[] = {
      "私は学生です。「東京」に住んでいます！",
      "東京タワーは333メートルです。",
      /* a katakana letter with a combining semi-voiced mark that NFC cannot compose */
      "\xe3\x87\xb7\xe3\x82\x9a\xe3\x81\xaf\xe3\x82\xab\xe3\x82\x99\xe3\x81\xa7\xe3\x81\x99",
      "😀嬉しい🎉ね？",
  };
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) check_round_trip(t, "ja", lines[i]);
  intrus_tokenizer_free(t);

  /* Without a dictionary the error names the packages to install. MeCab reads $MECABRC
   * only when a tagger is created, so pointing it elsewhere here is enough. */
  char *old = getenv("MECABRC") ? strdup(getenv("MECABRC")) : NULL;
  setenv("MECABRC", "/nonexistent/intrus-test-mecabrc", 1);
  t = NULL;
  st = intrus_tokenizer_create("ja", &t, &err);
  EXPECT(st == INTRUS_ERR_UNSUPPORTED && !t, "ja without a dictionary: %d", st);
  EXPECT_CONTAINS(err.msg, "apt-get install libmecab-dev mecab-ipadic-utf8");
  intrus_tokenizer_free(t);
  if (old) setenv("MECABRC", old, 1);
  else unsetenv("MECABRC");
  free(old);
}

static void test_detokenize(void) {
  static const struct tok_case cases[] = {
      {"", ""},
      {"Hello " J ", world " J "!", "Hello, world!"},
      {" " J "a  b ", "a b"},               /* stray spaces; a leading joiner */
      {"foo@@ bar", "foobar"},              /* subword-nmt convention */
      {"un@@ believ@@ able !", "unbelievable !"},
      {"He@@ llo " J ",", "Hello,"},
      {J "@@ b", "b"},                      /* BPE split the joiner off a word */
      {"x " J "@@ @", "x@"},
      {"end@@", "end"},
      {"a @ " J "@ b", "a @@ b"},           /* '@' tokens never end in the BPE mark */
  };
  struct intrus_str out = {0};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    intrus_detokenize(cases[i].in, strlen(cases[i].in), &out);
    EXPECT(out.s && strcmp(out.s, cases[i].want) == 0, "detokenize \"%s\" -> \"%s\", want \"%s\"",
           cases[i].in, out.s ? out.s : "(null)", cases[i].want);
  }
  intrus_str_free(&out);
}

static void test_create_errors(void) {
  struct intrus_tokenizer *t = (struct intrus_tokenizer *)&t;
  struct intrus_error err = {0};
  EXPECT(intrus_tokenizer_create("", &t, &err) == INTRUS_ERR_INVALID && !t, "empty lang");
  EXPECT(intrus_tokenizer_create(NULL, &t, &err) == INTRUS_ERR_INVALID && !t, "NULL lang");
  EXPECT(intrus_tokenizer_create("e n", &t, &err) == INTRUS_ERR_INVALID, "lang with space");
  EXPECT_CONTAINS(err.msg, "e n");
  EXPECT(intrus_tokenizer_create("pt-BR", &t, &err) == INTRUS_OK, "pt-BR: %s", err.msg);
  intrus_tokenizer_free(t);
  intrus_tokenizer_free(NULL);
}

/* Not a benchmark, but a guard: 40k ordinary lines must tokenize in well under a
 * second (the figure is printed for the record). */
static void test_speed(void) {
  struct intrus_tokenizer *t = NULL;
  struct intrus_error err = {0};
  if (intrus_tokenizer_create("de", &t, &err) != INTRUS_OK) return;
  static const char *lines[] = {
      "The European Parliament adopted the resolution on 12 March, 2024 (by 401 votes).",
      "Die Grüße aus München „erreichten“ uns erst heute, leider.",
      "Мы будем рады вас видеть, друзья!",
      "Please see ~/.config/foo.conf and http://example.org/docs?page=3 for details.",
  };
  struct intrus_str out = {0};
  size_t bytes = 0;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < 40000; i++) {
    const char *l = lines[i % 4];
    size_t n = strlen(l);
    bytes += n;
    if (intrus_tokenize(t, l, n, &out, &err) != INTRUS_OK) break;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double s = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
  printf("tokenized 40000 lines (%.1f MB) in %.3f s\n", (double)bytes / 1e6, s);
  /* Generous: valgrind and sanitizer builds run the same test. */
  EXPECT(s < 30.0, "40000 lines took %.3f s", s);
  intrus_str_free(&out);
  intrus_tokenizer_free(t);
}

int main(void) {
  test_str();
  test_utf8();
  test_create_errors();
  test_generic();
  test_japanese();
  test_detokenize();
  test_random_round_trip();
  test_speed();
  return test_finish("test_tokenize");
}

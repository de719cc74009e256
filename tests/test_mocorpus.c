/* intrus-mocorpus: the .mo parser in both byte orders, contexts and plurals, each
 * cleaning rule and filter, the messages for corrupt catalogs, deduplication, the
 * deterministic split, and the tool itself run on the fixtures in tests/data/mo (built
 * by msgfmt from the .po files beside them and committed, so no msgfmt is needed). */
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "tools/mo.h"


static void fixture(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/tests/data/mo/%s", test_srcdir(), name);
}

static const char *find_tgt(const struct mo_corpus *c, const char *src) {
  for (size_t i = 0; i < c->count; i++)
    if (!strcmp(c->pairs[i].src, src)) return c->pairs[i].tgt;
  return NULL;
}

#define EXPECT_PAIR(c, s, t)                                                                 \
  do {                                                                                       \
    const char *tp_t = find_tgt((c), (s));                                                   \
    EXPECT(tp_t && !strcmp(tp_t, (t)), "pair for \"%s\": got \"%s\", want \"%s\"", (s),       \
           tp_t ? tp_t : "(missing)", (t));                                                  \
  } while (0)

/* Loads a fixture into a fresh corpus with the given filter. */
static void load(struct mo_corpus *c, const char *name, struct mo_filter f) {
  char path[512];
  fixture(path, sizeof path, name);
  struct mo_catalog cat;
  struct intrus_error err;
  mo_corpus_init(c);
  EXPECT(mo_open(&cat, path, &err) == INTRUS_OK, "%s", err.msg);
  if (!cat.data) return;
  char cs[32];
  EXPECT(mo_charset(&cat, cs, sizeof cs) && mo_charset_is_utf8(cs), "%s charset", name);
  size_t kept;
  EXPECT(mo_corpus_add_catalog(c, &cat, &f, &kept, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(kept == c->count, "kept %zu, corpus %zu", kept, c->count);
  mo_close(&cat);
}

static void test_german(void) {
  struct mo_corpus c;
  load(&c, "de.mo", (struct mo_filter){MO_SCRIPT_ANY, 3, 80, 1});
  EXPECT(c.count == 11, "%zu pairs", c.count);
  EXPECT_PAIR(&c, "Open the selected file", "Ausgewählte Datei öffnen");
  EXPECT_PAIR(&c, "Save As a new document", "Als neues Dokument speichern");
  EXPECT_PAIR(&c, "Set LD_LIBRARY_PATH before starting", "LD_LIBRARY_PATH vor dem Start setzen");
  EXPECT_PAIR(&c, "Use & to join two conditions", "Mit & zwei Bedingungen verbinden");
  EXPECT_PAIR(&c, "Tom &amp; Jerry are back again", "Tom &amp; Jerry sind wieder da");
  EXPECT_PAIR(&c, "Insert a new table here", "Hier eine neue Tabelle einfügen");
  EXPECT_PAIR(&c, "Close all open windows", "Alle offenen Fenster schließen");
  EXPECT_PAIR(&c, "%d file was deleted from disk", "%d Datei wurde von der Festplatte gelöscht");
  EXPECT_PAIR(&c, "Line one and line two here", "Zeile eins und Zeile zwei hier");
  EXPECT_PAIR(&c, "Elvish Sorceress of the woods", "Elfische Zauberin der Wälder");
  /* .mo sorts by msgid with its context, so context "a" comes first and wins. */
  EXPECT_PAIR(&c, "Delete the selected items", "Die ausgewählten Elemente löschen");
  EXPECT(c.verdicts[MO_DROP_HEADER] == 1, "header %zu", c.verdicts[MO_DROP_HEADER]);
  EXPECT(c.verdicts[MO_DROP_CREDITS] == 2, "credits %zu", c.verdicts[MO_DROP_CREDITS]);
  EXPECT(c.verdicts[MO_DROP_FORMAT_ONLY] == 2, "format %zu", c.verdicts[MO_DROP_FORMAT_ONLY]);
  EXPECT(c.verdicts[MO_DROP_IDENTICAL] == 1, "identical %zu", c.verdicts[MO_DROP_IDENTICAL]);
  EXPECT(c.verdicts[MO_DROP_LENGTH] == 1, "length %zu", c.verdicts[MO_DROP_LENGTH]);
  EXPECT(c.verdicts[MO_DROP_DUPLICATE] == 1, "duplicate %zu", c.verdicts[MO_DROP_DUPLICATE]);
  for (size_t i = 0; i < c.count; i++)
    EXPECT(!strpbrk(c.pairs[i].src, "\t\n") && !strpbrk(c.pairs[i].tgt, "\t\n"),
           "whitespace left in \"%s\"", c.pairs[i].src);
  mo_corpus_free(&c);

  /* Outside Wesnoth's catalogs a caret is text; tighter word limits drop more. */
  load(&c, "de.mo", (struct mo_filter){MO_SCRIPT_ANY, 5, 5, 0});
  EXPECT_PAIR(&c, "female^Elvish Sorceress of the woods", "Elfische Zauberin der Wälder");
  EXPECT_PAIR(&c, "Use & to join two conditions", "Mit & zwei Bedingungen verbinden");
  EXPECT(!find_tgt(&c, "Open the selected file"), "4 words kept with --min-words 5");
  EXPECT(!find_tgt(&c, "Line one and line two here"), "6 words kept with --max-words 5");
  mo_corpus_free(&c);
}

/* The same catalog with every header and table word byte-swapped must read the same. */
static void test_big_endian(void) {
  char path[512];
  fixture(path, sizeof path, "de.mo");
  size_t len;
  unsigned char *le = test_read_bytes(path, &len);
  EXPECT(le && len > 28, "cannot read %s", path);
  if (!le) return;
  unsigned char *be = malloc(len);
  memcpy(be, le, len);
  uint32_t n = le[8] | le[9] << 8 | le[10] << 16 | (uint32_t)le[11] << 24;
  uint32_t oo = le[12] | le[13] << 8 | le[14] << 16 | (uint32_t)le[15] << 24;
  uint32_t to = le[16] | le[17] << 8 | le[18] << 16 | (uint32_t)le[19] << 24;
  size_t words[3][2] = {{0, 7}, {oo, 2 * n}, {to, 2 * n}};
  for (int t = 0; t < 3; t++)
    for (size_t w = 0; w < words[t][1]; w++) {
      unsigned char *p = be + words[t][0] + 4 * w;
      unsigned char q[4] = {p[3], p[2], p[1], p[0]};
      memcpy(p, q, 4);
    }
  EXPECT(be[0] == 0x95 && be[3] == 0xde, "swapped magic %02x..%02x", be[0], be[3]);
  struct mo_catalog a, b;
  struct intrus_error err;
  EXPECT(mo_parse(&a, le, len, "le", &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(mo_parse(&b, be, len, "be", &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(!a.big_endian && b.big_endian && a.count == n && b.count == n, "byte orders");
  for (uint32_t i = 0; i < n && b.data; i++) {
    struct mo_entry x, y;
    mo_get(&a, i, &x);
    mo_get(&b, i, &y);
    EXPECT(x.id_len == y.id_len && x.str_len == y.str_len && !memcmp(x.id, y.id, x.id_len) &&
               !memcmp(x.str, y.str, x.str_len),
           "entry %u differs between byte orders", i);
  }
  mo_close(&a);
  mo_close(&b);

  /* And the tool reads it from a file. */
  char cmd[1024];
  const char *bepath = test_write_bytes(test_tmp_path("big.mo"), be, len);
  snprintf(cmd, sizeof cmd, "%s/intrus-mocorpus -q --lang de %s > %s/big.tsv", test_builddir(),
           bepath, test_tmpdir);
  EXPECT(system(cmd) == 0, "%s", cmd);
  size_t tl;
  char *tsv = (char *)test_read_bytes(test_tmp_path("big.tsv"), &tl);
  if (tsv) {
    EXPECT_CONTAINS(tsv, "Close all open windows\tAlle offenen Fenster schließen\n");
    free(tsv);
  }
  free(le);
  free(be);
}

static void test_scripts(void) {
  struct mo_corpus c;
  load(&c, "ja.mo", (struct mo_filter){MO_SCRIPT_JAPANESE, 3, 80, 0});
  EXPECT(c.count == 3, "ja: %zu pairs", c.count);
  EXPECT_PAIR(&c, "Open the selected file", "選択したファイルを開く");
  EXPECT_PAIR(&c, "Show hidden files in this folder", "このフォルダーの隠しファイルを表示...");
  EXPECT_PAIR(&c, "Enable the OpenGL renderer now", "OpenGL レンダラーを有効にする");
  EXPECT(c.verdicts[MO_DROP_SCRIPT] == 1, "ja script drops %zu", c.verdicts[MO_DROP_SCRIPT]);
  mo_corpus_free(&c);

  load(&c, "ru.mo", (struct mo_filter){MO_SCRIPT_CYRILLIC, 3, 80, 0});
  EXPECT(c.count == 2, "ru: %zu pairs", c.count);
  EXPECT_PAIR(&c, "Open the selected file", "Открыть выбранный файл");
  EXPECT_PAIR(&c, "%d item was moved to the trash", "%d объект перемещён в корзину");
  EXPECT(c.verdicts[MO_DROP_SCRIPT] == 1, "ru script drops %zu", c.verdicts[MO_DROP_SCRIPT]);
  mo_corpus_free(&c);

  load(&c, "ar.mo", (struct mo_filter){MO_SCRIPT_ARABIC, 3, 80, 0});
  EXPECT(c.count == 2, "ar: %zu pairs", c.count);
  EXPECT_PAIR(&c, "Save the current document", "احفظ المستند الحالي");
  EXPECT_PAIR(&c, "Quit the application now", "أنهِ التطبيق الآن");
  EXPECT(c.verdicts[MO_DROP_SCRIPT] == 1, "ar script drops %zu", c.verdicts[MO_DROP_SCRIPT]);
  mo_corpus_free(&c);

  /* Without the script check the untranslated Arabic copy gets through. */
  load(&c, "ar.mo", (struct mo_filter){MO_SCRIPT_ANY, 3, 80, 0});
  EXPECT_PAIR(&c, "Quit the application", "Quit application");
  mo_corpus_free(&c);

  EXPECT(mo_script_for_lang("ru") == MO_SCRIPT_CYRILLIC, "ru");
  EXPECT(mo_script_for_lang("ja_JP") == MO_SCRIPT_JAPANESE, "ja_JP");
  EXPECT(mo_script_for_lang("ar") == MO_SCRIPT_ARABIC, "ar");
  EXPECT(mo_script_for_lang("de") == MO_SCRIPT_ANY, "de");
  EXPECT(mo_script_for_lang("arn") == MO_SCRIPT_ANY, "arn is Mapudungun, not Arabic");
  EXPECT(mo_has_script("漢字", MO_SCRIPT_JAPANESE) && mo_has_script("ｶﾀｶﾅ", MO_SCRIPT_JAPANESE),
         "kanji, half-width kana");
  EXPECT(!mo_has_script("Hello", MO_SCRIPT_CYRILLIC), "latin is not Cyrillic");

  /* A Latin-1 catalog is recognised (the tool skips it). */
  char path[512], cs[32];
  fixture(path, sizeof path, "latin1.mo");
  struct mo_catalog cat;
  struct intrus_error err;
  EXPECT(mo_open(&cat, path, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(mo_charset(&cat, cs, sizeof cs) && !strcmp(cs, "ISO-8859-1") && !mo_charset_is_utf8(cs),
         "latin1 charset '%s'", cs);
  mo_close(&cat);
  EXPECT(mo_charset_is_utf8("utf-8") && mo_charset_is_utf8("ASCII"), "utf-8 spellings");
}

/* Runs clean on a string copy and compares. */
#define EXPECT_STEP(fn, in, want)                                                          \
  do {                                                                                     \
    char ts_buf[256];                                                                      \
    snprintf(ts_buf, sizeof ts_buf, "%s", (in));                                           \
    fn(ts_buf);                                                                            \
    EXPECT(!strcmp(ts_buf, (want)), #fn "(\"%s\") = \"%s\", want \"%s\"", (in), ts_buf, (want)); \
  } while (0)

static void test_steps(void) {
  EXPECT_STEP(mo_strip_accelerators, "E_xit", "Exit");
  EXPECT_STEP(mo_strip_accelerators, "file_name_%d stays", "file_name_%d stays");
  EXPECT_STEP(mo_strip_accelerators, "a_ b", "a_ b");
  EXPECT_STEP(mo_strip_accelerators, "&File && more", "File & more");
  EXPECT_STEP(mo_strip_accelerators, "Drag & drop &lt;b&gt; &#38; &#x26;",
              "Drag & drop &lt;b&gt; &#38; &#x26;");
  EXPECT_STEP(mo_strip_accelerators, "~Open ~/.config", "Open ~/.config");
  EXPECT_STEP(mo_strip_accelerators, "ファイル (_F)...", "ファイル...");
  EXPECT_STEP(mo_strip_accelerators, "ファイル（&F）", "ファイル");
  EXPECT_STEP(mo_strip_accelerators, "Note (a) stays", "Note (a) stays");
  EXPECT_STEP(mo_strip_accelerators, "_Файл", "Файл");
  EXPECT_STEP(mo_strip_accelerators, "das »&« als &amp;", "das »&« als &amp;");
  EXPECT_STEP(mo_collapse_space, "  a\t\tb\n c\xc2\xa0" "d\xe3\x80\x80 ", "a b c d");
  EXPECT_STEP(mo_collapse_space, "", "");
  EXPECT_STEP(mo_strip_context_prefix, "race+female^Elvish Sorceress", "Elvish Sorceress");
  EXPECT_STEP(mo_strip_context_prefix, "Part of 'x (...)' sentence^Units", "Units");
  EXPECT_STEP(mo_strip_context_prefix, "no caret", "no caret");

  EXPECT(mo_count_words("Open - the   file ...") == 3, "dashes are no words");
  EXPECT(mo_count_words("Copy %s to %s") == 4, "placeholders count");
  EXPECT(mo_count_words("") == 0, "empty");
  EXPECT(mo_is_format_only("%s: %1$d%% {0} {name} $1 ${HOME} <b>%L1</b> &amp; 12.5%%"), "only");
  EXPECT(mo_is_format_only("%-10.3lf %'d %(count)s %10d"), "printf forms");
  EXPECT(!mo_is_format_only("%s files"), "text with a placeholder");
  EXPECT(!mo_is_format_only("<a href=x>Link</a>"), "text in a tag");
  EXPECT(!mo_is_format_only("100% done"), "a lone percent sign");
  EXPECT(mo_valid_text("ok\ttab\nline", 11), "tab and newline");
  EXPECT(!mo_valid_text("bad \xc3", 5), "truncated sequence");
  EXPECT(!mo_valid_text("\xc0\xaf", 2), "overlong");
  EXPECT(!mo_valid_text("\xed\xa0\x80", 3), "surrogate");
  EXPECT(!mo_valid_text("esc \x1b[0m", 8), "control character");
  EXPECT(!mo_valid_text("c1 \xc2\x85", 5), "C1 control");

  /* Entries built by hand: context, plural, encoding. */
  struct mo_filter f = {MO_SCRIPT_ANY, 1, 80, 0};
  static const char id[] = "ctx\x04One apple\0Many apples", str[] = "Ein Apfel\0Viele \xc3";
  struct mo_entry e = {id, sizeof id - 1, str, sizeof str - 1};
  char *s, *t;
  enum mo_verdict v;
  EXPECT(mo_clean_entry(&f, &e, &s, &t, &v) == 0 && v == MO_KEEP, "plural entry: %s",
         mo_verdict_name(v));
  EXPECT(s && t && !strcmp(s, "One apple") && !strcmp(t, "Ein Apfel"), "context and plurals");
  free(s);
  free(t);
  static const char badid[] = "Bad \xff byte";
  e = (struct mo_entry){badid, sizeof badid - 1, "Ok", 2};
  EXPECT(mo_clean_entry(&f, &e, &s, &t, &v) == 0 && v == MO_DROP_ENCODING && !s && !t, "%s",
         mo_verdict_name(v));
  e = (struct mo_entry){"Tabs\tand\nlines here", 19, "Tab\t und  Zeile", 15};
  EXPECT(mo_clean_entry(&f, &e, &s, &t, &v) == 0 && v == MO_KEEP, "%s", mo_verdict_name(v));
  EXPECT(s && t && !strcmp(s, "Tabs and lines here") && !strcmp(t, "Tab und Zeile"),
         "collapsed: '%s' / '%s'", s, t);
  free(s);
  free(t);
  e = (struct mo_entry){"Our team", 8, "Unser Team", 10};
  f.min_words = 3;
  EXPECT(mo_clean_entry(&f, &e, &s, &t, &v) == 0 && v == MO_DROP_LENGTH, "%s", mo_verdict_name(v));
  e = (struct mo_entry){"a b c d e", 9, "A B C D E", 9};
  f.max_words = 4;
  EXPECT(mo_clean_entry(&f, &e, &s, &t, &v) == 0 && v == MO_DROP_LENGTH, "%s", mo_verdict_name(v));
}

/* Every damage to the container must be refused with a message that names the file. */
static void test_errors(void) {
  char path[512];
  fixture(path, sizeof path, "de.mo");
  size_t len;
  unsigned char *good = test_read_bytes(path, &len);
  if (!good) return;
  unsigned char *bad = malloc(len);
  struct mo_catalog cat;
  struct intrus_error err;

  memcpy(bad, good, len);
  bad[0] ^= 0xff;
  EXPECT(mo_parse(&cat, bad, len, "x.mo", &err) == INTRUS_ERR_FORMAT, "bad magic accepted");
  EXPECT_CONTAINS(err.msg, "x.mo: bad magic");

  EXPECT(mo_parse(&cat, good, 12, "short.mo", &err) == INTRUS_ERR_FORMAT, "short accepted");
  EXPECT_CONTAINS(err.msg, "short.mo: truncated: 12 bytes");

  /* Cut inside the translation table (which msgfmt puts after the original table). */
  uint32_t to = good[16] | good[17] << 8 | good[18] << 16 | (uint32_t)good[19] << 24;
  EXPECT(mo_parse(&cat, good, to + 12, "cut.mo", &err) == INTRUS_ERR_FORMAT, "cut accepted");
  EXPECT_CONTAINS(err.msg, "cut.mo: truncated: the translation table");

  /* A string count that puts the tables past the end. */
  memcpy(bad, good, len);
  bad[11] = 0x10;
  EXPECT(mo_parse(&cat, bad, len, "count.mo", &err) == INTRUS_ERR_FORMAT, "count accepted");
  EXPECT_CONTAINS(err.msg, "count.mo: truncated: the original table");

  /* One string's offset out of range. */
  memcpy(bad, good, len);
  uint32_t oo = good[12] | good[13] << 8 | good[14] << 16 | (uint32_t)good[15] << 24;
  bad[oo + 8 + 4 + 3] = 0x7f; /* offset of original string 1 */
  EXPECT(mo_parse(&cat, bad, len, "off.mo", &err) == INTRUS_ERR_FORMAT, "offset accepted");
  EXPECT_CONTAINS(err.msg, "off.mo: original string 1");
  EXPECT_CONTAINS(err.msg, "out of range");

  /* A length that runs past the end. */
  memcpy(bad, good, len);
  bad[to + 8 * 2 + 3] = 0x01;
  EXPECT(mo_parse(&cat, bad, len, "len.mo", &err) == INTRUS_ERR_FORMAT, "length accepted");
  EXPECT_CONTAINS(err.msg, "len.mo: translation string 2");

  memcpy(bad, good, len);
  bad[6] = 2;
  EXPECT(mo_parse(&cat, bad, len, "rev.mo", &err) == INTRUS_ERR_FORMAT, "revision accepted");
  EXPECT_CONTAINS(err.msg, "rev.mo: unsupported .mo revision 2.0");

  EXPECT(mo_open(&cat, "/nonexistent/x.mo", &err) == INTRUS_ERR_IO, "missing file");
  EXPECT_CONTAINS(err.msg, "/nonexistent/x.mo: No such file");

  /* The tool: a corrupt catalog stops it (exit 5) unless --keep-going. */
  char cmd[2048];
  const char *log = test_tmp_path("err.txt");
  memcpy(bad, good, len);
  bad[0] = 'X';
  const char *badpath = test_write_bytes(test_tmp_path("bad.mo"), bad, len);
  snprintf(cmd, sizeof cmd, "%s/intrus-mocorpus --lang de %s %s > /dev/null 2> %s",
           test_builddir(), path, badpath, log);
  int st = system(cmd);
  EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 5, "exit status %d for a corrupt catalog", st);
  size_t ll;
  char *msg = (char *)test_read_bytes(log, &ll);
  if (msg) {
    EXPECT_CONTAINS(msg, "bad.mo: bad magic");
    free(msg);
  }
  snprintf(cmd, sizeof cmd, "%s/intrus-mocorpus -k --lang de %s %s > /dev/null 2> %s",
           test_builddir(), path, badpath, log);
  EXPECT(system(cmd) == 0, "--keep-going");
  if ((msg = (char *)test_read_bytes(log, &ll))) {
    EXPECT_CONTAINS(msg, "warning: ");
    EXPECT_CONTAINS(msg, "1 unreadable");
    free(msg);
  }
  snprintf(cmd, sizeof cmd, "%s/intrus-mocorpus --lang de > /dev/null 2>&1", test_builddir());
  st = system(cmd);
  EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 2, "no files: status %d", st);
  free(bad);
  free(good);
}

static void test_split(void) {
  enum { N = 3000 };
  struct mo_pair *pairs = calloc(N, sizeof *pairs);
  char buf[64];
  for (int i = 0; i < N; i++) {
    /* Every third source repeats the previous one in another case and punctuation, as
     * catalogs do ("Open File..." / "open file"): they must land in the same part. */
    if (i % 3 == 2)
      snprintf(buf, sizeof buf, "SENTENCE number %d!", i - 1);
    else
      snprintf(buf, sizeof buf, "Sentence number %d", i);
    pairs[i].src = strdup(buf);
    pairs[i].tgt = pairs[i].src;
  }
  unsigned char *part = malloc(N), *again = malloc(N);
  EXPECT(mo_split(pairs, N, 200, 300, part) == 0, "split");
  size_t count[3] = {0, 0, 0};
  for (int i = 0; i < N; i++) count[part[i]]++;
  EXPECT(count[MO_VALID] >= 200 && count[MO_VALID] <= 201, "valid %zu", count[MO_VALID]);
  EXPECT(count[MO_TEST] >= 300 && count[MO_TEST] <= 301, "test %zu", count[MO_TEST]);
  EXPECT(count[MO_TRAIN] + count[MO_VALID] + count[MO_TEST] == N, "sum");
  for (int i = 2; i < N; i += 3)
    EXPECT(part[i] == part[i - 1], "\"%s\" and \"%s\" split apart", pairs[i].src,
           pairs[i - 1].src);
  char *k = mo_split_key("  Open FILE... now!");
  EXPECT(k && !strcmp(k, "open file now"), "key '%s'", k ? k : "");
  free(k);

  /* The parts depend on the set, not the order: reverse the input. */
  for (int i = 0; i < N / 2; i++) {
    struct mo_pair t = pairs[i];
    pairs[i] = pairs[N - 1 - i];
    pairs[N - 1 - i] = t;
  }
  EXPECT(mo_split(pairs, N, 200, 300, again) == 0, "split again");
  int same = 1;
  for (int i = 0; i < N; i++) same &= again[N - 1 - i] == part[i];
  EXPECT(same, "split changed with the input order");
  EXPECT(mo_split(pairs, 0, 10, 10, part) == 0, "empty split");
  for (int i = 0; i < N; i++) free(pairs[i].src);
  free(pairs);
  free(part);
  free(again);
}

/* Deduplication across catalogs, charset skips, --stats and --split, end to end. */
static void test_tool(void) {
  char de[512], l1[512], ja[512], cmd[4096];
  fixture(de, sizeof de, "de.mo");
  fixture(l1, sizeof l1, "latin1.mo");
  fixture(ja, sizeof ja, "ja.mo");
  snprintf(cmd, sizeof cmd,
           "%s/intrus-mocorpus --lang de --stats %s/stats.tsv --split %s/split --valid 2 "
           "--test 3 %s %s %s 2> %s/log.txt",
           test_builddir(), test_tmpdir, test_tmpdir, de, l1, de, test_tmpdir);
  EXPECT(system(cmd) == 0, "%s", cmd);
  size_t len;
  char *s;
  if ((s = (char *)test_read_bytes(test_tmp_path("log.txt"), &len))) {
    EXPECT_CONTAINS(s, "latin1.mo: charset is ISO-8859-1; skipped");
    EXPECT_CONTAINS(s, "11 pairs kept");
    EXPECT_CONTAINS(s, "duplicate 13"); /* 1 in de.mo, then all 12 of its second reading */
    EXPECT_CONTAINS(s, "train 6, valid 2, test 3 pairs");
    free(s);
  }
  if ((s = (char *)test_read_bytes(test_tmp_path("stats.tsv"), &len))) {
    EXPECT_CONTAINS(s, "de.mo\t19\t11\tok\n");
    EXPECT_CONTAINS(s, "latin1.mo\t2\t0\tcharset\n");
    EXPECT_CONTAINS(s, "de.mo\t19\t0\tok\n");
    free(s);
  }
  static const char *const files[] = {"train.en", "train.de", "valid.en",
                                      "valid.de", "test.en",  "test.de"};
  static const int lines[] = {6, 6, 2, 2, 3, 3};
  for (int i = 0; i < 6; i++) {
    char name[64];
    snprintf(name, sizeof name, "split/%s", files[i]);
    int n = -1;
    if ((s = (char *)test_read_bytes(test_tmp_path(name), &len))) {
      n = 0;
      for (size_t j = 0; j < len; j++) n += s[j] == '\n';
      free(s);
    }
    EXPECT(n == lines[i], "%s: %d lines, want %d", files[i], n, lines[i]);
  }
  /* Japanese through the tool: the script check follows --lang. */
  snprintf(cmd, sizeof cmd, "%s/intrus-mocorpus -q --lang ja %s > %s/ja.tsv", test_builddir(), ja,
           test_tmpdir);
  EXPECT(system(cmd) == 0, "%s", cmd);
  if ((s = (char *)test_read_bytes(test_tmp_path("ja.tsv"), &len))) {
    EXPECT_CONTAINS(s, "Open the selected file\t選択したファイルを開く\n");
    EXPECT(!strstr(s, "Print the current page"), "untranslated Japanese kept");
    free(s);
  }
  snprintf(cmd, sizeof cmd, "%s/intrus-mocorpus --help | grep -q -- --min-words", test_builddir());
  EXPECT(system(cmd) == 0, "--help");
}

int main(void) {
  if (!test_make_tmpdir("/tmp/test_mocorpus.XXXXXX")) return 1;
  test_german();
  test_big_endian();
  test_scripts();
  test_steps();
  test_errors();
  test_split();
  test_tool();
  test_remove_tmpdir();
  return test_finish("test_mocorpus");
}

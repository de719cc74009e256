/* The CIDEr-D evaluator plugin (plugins/eval_cider.la): its tokenizer against the gold of
 * CoreNLP 3.4.1's own PTBTokenizerTest and against coco-caption's conventions; CIDEr-D
 * against values worked out by hand and against scripts/reference/cider_reference.py
 * (a transcription of coco-caption's cider_scorer.py, itself checked against the
 * original file); `intrus eval cider`, and the core's paired bootstrap with CIDEr-D.
 *
 * Notation in the hand-worked comments: N images, L = log N (every weight is
 * tf * (L - log max(1, df))), per order n the similarity
 *     val_n = sum_g min(v_hyp(g), v_ref(g)) v_ref(g) / (|v_hyp|_n |v_ref|_n),
 * the penalty P = exp(-(b_hyp - b_ref)^2 / (2 sigma^2)) with b the number of bigrams,
 * an image's score 10 * mean_n(sum_refs val_n P) / refs, and CIDEr-D x 100 in the
 * tests (coco-caption's 0.0625 is 6.25 here). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrus/config.h"
#include "intrus/eval.h"
#include "intrus/plugin.h"
#include "../plugins/eval-cider/ptb_tokenize.h"
#include "testutil.h"

static struct intrus_plugin *plugin;
static const struct intrus_evaluator_vtable *vt;

/* ---- the tokenizer ------------------------------------------------------------------- */

/* The single-line and simple multi-line sentences of CoreNLP v3.4.1's
 * test/src/edu/stanford/nlp/process/PTBTokenizerTest.java with their gold tokens (what
 * Java's PTBTokenizer gives, each input a whole document: no newline after it). */
static const struct {
  const char *text;
  const char *gold[48];
} corenlp_gold[] = {
    {"This is a sentence.",
     {"This", "is", "a", "sentence", ".", NULL}},
    {"Based in Eugene,Ore., PakTech needs a new distributor after Sydney-based Creative Pack"
     " Pty. Ltd. went into voluntary administration.",
     {"Based", "in", "Eugene", ",", "Ore.", ",", "PakTech", "needs", "a", "new", "distributor",
      "after", "Sydney-based", "Creative", "Pack", "Pty.", "Ltd.", "went", "into", "voluntary",
      "administration", ".", NULL}},
    {"The Iron Age (ca. 1300 \342\200\223 ca. 300 BC).",
     {"The", "Iron", "Age", "-LRB-", "ca.", "1300", "--", "ca.", "300", "BC", "-RRB-", ".",
      NULL}},
    {"Indo\302\255nesian ship\302\255ping \302\255",
     {"Indonesian", "shipping", "-", NULL}},
    {"Gimme a phone, I'm gonna call.",
     {"Gim", "me", "a", "phone", ",", "I", "'m", "gon", "na", "call", ".", NULL}},
    {"\"John & Mary's dog,\" Jane thought (to herself).\n\"What a #$%!\na- ``I like AT&T''.\"",
     {"``", "John", "&", "Mary", "'s", "dog", ",", "''", "Jane", "thought", "-LRB-", "to",
      "herself", "-RRB-", ".", "``", "What", "a", "#", "$", "%", "!", "a", "-", "``", "I",
      "like", "AT&T", "''", ".", "''", NULL}},
    {"I said at 4:45pm.",
     {"I", "said", "at", "4:45", "pm", ".", NULL}},
    {"I can't believe they wanna keep 40% of that.\"\n``Whatcha think?''\n\"I don't --- thin"
     "k so...,\"",
     {"I", "ca", "n't", "believe", "they", "wan", "na", "keep", "40", "%", "of", "that", ".",
      "''", "``", "Whatcha", "think", "?", "''", "``", "I", "do", "n't", "--", "think", "so",
      "...", ",", "''", NULL}},
    {"You `paid' US$170,000?!\nYou should've paid only$16.75.",
     {"You", "`", "paid", "'", "US$", "170,000", "?!", "You", "should", "'ve", "paid", "only",
      "$", "16.75", ".", NULL}},
    {"1. Buy a new Chevrolet (37%-owned in the U.S..) . 15%",
     {"1", ".", "Buy", "a", "new", "Chevrolet", "-LRB-", "37", "%", "-", "owned", "in", "the",
      "U.S.", ".", "-RRB-", ".", "15", "%", NULL}},
    {"I like you ;-) but do you care :(. I'm happy ^_^ but shy (x.x)!",
     {"I", "like", "you", ";--RRB-", "but", "do", "you", "care", ":-LRB-", ".", "I", "'m",
      "happy", "^_^", "but", "shy", "-LRB-x.x-RRB-", "!", NULL}},
    {"Diamond (``Not even the chair'') lives near Udaipur (84km). {1. A potential Palmer tra"
     "de:}",
     {"Diamond", "-LRB-", "``", "Not", "even", "the", "chair", "''", "-RRB-", "lives", "near",
      "Udaipur", "-LRB-", "84km", "-RRB-", ".", "-LCB-", "1", ".", "A", "potential", "Palmer",
      "trade", ":", "-RCB-", NULL}},
    {"No. I like No. 24 and no.47.",
     {"No", ".", "I", "like", "No.", "24", "and", "no.", "47", ".", NULL}},
    {"You can get a B.S. or a B. A. or a Ph.D (sometimes a Ph. D) from Stanford.",
     {"You", "can", "get", "a", "B.S.", "or", "a", "B.", "A.", "or", "a", "Ph.D", "-LRB-",
      "sometimes", "a", "Ph.", "D", "-RRB-", "from", "Stanford", ".", NULL}},
    {"@Harry_Styles didn`t like Mu`ammar al-Qaddafi",
     {"@Harry_Styles", "did", "n`t", "like", "Mu`ammar", "al-Qaddafi", NULL}},
    {"Kenneth liked Windows 3.1, Windows 3.x, and Mesa A.B as I remember things.",
     {"Kenneth", "liked", "Windows", "3.1", ",", "Windows", "3.x", ",", "and", "Mesa", "A.B",
      "as", "I", "remember", "things", ".", NULL}},
    {"So, too, many analysts predict, will Exxon Corp., Chevron Corp. and Amoco Corp.   ",
     {"So", ",", "too", ",", "many", "analysts", "predict", ",", "will", "Exxon", "Corp.", ",",
      "Chevron", "Corp.", "and", "Amoco", "Corp.", ".", NULL}},
    {"it's",
     {"it", "'s", NULL}},
    {" it's ",
     {"it", "'s", NULL}},
    {"Significant improvements in peak FEV1 were demonstrated with tiotropium/olodaterol 5/2"
     " \316\274g (p = 0.008), 5/5 \316\274g (p = 0.012), and 5/10 \316\274g (p < 0.0001) ver"
     "sus tiotropium monotherapy [51].",
     {"Significant", "improvements", "in", "peak", "FEV1", "were", "demonstrated", "with",
      "tiotropium/olodaterol", "5/2", "\316\274g", "-LRB-", "p", "=", "0.008", "-RRB-", ",",
      "5/5", "\316\274g", "-LRB-", "p", "=", "0.012", "-RRB-", ",", "and", "5/10", "\316\274g",
      "-LRB-", "p", "<", "0.0001", "-RRB-", "versus", "tiotropium", "monotherapy", "-LSB-",
      "51", "-RSB-", ".", NULL}},
    {"Panasonic brand products are produced by Samsung Electronics Co. Ltd. Sanyo products a"
     "ren't.",
     {"Panasonic", "brand", "products", "are", "produced", "by", "Samsung", "Electronics",
      "Co.", "Ltd.", ".", "Sanyo", "products", "are", "n't", ".", NULL}},
    {"Oesophageal acid exposure (% time <pH 4) was similar in patients with or without compl"
     "ications (19.2% v 19.3% p>0.05).",
     {"Oesophageal", "acid", "exposure", "-LRB-", "%", "time", "<", "pH", "4", "-RRB-", "was",
      "similar", "in", "patients", "with", "or", "without", "complications", "-LRB-", "19.2",
      "%", "v", "19.3", "%", "p", ">", "0.05", "-RRB-", ".", NULL}},
    {"<!DOCTYPE html PUBLIC \"-//W3C//DTD HTML 4.01 Strict//EN\" \"http://www.w3.org/TR/html"
     "4/strict.dtd\">",
     {"<!DOCTYPE\302\240html\302\240PUBLIC\302\240\"-//W3C//DTD\302\240HTML\302\2404.01"
      "\302\240Strict//EN\"\302\240\"http://www.w3.org/TR/html4/strict.dtd\">",
      NULL}},
    {"Hi! <foo bar=\"baz xy = foo !$*) 422\" > <?PITarget PIContent?> <?PITarget PIContent> "
     "Hi!",
     {"Hi", "!",
      "<foo\302\240bar=\"baz\302\240xy\302\240=\302\240foo\302\240!$*)\302\240422\"\302\240>",
      "<?PITarget\302\240PIContent?>", "<?PITarget\302\240PIContent>", "Hi", "!", NULL}},
    {"&lt;b...@canada.com&gt; funky@thedismalscience.net <myemail@where.com>",
     {"&lt;b...@canada.com&gt;", "funky@thedismalscience.net", "<myemail@where.com>", NULL}},
    {"Enter an option [?/Current]:{1}",
     {"Enter", "an", "option", "-LSB-", "?", "/", "Current", "-RSB-", ":", "-LCB-", "1",
      "-RCB-", NULL}},
    {"for example, {1}http://www.autodesk.com{2}, or a path",
     {"for", "example", ",", "-LCB-", "1", "-RCB-", "http://www.autodesk.com", "-LCB-", "2",
      "-RCB-", ",", "or", "a", "path", NULL}},
    {"enter {3}@{4} at the Of prompt.",
     {"enter", "-LCB-", "3", "-RCB-", "@", "-LCB-", "4", "-RCB-", "at", "the", "Of", "prompt",
      ".", NULL}},
    {"{1}block name={2}",
     {"-LCB-", "1", "-RCB-", "block", "name", "=", "-LCB-", "2", "-RCB-", NULL}},
};

static struct ptb_lexer *lexer;

/* The tokens of t joined by single spaces (a static buffer). */
static const char *joined(const struct ptb_tokens *t) {
  static char buf[4096];
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < t->n; i++)
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? " " : "", ptb_token(t, i));
  return buf;
}

static void test_corenlp_gold(void) {
  struct ptb_tokens t = {0};
  for (size_t k = 0; k < sizeof corenlp_gold / sizeof corenlp_gold[0]; k++) {
    const char *text = corenlp_gold[k].text;
    int st = ptb_lex(lexer, text, strlen(text), true, &t, NULL);
    EXPECT(st == PTB_OK, "ptb_lex %d on \"%s\"", st, text);
    size_t n = 0;
    while (corenlp_gold[k].gold[n]) n++;
    bool same = t.n == n;
    for (size_t i = 0; same && i < n; i++)
      same = !strcmp(ptb_token(&t, i), corenlp_gold[k].gold[i]);
    EXPECT(same, "\"%s\": got %zu tokens \"%s\", gold %zu", text, t.n, joined(&t), n);
  }
  /* The lowercase-free tokens of a caption followed by coco's newline. */
  int st = ptb_lex(lexer, "A (red) \"STOP\" sign...", 22, false, &t, NULL);
  EXPECT(st == PTB_OK, "%d", st);
  EXPECT(!strcmp(joined(&t), "A -LRB- red -RRB- `` STOP '' sign ..."), "%s", joined(&t));
  ptb_tokens_free(&t);
}

/* What coco-caption's CiderScorer sees of a caption (lowercased, PUNCTUATIONS dropped);
 * the expected strings are what scripts/reference/cider_reference.py gives, each read
 * against the rules of PTBLexer.flex. */
static void expect_coco(const char *text, const char *want) {
  struct ptb_tokens t = {0};
  int st = ptb_coco_tokens(lexer, text, strlen(text), &t, NULL);
  EXPECT(st == PTB_OK, "ptb_coco_tokens %d on \"%s\"", st, text);
  EXPECT(!strcmp(joined(&t), want), "\"%s\" -> \"%s\", want \"%s\"", text, joined(&t), want);
  ptb_tokens_free(&t);
}

static void test_coco_tokens(void) {
  /* Contractions split as PTB does: n't, 's, 're, 've, 'll, 'd, 'm. */
  expect_coco("The man's dog can't swim.", "the man 's dog ca n't swim");
  expect_coco("I don't know, it's fine; we'll see -- they're here! I'm sure you've seen what "
              "he'd do.",
              "i do n't know it 's fine we 'll see they 're here i 'm sure you 've seen what he "
              "'d do");
  /* Quotes become `` '' ` ' (typographic ones too) and are dropped. */
  expect_coco("A sign that says \"STOP\" and 'go' or `here' and \xe2\x80\x9cthere\xe2\x80\x9d "
              "\xe2\x80\x98now\xe2\x80\x99.",
              "a sign that says stop and go or here and there now");
  /* Brackets become -LRB- -RRB- -LSB- -RSB- -LCB- -RCB-, then -lowerCase makes them
   * -lrb- ...: coco's PUNCTUATIONS has only the upper-case forms, so they stay. */
  expect_coco("A dog (brown) [left] {right} <b>bold</b>",
              "a dog -lrb- brown -rrb- -lsb- left -rsb- -lcb- right -rcb- <b> bold </b>");
  /* Hyphenated words stay whole; - -- --- and the dashes (as --) are dropped. */
  expect_coco("A well-known state-of-the-art x-ray - here -- there --- end \xe2\x80\x94 em "
              "\xe2\x80\x93 en",
              "a well-known state-of-the-art x-ray here there end em en");
  /* "...", ". . ." and U+2026 are one token "...", dropped. */
  expect_coco("Wait... what . . . now\xe2\x80\xa6 ok.", "wait what now ok");
  /* Numbers keep their . , : and fractions their space (as U+00A0, one token); 4:45pm
   * splits; U+00BD becomes 1/2. */
  expect_coco("3.5 inches, 1,000 people, 4:45pm, 2 1/2 cups and \xc2\xbd cup on 12/05/2020.",
              "3.5 inches 1,000 people 4:45 pm 2\xc2\xa0" "1/2 cups and 1/2 cup on 12/05/2020");
  /* Abbreviations keep their period ("etc." before " at" too: its extra "." is dropped). */
  expect_coco("Mr. Smith met Dr. Jones in the U.S. etc. at St. Mary's.",
              "mr. smith met dr. jones in the u.s. etc. at st. mary 's");
  expect_coco("a letter b.", "a letter b.");
  /* splitAssimilations. */
  expect_coco("gonna wanna cannot gimme", "gon na wan na can not gim me");
  /* Lowercasing is Unicode-aware: Latin-1, Cyrillic, Greek with its final sigma
   * (Σ -> ς at the end of a word, σ elsewhere), U+0130 -> "i" U+0307. */
  expect_coco("\xc3\x9cn\xc3\xaf" "code \xc3\x87" "AF\xc3\x89",
              "\xc3\xbcn\xc3\xaf" "code \xc3\xa7" "af\xc3\xa9");
  expect_coco("\xd0\x9f\xd0\xa0\xd0\x98\xd0\x92\xd0\x95\xd0\xa2 \xd0\x9c\xd0\xb8\xd1\x80",
              "\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xd0\xbc\xd0\xb8\xd1\x80");
  expect_coco("\xce\x9f\xce\x94\xce\x9f\xce\xa3 \xce\xa3\xce\x9f\xce\xa6\xce\x99\xce\x91",
              "\xce\xbf\xce\xb4\xce\xbf\xcf\x82 \xcf\x83\xce\xbf\xcf\x86\xce\xb9\xce\xb1");
  expect_coco("\xc4\xb0stanbul", "i\xcc\x87stanbul");
  /* Outside the BMP: two UTF-16 surrogates, untokenizable, deleted. */
  expect_coco("a \xf0\x9f\x98\x80 dog", "a dog");
  /* Soft hyphens vanish; currency and entities are normalised. */
  expect_coco("ship\xc2\xadping", "shipping");
  expect_coco("\xc2\xa3" "5 and \xe2\x82\xac" "3 and 5\xc2\xa2", "# 5 and $ 3 and 5 cents");
  expect_coco("AT&T and B&amp;Q, Tom &amp; Jerry", "at&t and b&q tom & jerry");
  /* Smileys, URLs, e-mail, twitter. */
  expect_coco("A cat.Dog on a mat:)", "a cat.dog on a mat :-rrb-");
  expect_coco("email me@x.org or http://example.com/a?b=1 #tag @user",
              "email me@x.org or http://example.com/a?b=1 #tag @user");
  /* coco replaces newlines by spaces; nothing left: no tokens. */
  expect_coco("two\nlines", "two lines");
  expect_coco("", "");
  expect_coco("   ", "");
  expect_coco("... ! ? , ; : -- -", "");

  struct ptb_tokens t = {0};
  size_t bad = 0;
  EXPECT(ptb_coco_tokens(lexer, "ok \xc3\x28 no", 9, &t, &bad) == PTB_BAD_UTF8, "bad UTF-8");
  EXPECT(bad == 3, "bad at %zu", bad);
  ptb_tokens_free(&t);
}

/* ---- CIDEr-D through the plugin ---------------------------------------------------- */

/* An evaluator with the given settings group text (NULL: no group, all defaults). */
static void *make_cider(const char *settings) {
  struct intrus_error err = {0};
  struct intrus_config *cfg = NULL;
  if (settings) {
    cfg = intrus_config_load_string(settings, "test", &err);
    if (!cfg) {
      fprintf(stderr, "bad test settings: %s\n", err.msg);
      exit(99);
    }
  }
  void *self = NULL;
  enum intrus_status st = vt->create(cfg ? intrus_config_root(cfg) : NULL, &self, &err);
  intrus_config_free(cfg); /* create copies what it needs */
  if (st != INTRUS_OK) {
    fprintf(stderr, "create(%s): %s\n", settings ? settings : "NULL", err.msg);
    exit(99);
  }
  return self;
}

/* prepare() over nseg images (refs: nseg rows of nrefs, NULL absent), then every image's
 * statistics into stats (nseg rows; may be NULL) and the corpus scores into out. */
static void corpus(void *self, int nseg, const char *const *hyps, const char *const *refs,
                   int nrefs, double *stats, struct intrus_eval_scores *out) {
  int ss = vt->stats_size(self);
  double *sum = calloc((size_t)ss, sizeof *sum), *row = calloc((size_t)ss, sizeof *row);
  const char *const **rows = malloc((size_t)nseg * sizeof *rows);
  struct intrus_error err = {0};
  for (int i = 0; i < nseg; i++) rows[i] = refs + (size_t)i * nrefs;
  EXPECT(vt->prepare(self, nseg, rows, nrefs, &err) == INTRUS_OK, "prepare: %s", err.msg);
  for (int i = 0; i < nseg; i++) {
    enum intrus_status st = vt->segment_stats(self, hyps[i], refs + (size_t)i * nrefs, nrefs,
                                              row, &err);
    EXPECT(st == INTRUS_OK, "segment %d: %s", i, err.msg);
    for (int k = 0; k < ss; k++) sum[k] += row[k];
    if (stats) memcpy(stats + (size_t)i * ss, row, (size_t)ss * sizeof *row);
  }
  memset(out, 0, sizeof *out);
  EXPECT(vt->score(self, sum, out, &err) == INTRUS_OK, "score: %s", err.msg);
  free(sum);
  free(row);
  free(rows);
}

static double value(const struct intrus_eval_scores *sc, const char *name) {
  for (int i = 0; i < sc->count; i++)
    if (!strcmp(sc->names[i], name)) return sc->values[i];
  EXPECT(0, "no score named %s", name);
  return NAN;
}

/* CIDEr-D (x 100) of a corpus under settings, and each image's (x 100) into per. */
static double cider(const char *settings, int nseg, const char *const *hyps,
                    const char *const *refs, int nrefs, double *per) {
  void *self = make_cider(settings);
  int ss = vt->stats_size(self);
  double *stats = calloc((size_t)nseg * ss, sizeof *stats);
  struct intrus_eval_scores sc;
  corpus(self, nseg, hyps, refs, nrefs, stats, &sc);
  if (per)
    for (int i = 0; i < nseg; i++) per[i] = 100.0 * stats[(size_t)i * ss];
  vt->destroy(self);
  free(stats);
  return value(&sc, "CIDEr");
}

/* Relative agreement to 1e-9 (absolute 1e-9 around 0). */
#define EXPECT_REL(a, b) EXPECT_NEAR(a, b, 1e-9 * fmax(1.0, fabs(b)))

static void test_hand_worked(void) {
  double per[4];
  /* (a) Two images, one reference each, hypotheses equal to the references.
   *   image 1 "cat sat down": 3 unigrams, 2 bigrams, 1 trigram, each in one image's
   *   references (df 1), so every weight is L = log 2; vectors equal: val = 1 for
   *   orders 1-3, and 0 for order 4 (no 4-grams, zero norms: no division); bigrams 2 = 2,
   *   P = 1. Score 10 * (1 + 1 + 1 + 0) / 4 = 7.5.
   *   image 2 "dog ran": orders 1, 2 -> 1; 3, 4 -> 0: 10 * 2 / 4 = 5.
   *   CIDEr-D = (7.5 + 5) / 2 = 6.25 -> 625. (A perfect caption does not score 10.) */
  const char *hyp_a[] = {"cat sat down", "dog ran"};
  const char *ref_a[] = {"cat sat down", "dog ran"};
  EXPECT_REL(cider(NULL, 2, hyp_a, ref_a, 1, per), 625.0);
  EXPECT_REL(per[0], 750.0);
  EXPECT_REL(per[1], 500.0);

  /* (b) A shorter hypothesis "cat sat" for image 1 (fewer than 4 tokens):
   *   order 1: cat, sat match: 2 L^2 / (sqrt(2) L * sqrt(3) L) = 2 / sqrt 6 = 0.816497
   *   order 2: "cat sat": L^2 / (L * sqrt(2) L) = 1 / sqrt 2 = 0.707107
   *   orders 3, 4: the hypothesis has none: 0
   *   bigrams 1 against 2: P = exp(-1/72) = 0.986207
   *   image 1 = 10 * (0.816497 + 0.707107) * 0.986207 / 4 = 3.756471; image 2 = 5
   *   CIDEr-D = (3.756471 + 5) / 2 = 4.378236 -> 437.8236. With sigma 1:
   *   P = exp(-1/2) = 0.606531, image 1 = 2.310280, CIDEr-D -> 365.5140. */
  const char *hyp_b[] = {"cat sat", "dog ran"};
  EXPECT_NEAR(cider(NULL, 2, hyp_b, ref_a, 1, per), 437.8236, 1e-4);
  EXPECT_REL(per[0], 100 * 10 * (2 / sqrt(6) + 1 / sqrt(2)) * exp(-1.0 / 72) / 4);
  EXPECT_NEAR(cider("sigma = 1.0;", 2, hyp_b, ref_a, 1, NULL), 365.5140, 1e-4);

  /* (c) Repeated n-grams are clipped: hypothesis "dog dog dog", reference "dog cat".
   *   order 1: v_hyp(dog) = 3L, v_ref(dog) = L: min(3L, L) L = L^2; norms 3L and
   *   sqrt(2) L: val = 1 / (3 sqrt 2) = 0.235702 (plain cosine would give 1 / sqrt 2)
   *   order 2: "dog dog" (tf 2, in no reference: df 0 -> weight 2L) does not match: 0
   *   bigrams 2 against 1: P = exp(-1/72)
   *   image 1 = 10 * 0.235702 * 0.986207 / 4 = 0.581128; "bird flies" = 5
   *   CIDEr-D = (0.581128 + 5) / 2 -> 279.0564. */
  const char *hyp_c[] = {"dog dog dog", "bird flies"};
  const char *ref_c[] = {"dog cat", "bird flies"};
  EXPECT_NEAR(cider(NULL, 2, hyp_c, ref_c, 1, per), 279.0564, 1e-4);
  EXPECT_REL(per[0], 100 * 10 * (1 / (3 * sqrt(2))) * exp(-1.0 / 72) / 4);

  /* (d) Document frequency: "the" is in both images' references, df 2, weight
   *   log 2 - log 2 = 0. Image 1 "the cat" = ref: order 1 only "cat" counts:
   *   L^2 / (L * L) = 1; order 2 "the cat" (df 1) = 1: 10 * 2 / 4 = 5. Image 2 "the bird"
   *   against "the dog": "the" weighs 0, "bird" does not match: 0 everywhere.
   *   CIDEr-D = (5 + 0) / 2 -> 250. */
  const char *hyp_d[] = {"the cat", "the bird"};
  const char *ref_d[] = {"the cat", "the dog"};
  EXPECT_REL(cider(NULL, 2, hyp_d, ref_d, 1, per), 250.0);
  EXPECT_REL(per[1], 0.0);

  /* (e) One image: L = log 1 = 0, every weight 0: coco's CIDEr-D is 0 for a single
   *   image, even for a perfect caption. */
  EXPECT_REL(cider(NULL, 1, hyp_a, ref_a, 1, per), 0.0);

  /* (f) An empty hypothesis, or one of punctuation only, scores 0 (the other image
   *   keeps its 5): (0 + 5) / 2 -> 250. */
  const char *hyp_f[] = {"", "dog ran"}, *hyp_f2[] = {"... ! ,", "dog ran"};
  EXPECT_REL(cider(NULL, 2, hyp_f, ref_a, 1, per), 250.0);
  EXPECT_REL(per[0], 0.0);
  EXPECT_REL(cider(NULL, 2, hyp_f2, ref_a, 1, NULL), 250.0);

  /* (g) Absent references (NULL) are left out: (a) again, with 3 reference slots. An
   *   empty reference "" counts (as an empty caption in coco): image 1's sum of sims is
   *   unchanged but divided by 2 references: 3.75; CIDEr-D = (3.75 + 5) / 2 -> 437.5. */
  const char *ref_g[] = {NULL, "cat sat down", NULL, "dog ran", NULL, NULL};
  EXPECT_REL(cider(NULL, 2, hyp_a, ref_g, 3, NULL), 625.0);
  const char *ref_g2[] = {"cat sat down", "", "dog ran", NULL};
  EXPECT_REL(cider(NULL, 2, hyp_a, ref_g2, 2, per), 437.5);
  EXPECT_REL(per[0], 375.0);

  /* (h) Tokenisation happens first: these hypotheses have the tokens of (a)'s. */
  const char *hyp_h[] = {"Cat, sat -- DOWN!", "\"Dog\" ran..."};
  EXPECT_REL(cider(NULL, 2, hyp_h, ref_a, 1, NULL), 625.0);
}

/* 12 images with 1 to 5 references (NULL: absent) and their hypotheses; the same as the
 * files the reference script was run on (written out by test_cli). */
#define NIMG 12
static const char *const fx_hyp[NIMG] = {
    "a man riding a wave on top of a surfboard",
    "a dog running through the grass",
    "two men playing frisbee in a park",
    "a plate of food with broccoli and meat",
    "a cat sitting on a laptop keyboard",
    "a stop sign on the side of a road",
    "a train on the tracks",
    "",
    "a 3.5 inch screen shows 1,000 people",
    "\xc3\xbcn\xc3\xaf" "code text and \xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 "
    "\xd0\xbc\xd0\xb8\xd1\x80",
    "a man's hat, a woman's bag",
    "a giraffe giraffe giraffe standing",
};
static const char *const fx_refs[NIMG][5] = {
    {"A man riding a wave on top of a surfboard.", "A surfer rides a large wave in the ocean.",
     "A person on a surfboard riding a wave.", "A man on a surfboard is riding a big wave!",
     "Surfer in a black wetsuit catching a wave."},
    {"A brown dog runs through the green grass.", NULL, "The dog's running in a field.", NULL,
     NULL},
    {"Two people are playing frisbee in the park.",
     "Two young men throw a frisbee (a red one) at the park.",
     "A couple of guys playing frisbee on a sunny day.", NULL, NULL},
    {"A plate of food with broccoli, rice and chicken.",
     "Dinner plate with vegetables -- broccoli and meat...",
     "A white plate topped with meat and broccoli.", "A meal of broccoli and steak on a plate.",
     "Food on a plate: broccoli & beef."},
    {"A cat sits on a laptop's keyboard.", "The cat can't stop sitting on the laptop.", NULL,
     NULL, NULL},
    {"A \"STOP\" sign on the side of a road.", "A red stop sign next to a street.",
     "A stop sign at an intersection in the U.S.", "A stop sign near a well-known road.", NULL},
    {"A train is on the tracks near a station.", NULL, NULL, NULL, NULL},
    {"An empty caption's references still count.", "A kitchen with a stove and an oven.", NULL,
     NULL, NULL},
    {"A 3.5 inch screen shows 1,000 people at 4:45pm.", "A small screen displaying a crowd.",
     NULL, NULL, NULL},
    {"\xc3\x9cn\xc3\xaf" "code TEXT and \xd0\x9f\xd0\xa0\xd0\x98\xd0\x92\xd0\x95\xd0\xa2 "
     "\xd0\x9c\xd0\xb8\xd1\x80.",
     "Some unicode text: \xc3\xbcn\xc3\xaf" "code!", NULL, NULL, NULL},
    {"A man's hat and a woman's bag.", "A hat (man's) and a bag (woman's).",
     "A hat, a bag and a man.", NULL, NULL},
    {"A giraffe standing in a field.", "A tall giraffe standing next to a tree.", NULL, NULL,
     NULL},
};

/* scripts/reference/cider_reference.py on that corpus (printed with %.17g). */
static const double fx_five = 280.02801398904774;
static const double fx_five_images[NIMG] = {
    338.3655170062309,  167.38214950733277, 168.01926990325185, 296.93003194662197,
    254.42255177791847, 400.97583961358305, 284.49571861985004, 0,
    379.56434867201062, 560.18497714553735, 361.18881027680169, 148.806953399435};
/* the first reference of each image only */
static const double fx_one = 525.23380350585001;
static const double fx_one_images[NIMG] = {
    1000,               188.42248421246558, 310.8232113773438,  638.8517202869001,
    341.12521821998592, 1000,               275.50373074717709, 0,
    698.99290909150284, 1000,               675.52108344538021, 173.56528468944364};
/* all references, sigma = 2.5 */
static const double fx_sigma25 = 230.03540937933295;

static void test_reference_fixtures(void) {
  double per[NIMG], sum = 0;
  /* Five reference slots (1 to 5 present per image). */
  EXPECT_REL(cider(NULL, NIMG, fx_hyp, &fx_refs[0][0], 5, per), fx_five);
  for (int i = 0; i < NIMG; i++) {
    EXPECT_REL(per[i], fx_five_images[i]);
    sum += per[i];
  }
  /* The corpus score is the mean of the images'. */
  EXPECT_REL(sum / NIMG, fx_five);
  /* One reference per image: the first. Images 1, 6 and 10 then have their hypothesis
   * as their only reference after tokenization: 10 -> 1000. */
  const char *one[NIMG];
  for (int i = 0; i < NIMG; i++) one[i] = fx_refs[i][0];
  EXPECT_REL(cider(NULL, NIMG, fx_hyp, one, 1, per), fx_one);
  for (int i = 0; i < NIMG; i++) EXPECT_REL(per[i], fx_one_images[i]);
  EXPECT_REL(cider("sigma = 2.5;", NIMG, fx_hyp, &fx_refs[0][0], 5, NULL), fx_sigma25);

  /* The scores and signature. */
  void *self = make_cider(NULL);
  struct intrus_eval_scores sc;
  corpus(self, NIMG, fx_hyp, &fx_refs[0][0], 5, NULL, &sc);
  EXPECT(sc.count >= 2 && !strcmp(sc.names[0], "CIDEr"), "primary score %s", sc.names[0]);
  EXPECT_NEAR(value(&sc, "images"), NIMG, 0);
  EXPECT(!strcmp(sc.signature, "nrefs:var|tok:ptb|sigma:6|version:coco-caption"), "%s",
         sc.signature);
  corpus(self, NIMG, fx_hyp, one, 1, NULL, &sc); /* prepare() again: new weights */
  EXPECT_REL(value(&sc, "CIDEr"), fx_one);
  EXPECT(!strcmp(sc.signature, "nrefs:1|tok:ptb|sigma:6|version:coco-caption"), "%s",
         sc.signature);
  vt->destroy(self);
  self = make_cider("sigma = 2.5;");
  corpus(self, NIMG, fx_hyp, &fx_refs[0][0], 5, NULL, &sc);
  EXPECT(!strcmp(sc.signature, "nrefs:var|tok:ptb|sigma:2.5|version:coco-caption"), "%s",
         sc.signature);
  vt->destroy(self);
}

static void test_settings_and_errors(void) {
  struct intrus_error err = {0};
  double stats[8];
  void *self = make_cider(NULL);
  const char *r = "a dog";
  /* segment_stats before prepare: the weights are not known. */
  EXPECT(vt->segment_stats(self, "a dog", &r, 1, stats, &err) == INTRUS_ERR_INVALID,
         "no prepare");
  EXPECT_CONTAINS(err.msg, "prepare");
  const char *const *rows[2] = {&r, &r};
  EXPECT(vt->prepare(self, 0, rows, 1, &err) == INTRUS_ERR_INVALID, "no images");
  EXPECT(vt->prepare(self, 2, rows, 1, &err) == INTRUS_OK, "%s", err.msg);
  /* An image without any reference is a data error. */
  const char *none[2] = {NULL, NULL};
  EXPECT(vt->segment_stats(self, "a dog", none, 2, stats, &err) == INTRUS_ERR_DATA,
         "no reference");
  EXPECT_CONTAINS(err.msg, "no reference");
  /* Invalid UTF-8 is a data error naming what was being read. */
  EXPECT(vt->segment_stats(self, "a \xff dog", &r, 1, stats, &err) == INTRUS_ERR_DATA, "utf8");
  EXPECT_CONTAINS(err.msg, "hypothesis: invalid UTF-8 at byte 3");
  const char *bad = "bad \xc3";
  EXPECT(vt->segment_stats(self, "a dog", &bad, 1, stats, &err) == INTRUS_ERR_DATA, "utf8");
  EXPECT_CONTAINS(err.msg, "reference 1: invalid UTF-8");
  /* A reference prepare() did not see still scores (its unknown n-grams have df 0). */
  const char *other = "a cat";
  EXPECT(vt->segment_stats(self, "a cat", &other, 1, stats, &err) == INTRUS_OK, "%s", err.msg);
  vt->destroy(self);

  /* Strict settings. */
  const char *bad_settings[] = {"sigma = 0.0;", "sigma = -1.0;", "sigma = \"six\";",
                                "sigmas = 6.0;", "n = 4;"};
  for (size_t k = 0; k < sizeof bad_settings / sizeof bad_settings[0]; k++) {
    struct intrus_config *cfg = intrus_config_load_string(bad_settings[k], "t", &err);
    self = NULL;
    EXPECT(cfg && vt->create(intrus_config_root(cfg), &self, &err) == INTRUS_ERR_CONFIG,
           "%s accepted", bad_settings[k]);
    intrus_config_free(cfg);
  }
  struct intrus_config *cfg = intrus_config_load_string("sigmas = 6.0;", "t", &err);
  EXPECT(vt->create(intrus_config_root(cfg), &self, &err) == INTRUS_ERR_CONFIG, "typo");
  EXPECT_CONTAINS(err.msg, "sigmas");
  intrus_config_free(cfg);
}

/* ---- paired bootstrap -------------------------------------------------------------- */

static void test_bootstrap(void) {
  void *self = make_cider(NULL);
  int ss = vt->stats_size(self);
  double *a = calloc((size_t)NIMG * ss, sizeof *a), *b = calloc((size_t)NIMG * ss, sizeof *b);
  double *a2 = calloc((size_t)NIMG * ss, sizeof *a2);
  struct intrus_eval_scores sc;
  /* A: the fixture's hypotheses. B: each image's first reference, a better system
   * (CIDEr-D 515.790499777425 by the reference script against all references). */
  const char *ref1[NIMG];
  for (int i = 0; i < NIMG; i++) ref1[i] = fx_refs[i][0];
  corpus(self, NIMG, fx_hyp, &fx_refs[0][0], 5, a, &sc);
  corpus(self, NIMG, ref1, &fx_refs[0][0], 5, b, &sc);
  memcpy(a2, a, (size_t)NIMG * ss * sizeof *a);
  struct intrus_error err = {0};
  struct intrus_bootstrap_result r1, r2;

  /* Identical systems: B never strictly beats A: p = (n - 0 + 1)/(n + 1) = 1; the
   * sacreBLEU statistic is 1/(n + 1) (a zero difference is never exceeded). */
  EXPECT(intrus_paired_bootstrap(vt, self, NIMG, a, a2, 200, 7, &r1, &err) == INTRUS_OK,
         "%s", err.msg);
  EXPECT(r1.b_better == 0, "identical: B better in %d", r1.b_better);
  EXPECT_NEAR(r1.p_value, 1.0, 0.0);
  EXPECT_NEAR(r1.p_sacrebleu, 1.0 / 201.0, 1e-15);
  EXPECT_NEAR(r1.a.mean, r1.b.mean, 0.0);
  EXPECT_REL(r1.a.score, fx_five);

  /* The references as system B beat A in (nearly) every resample. */
  EXPECT(intrus_paired_bootstrap(vt, self, NIMG, a, b, 1000, 7, &r1, &err) == INTRUS_OK, "%s",
         err.msg);
  EXPECT(r1.b_better >= 990, "B better in only %d of 1000", r1.b_better);
  EXPECT(r1.p_value < 0.05, "p = %g", r1.p_value);
  EXPECT_REL(r1.b.score, 515.790499777425);
  EXPECT(r1.a.lower <= r1.a.score && r1.a.score <= r1.a.upper, "A's interval [%g, %g] of %g",
         r1.a.lower, r1.a.upper, r1.a.score);
  /* The same seed, the same result. */
  EXPECT(intrus_paired_bootstrap(vt, self, NIMG, a, b, 1000, 7, &r2, &err) == INTRUS_OK, "%s",
         err.msg);
  EXPECT(memcmp(&r1, &r2, sizeof r1) == 0, "same seed, different results");
  free(a);
  free(b);
  free(a2);
  vt->destroy(self);
}

/* ---- intrus eval cider ------------------------------------------------------------- */

static const char *tmp_file(const char *name, const char *text) {
  return test_write_file(test_tmp_path(name), text);
}

/* The fixture as files: hyp.txt, ref1.txt .. ref5.txt (an empty line: no reference). */
static void write_fixture(void) {
  static char buf[8192];
  size_t n = 0;
  for (int i = 0; i < NIMG; i++) n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\n", fx_hyp[i]);
  tmp_file("hyp.txt", buf);
  for (int r = 0; r < 5; r++) {
    char name[16];
    n = 0;
    for (int i = 0; i < NIMG; i++)
      n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\n", fx_refs[i][r] ? fx_refs[i][r] : "");
    snprintf(name, sizeof name, "ref%d.txt", r + 1);
    tmp_file(name, buf);
  }
  n = 0;
  for (int i = 0; i < NIMG; i++)
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\n", fx_refs[i][0]);
  tmp_file("hyp_refs.txt", buf); /* system B of test_bootstrap */
}

/* The value after "key": in a JSON text. */
static double json_value(const char *json, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *p = strstr(json, pat);
  return p ? strtod(p + strlen(pat), NULL) : NAN;
}

static void test_cli(void) {
  static char out[65536], out2[65536];
  char args[3072], refs[1600];
  write_fixture();
  snprintf(refs, sizeof refs, "-r '%s' -r '%s' -r '%s' -r '%s' -r '%s'", test_tmp_path("ref1.txt"),
           test_tmp_path("ref2.txt"), test_tmp_path("ref3.txt"), test_tmp_path("ref4.txt"),
           test_tmp_path("ref5.txt"));
  const char *hyp = test_tmp_path("hyp.txt");

  snprintf(args, sizeof args, "eval cider %s --hyp '%s'", refs, hyp);
  int rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "exit %d: %s", rc, out);
  EXPECT(!strcmp(out, "CIDEr-D = 280.03 (12 images)\n"
                      "nrefs:var|tok:ptb|sigma:6|version:coco-caption\n"),
         "output:\n%s", out);

  snprintf(args, sizeof args, "eval cider %s --hyp '%s' --json", refs, hyp);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "--json exit %d: %s", rc, out);
  EXPECT(out[0] == '{' && strstr(out, "}\n"), "not one JSON object:\n%s", out);
  EXPECT_CONTAINS(out, "\"name\": \"CIDEr-D\"");
  EXPECT_CONTAINS(out, "\"score\": 280.03,");
  EXPECT_CONTAINS(out, "\"signature\": \"nrefs:var|tok:ptb|sigma:6|version:coco-caption\"");
  EXPECT_CONTAINS(out, "\"images\": 12");
  EXPECT_CONTAINS(out, "\"sigma\": \"6\"");
  EXPECT_REL(json_value(out, "score_full"), fx_five);

  /* --sigma reaches the plugin and its signature; one reference file: nrefs:1. */
  snprintf(args, sizeof args, "eval cider %s --hyp '%s' --sigma 2.5 --json", refs, hyp);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "exit %d: %s", rc, out);
  EXPECT_REL(json_value(out, "score_full"), fx_sigma25);
  EXPECT_CONTAINS(out, "|sigma:2.5|");
  snprintf(args, sizeof args, "eval cider -r '%s' -i '%s' -j", test_tmp_path("ref1.txt"), hyp);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "exit %d: %s", rc, out);
  EXPECT_REL(json_value(out, "score_full"), fx_one);
  EXPECT_CONTAINS(out, "\"nrefs\": \"1\"");

  /* Hand-worked (g) from files: an empty reference line is an absent reference. */
  const char *ga = tmp_file("ga.txt", "\ndog ran\n"), *gb = tmp_file("gb.txt", "cat sat down\n\n");
  const char *gh = tmp_file("gh.txt", "cat sat down\ndog ran\n");
  snprintf(args, sizeof args, "eval cider -r '%s' -r '%s' -i '%s'", ga, gb, gh);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "exit %d: %s", rc, out);
  EXPECT(!strcmp(out, "CIDEr-D = 625.00 (2 images)\n"
                      "nrefs:1|tok:ptb|sigma:6|version:coco-caption\n"),
         "%s", out);

  /* Bootstrap: a confidence interval for one system; the paired test of the references
   * (B) against the hypotheses (A); eval bootstrap --metric cider gives the same. */
  snprintf(args, sizeof args, "eval cider %s -i '%s' -b 100 --seed 3", refs, hyp);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "CIDEr-D = 280.03 (\xce\xbc = ");
  EXPECT_CONTAINS(out, "\nnrefs:var|bs:100|seed:3|tok:ptb|sigma:6|version:coco-caption\n");
  const char *hyp2 = test_tmp_path("hyp_refs.txt");
  for (int json = 0; json < 2; json++) {
    snprintf(args, sizeof args, "eval cider %s -i '%s' --hyp2 '%s' -b 300 --seed 5%s", refs, hyp,
             hyp2, json ? " --json" : "");
    rc = test_run_intrus(NULL, args, out, sizeof out);
    EXPECT(rc == 0, "--hyp2 exit %d: %s", rc, out);
    snprintf(args, sizeof args, "eval bootstrap --metric cider %s --hyp '%s' --hyp '%s' -n 300 "
             "--seed 5%s", refs, hyp, hyp2, json ? " --json" : "");
    rc = test_run_intrus(NULL, args, out2, sizeof out2);
    EXPECT(rc == 0 && !strcmp(out, out2), "eval bootstrap (json %d) exit %d:\n%s\nagainst "
           "eval cider --hyp2:\n%s", json, rc, out2, out);
  }
  /* (the JSON run) B wins in (nearly) every resample; p as eval.h defines it. */
  double p = json_value(out, "p_value"), bb = json_value(out, "b_better");
  EXPECT(bb >= 295 && p <= 6.0 / 301, "B better in %g of 300, p = %g", bb, p);
  EXPECT_NEAR(p, (300 - bb + 1) / 301, 1e-12);
  /* Identical systems: B > A in none, p = 1. */
  snprintf(args, sizeof args, "eval bootstrap -m cider %s -i '%s' -i '%s' -n 100", refs, hyp, hyp);
  rc = test_run_intrus(NULL, args, out, sizeof out);
  EXPECT(rc == 0, "exit %d: %s", rc, out);
  EXPECT_CONTAINS(out, "paired bootstrap: B > A in 0 of 100 resamples; p = 1.0000 ");

  /* Errors. Usage: exit 2, naming the option. */
  snprintf(args, sizeof args, "eval cider %s", refs);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "no --hyp: %s", out);
  EXPECT_CONTAINS(out, "--hyp");
  snprintf(args, sizeof args, "eval cider -i '%s'", hyp);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "no --ref: %s", out);
  EXPECT_CONTAINS(out, "--ref");
  const char *bad_sigma[] = {"0", "-1", "six", "inf", ""};
  for (size_t k = 0; k < sizeof bad_sigma / sizeof bad_sigma[0]; k++) {
    snprintf(args, sizeof args, "eval cider %s -i '%s' --sigma '%s'", refs, hyp, bad_sigma[k]);
    EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "--sigma %s: %s", bad_sigma[k], out);
    EXPECT_CONTAINS(out, "--sigma wants a positive number");
  }
  snprintf(args, sizeof args, "eval cider %s -i '%s' --tok 13a", refs, hyp);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "--tok: %s", out);
  EXPECT_CONTAINS(out, "tok");
  snprintf(args, sizeof args, "eval cider %s -i '%s' -b 0", refs, hyp);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "-b 0: %s", out);
  EXPECT_CONTAINS(out, "--bootstrap wants");
  snprintf(args, sizeof args, "eval cider %s -i '%s' -i '%s'", refs, hyp, hyp);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "--hyp twice: %s", out);
  EXPECT_CONTAINS(out, "--hyp given twice");
  snprintf(args, sizeof args, "eval bootstrap -m cider %s -i '%s' -i '%s' -n 0", refs, hyp, hyp);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "-n 0: %s", out);
  EXPECT_CONTAINS(out, "intrus eval bootstrap: --samples wants");
  snprintf(args, sizeof args, "eval bootstrap -m cider %s -i '%s' -i '%s' -b 5", refs, hyp, hyp);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 2, "-b: %s", out);
  EXPECT_CONTAINS(out, "'intrus eval cider'");
  /* Files: exit 5 naming the file. */
  snprintf(args, sizeof args, "eval cider -r '%s' -i '%s'", test_tmp_path("nope.txt"), hyp);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 5, "missing file: %s", out);
  EXPECT_CONTAINS(out, "nope.txt");
  const char *short_hyp = tmp_file("short.txt", "a dog\n");
  snprintf(args, sizeof args, "eval cider %s -i '%s'", refs, short_hyp);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 5, "line counts: %s", out);
  EXPECT_CONTAINS(out, "short.txt has 1 lines");
  const char *bad = tmp_file("bad.txt", "fine\nnot \xc3\x28 fine\n");
  snprintf(args, sizeof args, "eval cider -r '%s' -i '%s'", bad, gh);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 5, "invalid UTF-8: %s", out);
  EXPECT_CONTAINS(out, "bad.txt:2: invalid UTF-8");
  /* An image whose every reference line is empty. */
  const char *holes = tmp_file("holes.txt", "cat sat down\n\n");
  snprintf(args, sizeof args, "eval cider -r '%s' -i '%s'", holes, gh);
  EXPECT(test_run_intrus(NULL, args, out, sizeof out) == 5, "no reference: %s", out);
  EXPECT_CONTAINS(out, "gh.txt:2: CIDEr-D: the image has no reference");

  /* Help. */
  EXPECT(test_run_intrus(NULL, "eval cider --help", out, sizeof out) == 0, "help");
  EXPECT_CONTAINS(out, "--sigma");
  EXPECT(test_run_intrus(NULL, "eval --help", out, sizeof out) == 0, "eval --help");
  EXPECT_CONTAINS(out, "cider");
  EXPECT(test_run_intrus(NULL, "eval bootstrap --help", out, sizeof out) == 0, "help");
  EXPECT_CONTAINS(out, "cider");
}

int main(void) {
  struct intrus_plugin_search *search = intrus_plugin_search_create();
  intrus_plugin_search_add_defaults(search);
  struct intrus_error err = {0};
  if (intrus_plugin_load(search, INTRUS_KIND_EVALUATOR, "cider", &plugin, &err) != INTRUS_OK) {
    fprintf(stderr, "cannot load the CIDEr plugin: %s\n", err.msg);
    intrus_plugin_search_free(search);
    return 1;
  }
  vt = intrus_plugin_descriptor(plugin)->vtable;
  EXPECT(vt->prepare != NULL, "CIDEr-D needs prepare");
  lexer = ptb_lexer_create();
  if (!lexer || !test_make_tmpdir("/tmp/test_cider.XXXXXX")) return 99;

  test_corenlp_gold();
  test_coco_tokens();
  test_hand_worked();
  test_reference_fixtures();
  test_settings_and_errors();
  test_bootstrap();
  test_cli();

  test_remove_tmpdir();
  ptb_lexer_free(lexer);
  intrus_plugin_close(plugin);
  intrus_plugin_search_free(search);
  return test_finish("test_cider");
}

/* Order analysis: relative generation index by word class (order_stats.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "base/xalloc.h"
#include "order_stats.h"

/* Closed-class words: articles and determiners, pronouns, prepositions, conjunctions,
 * auxiliary and modal verbs, particles; lower case (words are case-folded first). */
static const char *const words_en[] = {
    "a", "an", "the", "this", "that", "these", "those", "some", "any", "no", "each", "every",
    "all", "both", "either", "neither", "another", "other", "such", "much", "many", "more",
    "most", "few", "less", "i", "me", "my", "mine", "you", "your", "yours", "he", "him", "his",
    "she", "her", "hers", "it", "its", "we", "us", "our", "ours", "they", "them", "their",
    "theirs", "myself", "yourself", "himself", "herself", "itself", "ourselves", "themselves",
    "who", "whom", "whose", "which", "what", "where", "when", "why", "how", "of", "in", "on",
    "at", "by", "to", "from", "with", "without", "about", "above", "below", "over", "under",
    "into", "onto", "out", "up", "down", "off", "through", "during", "before", "after",
    "between", "among", "against", "within", "along", "across", "behind", "beyond", "near",
    "since", "until", "upon", "via", "per", "than", "as", "and", "or", "but", "nor", "so",
    "yet", "for", "if", "then", "because", "while", "although", "though", "whether", "unless",
    "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "have",
    "has", "had", "will", "would", "shall", "should", "can", "could", "may", "might", "must",
    "not", "there", "here", "also", "only", "just", "very", "too", "again", "'s", "n't", NULL};
static const char *const words_de[] = {
    "der", "die", "das", "des", "dem", "den", "ein", "eine", "einer", "eines", "einem",
    "einen", "kein", "keine", "keiner", "keines", "keinem", "keinen", "dieser", "diese",
    "dieses", "diesem", "diesen", "jener", "jene", "jenes", "jeder", "jede", "jedes",
    "jedem", "jeden", "alle", "alles", "allen", "aller", "welcher", "welche", "welches",
    "welchem", "welchen", "ich", "du", "er", "sie", "es", "wir", "ihr", "mich", "dich", "sich",
    "uns", "euch", "mir", "dir", "ihm", "ihn", "ihnen", "mein", "meine", "meiner", "meines",
    "meinem", "meinen", "dein", "deine", "deinem", "deinen", "sein", "seine", "seiner",
    "seines", "seinem", "seinen", "ihre", "ihrer", "ihres", "ihrem", "ihren", "unser",
    "unsere", "unserem", "unseren", "euer", "eure", "man", "was", "wer", "wen", "wem",
    "wessen", "wo", "wann", "warum", "wie", "woher", "wohin", "zu", "zum", "zur", "von", "vom",
    "mit", "bei", "beim", "aus", "auf", "an", "am", "im", "in", "ins", "für", "über", "unter",
    "vor", "nach", "seit", "bis", "durch", "gegen", "ohne", "um", "zwischen", "hinter",
    "neben", "während", "wegen", "statt", "innerhalb", "außerhalb", "pro", "als", "und",
    "oder", "aber", "sondern", "denn", "doch", "wenn", "ob", "dass", "daß", "weil", "da",
    "damit", "falls", "obwohl", "sowie", "bzw", "ist", "sind", "war", "waren", "bin", "bist",
    "sei", "wird", "werden", "wurde", "wurden", "worden", "hat", "haben", "hatte", "hatten",
    "habe", "kann", "können", "konnte", "konnten", "muss", "müssen", "soll", "sollen",
    "sollte", "darf", "dürfen", "will", "wollen", "möchte", "möchten", "nicht", "noch",
    "schon", "auch", "nur", "so", "sehr", "hier", "dort", "dann", "nun", "ja", "nein", NULL};
static const char *const words_ru[] = {
    "и", "а", "но", "или", "да", "ни", "же", "ли", "бы", "не", "что", "чтобы", "как", "если",
    "когда", "где", "куда", "откуда", "почему", "зачем", "чем", "так", "также", "тоже",
    "только", "уже", "ещё", "еще", "вот", "там", "тут", "здесь", "в", "во", "на", "с", "со",
    "к", "ко", "по", "за", "из", "от", "до", "о", "об", "обо", "у", "для", "при", "без",
    "над", "под", "про", "через", "между", "перед", "после", "около", "вместо", "я", "ты",
    "он", "она", "оно", "мы", "вы", "они", "меня", "мне", "мной", "тебя", "тебе", "тобой",
    "его", "него", "ему", "нему", "им", "ним", "её", "ее", "неё", "нее", "ей", "ней", "нас",
    "нам", "нами", "вас", "вам", "вами", "их", "них", "ими", "ними", "себя", "себе", "собой",
    "мой", "моя", "моё", "мое", "мои", "твой", "твоя", "твои", "свой", "своя", "своё", "свое",
    "свои", "своих", "своим", "наш", "наша", "наши", "ваш", "ваша", "ваши", "этот", "эта",
    "это", "эти", "этого", "этой", "этом", "этих", "этим", "тот", "та", "то", "те", "того",
    "той", "том", "тех", "тем", "весь", "вся", "всё", "все", "всех", "всем", "который",
    "которая", "которое", "которые", "которого", "которой", "котором", "которых", "кто",
    "быть", "был", "была", "было", "были", "есть", "будет", "будут", "может", "могут",
    "можно", "нужно", "нет", "более", "менее", NULL};

static const char *const *word_list(const char *lang) {
  if (!lang) return NULL;
  if (strncmp(lang, "en", 2) == 0) return words_en;
  if (strncmp(lang, "de", 2) == 0) return words_de;
  if (strncmp(lang, "ru", 2) == 0) return words_ru;
  return NULL;
}

bool word_list_known(const char *lang) {
  const char *const *l = word_list(lang);
  return l != NULL && (lang[2] == '\0' || lang[2] == '-' || lang[2] == '_');
}

const char *word_class_name(enum word_class c, bool have_list) {
  switch (c) {
  case WORD_PUNCT: return "punctuation";
  case WORD_FUNCTION: return "function words";
  default: return have_list ? "content words" : "words";
  }
}

static bool all_punct(const char *w) {
  const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)w;
  utf8proc_ssize_t left = (utf8proc_ssize_t)strlen(w);
  if (left == 0) return false;
  while (left > 0) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0) return false;
    utf8proc_category_t c = utf8proc_category(cp);
    if (c < UTF8PROC_CATEGORY_PC || c > UTF8PROC_CATEGORY_SO) return false;
    p += n;
    left -= n;
  }
  return true;
}

enum word_class word_classify(const char *word, const char *lang) {
  if (all_punct(word)) return WORD_PUNCT;
  const char *const *list = word_list_known(lang) ? word_list(lang) : NULL;
  if (!list) return WORD_CONTENT;
  utf8proc_uint8_t *folded = NULL;
  if (utf8proc_map((const utf8proc_uint8_t *)word, 0, &folded,
                   UTF8PROC_NULLTERM | UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD) < 0)
    return WORD_CONTENT;
  enum word_class c = WORD_CONTENT;
  for (size_t i = 0; list[i]; i++)
    if (strcmp((const char *)folded, list[i]) == 0) c = WORD_FUNCTION;
  free(folded);
  return c;
}

static const char joiner[] = "\xef\xbf\xad"; /* U+FFED, INTRUS_JOINER */

struct piece {
  char *text;
  long step;
};

/* One sentence's pieces, in output order, joined into words with their relative
 * generation indices. */
static void add_sentence(const struct piece *p, long n, struct order_words *w) {
  w->sentences++;
  if (n < 2) {
    w->skipped++;
    return;
  }
  xgrow((void **)&w->sent_start, &w->sent_cap, (size_t)w->nsent + 2, sizeof *w->sent_start,
        256);
  w->sent_start[w->nsent] = w->nwords;
  char *word = xmalloc(4096);
  for (long j = 0; j < n;) {
    size_t len = 0;
    long first = p[j].step;
    for (;;) {
      const char *t = p[j].text;
      if (strncmp(t, joiner, 3) == 0) t += 3;
      size_t tl = strlen(t);
      bool more = tl >= 2 && strcmp(t + tl - 2, "@@") == 0;
      if (more) tl -= 2;
      if (len + tl < 4095) {
        memcpy(word + len, t, tl);
        len += tl;
      }
      if (p[j].step < first) first = p[j].step;
      j++;
      if (!more || j == n) break;
    }
    word[len] = '\0';
    size_t cap = w->word_cap;
    xgrow((void **)&w->word, &w->word_cap, (size_t)w->nwords + 1, sizeof *w->word, 1024);
    if (w->word_cap != cap) w->rel = xrealloc(w->rel, w->word_cap * sizeof *w->rel);
    w->word[w->nwords] = xstrdup(word);
    w->rel[w->nwords] = (double)first / (double)(n - 1);
    w->nwords++;
  }
  free(word);
  w->nsent++;
  w->sent_start[w->nsent] = w->nwords;
}

/* The steps of a sentence of np pieces are 0..np-1 (a trajectory inserts one per step). */
static enum intrus_status close_sentence(const char *path, long sentence, const struct piece *p,
                                         long np, struct order_words *w,
                                         struct intrus_error *err) {
  for (long j = 0; j < np; j++)
    if (p[j].step >= np)
      return intrus_error_set(err, INTRUS_ERR_DATA, "%s: sentence %ld: step %ld of a %ld-token "
                              "output", path, sentence, p[j].step, np);
  add_sentence(p, np, w);
  return INTRUS_OK;
}

enum intrus_status order_words_read(const char *path, struct order_words *w,
                                    struct intrus_error *err) {
  FILE *f = fopen(path, "r");
  if (!f) return intrus_error_set(err, INTRUS_ERR_IO, "%s: %s", path, strerror(errno));
  static const char header[] = "sentence\tposition\ttoken\tstep\trelative_index";
  char *line = NULL;
  size_t cap = 0, np = 0, pcap = 0;
  ssize_t len;
  long sentence = -1, line_no = 0;
  struct piece *p = NULL;
  enum intrus_status st = INTRUS_OK;
  while (!st && (len = getline(&line, &cap, f)) >= 0) {
    line_no++;
    if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
    if (line_no == 1) {
      if (strcmp(line, header) != 0)
        st = intrus_error_set(err, INTRUS_ERR_DATA,
                              "%s:1: not an order.tsv of intrus decode --trace (its header is "
                              "'sentence position token step relative_index', tab-separated)",
                              path);
      continue;
    }
    char *fld[5];
    int nf = 0;
    for (char *c = line; nf < 5; nf++) {
      fld[nf] = c;
      char *tab = strchr(c, '\t');
      if (!tab) {
        nf++;
        break;
      }
      *tab = '\0';
      c = tab + 1;
    }
    char *end1 = NULL, *end2 = NULL, *end3 = NULL;
    long sent = nf == 5 ? strtol(fld[0], &end1, 10) : 0;
    long pos = nf == 5 ? strtol(fld[1], &end2, 10) : 0;
    long step = nf == 5 ? strtol(fld[3], &end3, 10) : 0;
    if (nf != 5 || *end1 || *end2 || *end3 || sent < 1 || pos < 1 || step < 0 ||
        sent < sentence || (sent == sentence && pos != (long)np + 1) ||
        (sent != sentence && pos != 1)) {
      st = intrus_error_set(err, INTRUS_ERR_DATA,
                            "%s:%ld: not a row of order.tsv (sentence, position counting from "
                            "1 within it, token, step, relative index)",
                            path, line_no);
      break;
    }
    if (sent != sentence) {
      if (sentence >= 0 && (st = close_sentence(path, sentence, p, (long)np, w, err)))
        break;
      for (size_t j = 0; j < np; j++) free(p[j].text);
      sentence = sent;
      np = 0;
    }
    if (np == pcap) {
      pcap = pcap ? 2 * pcap : 64;
      p = xrealloc(p, pcap * sizeof *p);
    }
    p[np].text = xstrdup(fld[2]);
    p[np].step = step;
    np++;
  }
  if (!st && line_no == 0)
    st = intrus_error_set(err, INTRUS_ERR_DATA, "%s: empty (an order.tsv has a header line)",
                          path);
  if (!st && ferror(f)) st = intrus_error_set(err, INTRUS_ERR_IO, "%s: read error", path);
  if (!st && sentence >= 0) st = close_sentence(path, sentence, p, (long)np, w, err);
  for (size_t j = 0; j < np; j++) free(p[j].text);
  free(p);
  free(line);
  fclose(f);
  return st;
}

void order_words_free(struct order_words *w) {
  for (long i = 0; i < w->nwords; i++) free(w->word[i]);
  free(w->word);
  free(w->rel);
  free(w->sent_start);
  memset(w, 0, sizeof *w);
}

double order_words_tau(const struct order_words *w, long a, long b) {
  /* All pairs (O(n^2)): outputs are at most a few hundred words. */
  long conc = 0, disc = 0;
  for (long i = a; i < b; i++)
    for (long j = i + 1; j < b; j++) {
      if (w->rel[i] < w->rel[j]) conc++;
      else if (w->rel[i] > w->rel[j]) disc++;
    }
  long pairs = (b - a) * (b - a - 1) / 2;
  return (double)(conc - disc) / (double)pairs;
}

void order_stats_add(struct order_stats *s, const struct order_words *w, const int *cls) {
  s->sentences += w->sentences;
  s->skipped += w->skipped;
  for (long i = 0; i < w->nwords; i++) {
    int c = cls[i];
    if (c < 0 || c >= ORDER_MAX_CLASSES) continue;
    s->n[c]++;
    s->sum[c] += w->rel[i];
    s->sumsq[c] += w->rel[i] * w->rel[i];
    s->words++;
  }
  for (long k = 0; k < w->nsent; k++) {
    long a = w->sent_start[k], b = w->sent_start[k + 1];
    if (b - a < 2) continue;
    double tau = order_words_tau(w, a, b);
    s->tau_sum += tau;
    s->tau_sumsq += tau * tau;
    s->tau_n++;
    s->l2r += tau == 1.0;
    s->r2l += tau == -1.0;
  }
}

void order_words_classify(const struct order_words *w, const char *lang, int *cls) {
  for (long i = 0; i < w->nwords; i++) cls[i] = (int)word_classify(w->word[i], lang);
}

enum intrus_status order_stats_read(const char *path, const char *lang, struct order_stats *s,
                                    struct intrus_error *err) {
  struct order_words w;
  memset(&w, 0, sizeof w);
  enum intrus_status st = order_words_read(path, &w, err);
  if (!st) {
    int *cls = xmalloc(((size_t)w.nwords + 1) * sizeof *cls);
    order_words_classify(&w, lang, cls);
    order_stats_add(s, &w, cls);
    free(cls);
  }
  order_words_free(&w);
  return st;
}

/* The mean of n values from their sum and sum of squares, and 1.96 standard errors. */
static double mean_ci95(long n, double sum, double sumsq, double *ci95) {
  double mean = n ? sum / (double)n : NAN;
  double var = n > 1 ? (sumsq - n * mean * mean) / (double)(n - 1) : 0.0;
  *ci95 = n > 1 ? 1.96 * sqrt(var > 0 ? var : 0) / sqrt((double)n) : 0.0;
  return mean;
}

double order_stats_mean(const struct order_stats *s, int c, double *ci95) {
  return mean_ci95(s->n[c], s->sum[c], s->sumsq[c], ci95);
}

double order_stats_tau(const struct order_stats *s, double *ci95) {
  return mean_ci95(s->tau_n, s->tau_sum, s->tau_sumsq, ci95);
}

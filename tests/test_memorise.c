/* Memorisation end to end (issue 13): a left-to-right and an INTRUS model trained on the
 * same few real sentence pairs (the first 16 of the bundled en-de training split with 3
 * to 7 words on both sides; train = valid = test) reproduce them with the normal beam
 * search, BLEU >= 95. A model that cannot memorise a handful of sentences has a bug in
 * training or search. The full set (64 pairs, every decoder and order policy) is
 * scripts/memorise.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intrus/corpus.h"
#include "testutil.h"

#define PAIRS 16

static int words(const char *s) {
  int n = 0;
  for (const char *p = s; *p;) {
    while (*p == ' ') p++;
    if (!*p) break;
    n++;
    while (*p && *p != ' ') p++;
  }
  return n;
}

/* Writes the pairs as train/valid/test in dir. */
static int make_data(const char *dir) {
  char path[1024];
  char **en, **de;
  size_t ne, nd;
  struct intrus_error err = {0};
  snprintf(path, sizeof path, "%s/data/mt/en-de/train.en.gz", test_srcdir());
  if (intrus_lines_read(path, &en, &ne, &err)) return fprintf(stderr, "%s\n", err.msg), -1;
  snprintf(path, sizeof path, "%s/data/mt/en-de/train.de.gz", test_srcdir());
  if (intrus_lines_read(path, &de, &nd, &err)) return fprintf(stderr, "%s\n", err.msg), -1;
  static const char *const splits[] = {"train", "valid", "test"};
  FILE *f[6];
  for (int s = 0; s < 3; s++) {
    snprintf(path, sizeof path, "%s/%s.en", dir, splits[s]);
    f[2 * s] = fopen(path, "w");
    snprintf(path, sizeof path, "%s/%s.de", dir, splits[s]);
    f[2 * s + 1] = fopen(path, "w");
  }
  int got = 0;
  for (size_t i = 0; i < ne && i < nd && got < PAIRS; i++) {
    int a = words(en[i]), b = words(de[i]);
    if (a < 3 || a > 7 || b < 3 || b > 7) continue;
    for (int s = 0; s < 3; s++) {
      fprintf(f[2 * s], "%s\n", en[i]);
      fprintf(f[2 * s + 1], "%s\n", de[i]);
    }
    got++;
  }
  for (int s = 0; s < 6; s++) fclose(f[s]);
  intrus_lines_free(en, ne);
  intrus_lines_free(de, nd);
  return got;
}

static const char *common =
    "seed = 1;\n"
    "data: { kind = \"parallel\"; dir = \"data\"; src = \"en\"; tgt = \"de\"; bpe_merges = 100; "
    "joint_vocab = true; max_len = 64; };\n"
    "search: { beam = 4; batch_tokens = 2000; };\n";

static const char *l2r_model =
    "name = \"mem-l2r\";\n"
    "model: { d_model = 64; order = \"l2r\";\n"
    "  encoder: { plugin = \"transformer\"; layers = 1; heads = 4; ff = 128; dropout = 0.0; };\n"
    "  decoder: { plugin = \"autoregressive\"; layers = 1; heads = 4; ff = 128; dropout = 0.0;\n"
    "             tie_embeddings = true; };\n"
    "};\n"
    "train: { steps = 300; batch_tokens = 2000; lr = 3e-3; warmup = 50; clip = 1.0; "
    "log_every = 50; valid_every = 300; checkpoint_every = 300; };\n";

static const char *intrus_model =
    "name = \"mem-intrus\";\n"
    "model: { d_model = 32; canonical = true;\n"
    "  encoder: { plugin = \"transformer\"; layers = 1; heads = 2; ff = 64; dropout = 0.0; };\n"
    "  decoder: { plugin = \"insertion\"; layers = 1; heads = 2; ff = 64; dropout = 0.0; "
    "slots = \"pair\"; };\n"
    "};\n"
    "train: { batch_tokens = 2000; lr = 5e-3; warmup = 30; clip = 1.0; log_every = 50; "
    "valid_every = 600; checkpoint_every = 600;\n"
    "  phases = (\n"
    "    { name = \"pretrain\"; order = { plugin = \"uniform\"; }; loss = \"uniform\"; "
    "states = \"all\"; steps = 300; },\n"
    "    { name = \"sampled\"; order = { plugin = \"sampled\"; }; loss = \"main\"; "
    "states = \"all\"; steps = 300; }\n"
    "  );\n"
    "};\n";

static double run_bleu(const char *name, const char *model) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s.cfg", test_tmpdir, name);
  FILE *f = fopen(path, "w");
  fprintf(f, "%s%s", common, model);
  fclose(f);
  char args[700], out[1 << 16];
  snprintf(args, sizeof args, "run %s.cfg -o %s -q", name, name);
  int rc = test_run_intrus(test_tmpdir, args, out, sizeof out);
  EXPECT(rc == 0, "%s: exit %d: %s", name, rc, out);
  const char *b = strstr(out, "BLEU = ");
  EXPECT(b != NULL, "%s: no BLEU line: %s", name, out);
  double bleu = b ? atof(b + 7) : 0.0;
  printf("%s: BLEU %.2f on the %d pairs it was trained on\n", name, bleu, PAIRS);
  return bleu;
}

/* The JSON number after "key": in s (NAN when missing). */
static double json_num(const char *s, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\": ", key);
  const char *p = s ? strstr(s, k) : NULL;
  return p ? atof(p + strlen(k)) : NAN;
}

/* intrus analyze states on the memorised INTRUS model and its own pairs: a model that
 * writes them back knows when they are complete and where the missing words go; the
 * errors name the file or the decoder. */
static void analyze_states(void) {
  char out[1 << 16];
  int rc = test_run_intrus(test_tmpdir,
                           "analyze states mem-intrus.cfg -o mem-intrus -i data/train.en -r "
                           "data/train.de -O states.tsv --json -q",
                           out, sizeof out);
  EXPECT(rc == 0, "analyze states: exit %d: %s", rc, out);
  const char *complete = strstr(out, "\"complete\"");
  double n = json_num(complete, "states"), pf = json_num(complete, "p_finish"),
         loss = json_num(out, "loss_per_token");
  printf("analyze states: %.0f complete states, p(finish) %.3f there, %.3f per token\n", n, pf,
         loss);
  EXPECT(n == PAIRS, "analyze states: %g complete states for %d pairs: %s", n, PAIRS, out);
  EXPECT(pf > 0.5 && loss < 0.5, "analyze states: p(finish) %g on complete outputs, loss %g "
         "per token, for pairs the model writes back: %s", pf, loss, out);
  /* Every state of every pair as a row (after the header), each pair's states 0..n. */
  FILE *f = fopen(test_tmp_path("states.tsv"), "r");
  char line[256];
  int rows = -1, zeros = 0;
  while (f && fgets(line, sizeof line, f)) {
    int ln, k, len;
    if (rows++ >= 0 && sscanf(line, "%d\t%d\t%d", &ln, &k, &len) == 3 && k == 0) zeros++;
  }
  if (f) fclose(f);
  EXPECT(rows > 3 * PAIRS && zeros == PAIRS, "states.tsv: %d rows, %d of them k = 0", rows,
         zeros);
  /* A reference file of another length; a left-to-right model. */
  rc = test_run_intrus(test_tmpdir,
                       "analyze states mem-intrus.cfg -o mem-intrus -i data/train.en -r "
                       "mem-intrus.cfg -q",
                       out, sizeof out);
  EXPECT(rc == 5 && strstr(out, "data/train.en has 16 lines") && strstr(out, "must align"),
         "misaligned references: exit %d: %s", rc, out);
  rc = test_run_intrus(test_tmpdir,
                       "analyze states mem-l2r.cfg -o mem-l2r -i data/train.en -r data/train.de",
                       out, sizeof out);
  EXPECT(rc != 0 && strstr(out, "insertion"), "a left-to-right model: exit %d: %s", rc, out);
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-test-memorise-XXXXXX")) return 1;
  const char *dir = test_tmp_path("data");
  if (mkdir(dir, 0700) != 0) return 1;
  int got = make_data(dir);
  EXPECT(got == PAIRS, "found %d short pairs, want %d", got, PAIRS);
  double l2r = run_bleu("mem-l2r", l2r_model);
  EXPECT(l2r >= 95.0, "left-to-right model reproduces its training pairs at BLEU %.2f", l2r);
  double ins = run_bleu("mem-intrus", intrus_model);
  EXPECT(ins >= 95.0, "INTRUS model reproduces its training pairs at BLEU %.2f", ins);
  analyze_states();
  if (!getenv("INTRUS_TEST_KEEP") && test_remove_tmpdir() != 0) return 1;
  return test_finish("test_memorise");
}

/* BLEU inputs: the input is split at its first NUL byte into a hypothesis text and a
 * reference text (each one segment per line), scored with the eval_bleu plugin's
 * vtable (linked in) under every tokenizer: segment statistics, their sums, the score. */
#include "fuzz_util.h"
#include "intrus/config.h"
#include "intrus/plugin.h"

extern const struct intrus_plugin_desc eval_bleu_LTX_intrus_plugin_desc;

static char **split_lines(char *text, size_t *n) {
  size_t cap = 1;
  for (char *p = text; *p; p++) cap += *p == '\n';
  char **v = malloc(cap * sizeof *v);
  if (!v) abort();
  *n = 0;
  for (char *p = text; p;) {
    v[(*n)++] = p;
    p = strchr(p, '\n');
    if (p) *p++ = '\0';
  }
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const struct intrus_evaluator_vtable *vt = eval_bleu_LTX_intrus_plugin_desc.vtable;
  char *text = fuzz_string(data, size);
  size_t hl = strlen(text);
  char *refs_text = hl < size ? text + hl + 1 : text + size;
  size_t nh, nr;
  char **hyps = split_lines(text, &nh), **refs = split_lines(refs_text, &nr);
  static const char *const settings[] = {"tokenize = \"13a\";", "tokenize = \"char\"; lowercase = true;",
                                         "tokenize = \"none\"; smooth = \"floor\";",
                                         "smooth = \"add-k\"; effective_order = true;"};
  for (size_t k = 0; k < sizeof settings / sizeof settings[0]; k++) {
    struct intrus_error err = {0};
    struct intrus_config *cfg = intrus_config_load_string(settings[k], "fuzz", &err);
    void *self = NULL;
    if (!cfg || vt->create(intrus_config_root(cfg), &self, &err)) abort();
    intrus_config_free(cfg);
    int ss = vt->stats_size(self);
    double *sum = calloc((size_t)ss, sizeof *sum), *row = calloc((size_t)ss, sizeof *row);
    if (!sum || !row) abort();
    bool ok = true;
    for (size_t i = 0; i < nh && ok; i++) {
      const char *seg_refs[2] = {i < nr ? refs[i] : NULL, i + 1 < nr ? refs[i + 1] : ""};
      if (vt->segment_stats(self, hyps[i], seg_refs, 2, row, &err)) {
        ok = false;
        break;
      }
      for (int j = 0; j < ss; j++) sum[j] += row[j];
    }
    struct intrus_eval_scores sc;
    if (ok) (void)vt->score(self, sum, &sc, &err);
    free(sum);
    free(row);
    vt->destroy(self);
  }
  free(hyps);
  free(refs);
  free(text);
  return 0;
}

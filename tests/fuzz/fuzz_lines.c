/* Text and gzip line files (gzip is recognised by content): lines read, one file as both
 * sides of a parallel corpus, and every line through the tokenizer and back. */
#include "fuzz_util.h"
#include "intrus/corpus.h"
#include "intrus/text.h"

static struct intrus_tokenizer *tok;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct intrus_error err = {0};
  if (!tok && intrus_tokenizer_create("en", &tok, &err)) abort();
  const char *path = fuzz_path(".txt");
  fuzz_write(path, data, size);
  char **lines = NULL;
  size_t n = 0;
  if (!intrus_lines_read_any(path, &lines, &n, &err)) {
    struct intrus_str t = {0}, d = {0};
    for (size_t i = 0; i < n; i++)
      if (!intrus_tokenize(tok, lines[i], strlen(lines[i]), &t, &err))
        intrus_detokenize(t.s ? t.s : "", t.len, &d);
    intrus_str_free(&t);
    intrus_str_free(&d);
    intrus_lines_free(lines, n);
  }
  struct intrus_parallel_text p = {0};
  if (!intrus_parallel_read(path, path, &p, &err)) intrus_parallel_free(&p);
  return 0;
}

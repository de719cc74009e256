/* BPE codes files: the loader, then the codes applied to a few tokenized lines. */
#include "fuzz_util.h"
#include "intrus/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_path(".codes");
  fuzz_write(path, data, size);
  struct intrus_error err = {0};
  struct intrus_bpe *b = NULL;
  if (intrus_bpe_load(path, &b, &err)) return 0;
  static const char *const lines[] = {"lower newest widest", "a", "", "ﬁ ü 日本語 ab@@ cd",
                                      "l o w e r </w>"};
  struct intrus_str out = {0};
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
    intrus_bpe_apply(b, lines[i], strlen(lines[i]), &out);
  intrus_str_free(&out);
  intrus_bpe_free(b);
  return 0;
}

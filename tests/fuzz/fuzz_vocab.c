/* Vocabulary files: the loader, then lookups and encoding with what it loaded. */
#include "fuzz_util.h"
#include "intrus/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_path(".vocab");
  fuzz_write(path, data, size);
  struct intrus_error err = {0};
  struct intrus_vocab *v = NULL;
  if (intrus_vocab_load(path, &v, &err)) return 0;
  int n = intrus_vocab_size(v);
  for (int32_t id = -1; id <= n; id++) (void)intrus_vocab_token(v, id);
  static const char line[] = "the cat sat on the mat @@ </s> <unk>";
  int32_t ids[16];
  bool cut;
  (void)intrus_vocab_encode(v, line, sizeof line - 1, ids, 16, &cut);
  (void)intrus_vocab_id(v, "cat", 3);
  (void)intrus_vocab_fingerprint(v);
  intrus_vocab_free(v);
  return 0;
}

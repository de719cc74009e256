/* Experiment configs: libconfig text through the strict loader, the getters an
 * experiment is read with (data, search, unknown keys), the fingerprint and the
 * effective config written back. @include and data.distill (whose teacher is a file) are
 * refused here: a fuzzer would otherwise read whatever files they name. */
#include "fuzz_util.h"
#include "intrus/config.h"
#include "search/translate.h"
#include "text/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_string(data, size);
  if (strstr(text, "@include") || strstr(text, "distill")) {
    free(text);
    return 0;
  }
  struct intrus_error err = {0};
  struct intrus_config *c = intrus_config_load_string(text, "fuzz.cfg", &err);
  free(text);
  if (!c) return 0;
  const intrus_cfg *root = intrus_config_root(c), *g = NULL;
  const char *name;
  long long seed;
  struct translator t;
  (void)intrus_cfg_string(root, "name", "experiment", &name, &err);
  (void)intrus_cfg_int_range(root, "seed", 1, 0, INT64_MAX, &seed, &err);
  (void)translator_read_search(root, &t, &err);
  if (!intrus_cfg_group(root, "data", &g, &err) && g) {
    struct dataset d = {0};
    (void)dataset_configure(&d, g, "fuzz.cfg", NULL, &err);
    dataset_free(&d);
  }
  if (!intrus_cfg_group(root, "model", &g, &err) && g) {
    long long dm;
    (void)intrus_cfg_int_range(g, "d_model", 512, 1, 1 << 16, &dm, &err);
  }
  (void)intrus_cfg_check_unknown(root, &err);
  static const char *const paths[] = {"data", "model"};
  (void)intrus_config_fingerprint(c, paths, 2);
  (void)intrus_config_write(c, fuzz_path(".cfg"), &err);
  intrus_config_free(c);
  return 0;
}

/* Checkpoints: the reader, the record lookups, parameters and moments copied into a
 * fixed parameter set, the finiteness check, and the run-state records range-checked
 * as a resume does. The harness recomputes the trailing checksum of every input, so
 * mutations reach past it into the records and their values. */
#include "fuzz_util.h"
#include "intrus/checkpoint.h"
#include "intrus/params.h"
#include "intrus/rng.h"
#include "train/train_resume.h"

static struct intrus_params *params;

static void make_params(void) {
  struct intrus_error err = {0};
  params = intrus_params_create();
  int w[2] = {3, 4}, b[1] = {4};
  intrus_params_add(params, "enc.w", 2, w, INTRUS_INIT_GLOROT_UNIFORM, 1.0f);
  intrus_params_add(params, "enc.b", 1, b, INTRUS_INIT_ZEROS, 0.0f);
  if (intrus_params_finalize(params, 1, &err)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!params) make_params();
  uint8_t *buf = malloc(size ? size : 1);
  if (!buf) abort();
  memcpy(buf, data, size);
  if (size >= 32) {
    uint64_t sum = intrus_fnv1a(INTRUS_FNV_INIT, buf, size - 8);
    for (int i = 0; i < 8; i++) buf[size - 8 + i] = (uint8_t)(sum >> (8 * i));
  }
  const char *path = fuzz_path(".ckpt");
  fuzz_write(path, buf, size);
  free(buf);
  struct intrus_error err = {0};
  struct intrus_ckpt *ck = NULL;
  if (intrus_ckpt_read(path, false, 0, &ck, &err)) return 0;
  int ndim, shape[4];
  (void)intrus_ckpt_tensor(ck, "param/enc.w", &ndim, shape);
  static const int patience[2] = {3, 5};
  struct resume_limits lim = {.total_steps = 100, .phases = 2, .patience = patience};
  struct resume_state rs;
  (void)resume_state_read(ck, path, &lim, &rs, &err);
  lim.phases = 0;
  (void)resume_state_read(ck, path, &lim, &rs, &err);
  if (!intrus_ckpt_check_finite(ck, params, true, &err))
    (void)intrus_ckpt_get_params(ck, params, true, &err);
  intrus_ckpt_free(ck);
  return 0;
}

/* Checkpoints: the exact byte layout, round trips of parameter sets and integers, every
 * damaged or mismatched file the reader must refuse (each with its own message), and
 * writes that fail part-way without touching the checkpoint already in place.
 *
 * The version field is checked before the checksum (a later format may checksum
 * differently), so the version-99 case needs no checksum fix-up. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "intrus/checkpoint.h"
#include "intrus/params.h"
#include "intrus/rng.h"
#include "testutil.h"

#define FP 0x1122334455667788ULL

/* ---- parameter sets ------------------------------------------------------------ */

enum { P_WIDE_ENC = 1, P_EXTRA = 2, P_NO_BIAS = 4 };

/* A small model; flags vary its shape. The moments get values that depend on the seed,
 * and a few floats get bit patterns a careless float round trip would change. */
static struct intrus_params *make_params(uint64_t seed, int flags) {
  struct intrus_params *p = intrus_params_create();
  int enc[2] = {3, 4}, bias[1] = {4}, conv[4] = {2, 3, 2, 2}, big[2] = {300, 257}, dec[2] = {4, 4};
  if (flags & P_WIDE_ENC) {
    enc[0] = 4;
    enc[1] = 3;
  }
  intrus_params_add(p, "enc.w", 2, enc, INTRUS_INIT_GLOROT_UNIFORM, 1.0f);
  if (!(flags & P_NO_BIAS)) intrus_params_add(p, "enc.b", 1, bias, INTRUS_INIT_ZEROS, 0.0f);
  intrus_params_add(p, "conv.w", 4, conv, INTRUS_INIT_NORMAL, 0.5f);
  intrus_params_add(p, "big", 2, big, INTRUS_INIT_UNIFORM, 0.1f);
  if (flags & P_EXTRA) intrus_params_add(p, "dec.w", 2, dec, INTRUS_INIT_UNIFORM, 0.1f);
  struct intrus_error err;
  if (intrus_params_finalize(p, seed, &err) != INTRUS_OK) {
    fprintf(stderr, "%s\n", err.msg);
    abort();
  }
  float *m = intrus_params_adam_m(p), *v = intrus_params_adam_v(p);
  struct intrus_rng rng;
  intrus_rng_seed(&rng, seed + 1);
  for (size_t i = 0; i < intrus_params_numel(p); i++) {
    m[i] = intrus_rng_normal(&rng);
    v[i] = intrus_rng_uniform(&rng);
  }
  float *w = intrus_params_at(p, 0)->data;
  const uint32_t odd[4] = {0x80000000u /* -0 */, 0x7fc12345u /* NaN with payload */,
                           0x00000001u /* smallest subnormal */, 0xff800000u /* -inf */};
  memcpy(w, odd, sizeof odd);
  return p;
}

/* Bitwise equality of the parameters' values (and moments) of two sets of one layout. */
static bool same_params(struct intrus_params *a, struct intrus_params *b, bool moments) {
  float *ba[3] = {intrus_params_values(a), intrus_params_adam_m(a), intrus_params_adam_v(a)};
  float *bb[3] = {intrus_params_values(b), intrus_params_adam_m(b), intrus_params_adam_v(b)};
  if (intrus_params_count(a) != intrus_params_count(b)) return false;
  for (size_t i = 0; i < intrus_params_count(a); i++) {
    intrus_tensor *ta = intrus_params_at(a, i), *tb = intrus_params_at(b, i);
    size_t oa = (size_t)(ta->data - ba[0]), ob = (size_t)(tb->data - bb[0]);
    if (ta->n != tb->n) return false;
    for (int k = 0; k < (moments ? 3 : 1); k++)
      if (memcmp(ba[k] + oa, bb[k] + ob, ta->n * sizeof(float)) != 0) return false;
  }
  return true;
}

/* A copy of all three blocks, to show that a refused load changed nothing. */
static float *snapshot(struct intrus_params *p) {
  size_t n = intrus_params_numel(p);
  float *s = malloc(3 * n * sizeof(float) + 1);
  if (!s) abort();
  memcpy(s, intrus_params_values(p), n * sizeof(float));
  memcpy(s + n, intrus_params_adam_m(p), n * sizeof(float));
  memcpy(s + 2 * n, intrus_params_adam_v(p), n * sizeof(float));
  return s;
}

static bool unchanged(struct intrus_params *p, const float *s) {
  size_t n = intrus_params_numel(p);
  return !memcmp(s, intrus_params_values(p), n * sizeof(float)) &&
         !memcmp(s + n, intrus_params_adam_m(p), n * sizeof(float)) &&
         !memcmp(s + 2 * n, intrus_params_adam_v(p), n * sizeof(float));
}

/* Writes p (with moments) and a few integers to path. */
static enum intrus_status write_model(const char *path, struct intrus_params *p, uint64_t step,
                                      struct intrus_error *err) {
  struct intrus_ckpt_writer *w;
  enum intrus_status st = intrus_ckpt_begin(path, FP, &w, err);
  if (st != INTRUS_OK) return st;
  if ((st = intrus_ckpt_put_params(w, p, true, err)) != INTRUS_OK ||
      (st = intrus_ckpt_put_u64(w, "step", step, err)) != INTRUS_OK ||
      (st = intrus_ckpt_put_u64(w, "max", UINT64_MAX, err)) != INTRUS_OK) {
    intrus_ckpt_abort(w);
    return st;
  }
  return intrus_ckpt_commit(w, err);
}

/* ---- files made byte by byte ---------------------------------------------------- */

struct bytes {
  unsigned char b[4096];
  size_t n;
};

static void b_u8(struct bytes *b, unsigned v) { b->b[b->n++] = (unsigned char)v; }
static void b_u32(struct bytes *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b_u8(b, (v >> (8 * i)) & 0xff);
}
static void b_u64(struct bytes *b, uint64_t v) {
  for (int i = 0; i < 8; i++) b_u8(b, (unsigned)(v >> (8 * i)) & 0xff);
}
static void b_raw(struct bytes *b, const void *p, size_t n) {
  memcpy(b->b + b->n, p, n);
  b->n += n;
}
static void b_header(struct bytes *b, uint64_t fp, uint32_t count) {
  b->n = 0;
  b_raw(b, "INTRUSCK", 8);
  b_u32(b, 1);
  b_u64(b, fp);
  b_u32(b, count);
}
static void b_name(struct bytes *b, unsigned type, const char *name, size_t len) {
  b_u8(b, type);
  b_u32(b, (uint32_t)len);
  b_raw(b, name, len);
}
static void b_checksum(struct bytes *b) { b_u64(b, intrus_fnv1a(INTRUS_FNV_INIT, b->b, b->n)); }

/* ---- expectations --------------------------------------------------------------- */

#define EXPECT_REFUSED(path, want, needle) expect_refused(__LINE__, path, want, needle)

static void expect_refused(int line, const char *path, enum intrus_status want,
                           const char *needle) {
  struct intrus_ckpt *c = (struct intrus_ckpt *)&c; /* must be reset to NULL */
  struct intrus_error err = {INTRUS_OK, ""};
  enum intrus_status st = intrus_ckpt_read(path, true, FP, &c, &err);
  EXPECT(st == want && c == NULL, "line %d: status %s, want %s (%s)", line,
         intrus_status_name(st), intrus_status_name(want), err.msg);
  EXPECT(strncmp(err.msg, path, strlen(path)) == 0, "line %d: message does not start with the "
         "path: %s", line, err.msg);
  EXPECT(strstr(err.msg, needle) != NULL, "line %d: \"%s\" does not contain \"%s\"", line,
         err.msg, needle);
  if (st == INTRUS_OK) intrus_ckpt_free(c);
}

static void write_variant(const char *path, const unsigned char *good, size_t len,
                          size_t at, int xor_mask) {
  unsigned char *b = malloc(len + 1);
  if (!b) abort();
  memcpy(b, good, len);
  if (at < len) b[at] ^= (unsigned char)xor_mask;
  test_write_bytes(path, b, len);
  free(b);
}

/* ---- tests ---------------------------------------------------------------------- */

/* The writer's bytes match the layout documented in checkpoint.h exactly. */
static void test_layout(void) {
  const char *path = test_tmp_path("layout.ckpt");
  struct intrus_error err;
  struct intrus_ckpt_writer *w;
  const int shape[1] = {2};
  const float data[2] = {1.0f, -2.5f};
  EXPECT(intrus_ckpt_begin(path, FP, &w, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_put_tensor(w, "t", 1, shape, data, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_put_u64(w, "n", 5, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_commit(w, &err) == INTRUS_OK, "%s", err.msg);

  struct bytes want;
  b_header(&want, FP, 2);
  b_name(&want, 1, "t", 1);
  b_u32(&want, 1);
  b_u32(&want, 2);
  b_u32(&want, 0x3f800000u);
  b_u32(&want, 0xc0200000u);
  b_name(&want, 2, "n", 1);
  b_u64(&want, 5);
  b_checksum(&want);
  size_t len = 0;
  unsigned char *got = test_read_bytes(path, &len);
  EXPECT(got && len == want.n && memcmp(got, want.b, len) == 0,
         "file of %zu bytes differs from the documented layout (%zu bytes)", len, want.n);
  free(got);

  /* An empty checkpoint is a header and a checksum. */
  EXPECT(intrus_ckpt_begin(path, 7, &w, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_commit(w, &err) == INTRUS_OK, "%s", err.msg);
  struct intrus_ckpt *c = NULL;
  EXPECT(intrus_ckpt_read(path, true, 7, &c, &err) == INTRUS_OK, "%s", err.msg);
  if (c) {
    EXPECT(intrus_ckpt_fingerprint(c) == 7, "fingerprint");
    EXPECT(!intrus_ckpt_u64(c, "n", NULL), "record in an empty checkpoint");
    intrus_ckpt_free(c);
  }
  got = test_read_bytes(path, &len);
  EXPECT(len == 32, "empty checkpoint has %zu bytes", len);
  free(got);
}

static void test_round_trip(void) {
  const char *path = test_tmp_path("model.ckpt");
  struct intrus_error err;
  struct intrus_params *a = make_params(1, 0), *b = make_params(2, 0);
  EXPECT(!same_params(a, b, false), "differently seeded models are equal");
  EXPECT(write_model(path, a, 12345, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(test_count_temp_files() == 0, "temporary file left after commit");

  struct intrus_ckpt *c = NULL;
  EXPECT(intrus_ckpt_read(path, true, FP, &c, &err) == INTRUS_OK, "%s", err.msg);
  if (!c) goto out;
  EXPECT(intrus_ckpt_fingerprint(c) == FP, "fingerprint");
  uint64_t v = 0;
  EXPECT(intrus_ckpt_u64(c, "step", &v) && v == 12345, "step = %" PRIu64, v);
  EXPECT(intrus_ckpt_u64(c, "max", &v) && v == UINT64_MAX, "max = %" PRIu64, v);
  EXPECT(!intrus_ckpt_u64(c, "absent", &v), "absent u64 found");
  EXPECT(!intrus_ckpt_u64(c, "param/big", &v), "tensor read as u64");
  EXPECT(intrus_ckpt_tensor(c, "step", NULL, NULL) == NULL, "u64 read as tensor");
  EXPECT(intrus_ckpt_tensor(c, "param/absent", NULL, NULL) == NULL, "absent tensor found");
  int ndim = 0, shape[4] = {0};
  const float *t = intrus_ckpt_tensor(c, "param/conv.w", &ndim, shape);
  EXPECT(t && ndim == 4 && shape[0] == 2 && shape[1] == 3 && shape[2] == 2 && shape[3] == 2,
         "conv.w: ndim %d shape %d %d %d %d", ndim, shape[0], shape[1], shape[2], shape[3]);
  EXPECT(t && ((uintptr_t)t & 15) == 0 && !memcmp(t, intrus_params_find(a, "conv.w")->data,
                                                 24 * sizeof(float)),
         "conv.w data");

  /* Values only: the moments of b stay its own. */
  float *before = snapshot(b);
  EXPECT(intrus_ckpt_get_params(c, b, false, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(same_params(a, b, false), "values differ after loading");
  size_t n = intrus_params_numel(b);
  EXPECT(!memcmp(before + n, intrus_params_adam_m(b), n * sizeof(float)) &&
             !memcmp(before + 2 * n, intrus_params_adam_v(b), n * sizeof(float)),
         "moments changed by a values-only load");
  free(before);
  EXPECT(intrus_ckpt_get_params(c, b, true, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(same_params(a, b, true), "values or moments differ after loading");
  intrus_ckpt_free(c);

  /* Without the fingerprint check any fingerprint is accepted. */
  c = NULL;
  EXPECT(intrus_ckpt_read(path, false, FP + 1, &c, &err) == INTRUS_OK, "%s", err.msg);
  if (c) EXPECT(intrus_ckpt_fingerprint(c) == FP, "fingerprint");
  intrus_ckpt_free(c);

  /* Committing again replaces the file. */
  EXPECT(write_model(path, b, 777, &err) == INTRUS_OK, "%s", err.msg);
  c = NULL;
  EXPECT(intrus_ckpt_read(path, true, FP, &c, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(c && intrus_ckpt_u64(c, "step", &v) && v == 777, "overwritten step");
  intrus_ckpt_free(c);
out:
  intrus_params_destroy(a);
  intrus_params_destroy(b);
}

/* Writer arguments it must refuse without spoiling the checkpoint under way. */
static void test_writer_arguments(void) {
  const char *path = test_tmp_path("args.ckpt");
  struct intrus_error err;
  struct intrus_ckpt_writer *w;
  const int s5[5] = {1, 1, 1, 1, 1}, neg[2] = {2, -1}, zero[1] = {0}, one[1] = {1};
  const float x = 3.0f;
  char *longname = malloc(4098);
  if (!longname) abort();
  memset(longname, 'n', 4097);
  longname[4097] = '\0';

  EXPECT(intrus_ckpt_begin(path, FP, &w, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_put_tensor(w, "five", 5, s5, &x, &err) == INTRUS_ERR_INVALID, "ndim 5");
  EXPECT_CONTAINS(err.msg, "has 5 dimensions (must be 1 to 4)");
  EXPECT(intrus_ckpt_put_tensor(w, "zero", 0, s5, &x, &err) == INTRUS_ERR_INVALID, "ndim 0");
  EXPECT(intrus_ckpt_put_tensor(w, "neg", 2, neg, &x, &err) == INTRUS_ERR_INVALID, "neg dim");
  EXPECT_CONTAINS(err.msg, "negative dimension");
  EXPECT(intrus_ckpt_put_u64(w, "", 1, &err) == INTRUS_ERR_INVALID, "empty name");
  EXPECT(intrus_ckpt_put_u64(w, longname, 1, &err) == INTRUS_ERR_INVALID, "4097-byte name");
  EXPECT_CONTAINS(err.msg, "has 4097 bytes (at most 4096)");
  longname[4096] = '\0';
  EXPECT(intrus_ckpt_put_u64(w, longname, 4096, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_put_tensor(w, "empty", 1, zero, NULL, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_put_tensor(w, "x", 1, one, &x, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_put_u64(w, "x", 1, &err) == INTRUS_ERR_INVALID, "duplicate name");
  EXPECT_CONTAINS(err.msg, "record 'x' written twice");
  EXPECT(intrus_ckpt_commit(w, &err) == INTRUS_OK, "%s", err.msg);

  struct intrus_ckpt *c = NULL;
  uint64_t v = 0;
  int ndim = 0, shape[4] = {-1};
  EXPECT(intrus_ckpt_read(path, true, FP, &c, &err) == INTRUS_OK, "%s", err.msg);
  if (c) {
    EXPECT(intrus_ckpt_u64(c, longname, &v) && v == 4096, "4096-byte name");
    const float *e = intrus_ckpt_tensor(c, "empty", &ndim, shape);
    EXPECT(e && ndim == 1 && shape[0] == 0, "empty tensor");
    const float *t = intrus_ckpt_tensor(c, "x", NULL, NULL);
    EXPECT(t && *t == 3.0f, "x");
    EXPECT(!intrus_ckpt_u64(c, "five", NULL), "refused record was written");
    intrus_ckpt_free(c);
  }
  free(longname);
}

static void test_corruption(void) {
  const char *good_path = test_tmp_path("good.ckpt"), *bad = test_tmp_path("bad.ckpt");
  char msg[1024];
  struct intrus_error err;
  struct intrus_params *p = make_params(3, 0);
  EXPECT(write_model(good_path, p, 1, &err) == INTRUS_OK, "%s", err.msg);
  intrus_params_destroy(p);
  size_t len = 0;
  unsigned char *good = test_read_bytes(good_path, &len);
  if (!good || len < 1000) {
    EXPECT(0, "cannot read back %s", good_path);
    free(good);
    return;
  }
  /* Record 1 is "param/enc.w" [3, 4]: type, name length, 11 name bytes, ndim, 2 dims
   * and 12 floats, from byte 24 to byte 100. */
  const size_t rec1 = 24, rec1_name = rec1 + 5, rec1_data = rec1_name + 11 + 4 + 8,
               rec2 = rec1_data + 48;

  /* Flipped bits anywhere covered by the checksum. */
  const size_t flips[] = {rec1_data + 21, 14 /* fingerprint */, rec1_name + 3, len / 2,
                          len - 9, len - 1 /* the checksum itself */};
  for (size_t i = 0; i < sizeof flips / sizeof *flips; i++) {
    write_variant(bad, good, len, flips[i], 0x10);
    EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, ": corrupt (checksum mismatch)");
  }

  /* Cut short at several points. */
  struct {
    size_t at;
    const char *msg;
  } cuts[] = {
      {0, "truncated at byte 0 of at least 32 (empty file)"},
      {5, "truncated at byte 5 of at least 32 (the header is cut off)"},
      {10, "truncated at byte 10 of at least 32 (the header is cut off)"},
      {20, "truncated at byte 20 of at least 32 (the header is cut off)"},
      {rec1, "truncated at byte 24 of at least 37: ends before record 1 of 14"},
      {rec1 + 3, "truncated at byte 27 of at least 37: ends in the middle of record 1 of 14"},
      {rec1_name + 4, "ends in the middle of record 1 of 14"},
      {rec1_name + 11, "truncated at byte 40 of at least 52: ends in the middle of record "
                       "'param/enc.w' (1 of 14)"},
      {rec1_data + 10, "truncated at byte 62 of at least 108: ends in the middle of record "
                       "'param/enc.w' (1 of 14)"},
      {rec2, "truncated at byte 100 of at least 113: ends before record 2 of 14"},
      {len / 2, "truncated at byte"},
      {len - 12, "ends in the middle of record 'max' (14 of 14)"},
      {len - 8, "the checksum is missing"},
      {len - 3, "the checksum is cut off"},
  };
  for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
    test_write_bytes(bad, good, cuts[i].at);
    EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, cuts[i].msg);
  }
  test_write_bytes(bad, "INT", 3);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, "truncated at byte 3 of at least 32");

  /* Not a checkpoint at all. */
  write_variant(bad, good, len, 0, 'I' ^ 'X');
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, ": not an intrus checkpoint (bad magic)");
  test_write_bytes(bad, "hello, world\n", 13);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, ": not an intrus checkpoint (bad magic)");
  test_write_bytes(bad, "hi", 2);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, ": not an intrus checkpoint (bad magic)");

  /* Version 99: judged before the checksum, so the stale checksum does not matter. */
  write_variant(bad, good, len, 8, 1 ^ 99);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT,
                 ": unsupported checkpoint version 99 (this build reads version 1)");

  /* Another model configuration. */
  snprintf(msg, sizeof msg,
           "%s: written for another model configuration (fingerprint 0x%016" PRIx64
           ", expected 0x%016" PRIx64 ")",
           good_path, (uint64_t)FP, (uint64_t)FP + 1);
  struct intrus_ckpt *c = NULL;
  EXPECT(intrus_ckpt_read(good_path, true, FP + 1, &c, &err) == INTRUS_ERR_FORMAT && !c,
         "fingerprint mismatch accepted");
  EXPECT(strcmp(err.msg, msg) == 0, "\"%s\" is not \"%s\"", err.msg, msg);

  /* Files that no reader could load. */
  const char *missing = test_tmp_path("no-such.ckpt");
  EXPECT_REFUSED(missing, INTRUS_ERR_IO, ": cannot open checkpoint: No such file or directory");
  EXPECT_REFUSED(test_tmpdir, INTRUS_ERR_IO, ": cannot read checkpoint: Is a directory");
  free(good);
}

/* Damage only a faulty writer could produce: the checksum is right, the content not. */
static void test_bad_content(void) {
  const char *bad = test_tmp_path("content.ckpt");
  struct bytes b;

  b_header(&b, FP, 2);
  b_name(&b, 2, "a", 1);
  b_u64(&b, 1);
  b_name(&b, 2, "a", 1);
  b_u64(&b, 2);
  b_checksum(&b);
  test_write_bytes(bad, b.b, b.n);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, ": duplicate record name 'a' (records 1 and 2)");

  b_header(&b, FP, 1);
  b_name(&b, 1, "t5", 2);
  b_u32(&b, 5);
  for (int i = 0; i < 5; i++) b_u32(&b, 1);
  b_u32(&b, 0);
  b_checksum(&b);
  test_write_bytes(bad, b.b, b.n);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, ": record 't5' has 5 dimensions (must be 1 to 4)");

  b_header(&b, FP, 1);
  b_name(&b, 1, "t0", 2);
  b_u32(&b, 0);
  b_u32(&b, 0); /* the one element of a 0-d tensor */
  b_checksum(&b);
  test_write_bytes(bad, b.b, b.n);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, ": record 't0' has 0 dimensions (must be 1 to 4)");

  b_header(&b, FP, 1);
  b_name(&b, 1, "huge", 4);
  b_u32(&b, 2);
  b_u32(&b, 0x80000000u);
  b_u32(&b, 0);
  b_checksum(&b);
  test_write_bytes(bad, b.b, b.n);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT,
                 ": record 'huge' has a bad shape (dimension 1 is 2147483648)");

  b_header(&b, FP, 1);
  b_name(&b, 7, "odd", 3);
  b_u64(&b, 0);
  b_checksum(&b);
  test_write_bytes(bad, b.b, b.n);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, ": record 'odd' (1 of 1) has unknown type 7");

  b_header(&b, FP, 1);
  b_name(&b, 2, "", 0);
  b_u64(&b, 0);
  b_checksum(&b);
  test_write_bytes(bad, b.b, b.n);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, ": record 1 of 1 has a name of 0 bytes");

  b_header(&b, FP, 1);
  b_name(&b, 2, "a\0b", 3);
  b_u64(&b, 0);
  b_checksum(&b);
  test_write_bytes(bad, b.b, b.n);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, ": record 'a?b' has a NUL byte in its name");

  b_header(&b, FP, 1);
  b_name(&b, 2, "a", 1);
  b_u64(&b, 0);
  b_raw(&b, "xyz", 3);
  b_checksum(&b);
  test_write_bytes(bad, b.b, b.n);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, ": trailing garbage (3 bytes after the last record)");

  /* Garbage appended to a good file breaks the checksum first. */
  b_header(&b, FP, 1);
  b_name(&b, 2, "a", 1);
  b_u64(&b, 0);
  b_checksum(&b);
  b_raw(&b, "xyz", 3);
  test_write_bytes(bad, b.b, b.n);
  EXPECT_REFUSED(bad, INTRUS_ERR_FORMAT, ": corrupt (checksum mismatch)");
}

static void test_param_mismatch(void) {
  const char *path = test_tmp_path("params.ckpt");
  struct intrus_error err;
  struct intrus_params *a = make_params(4, 0);
  EXPECT(write_model(path, a, 1, &err) == INTRUS_OK, "%s", err.msg);
  struct intrus_ckpt *c = NULL;
  EXPECT(intrus_ckpt_read(path, true, FP, &c, &err) == INTRUS_OK, "%s", err.msg);
  if (!c) {
    intrus_params_destroy(a);
    return;
  }
  char want[512];

  /* A parameter the checkpoint does not have. */
  struct intrus_params *b = make_params(5, P_EXTRA);
  float *snap = snapshot(b);
  EXPECT(intrus_ckpt_get_params(c, b, true, &err) == INTRUS_ERR_FORMAT, "missing parameter");
  snprintf(want, sizeof want, "%s: parameter 'dec.w' is missing (no record 'param/dec.w') "
           "(and 2 more parameter records missing or mismatched)", path);
  EXPECT(strcmp(err.msg, want) == 0, "\"%s\" is not \"%s\"", err.msg, want);
  EXPECT(unchanged(b, snap), "a refused load changed the model");
  free(snap);
  intrus_params_destroy(b);

  /* A parameter of another shape. */
  b = make_params(5, P_WIDE_ENC);
  snap = snapshot(b);
  EXPECT(intrus_ckpt_get_params(c, b, false, &err) == INTRUS_ERR_FORMAT, "wrong shape");
  snprintf(want, sizeof want, "%s: parameter 'enc.w' has shape [3, 4] in the checkpoint "
           "('param/enc.w') but [4, 3] in the model", path);
  EXPECT(strcmp(err.msg, want) == 0, "\"%s\" is not \"%s\"", err.msg, want);
  EXPECT(unchanged(b, snap), "a refused load changed the model");
  free(snap);
  intrus_params_destroy(b);
  intrus_ckpt_free(c);

  /* Moments asked of a checkpoint written without them; a u64 where a tensor belongs. */
  struct intrus_ckpt_writer *w;
  struct intrus_params *nb = make_params(6, P_NO_BIAS);
  EXPECT(intrus_ckpt_begin(path, FP, &w, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_put_params(w, nb, false, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_put_u64(w, "param/enc.b", 4, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_commit(w, &err) == INTRUS_OK, "%s", err.msg);
  c = NULL;
  EXPECT(intrus_ckpt_read(path, true, FP, &c, &err) == INTRUS_OK, "%s", err.msg);
  if (c) {
    EXPECT(intrus_ckpt_get_params(c, nb, true, &err) == INTRUS_ERR_FORMAT, "no moments");
    EXPECT_CONTAINS(err.msg, ": parameter 'enc.w' is missing (no record 'adam_m/enc.w')");
    EXPECT(intrus_ckpt_get_params(c, nb, false, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT(intrus_ckpt_get_params(c, a, false, &err) == INTRUS_ERR_FORMAT, "u64 as tensor");
    EXPECT_CONTAINS(err.msg, ": record 'param/enc.b' for parameter 'enc.b' is an integer, "
                             "not a tensor");
    intrus_ckpt_free(c);
  }
  intrus_params_destroy(nb);
  intrus_params_destroy(a);
}

/* The checkpoint at path reads back with step `step`. */
static bool loads_with_step(const char *path, uint64_t step) {
  struct intrus_ckpt *c = NULL;
  struct intrus_error err;
  uint64_t v = 0;
  if (intrus_ckpt_read(path, true, FP, &c, &err) != INTRUS_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return false;
  }
  bool ok = intrus_ckpt_u64(c, "step", &v) && v == step;
  intrus_ckpt_free(c);
  return ok;
}

static void test_failed_writes(void) {
  const char *path, *sub;
  char tmp[1024];
  struct intrus_error err;
  struct intrus_ckpt_writer *w = NULL;
  struct intrus_params *p = make_params(7, 0);

  /* A directory that does not exist. */
  path = test_tmp_path("nowhere/x.ckpt");
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld: cannot create temporary checkpoint file: %s", path,
           (long)getpid(), strerror(ENOENT));
  EXPECT(intrus_ckpt_begin(path, FP, &w, &err) == INTRUS_ERR_IO && !w, "missing directory");
  EXPECT(strcmp(err.msg, tmp) == 0, "\"%s\" is not \"%s\"", err.msg, tmp);

  /* A directory that cannot be written, holding a good checkpoint. Root ignores the
   * permission bits, so then this case cannot be made to fail and is skipped. */
  sub = test_tmp_path("readonly");
  EXPECT(mkdir(sub, 0700) == 0, "mkdir %s", sub);
  path = test_tmp_path("readonly/x.ckpt");
  EXPECT(write_model(path, p, 1, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(chmod(sub, 0500) == 0, "chmod %s", sub);
  enum intrus_status st = intrus_ckpt_begin(path, FP, &w, &err);
  if (st == INTRUS_OK) {
    intrus_ckpt_abort(w);
    printf("running with permission overrides: read-only directory case skipped\n");
  } else {
    EXPECT(st == INTRUS_ERR_IO, "read-only directory: %s", intrus_status_name(st));
    EXPECT_CONTAINS(err.msg, ".tmp.");
    EXPECT_CONTAINS(err.msg, strerror(EACCES));
  }
  chmod(sub, 0700);
  EXPECT(loads_with_step(path, 1), "checkpoint in the read-only directory damaged");

  /* A write that fails part-way (file size limit, which binds root too): IO naming the
   * temporary file, which is gone, and the old checkpoint still loads. */
  path = test_tmp_path("limited.ckpt");
  EXPECT(write_model(path, p, 1, &err) == INTRUS_OK, "%s", err.msg);
  size_t old_len = 0, new_len = 0;
  unsigned char *old = test_read_bytes(path, &old_len);
  struct rlimit saved, lim;
  void (*saved_handler)(int) = signal(SIGXFSZ, SIG_IGN);
  EXPECT(getrlimit(RLIMIT_FSIZE, &saved) == 0, "getrlimit");
  lim = saved;
  lim.rlim_cur = 100000;
  EXPECT(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
  EXPECT(intrus_ckpt_begin(path, FP, &w, &err) == INTRUS_OK, "%s", err.msg);
  st = intrus_ckpt_put_params(w, p, true, &err);
  if (st == INTRUS_OK) {
    st = intrus_ckpt_commit(w, &err); /* the error may surface only when flushing */
  } else {
    struct intrus_error again;
    EXPECT(intrus_ckpt_put_u64(w, "step", 2, &again) == INTRUS_ERR_IO, "write after failure");
    EXPECT(strcmp(again.msg, err.msg) == 0, "\"%s\" vs \"%s\"", again.msg, err.msg);
    EXPECT(intrus_ckpt_commit(w, &again) == INTRUS_ERR_IO, "commit after failure");
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, saved_handler);
  EXPECT(st == INTRUS_ERR_IO, "write past the size limit: %s", intrus_status_name(st));
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld: cannot write checkpoint: %s", path, (long)getpid(),
           strerror(EFBIG));
  EXPECT(strcmp(err.msg, tmp) == 0, "\"%s\" is not \"%s\"", err.msg, tmp);
  EXPECT(test_count_temp_files() == 0, "temporary file left after a failed write");
  unsigned char *now = test_read_bytes(path, &new_len);
  EXPECT(old && now && old_len == new_len && !memcmp(old, now, old_len),
         "failed write changed the old checkpoint");
  EXPECT(loads_with_step(path, 1), "old checkpoint no longer loads");
  free(old);
  free(now);

  /* The rename fails (a directory is in the way): the temporary file is removed. */
  path = test_tmp_path("adir");
  EXPECT(mkdir(path, 0700) == 0, "mkdir %s", path);
  EXPECT(intrus_ckpt_begin(path, FP, &w, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_put_u64(w, "step", 1, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_commit(w, &err) == INTRUS_ERR_IO, "rename over a directory");
  EXPECT_CONTAINS(err.msg, "cannot move");
  EXPECT_CONTAINS(err.msg, strerror(EISDIR));
  EXPECT(test_count_temp_files() == 0, "temporary file left after a failed rename");
  intrus_params_destroy(p);
}

static void test_abort(void) {
  const char *path = test_tmp_path("aborted.ckpt");
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  struct intrus_error err;
  struct intrus_ckpt_writer *w;
  struct stat st;
  EXPECT(intrus_ckpt_begin(path, FP, &w, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_put_u64(w, "step", 1, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(stat(tmp, &st) == 0, "no temporary file while writing");
  intrus_ckpt_abort(w);
  EXPECT(stat(tmp, &st) != 0 && errno == ENOENT, "temporary file left after abort");
  EXPECT(stat(path, &st) != 0 && errno == ENOENT, "aborted checkpoint exists");
  intrus_ckpt_abort(NULL);
}

/* intrus_ckpt_strip_moments: the copy holds every record but the moments, bit for bit and
 * in order, under the same fingerprint; it loads values-only and refuses a resume by
 * name; stripping in place works; a damaged source is refused and leaves no file. */
static void test_strip_moments(void) {
  char full[1024], lean[1024], bad[1024];
  snprintf(full, sizeof full, "%s", test_tmp_path("full.ckpt"));
  snprintf(lean, sizeof lean, "%s", test_tmp_path("lean.ckpt"));
  snprintf(bad, sizeof bad, "%s", test_tmp_path("strip-bad.ckpt"));
  struct intrus_error err;
  struct intrus_params *a = make_params(3, 0), *b = make_params(4, 0);
  EXPECT(write_model(full, a, 42, &err) == INTRUS_OK, "%s", err.msg);
  size_t dropped = 0;
  EXPECT(intrus_ckpt_strip_moments(full, lean, &dropped, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(dropped == 2 * intrus_params_count(a), "dropped %zu records, want %zu", dropped,
         2 * intrus_params_count(a));
  EXPECT(test_count_temp_files() == 0, "temporary file left after a strip");
  struct intrus_ckpt *cf = NULL, *cl = NULL;
  EXPECT(intrus_ckpt_read(full, true, FP, &cf, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_read(lean, true, FP, &cl, &err) == INTRUS_OK, "%s", err.msg);
  if (!cf || !cl) goto out;
  EXPECT(intrus_ckpt_count(cl) + dropped == intrus_ckpt_count(cf), "record counts %zu + %zu != %zu",
         intrus_ckpt_count(cl), dropped, intrus_ckpt_count(cf));
  EXPECT(intrus_ckpt_name(cl, intrus_ckpt_count(cl)) == NULL, "a name past the end");
  /* The kept records, in the source's order, each equal to the source's. */
  size_t j = 0;
  for (size_t i = 0; i < intrus_ckpt_count(cf); i++) {
    const char *name = intrus_ckpt_name(cf, i);
    if (!strncmp(name, "adam_", 5)) continue;
    const char *kept = intrus_ckpt_name(cl, j++);
    EXPECT(kept && !strcmp(kept, name), "record %zu is '%s', want '%s'", j - 1,
           kept ? kept : "(none)", name);
    int nd1 = 0, nd2 = 0, s1[4] = {0}, s2[4] = {0};
    const float *t1 = intrus_ckpt_tensor(cf, name, &nd1, s1);
    const float *t2 = intrus_ckpt_tensor(cl, name, &nd2, s2);
    if (t1) {
      size_t n = 1;
      for (int d = 0; d < nd1; d++) n *= (size_t)s1[d];
      EXPECT(t2 && nd1 == nd2 && !memcmp(s1, s2, sizeof s1) && !memcmp(t1, t2, n * sizeof *t1),
             "tensor '%s' differs after the strip", name);
    } else {
      uint64_t v1 = 0, v2 = 1;
      EXPECT(intrus_ckpt_u64(cf, name, &v1) && intrus_ckpt_u64(cl, name, &v2) && v1 == v2,
             "integer '%s' differs after the strip", name);
    }
  }
  EXPECT(intrus_ckpt_tensor(cl, "adam_m/big", NULL, NULL) == NULL &&
             intrus_ckpt_tensor(cl, "adam_v/enc.w", NULL, NULL) == NULL,
         "moments left in the stripped copy");
  EXPECT(intrus_ckpt_checksum(cl) != intrus_ckpt_checksum(cf), "same content fingerprint");
  /* Decoding's load (values only) gives the source's parameters; a resume's is refused. */
  EXPECT(intrus_ckpt_get_params(cl, b, false, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(same_params(a, b, false), "values differ after loading the stripped copy");
  EXPECT(intrus_ckpt_get_params(cl, b, true, &err) == INTRUS_ERR_FORMAT, "resume accepted");
  EXPECT_CONTAINS(err.msg, "no record 'adam_m/");
  intrus_ckpt_free(cl);
  cl = NULL;
  /* In place: the file is replaced by its stripped copy, byte-identical to the other. */
  EXPECT(intrus_ckpt_strip_moments(full, full, NULL, &err) == INTRUS_OK, "%s", err.msg);
  FILE *f1 = fopen(full, "rb"), *f2 = fopen(lean, "rb");
  int c1 = 0, c2 = 0;
  bool same = f1 && f2;
  while (same && (c1 = fgetc(f1)) != EOF) same = c1 == (c2 = fgetc(f2));
  same = same && fgetc(f2) == EOF;
  if (f1) fclose(f1);
  if (f2) fclose(f2);
  EXPECT(same, "stripping in place differs from stripping to another file");
  /* A damaged source: refused, naming it, and nothing written. */
  FILE *f = fopen(bad, "wb");
  if (f) {
    fputs("INTRUSCK but not a checkpoint", f);
    fclose(f);
  }
  char out[1100];
  snprintf(out, sizeof out, "%s.out", bad);
  EXPECT(intrus_ckpt_strip_moments(bad, out, NULL, &err) == INTRUS_ERR_FORMAT, "damaged source");
  EXPECT_CONTAINS(err.msg, bad);
  struct stat sb;
  EXPECT(stat(out, &sb) != 0 && errno == ENOENT, "a strip of a damaged file wrote %s", out);
out:
  intrus_ckpt_free(cf);
  intrus_ckpt_free(cl);
  intrus_params_destroy(a);
  intrus_params_destroy(b);
}

/* The mean of three checkpoints against the mean computed here, value by value; the
 * last one's integers, no moments, "averaged" = 3; other models refused, naming the file
 * and what differs; nothing written then. */
static void test_average(void) {
  char path[4][1024], out[1024];
  const char *paths[4];
  struct intrus_error err;
  struct intrus_params *p[3];
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof name, "avg%d.ckpt", i);
    snprintf(path[i], sizeof path[i], "%s", test_tmp_path(name));
    paths[i] = path[i];
    p[i] = make_params(10 + (uint64_t)i, 0);
    EXPECT(write_model(path[i], p[i], 100 * (uint64_t)(i + 1), &err) == INTRUS_OK, "%s", err.msg);
  }
  snprintf(out, sizeof out, "%s", test_tmp_path("avg-out.ckpt"));
  EXPECT(intrus_ckpt_average(paths, 3, out, &err) == INTRUS_OK, "%s", err.msg);
  struct intrus_ckpt *c = NULL;
  EXPECT(intrus_ckpt_read(out, true, FP, &c, &err) == INTRUS_OK, "%s", err.msg);
  if (c) {
    size_t values = 0, wrong = 0, want_values = 0;
    for (size_t t = 0; t < intrus_params_count(p[0]); t++) want_values += intrus_params_at(p[0], t)->n;
    for (size_t r = 0; r < intrus_ckpt_count(c); r++) {
      const char *key = intrus_ckpt_name(c, r);
      if (strncmp(key, "param/", 6) != 0) continue;
      const intrus_tensor *x[3];
      for (int i = 0; i < 3; i++) x[i] = intrus_params_find(p[i], key + 6);
      int nd = 0, sh[4];
      const float *got = intrus_ckpt_tensor(c, key, &nd, sh);
      EXPECT(got && x[0] && x[1] && x[2], "'%s' is no parameter of the models", key);
      if (!got || !x[0] || !x[1] || !x[2]) continue;
      for (size_t e = 0; e < x[0]->n; e++, values++) {
        double want = ((double)x[0]->data[e] + (double)x[1]->data[e] + (double)x[2]->data[e]) / 3;
        float w = (float)want;
        if (isnan(w) ? !isnan(got[e]) : got[e] != w) wrong++;
      }
    }
    EXPECT(values == want_values && wrong == 0,
           "%zu of %zu averaged values differ from the mean", wrong, values);
    uint64_t v = 0;
    EXPECT(intrus_ckpt_u64(c, "step", &v) && v == 300, "step %" PRIu64 ", want the last's 300", v);
    EXPECT(intrus_ckpt_u64(c, "averaged", &v) && v == 3, "averaged %" PRIu64 ", want 3", v);
    EXPECT(intrus_ckpt_tensor(c, "adam_m/big", NULL, NULL) == NULL, "moments in the average");
    intrus_ckpt_free(c);
  }
  /* One checkpoint: its parameters unchanged, bit for bit. */
  EXPECT(intrus_ckpt_average(paths, 1, out, &err) == INTRUS_OK, "%s", err.msg);
  c = NULL;
  EXPECT(intrus_ckpt_read(out, true, FP, &c, &err) == INTRUS_OK, "%s", err.msg);
  struct intrus_params *q = make_params(99, 0);
  if (c) {
    EXPECT(intrus_ckpt_get_params(c, q, false, &err) == INTRUS_OK, "%s", err.msg);
    EXPECT(same_params(p[0], q, false), "the average of one checkpoint is not that checkpoint");
    intrus_ckpt_free(c);
  }
  intrus_params_destroy(q);
  /* Another model: refused, naming the file; out is left as it was. */
  unlink(out);
  snprintf(path[3], sizeof path[3], "%s", test_tmp_path("avg-wide.ckpt"));
  paths[3] = path[3];
  static const struct { int flags; const char *says; } other[] = {
      {P_WIDE_ENC, "has another shape"}, {P_EXTRA, "parameters where"}};
  for (int k = 0; k < 2; k++) {
    struct intrus_params *o = make_params(7, other[k].flags);
    EXPECT(write_model(path[3], o, 1, &err) == INTRUS_OK, "%s", err.msg);
    const char *mixed[2] = {path[0], path[3]};
    EXPECT(intrus_ckpt_average(mixed, 2, out, &err) == INTRUS_ERR_FORMAT, "another model averaged");
    EXPECT_CONTAINS(err.msg, path[3]);
    EXPECT_CONTAINS(err.msg, other[k].says);
    EXPECT(access(out, F_OK) != 0, "a refused average wrote %s", out);
    intrus_params_destroy(o);
  }
  struct intrus_ckpt_writer *w;
  EXPECT(intrus_ckpt_begin(path[3], FP + 1, &w, &err) == INTRUS_OK, "%s", err.msg);
  EXPECT(intrus_ckpt_put_params(w, p[1], false, &err) == INTRUS_OK &&
             intrus_ckpt_commit(w, &err) == INTRUS_OK, "%s", err.msg);
  const char *mixed[2] = {path[0], path[3]};
  EXPECT(intrus_ckpt_average(mixed, 2, out, &err) == INTRUS_ERR_FORMAT, "another fingerprint");
  EXPECT_CONTAINS(err.msg, "another model configuration");
  EXPECT(test_count_temp_files() == 0, "temporary file left after a refused average");
  for (int i = 0; i < 3; i++) intrus_params_destroy(p[i]);
}

int main(void) {
  if (!test_make_tmpdir("/tmp/intrus-ckpt-XXXXXX")) return 1;
  test_layout();
  test_round_trip();
  test_writer_arguments();
  test_corruption();
  test_bad_content();
  test_param_mismatch();
  test_failed_writes();
  test_abort();
  test_strip_moments();
  test_average();
  EXPECT(test_count_temp_files() == 0, "temporary files left");
  test_remove_tmpdir();
  return test_finish("test_checkpoint");
}

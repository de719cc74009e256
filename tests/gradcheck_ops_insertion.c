/* Gradient checks of the fused insertion losses, both kinds, with respect to the
 * position and the token logits. The objective sum(out * w) gives every state its own
 * incoming gradient, so a gradient attributed to the wrong state shows. */
#include <stdint.h>

#include "gradcheck.h"

int gradcheck_suite_insertion(void);

/* Four states over 13 position rows and 5 token rows of V = 6:
 *  s0: k = 0 (rows 0-1), two tokens at slot 0 sharing token row 0;
 *  s1: k = 2 (rows 2-5), pairs at every slot, two of them sharing row 2;
 *  s2: complete, k = 1 (rows 6-8): -log p(finish);
 *  s3: k = 1 (rows 10-12; row 9 belongs to no state and must get no gradient), slot 0
 *      reads token row 1 which s1 also reads: rows shared across states.
 * The pair arrays start at offset 1 (pair_off[0] = 1) to cover rebasing. */
static const int g_row0[4] = {0, 2, 6, 10}, g_len[4] = {2, 4, 3, 3};
static const int g_pair_off[5] = {1, 3, 7, 7, 9};
static const int g_pair_slot[9] = {-1, 0, 0, 0, 1, 1, 2, 0, 1};
static const int g_pair_row[9] = {-1, 0, 0, 1, 2, 2, 3, 1, 4};
static const int32_t g_pair_tok[9] = {-1, 2, 4, 1, 1, 3, 5, 2, 0};

static const struct intrus_ins_targets mixed = {
    .count = 4, .row0 = g_row0, .len = g_len, .pair_off = g_pair_off,
    .pair_slot = g_pair_slot, .pair_row = g_pair_row, .pair_tok = g_pair_tok};

/* Only complete states (no token logits at all): two of them, the second over rows
 * shared with the first's (3-4 of 1-4), so accumulation across states is checked too. */
static const int c_row0[2] = {1, 3}, c_len[2] = {4, 2}, c_pair_off[3] = {0, 0, 0};
static const struct intrus_ins_targets complete_only = {
    .count = 2, .row0 = c_row0, .len = c_len, .pair_off = c_pair_off,
    .pair_slot = c_pair_off, .pair_row = c_pair_off, .pair_tok = NULL};

struct ins_args {
  const struct intrus_ins_targets *tg;
  enum intrus_ins_loss_kind kind;
  bool with_tok;
  float smoothing;
};

static intrus_tensor *build_ins(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  const struct ins_args *a = user;
  return intrus_insertion_loss(ctx, in[0], a->with_tok ? in[1] : NULL, a->tg, a->kind, a->smoothing);
}

/* The training loss under weight = "length": the states' losses weighted and divided by
 * the batch's trajectory lengths (ins_train_loss_at), the gradient through both ops. */
static intrus_tensor *build_ins_weighted(intrus_ctx *ctx, intrus_tensor **in, void *user) {
  static const double w[4] = {3.0, 1.5, 1.0, 2.0};
  return intrus_weighted_mean(ctx, build_ins(ctx, in, user), w, 7.0);
}

/* These agree with central differences to ~1e-5 (see suite b for the choice). */
#define TOL 1e-3f

int gradcheck_suite_insertion(void) {
  int failed = 0;
  static struct ins_args main_mixed = {&mixed, INTRUS_INS_LOSS_MAIN, true, 0.0f},
                         uni_mixed = {&mixed, INTRUS_INS_LOSS_UNIFORM, true, 0.0f},
                         main_done = {&complete_only, INTRUS_INS_LOSS_MAIN, false, 0.0f},
                         uni_done = {&complete_only, INTRUS_INS_LOSS_UNIFORM, false, 0.0f},
                         main_ls = {&mixed, INTRUS_INS_LOSS_MAIN, true, 0.2f},
                         uni_ls = {&mixed, INTRUS_INS_LOSS_UNIFORM, true, 0.2f};
  struct gc_spec m = {.name = "ins_loss main pos,tok", .op = INTRUS_OP_INSERTION_LOSS,
                      .tol = TOL, .build = build_ins, .user = &main_mixed, .ninputs = 2,
                      .in = {{.ndim = 1, .shape = {13}, .grad = true, .lo = -2.0f, .hi = 2.0f},
                             {.ndim = 2, .shape = {5, 6}, .grad = true, .lo = -2.5f,
                              .hi = 2.5f}}};
  failed += !gradcheck_run(&m);
  struct gc_spec u = m;
  u.name = "ins_loss uniform pos,tok";
  u.user = &uni_mixed;
  failed += !gradcheck_run(&u);
  struct gc_spec ml = m, ul = m;
  ml.name = "ins_loss main smoothed";
  ml.user = &main_ls;
  failed += !gradcheck_run(&ml);
  ul.name = "ins_loss uniform smoothed";
  ul.user = &uni_ls;
  failed += !gradcheck_run(&ul);

  /* One input at a time: the other's backward branch is skipped. */
  struct gc_spec mt = m;
  mt.name = "ins_loss main tok only";
  mt.in[0].grad = false;
  failed += !gradcheck_run(&mt);
  struct gc_spec up = u;
  up.name = "ins_loss uniform pos only";
  up.in[1].grad = false;
  failed += !gradcheck_run(&up);

  struct gc_spec mw = m, uw = u;
  mw.name = "ins_loss main, length-weighted mean";
  mw.build = build_ins_weighted;
  failed += !gradcheck_run(&mw);
  uw.name = "ins_loss uniform, length-weighted mean";
  uw.build = build_ins_weighted;
  failed += !gradcheck_run(&uw);

  struct gc_spec d = {.name = "ins_loss main complete", .op = INTRUS_OP_INSERTION_LOSS,
                      .tol = TOL, .build = build_ins, .user = &main_done, .ninputs = 1,
                      .in = {{.ndim = 1, .shape = {6}, .grad = true, .lo = -2.0f, .hi = 2.0f}}};
  failed += !gradcheck_run(&d);
  struct gc_spec du = d;
  du.name = "ins_loss uniform complete";
  du.user = &uni_done;
  failed += !gradcheck_run(&du);
  return failed;
}

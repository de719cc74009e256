/* Every op of the engine against central finite differences. The suites live in
 * gradcheck_ops_a.c / gradcheck_ops_b.c; this file checks that together they cover
 * every op, so a new op without a gradient check fails the build's tests. */
#include <stdio.h>

#include "gradcheck.h"

int gradcheck_suite_a(void);
int gradcheck_suite_b(void);
int gradcheck_suite_attention(void);
int gradcheck_suite_insertion(void);

static const char *op_names[INTRUS_OP_COUNT] = {
    "none",         "matmul",       "add",         "mul",           "scale",
    "relu",         "gelu",         "elu",         "dropout",       "embedding",
    "layer_norm",   "softmax",      "log_softmax", "cross_entropy", "logsumexp_masked",
    "sum",          "mean",         "reshape",     "permute",       "concat",
    "conv2d",       "maxpool2d",    "attention",   "insertion_loss", "weighted_mean"};

int main(void) {
  int failed = gradcheck_suite_a() + gradcheck_suite_b() + gradcheck_suite_attention() +
               gradcheck_suite_insertion();
  bool covered[INTRUS_OP_COUNT];
  int total = gradcheck_covered(covered), n = 0;
  for (int op = 1; op < INTRUS_OP_COUNT; op++) {
    if (covered[op]) n++;
    else {
      printf("op %s has no gradient check\n", op_names[op]);
      failed++;
    }
  }
  printf("%d of %d ops gradient-checked; %d checks failed\n", n, total, failed);
  return failed ? 1 : 0;
}

/* train.log's columns by name (core/train/run_log.c): a column found by the header's name
 * wherever it is; the sum of valid_decode_s over the rows that have one; a step logged
 * twice (a killed run's rows, then the resumed run's) counted once, the later row; an
 * older header without the column gives no rows; a missing file is an error naming it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "train/run_log.h"

static const char header[] =
    "step\tloss\tlr\ttokens_per_s\tvalid_loss\tvalid_bleu\ttrain_s\tvalid_decode_s\n";

static void expect_sum(const char *name, const char *text, const char *column, double want,
                       int want_rows) {
  const char *path = test_tmp_path(name);
  test_write_file(path, text);
  double sum = -1.0;
  int rows = -1;
  struct intrus_error err = {0};
  EXPECT(run_log_column_sum(path, column, &sum, &rows, &err) == INTRUS_OK, "%s: %s", name,
         err.msg);
  EXPECT(rows == want_rows && sum == want, "%s: %s sums to %g over %d rows, not %g over %d",
         name, column, sum, rows, want, want_rows);
}

int main(void) {
  if (!test_make_tmpdir("/tmp/test_run_log.XXXXXX")) return 99;
  EXPECT(run_log_column(header, "step") == 0 && run_log_column(header, "train_s") == 6 &&
             run_log_column(header, "valid_decode_s") == 7 &&
             run_log_column(header, "valid") == -1 && run_log_column(header, "nope") == -1,
         "columns by name");
  EXPECT(run_log_column("1\t2.0\n", "step") == -1, "a row is not a header");
  char text[2048];
  /* Decodes at steps 10 and 20 only. */
  snprintf(text, sizeof text,
           "%s5\t3.1\t1e-3\t100.0\t\t\t1.5\t\n"
           "10\t2.9\t1e-3\t100.0\t2.8\t1.50\t3.0\t4.5\n"
           "15\t2.7\t1e-3\t100.0\t\t\t4.5\t\n"
           "20\t2.5\t1e-3\t100.0\t2.4\t3.25\t6.0\t2.0\n",
           header);
  expect_sum("plain.log", text, "valid_decode_s", 6.5, 2);
  expect_sum("plain-bleu.log", text, "valid_bleu", 4.75, 2);
  expect_sum("plain-train.log", text, "train_s", 15.0, 4);
  /* A killed run logged step 20 after its checkpoint at 10; the resume logged 20 again
   * (an old log, from before resumes trimmed it). */
  snprintf(text, sizeof text,
           "%s10\t2.9\t1e-3\t100.0\t2.8\t1.50\t3.0\t4.5\n"
           "20\t2.5\t1e-3\t100.0\t2.4\t3.25\t6.0\t100.0\n"
           "15\t2.7\t1e-3\t100.0\t\t\t4.5\t\n"
           "20\t2.5\t1e-3\t100.0\t2.4\t3.25\t6.0\t2.0\n",
           header);
  expect_sum("repeat.log", text, "valid_decode_s", 6.5, 2);
  /* A header from before valid_decode_s: rows of a resumed run carry an extra cell the
   * header does not name, so nothing is summed. */
  expect_sum("old.log",
             "step\tloss\tlr\ttokens_per_s\tvalid_loss\tvalid_bleu\ttrain_s\n"
             "10\t2.9\t1e-3\t100.0\t2.8\t1.50\t3.0\n"
             "20\t2.5\t1e-3\t100.0\t2.4\t3.25\t6.0\t2.0\n",
             "valid_decode_s", 0.0, 0);
  double sum;
  int rows;
  struct intrus_error err = {0};
  EXPECT(run_log_column_sum(test_tmp_path("none.log"), "valid_decode_s", &sum, &rows, &err) ==
             INTRUS_ERR_IO,
         "a missing log is an error");
  EXPECT_CONTAINS(err.msg, "none.log");
  test_remove_tree(test_tmpdir);
  return test_finish("test_run_log");
}

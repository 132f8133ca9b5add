// Hidden cases ([.]) that check the test binaries' exit status itself; in both dltrain_tests and
// dltrain_gpu_tests, run by the test_infra.* CTest entries (tests/CMakeLists.txt) through
// tests/support/expect_exit.sh, which asserts the exact status: a failure must exit 1 whatever
// the number of failed checks (Catch2 v2 alone would exit 77 here, CTest's skip code), a skip
// after a failed check must fail, and a real skip must exit 77.
#include <catch2/catch.hpp>

#include "support/skip.h"

namespace dlt::test {

TEST_CASE("test infrastructure: exactly 77 failed checks exit 1, not a skip", "[.][exit_code_77_failures]") {
  for (int i = 0; i < 77; ++i) CHECK(i < 0);
}

TEST_CASE("test infrastructure: a skip after a failed check fails", "[.][exit_code_skip_after_failure][skippable]") {
  CHECK(1 + 1 == 3);
  DLT_SKIP_IF(true, "a skip after a failure (must not exit 77)");
}

TEST_CASE("test infrastructure: a skip exits 77", "[.][exit_code_skip][skippable]") {
  DLT_SKIP_IF(true, "the exit-status check of a real skip");
  FAIL("not reached");
}

}  // namespace dlt::test

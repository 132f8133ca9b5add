// The Catch2 main for dltrain_tests: tells support/skip.h whether this run selects one case, and
// exits 1 for any failure. Catch2 v2 itself exits with the number of failed assertions (at most
// 255), so a run with exactly 77 failures would exit 77, CTest's SKIP_RETURN_CODE, and read as
// a skip; 77 comes only from a real skip (skip.h, which exits on its own).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "support/skip.h"

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  Catch::Config& config = session.config();
  dlt::test::set_running_one_case(
      Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config).size() == 1);
  return dlt::test::exit_code(session.run(), config);
}

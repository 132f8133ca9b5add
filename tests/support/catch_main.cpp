// The Catch2 main for dltrain_tests: tells support/skip.h whether this run selects one case.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "support/skip.h"

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  Catch::Config& config = session.config();
  dlt::test::set_running_one_case(
      Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config).size() == 1);
  return session.run();
}

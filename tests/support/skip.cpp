// DLT_SKIP_IF's runtime and the test mains' exit status (skip.h).
#include "support/skip.h"

// The listener base classes (TestEventListenerBase) for FailureCounter.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

namespace dlt::test {

namespace {
bool g_one_case = false;
int g_failed_in_case = 0;  // failed assertions of the running case (FailureCounter)

// Counts the running case's failed assertions, so that a skip after a failure fails the case.
struct FailureCounter : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo&) override { g_failed_in_case = 0; }
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    if (!stats.assertionResult.isOk()) ++g_failed_in_case;
    return true;
  }
};

bool current_case_is_skippable() {
  const std::string name = Catch::getResultCapture().getCurrentTestName();
  for (const Catch::TestCase& tc : Catch::getRegistryHub().getTestCaseRegistry().getAllTests())
    if (tc.name == name)
      for (const std::string& tag : tc.tags)
        if (tag == "skippable") return true;
  return false;
}
}  // namespace

CATCH_REGISTER_LISTENER(FailureCounter)

void set_running_one_case(bool one) { g_one_case = one; }

void skip_case(const std::string& reason) {
  if (!current_case_is_skippable()) {
    FAIL("this case skips (" << reason
                             << ") but has no [skippable] tag: add it, so that CTest runs it as an entry "
                                "of its own and reports the skip");
  }
  if (g_failed_in_case > 0) {
    FAIL("this case skips (" << reason << ") after " << g_failed_in_case
                             << " failed check(s): a skip must come before the case's checks");
  }
  if (g_one_case) {
    std::printf("SKIP: %s\n", reason.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(77);
  }
  WARN("skipped: " << reason);
}

int exit_code(int session_result, const Catch::Config& config) {
  if (config.listTests() || config.listTestNamesOnly() || config.listTags() || config.listReporters())
    return session_result;
  return session_result == 0 ? 0 : 1;
}

}  // namespace dlt::test

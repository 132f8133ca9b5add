// DLT_SKIP_IF's runtime (skip.h).
#include "support/skip.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

namespace dlt::test {

namespace {
bool g_one_case = false;

bool current_case_is_skippable() {
  const std::string name = Catch::getResultCapture().getCurrentTestName();
  for (const Catch::TestCase& tc : Catch::getRegistryHub().getTestCaseRegistry().getAllTests())
    if (tc.name == name)
      for (const std::string& tag : tc.tags)
        if (tag == "skippable") return true;
  return false;
}
}  // namespace

void set_running_one_case(bool one) { g_one_case = one; }

void skip_case(const std::string& reason) {
  if (!current_case_is_skippable()) {
    FAIL("this case skips (" << reason << ") but has no [skippable] tag: add it, so that CTest runs it as an entry "
                                          "of its own and reports the skip");
  }
  if (g_one_case) {
    std::printf("SKIP: %s\n", reason.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(77);
  }
  WARN("skipped: " << reason);
}

}  // namespace dlt::test

// Visible skips for Debian 12's Catch2 v2, which has no SKIP. A case that cannot run on this
// machine or build starts with DLT_SKIP_IF(condition, reason) and carries the tag [skippable].
// When the process runs that one case (as each CTest entry does, tests/CMakeLists.txt) a skip
// prints "SKIP: <reason>" and exits 77, which CTest's SKIP_RETURN_CODE reports as skipped, with
// the reason in its output; in a run of several cases it WARNs and returns (the whole-binary
// runs leave [skippable] cases out). A skip in a case without the tag fails the case.
#pragma once
#include <sstream>
#include <string>

namespace dlt::test {

// Set by the test mains: whether the command line selects exactly one test case.
void set_running_one_case(bool one);
// Exits 77 when running one case, otherwise WARNs; fails a case not tagged [skippable].
void skip_case(const std::string& reason);

}  // namespace dlt::test

#define DLT_SKIP_IF(condition, reason)      \
  do {                                      \
    if (condition) {                        \
      std::ostringstream dlt_skip_reason;   \
      dlt_skip_reason << reason;            \
      ::dlt::test::skip_case(dlt_skip_reason.str()); \
      return;                               \
    }                                       \
  } while (0)

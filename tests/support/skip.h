// Visible skips for Debian 12's Catch2 v2, which has no SKIP. A case that cannot run on this
// machine or build starts with DLT_SKIP_IF(condition, reason) and carries the tag [skippable].
// When the process runs that one case (as each CTest entry does, tests/CMakeLists.txt) a skip
// prints "SKIP: <reason>" and exits 77, which CTest's SKIP_RETURN_CODE reports as skipped, with
// the reason in its output; in a run of several cases it WARNs and returns (the whole-binary
// runs leave [skippable] cases out). A skip in a case without the tag fails the case, and so
// does a skip after a failed check of the same case (the failure is not hidden as a skip).
// Both test mains exit through exit_code: 0 when every case passed, 1 for any failure, so that
// only a skip exits 77. scripts/allowed-skips.txt lists the skips each machine may report.
#pragma once
#include <sstream>
#include <string>

namespace Catch {
class Config;
}

namespace dlt::test {

// Set by the test mains: whether the command line selects exactly one test case.
void set_running_one_case(bool one);
// Exits 77 when running one case, otherwise WARNs; fails a case not tagged [skippable] or one
// that has already failed a check.
void skip_case(const std::string& reason);
// The mains' exit status from Catch::Session::run's: listings as Catch2 returns them (CTest's
// test discovery reads them), otherwise 1 for any failure.
int exit_code(int session_result, const Catch::Config& config);

}  // namespace dlt::test

#define DLT_SKIP_IF(condition, reason)               \
  do {                                               \
    if (condition) {                                 \
      std::ostringstream dlt_skip_reason;            \
      dlt_skip_reason << reason;                     \
      ::dlt::test::skip_case(dlt_skip_reason.str()); \
      return;                                        \
    }                                                \
  } while (0)

// The one map from library exceptions to dltrain's exit codes (README "Exit codes"):
// 0 success, 1 runtime failure, 2 usage or config error, 3 device or communication failure.
// main() prints the failure; a local worker writes it to its launcher's error file.
#pragma once
#include <string>

namespace dlt::app {

struct Failure {
  int exit_code = 1;
  std::string kind;     // "error", "device error" or "communication error": main's prefix
  std::string message;  // the exception's message (out of memory: what to try)
};

// The exception being handled; call only inside a catch block.
Failure current_failure();

}  // namespace dlt::app

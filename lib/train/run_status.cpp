// RunStatus's words (run_status.h).
#include "train/run_status.h"

#include <iterator>

namespace dlt {

namespace {
constexpr const char* kStatusWords[] = {"running", "completed", "stopped-early", "diverged", "failed", "interrupted"};
constexpr const char* kStatusPhrases[] = {"running", "finished", "stopped early", "diverged", "failed", "interrupted"};
}  // namespace

const char* to_string(RunStatus s) { return kStatusWords[static_cast<int>(s)]; }
const char* status_phrase(RunStatus s) { return kStatusPhrases[static_cast<int>(s)]; }

std::optional<RunStatus> parse_run_status(const std::string& word) {
  for (int i = 0; i < static_cast<int>(std::size(kStatusWords)); ++i)
    if (word == kStatusWords[i]) return static_cast<RunStatus>(i);
  return std::nullopt;
}

}  // namespace dlt

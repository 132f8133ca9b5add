// RunStatus: how a training run ended, with its words written once (summary.json's "status",
// progress.png's Status line, dltrain report). Standard library only, so that the drawing code
// (train/draw/) may include it.
#pragma once
#include <optional>
#include <string>

namespace dlt {

enum class RunStatus { kRunning, kCompleted, kStoppedEarly, kDiverged, kFailed, kInterrupted };
// summary.json's "status" word: running, completed, stopped-early, diverged, failed, interrupted
// (stopped by SIGINT or SIGTERM; it has a model.bin, which `dltrain report` does not rank).
const char* to_string(RunStatus s);
// The word back; nullopt for any other text (e.g. a summary.json from elsewhere).
std::optional<RunStatus> parse_run_status(const std::string& word);
// progress.png's Status words: running, finished, stopped early, diverged, failed, interrupted.
const char* status_phrase(RunStatus s);
// Completed, stopped early or interrupted: the run ended with a model.bin.
inline bool ended_with_model(RunStatus s) {
  return s == RunStatus::kCompleted || s == RunStatus::kStoppedEarly || s == RunStatus::kInterrupted;
}

}  // namespace dlt

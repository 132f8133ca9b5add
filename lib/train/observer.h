// TrainingObserver: what a training run's outputs implement (the list: observers/observers.cpp).
// An observer watches the run and asks; it never writes the run's state. The trainer runs the
// loop and validation itself and, per iteration:
//   1. validation, when due (the first iteration, every ValidationFrequency, the last): the
//      trainer evaluates, fills the record's validation fields and hands the record to every
//      observer's on_validation;
//   2. the record (its seconds stamped) joins the run's history;
//   3. every observer's on_iteration gets the final record.
// Each call returns Requests (run_state.h): stop with a reason, keep the current network as the
// best, ValidationPatience's count, a warning, a plot note. The trainer merges the requests of
// all observers of a phase (Requests::merge, order-free) and applies them after the phase, so
// an observer sees in RunState what the others asked for in earlier phases, never within one;
// the observers' order changes nothing. A diverged step (non-finite loss) skips 1 and 3: its
// record joins the history and the run ends. When the run ends the trainer restores the kept
// network, validates a last time, writes the final files (run_files.h), then calls every
// observer's on_end once, also after an error (status failed; the observer may not have started).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "train/progress.h"
#include "train/run_state.h"

namespace dlt {

// What every observer may know about the run, given once at on_start.
struct RunInfo {
  const Config& config;
  const std::string& output_dir;
  int64_t iterations_per_epoch;
  int64_t max_iterations;
  bool has_validation;
  bool segmentation;
  const std::vector<std::string>& classes;
  bool writes_files;  // rank 0: prints and writes files (only rank 0 gets file-writing observers)
};

class TrainingObserver {
 public:
  virtual ~TrainingObserver() = default;
  virtual void on_start(const RunInfo&) {}
  // After a validation: rec's validation fields are set (state.validation() is the pass).
  virtual Requests on_validation(const IterationRecord& /*rec*/, const RunState&) { return {}; }
  // After every step, with its final record (in the history already).
  virtual Requests on_iteration(const IterationRecord& /*rec*/, const RunState&) { return {}; }
  // Once, when the run has ended: state.status() and state.stop_reason() say how and why.
  virtual void on_end(const RunState&) {}
};

}  // namespace dlt

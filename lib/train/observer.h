// TrainingObserver: what a training run's outputs implement. The trainer hands every step's
// IterationRecord to the run's observers (the list in observers/observers.cpp) in one call,
// Trainer::record; an observer never drives the loop, it watches it. Per iteration, in order:
//   1. complete(rec)     in list order: validation runs at its frequency and fills the record's
//                        validation fields; ValidationPatience / the best network read them;
//   2. the trainer stamps rec.seconds and appends rec to the run's history (the one place);
//   3. wants_stop()      every observer is asked (early stopping);
//   4. on_iteration(rec) in list order, with the final record (watchdog, live files, table,
//                        checkpoints, ...).
// A diverged step (non-finite loss) skips 1, 3 and 4: its record joins the history and the run
// ends. on_end is called once per observer, in list order, also after an error ("failed").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "train/progress.h"

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

struct RunEnd {
  std::string status;  // completed | stopped-early | diverged | failed
  std::string reason;  // why it stopped (a wants_stop reason, the error of a failed run); may be ""
};

class TrainingObserver {
 public:
  virtual ~TrainingObserver() = default;
  virtual void on_start(const RunInfo&) {}
  // Before the record is final: may fill its validation fields (validation) or read them.
  virtual void complete(IterationRecord&) {}
  // After the step's record is in the history; may set *reason.
  virtual bool wants_stop(std::string* /*reason*/) { return false; }
  // After every step (validation values set when it ran).
  virtual void on_iteration(const IterationRecord&) {}
  // Once, when the run ends: status completed | stopped-early | diverged, or failed (an error;
  // the observer may not have started).
  virtual void on_end(const RunEnd&) {}
};

}  // namespace dlt

// RunState: what a training run has come to (its status and why it ended, the latest
// validation, the kept best network, the warnings and the plot's note) and the requests that
// change it. Observers (observer.h) read it and return Requests; the trainer merges every
// observer's requests and applies them, so it is the only writer. StopKind's words are written
// here once, RunStatus's in run_status.h (summary.json, the log, progress.png, dltrain report).
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "train/run_status.h"

namespace dlt {

// "after 1 iteration", "after N iterations": how stop reasons name an iteration (never
// "iteration N", which a terminal's progress lines show).
std::string after_iterations(int64_t n);

// Why a run ended: summary.json's "stop_reason" {"kind": <word>, "message": <sentence>}.
enum class StopKind { kNone, kMaxEpochs, kValidationPatience, kDiverged, kError, kSignal };
// none, max-epochs, validation-patience, diverged, error, signal.
const char* to_string(StopKind k);

struct StopReason {
  StopKind kind = StopKind::kNone;
  std::string message;  // one sentence, e.g. "MaxEpochs 5 reached at iteration 60"
  bool operator==(const StopReason&) const = default;
};

// One pass over the validation data.
struct Evaluation {
  double loss = std::numeric_limits<double>::quiet_NaN();
  double accuracy = std::numeric_limits<double>::quiet_NaN();  // percent (segmentation: pixel accuracy)
  double mean_iou = std::numeric_limits<double>::quiet_NaN();  // segmentation: mean over classes of IoU (0..1)
  // The Metrics option's values in its order (train/validation_metrics.h).
  std::vector<std::pair<std::string, double>> metrics;
};

// The ObjectiveMetricName's progress after a validation (ValidationPatience): its best value
// as a number to minimise (the loss, or minus a metric for which higher is better; checkpoints
// keep it), the validations since that best, and the best's value and iteration (0: before a
// resumed checkpoint).
struct ObjectiveProgress {
  double best_score = 1e300;
  int64_t since_best = 0;
  double best_value = std::numeric_limits<double>::quiet_NaN();
  int64_t best_iteration = 0;
  bool operator==(const ObjectiveProgress&) const = default;
};

// What an observer asks of the run. Merging is order-free: every observer's requests together
// mean the same whichever order they were given in.
struct Requests {
  std::optional<StopReason> stop;              // stop after this iteration
  bool keep_network = false;                   // keep the current weights as the best (OutputNetwork)
  std::optional<ObjectiveProgress> objective;  // ValidationPatience's count (checkpoints keep it)
  std::vector<std::string> warnings;           // logged once, listed in summary.json's "warnings"
  std::string plot_note;                       // shown next to progress.png's title ("" keeps the last)

  // Adds `other`: warnings are kept sorted, and of two stops, notes or objectives the one that
  // sorts first (a stop by kind, then text) wins, so the result does not depend on the
  // observers' order.
  void merge(Requests other);
  bool operator==(const Requests&) const = default;
};

class RunState {
 public:
  RunStatus status() const { return status_; }
  // The requested stop while running; when the run has ended, why it ended.
  const StopReason& stop_reason() const { return stop_; }
  bool stopping() const { return stop_.kind != StopKind::kNone; }
  bool validated() const { return validated_; }                 // validation ran at the current iteration
  const Evaluation& validation() const { return validation_; }  // the latest (at the end: the final one)
  // OutputNetwork best-validation: the kept network's iteration (0: none) and its
  // ObjectiveMetricName value.
  int64_t best_iteration() const { return best_iteration_; }
  double best_objective() const { return best_objective_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::string& plot_note() const { return plot_note_; }

  // The trainer's, and only the trainer's.
  void start_iteration() { validated_ = false; }
  void set_validation(const Evaluation& e, bool at_this_iteration);
  // Applies merged requests made at `iteration` (keep_network and objective: the trainer's own).
  void apply(const Requests& r);
  void keep_best(int64_t iteration, double value);
  void end(RunStatus status, StopReason why);

 private:
  RunStatus status_ = RunStatus::kRunning;
  StopReason stop_;
  bool validated_ = false;
  Evaluation validation_;
  int64_t best_iteration_ = 0;
  double best_objective_ = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::string> warnings_;
  std::string plot_note_;
};

}  // namespace dlt

// The learning watchdog (train/watchdog.h) as an observer: its warning, once, is a request that
// the trainer logs, keeps for summary.json's "warnings" and notes next to the plot's title (the
// live files redraw the plot when the note changes). It never stops the run, as in MATLAB.
#include <algorithm>
#include <optional>
#include <utility>

#include "train/observer.h"
#include "train/observers/observers.h"
#include "train/progress.h"
#include "train/training_run.h"
#include "train/watchdog.h"

namespace dlt {
namespace {

// What the warning names: the initializers of the layers with Weights, the learning rate and
// the input normalization, as this run has them.
WatchdogContext watchdog_context(Network& net, const TrainingOptions& o) {
  WatchdogContext c;
  std::vector<std::string> inits;
  for (size_t i = 0; i < net.size(); ++i) {
    Layer& l = net.layer(i);
    bool has_weights = false;
    for (const auto& p : l.params()) has_weights = has_weights || p.name == "Weights";
    if (!has_weights) continue;
    std::string init = l.spec().has("WeightsInitializer") ? l.spec().get_string("WeightsInitializer", "glorot")
                                                          : "glorot (the default)";
    if (std::find(inits.begin(), inits.end(), init) == inits.end()) inits.push_back(init);
  }
  for (const auto& i : inits) c.initializers += (c.initializers.empty() ? "" : ", ") + i;
  if (c.initializers.empty()) c.initializers = "none";
  c.initial_learn_rate = o.initial_learn_rate;
  c.normalization = net.size() > 0 ? net.layer(0).spec().get_string("Normalization", "zerocenter") : "none";
  return c;
}

class Watchdog : public TrainingObserver {
 public:
  Watchdog(int64_t classes, WatchdogContext context) : classes_(classes), context_(std::move(context)) {}

  void on_start(const RunInfo& info) override { watchdog_.emplace(classes_, info.iterations_per_epoch, context_); }

  Requests on_iteration(const IterationRecord& rec, const RunState&) override {
    Requests r;
    if (auto warning = watchdog_->observe(rec)) {
      r.warnings.push_back(*warning);
      r.plot_note = "warning: not learning (summary.json)";
    }
    return r;
  }

 private:
  int64_t classes_;
  WatchdogContext context_;
  std::optional<LearningWatchdog> watchdog_;
};

}  // namespace

std::unique_ptr<TrainingObserver> make_learning_watchdog(int64_t classes, WatchdogContext context) {
  return std::make_unique<Watchdog>(classes, std::move(context));
}

std::unique_ptr<TrainingObserver> make_learning_watchdog(const TrainingRun& run) {
  // Its symptoms are cross-entropy's (chance loss ln K, chance accuracy 1/K): off for the other losses.
  const bool cross_entropy = run.net->loss_kind() == LossKind::kCrossEntropy;
  return make_learning_watchdog(cross_entropy ? static_cast<int64_t>(run.net->classes().size()) : 0,
                                watchdog_context(*run.net, run.options));
}

}  // namespace dlt

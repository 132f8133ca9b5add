// The learning watchdog (train/watchdog.h) as an observer: its warning, once, is logged, kept
// for summary.json's "warnings" and noted next to the plot's title (the live files observer,
// after this one, redraws the plot when the note changes). The run goes on, as in MATLAB.
#include <algorithm>
#include <optional>

#include "train/observer.h"
#include "train/progress.h"
#include "train/training_run.h"
#include "train/watchdog.h"
#include "util/log.h"

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
  explicit Watchdog(TrainingRun& run) : run_(run) {}

  void on_start(const RunInfo& info) override {
    watchdog_.emplace(static_cast<int64_t>(info.classes.size()), info.iterations_per_epoch,
                      watchdog_context(*run_.net, run_.options));
  }

  void on_iteration(const IterationRecord& rec) override {
    auto warning = watchdog_->observe(rec);
    if (!warning) return;
    if (run_.table) run_.table->clear_bar();
    log::warn("{}", *warning);
    run_.warnings.push_back(*warning);
    run_.plot_note = "warning: not learning (summary.json)";
  }

 private:
  TrainingRun& run_;
  std::optional<LearningWatchdog> watchdog_;
};

}  // namespace

std::unique_ptr<TrainingObserver> make_learning_watchdog(TrainingRun& run) { return std::make_unique<Watchdog>(run); }

}  // namespace dlt

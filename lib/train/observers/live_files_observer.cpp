// The live files (train/live_files.h) as an observer, rank 0: config.yaml and a first plot as
// training starts; progress.png at each validation, every PlotIntervalSeconds and when the
// plot's note changes (a watchdog warning). A run that ends closes them (the trainer writes the
// final files, and a failed run's plot).
#include <algorithm>
#include <memory>

#include "train/live_files.h"
#include "train/observer.h"
#include "train/training_run.h"

namespace dlt {
namespace {

class LiveFilesObserver : public TrainingObserver {
 public:
  explicit LiveFilesObserver(const TrainingRun& run) : run_(run) {}

  void on_start(const RunInfo& info) override {
    const TrainingOptions& o = run_.options;
    live_ = std::make_unique<LiveFiles>(info.output_dir, run_.args.config_text, o.plots != Plots::kNone,
                                        o.plot_interval_seconds);
    const int64_t epoch = std::min(run_.position.epoch, o.max_epochs - 1);
    draw(epoch + 1, run_.position.iteration, run_.learn_rate);
  }

  Requests on_iteration(const IterationRecord& rec, const RunState& state) override {
    const bool due = live_->plot_due(state.validated());
    if (due || drawn_note_ != state.plot_note()) draw(rec.epoch, rec.iteration, rec.learn_rate);
    return {};
  }

  void on_end(const RunState&) override { live_.reset(); }

 private:
  void draw(int64_t epoch, int64_t iteration, double lr) {
    live_->plot(run_.plot_series(epoch, iteration, lr));
    drawn_note_ = run_.state.plot_note();
  }

  const TrainingRun& run_;
  std::unique_ptr<LiveFiles> live_;
  std::string drawn_note_;  // the note on the last drawing
};

}  // namespace

std::unique_ptr<TrainingObserver> make_live_files(const TrainingRun& run) {
  return std::make_unique<LiveFilesObserver>(run);
}

}  // namespace dlt

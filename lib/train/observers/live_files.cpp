// The live files (train/live_files.h) as an observer, rank 0: config.yaml and a first plot as
// training starts; progress.png at each validation, every PlotIntervalSeconds and when the
// plot's note changes (a watchdog warning). A run that fails leaves a plot that says so, with
// the error; a run that ends closes them (the final files replace them).
#include <algorithm>
#include <memory>

#include "train/live_files.h"
#include "train/observer.h"
#include "train/run_files.h"
#include "train/training_run.h"
#include "util/log.h"

namespace dlt {
namespace {

class LiveFilesObserver : public TrainingObserver {
 public:
  explicit LiveFilesObserver(TrainingRun& run) : run_(run) {}

  void on_start(const RunInfo& info) override {
    const TrainingOptions& o = run_.options;
    live_ = std::make_unique<LiveFiles>(info.output_dir, run_.args.config_text, o.plots != Plots::kNone,
                                        o.plot_interval_seconds);
    const int64_t epoch = std::min(run_.position.epoch, o.max_epochs - 1);
    draw(epoch + 1, run_.position.iteration, run_.learn_rate);
  }

  void on_iteration(const IterationRecord& rec) override {
    const bool due = live_->plot_due(run_.validated);
    if (due || drawn_note_ != run_.plot_note) draw(rec.epoch, rec.iteration, rec.learn_rate);
  }

  void on_end(const RunEnd& end) override {
    if (end.status == "failed" && live_) {
      const auto& recs = run_.history.records();
      try {
        draw(recs.empty() ? 0 : recs.back().epoch, recs.empty() ? 0 : recs.back().iteration,
             recs.empty() ? -1 : recs.back().learn_rate, "failed", end.reason);
      } catch (const std::exception& plot_error) {
        log::warn("{}", plot_error.what());
      }
    }
    live_.reset();  // the final files replace the live ones
  }

 private:
  void draw(int64_t epoch, int64_t iteration, double lr, const std::string& status = "running",
            const std::string& reason = "") {
    ProgressSeries s = progress_series(run_.history);
    s.title = "Training progress (" + status + ")";
    s.title_note = run_.plot_note;
    s.info = run_.progress_info(status, epoch, iteration, lr);
    if (!reason.empty()) s.info.stop_reason = reason;
    live_->plot(s);
    drawn_note_ = run_.plot_note;
  }

  TrainingRun& run_;
  std::unique_ptr<LiveFiles> live_;
  std::string drawn_note_;  // the note on the last drawing
};

}  // namespace

std::unique_ptr<TrainingObserver> make_live_files(TrainingRun& run) { return std::make_unique<LiveFilesObserver>(run); }

}  // namespace dlt

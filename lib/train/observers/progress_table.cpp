// MATLAB's verbose table (train/progress.h) as an observer, rank 0: the heading as training
// starts; a row at the first iteration, every VerboseFrequency iterations, at each validation,
// at the last and where the run stops early; the progress bar redrawn after every step; the
// closing rule when the run ends (not after an error).
#include <algorithm>
#include <memory>

#include "train/observer.h"
#include "train/progress.h"
#include "train/training_run.h"

namespace dlt {
namespace {

class ProgressTableObserver : public TrainingObserver {
 public:
  explicit ProgressTableObserver(TrainingRun& run) : run_(run) {}
  ~ProgressTableObserver() override {
    if (run_.table == table_.get()) run_.table = nullptr;
  }

  void on_start(const RunInfo& info) override {
    const TrainingOptions& o = run_.options;
    table_ = std::make_unique<ProgressTable>(o.verbose, info.has_validation, o.verbose_layout);
    run_.table = table_.get();
    table_->header();
  }

  void on_iteration(const IterationRecord& rec) override {
    const int64_t it = rec.iteration;
    if (it == 1 || it % std::max<int64_t>(run_.options.verbose_frequency, 1) == 0 || run_.validated ||
        it == run_.max_iterations || run_.stopping)
      table_->row(rec);
    table_->bar(it, run_.max_iterations, rec.seconds);
  }

  void on_end(const RunEnd& end) override {
    if (table_ && end.status != "failed") table_->footer();
  }

 private:
  TrainingRun& run_;
  std::unique_ptr<ProgressTable> table_;
};

}  // namespace

std::unique_ptr<TrainingObserver> make_progress_table(TrainingRun& run) {
  return std::make_unique<ProgressTableObserver>(run);
}

}  // namespace dlt

// MATLAB's verbose table (train/progress.h; the trainer's run.table) as an observer, rank 0:
// the heading as training starts; a row at the first iteration, every VerboseFrequency
// iterations, at each validation, at the last and where the run stops early; the progress bar
// redrawn after every step. The trainer closes the table when the run ends (not after an error).
#include <algorithm>
#include <memory>

#include "train/observer.h"
#include "train/progress.h"
#include "train/training_run.h"

namespace dlt {
namespace {

class ProgressTableObserver : public TrainingObserver {
 public:
  explicit ProgressTableObserver(const TrainingRun& run) : run_(run) {}

  void on_start(const RunInfo&) override { run_.table->header(); }

  Requests on_iteration(const IterationRecord& rec, const RunState& state) override {
    const int64_t it = rec.iteration;
    if (it == 1 || it % std::max<int64_t>(run_.options.verbose_frequency, 1) == 0 || state.validated() ||
        it == run_.max_iterations || state.stopping())
      run_.table->row(rec);
    run_.table->bar(it, run_.max_iterations, rec.seconds);
    return {};
  }

 private:
  const TrainingRun& run_;  // its table: the trainer's (others clear its bar before they log)
};

}  // namespace

std::unique_ptr<TrainingObserver> make_progress_table(const TrainingRun& run) {
  return std::make_unique<ProgressTableObserver>(run);
}

}  // namespace dlt

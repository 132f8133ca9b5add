// log.csv (train/log_csv.h) as an observer, rank 0: the header and a resumed run's rows as
// training starts, then a row per iteration. The final log.csv comes from run_files.
#include <memory>

#include "train/log_csv.h"
#include "train/observer.h"
#include "train/training_run.h"

namespace dlt {
namespace {

class LogCsvObserver : public TrainingObserver {
 public:
  explicit LogCsvObserver(const TrainingRun& run) : run_(run) {}

  void on_start(const RunInfo& info) override { log_ = std::make_unique<LogCsv>(info.output_dir, run_.history); }
  Requests on_iteration(const IterationRecord& rec, const RunState&) override {
    log_->append(rec);
    return {};
  }
  void on_end(const RunState&) override { log_.reset(); }

 private:
  const TrainingRun& run_;
  std::unique_ptr<LogCsv> log_;
};

}  // namespace

std::unique_ptr<TrainingObserver> make_log_csv(const TrainingRun& run) { return std::make_unique<LogCsvObserver>(run); }

}  // namespace dlt

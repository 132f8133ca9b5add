// The one list of a training run's observers. A new output is a file in this folder with a
// make_<name> function, declared here and added to the list below (docs/architecture.md).
#include "train/observers/observers.h"

namespace dlt {

std::unique_ptr<TrainingObserver> make_validation(TrainingRun& run);
std::unique_ptr<TrainingObserver> make_validation_patience(TrainingRun& run);
std::unique_ptr<TrainingObserver> make_learning_watchdog(TrainingRun& run);
std::unique_ptr<TrainingObserver> make_live_files(TrainingRun& run);
std::unique_ptr<TrainingObserver> make_log_csv(TrainingRun& run);
std::unique_ptr<TrainingObserver> make_progress_table(TrainingRun& run);
std::unique_ptr<TrainingObserver> make_checkpoints(TrainingRun& run);
std::unique_ptr<TrainingObserver> make_run_files(TrainingRun& run);
std::unique_ptr<TrainingObserver> make_tensorboard(TrainingRun& run);

Observers make_observers(TrainingRun& run) {
  Observers list;
  list.push_back(make_validation(run));           // fills the record's validation fields at its frequency
  list.push_back(make_validation_patience(run));  // ValidationPatience, OutputNetwork best-validation-loss
  if (!run.writes_files()) return list;
  list.push_back(make_learning_watchdog(run));  // before the live files: its note goes on the plot
  list.push_back(make_live_files(run));         // config.yaml, progress.png
  list.push_back(make_log_csv(run));            // log.csv, a row per iteration
  list.push_back(make_progress_table(run));     // the verbose table and the progress bar
  list.push_back(make_checkpoints(run));        // CheckpointPath
  list.push_back(make_run_files(run));          // the final files, summary.json last
  if (run.options.tensorboard) list.push_back(make_tensorboard(run));  // event files (after: the final plot)
  return list;
}

}  // namespace dlt

// The one list of a training run's observers. A new output is a file in this folder with a
// make_<name> function, declared here and added to the list below (docs/architecture.md).
#include "train/observers/observers.h"

#include "train/observers/patience.h"

namespace dlt {

std::unique_ptr<TrainingObserver> make_learning_watchdog(const TrainingRun& run);
std::unique_ptr<TrainingObserver> make_live_files(const TrainingRun& run);
std::unique_ptr<TrainingObserver> make_log_csv(const TrainingRun& run);
std::unique_ptr<TrainingObserver> make_progress_table(const TrainingRun& run);
std::unique_ptr<TrainingObserver> make_checkpoints(const TrainingRun& run);
std::unique_ptr<TrainingObserver> make_tensorboard(const TrainingRun& run);

Observers make_observers(const TrainingRun& run) {
  const TrainingOptions& o = run.options;
  const TrainPosition& pos = run.position;  // a resumed run goes on counting
  Observers list;
  ObjectiveProgress resumed;
  resumed.best_score = pos.best_val_loss;
  resumed.since_best = pos.patience_count;
  list.push_back(std::make_unique<ValidationPatience>(o.objective_metric, o.validation_patience, o.output_network,
                                                      resumed));  // ValidationPatience, OutputNetwork
  if (!run.writes_files()) return list;
  list.push_back(make_learning_watchdog(run));               // a warning when the network learns nothing
  list.push_back(make_live_files(run));                      // config.yaml, progress.png while training
  list.push_back(make_log_csv(run));                         // log.csv, a row per iteration
  list.push_back(make_progress_table(run));                  // the verbose table and the progress bar
  list.push_back(make_checkpoints(run));                     // CheckpointPath
  if (o.tensorboard) list.push_back(make_tensorboard(run));  // event files
  return list;
}

Requests on_validation(const Observers& observers, const IterationRecord& rec, const RunState& state) {
  Requests r;
  for (const auto& o : observers) r.merge(o->on_validation(rec, state));
  return r;
}

Requests on_iteration(const Observers& observers, const IterationRecord& rec, const RunState& state) {
  Requests r;
  for (const auto& o : observers) r.merge(o->on_iteration(rec, state));
  return r;
}

}  // namespace dlt

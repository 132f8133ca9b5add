// TrainingRun (training_run.h): what the observers are told at the start, the plot's panel and
// the final files of the ended run.
#include "train/training_run.h"

#include "backend/backend.h"

namespace dlt {

RunInfo TrainingRun::info() const {
  return RunInfo{config,         args.output_dir,  iterations_per_epoch, max_iterations,
                 has_validation, net->per_pixel(), net->classes(),       writes_files()};
}

ProgressInfo TrainingRun::progress_info(int64_t epoch, int64_t iteration, double lr) const {
  ProgressInfo i;
  i.start_time = start_time;
  i.elapsed_seconds = elapsed();
  i.epoch = epoch;
  i.max_epochs = options.max_epochs;
  i.iteration = iteration;
  i.max_iterations = max_iterations;
  i.iterations_per_epoch = iterations_per_epoch;
  i.learn_rate = lr;
  i.hardware = hardware;
  i.status = state.status();
  if (state.status() != RunStatus::kRunning) i.stop_reason = state.stop_reason().message;
  return i;
}

ProgressSeries TrainingRun::plot_series(int64_t epoch, int64_t iteration, double lr) const {
  ProgressSeries s = progress_series(history);
  s.title = std::string("Training progress (") + to_string(state.status()) + ")";
  s.title_note = state.plot_note();
  s.info = progress_info(epoch, iteration, lr);
  return s;
}

RunFiles TrainingRun::run_files(const ModelData* model) const {
  const auto& recs = history.records();
  const IterationRecord* last = recs.empty() ? nullptr : &recs.back();
  RunFiles files;
  files.dir = args.output_dir;
  files.status = state.status();
  files.stop_reason = state.stop_reason();
  files.config_text = args.config_text;
  files.log = &history;
  files.model = model;
  files.epochs = last ? last->epoch : 0;
  files.iterations = last ? last->iteration : 0;
  const Evaluation& v = state.validation();
  files.task = net->task();
  files.validation_accuracy = v.accuracy;
  files.validation_loss = v.loss;
  files.validation_mean_iou = v.mean_iou;
  files.validation_metrics = v.metrics;
  files.objective_metric = metric_name(options.objective_metric);
  files.best_objective = state.best_objective();
  files.best_iteration = state.best_iteration();
  files.total_learnables = net->total_learnables();
  files.memory_bytes = net->memory_bytes();
  files.wall_seconds = wall.seconds();
  files.train_images_per_second = train_images_per_second;
  files.classes = net->classes();
  files.train_images = train_data.size();
  files.validation_images = has_validation ? validation_data.size() : 0;
  files.skipped_images = train_loader->skipped_images() + (validation_loader ? validation_loader->skipped_images() : 0);
  files.device = device.str();
  files.precision = to_string(options.precision);
  files.peak_device_memory_bytes = static_cast<int64_t>(backend_for(device).peak_memory_bytes());
  files.seed = options.seed;
  files.warnings = state.warnings();
  files.plot = options.plots != Plots::kNone;
  files.plot_note = state.plot_note();
  files.progress_info = progress_info(last ? last->epoch : 0, files.iterations, last ? last->learn_rate : -1);
  return files;
}

}  // namespace dlt

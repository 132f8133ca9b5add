// The files a training run leaves in its output folder when it ends: model.bin, summary.json,
// log.csv, config.yaml and progress.png (unless Plots: none). Each is written to a temporary
// name and renamed; summary.json last. While the run trains, live_files.h keeps config.yaml,
// log.csv and progress.png current.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "net/model_file.h"
#include "train/draw/plot.h"
#include "train/progress.h"
#include "train/run_state.h"

namespace dlt {

struct RunFiles {
  std::string dir;
  RunStatus status = RunStatus::kCompleted;  // completed | stopped-early | interrupted | diverged
  StopReason stop_reason;                    // summary.json's "stop_reason" {kind, message}
  std::string config_text;
  const IterationLog* log = nullptr;
  const ModelData* model = nullptr;  // null: no model.bin (diverged)
  int64_t epochs = 0, iterations = 0;
  // The task (Network::task()); validation_accuracy holds its headline metric (progress.h's
  // HeadlineMetric: accuracy, RMSE or F1), summary.json's validation_<name>.
  std::string task;
  double validation_accuracy = 0, validation_loss = 0;  // NaN when not computed
  // Segmentation: validation accuracy is pixel accuracy; mean IoU over the classes (NaN when not
  // computed; not written for classification).
  double validation_mean_iou = std::numeric_limits<double>::quiet_NaN();
  // The final validation's Metrics values: summary.json's "validation_metrics" {name: value}.
  std::vector<std::pair<std::string, double>> validation_metrics;
  // OutputNetwork best-validation: the ObjectiveMetricName it watched, its best value and the
  // iteration of the saved network (summary.json's "best_validation"); best_iteration 0: none.
  std::string objective_metric;
  double best_objective = std::numeric_limits<double>::quiet_NaN();
  int64_t best_iteration = 0;
  int64_t total_learnables = 0, memory_bytes = 0;
  double wall_seconds = 0, train_images_per_second = 0;
  std::vector<std::string> classes;
  int64_t train_images = 0, validation_images = 0, skipped_images = 0;
  std::string device;
  std::string precision;                 // training.Precision: single | mixed
  int64_t peak_device_memory_bytes = 0;  // the GPU allocator's peak (0 on the CPU)
  uint64_t seed = 0;
  // Findings about the run that a reader should see (e.g. from a learning watchdog): the
  // "warnings" list of summary.json, empty when there are none.
  std::vector<std::string> warnings;
  bool plot = true;            // Plots: training-progress; false (none): no progress.png
  ProgressInfo progress_info;  // the plot's info panel
  std::string plot_note;       // marked next to the plot's title; "" for none
};

void write_run_files(const RunFiles& f);
std::string summary_json(const RunFiles& f);
// The plot's series from the log: every iteration's mini-batch values, one validation entry
// per row that has a validation check (with the log's metric columns), and the first iteration
// of each epoch.
ProgressSeries progress_series(const IterationLog& log);

}  // namespace dlt

// TrainingRun: the state of one training run that the trainer and its observers share: what it
// trains (data, network, optimizer, loaders), where it is (position, history, the current
// learning rate) and what its outputs collect (the latest validation, warnings). The trainer
// owns it and is the only one that advances it; each field says who else writes it.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/batch_loader.h"
#include "data/datastore.h"
#include "dist/communicator.h"
#include "net/network.h"
#include "optim/optimizer.h"
#include "train/checkpoint.h"
#include "train/device_batches.h"
#include "train/draw/plot.h"
#include "train/observer.h"
#include "train/progress.h"
#include "train/trainer.h"
#include "util/timer.h"

namespace dlt {

class ProgressTable;

// One pass over the validation data.
struct Evaluation {
  double loss = std::numeric_limits<double>::quiet_NaN();
  double accuracy = std::numeric_limits<double>::quiet_NaN();  // percent (segmentation: pixel accuracy)
  double mean_iou = std::numeric_limits<double>::quiet_NaN();  // segmentation: mean over classes of IoU (0..1)
  // The Metrics option's values in its order (train/validation_metrics.h).
  std::vector<std::pair<std::string, double>> metrics;
};

struct TrainingRun {
  TrainingRun(const Config& c, const TrainArgs& a) : config(c), args(a), options(c.training) {}

  const Config& config;
  const TrainArgs& args;
  const TrainingOptions& options;
  std::shared_ptr<Communicator> comm;  // the data-parallel world (Local: one process)
  Device device;
  std::string start_time, hardware;  // for the progress plot's info panel

  ImageDatastore train_data, validation_data;
  bool has_validation = false;
  std::unique_ptr<Network> net;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<BatchLoader> train_loader, validation_loader;
  std::unique_ptr<DeviceBatches> validation_batches;  // validation batches on the device
  int64_t iterations_per_epoch = 0, max_iterations = 0;

  // Where the run is. position: epoch (0-based) and batch_in_epoch (batches done) of the last
  // step, iterations done; ValidationPatience keeps best_val_loss and patience_count in it.
  TrainPosition position;
  IterationLog history;            // every step's record; appended by Trainer::record only
  double learn_rate = 0;           // the rate of the current (before the first step: the next) step
  bool validated = false;          // validation ran at this iteration (set by the validation observer)
  bool stopping = false;           // an observer asked to stop after this iteration
  Evaluation validation;           // the latest validation (at the end: the final one)
  // OutputNetwork best-validation: the kept network's iteration (0: none) and its
  // ObjectiveMetricName value (set by the patience observer).
  int64_t best_iteration = 0;
  double best_objective = std::numeric_limits<double>::quiet_NaN();
  ProgressTable* table = nullptr;  // the terminal's table (rank 0, verbose): clear its bar before logging
  // A learning watchdog's findings: summary.json's "warnings" and the note next to the plot's title.
  std::vector<std::string> warnings;
  std::string plot_note;

  Timer wall;                          // since the run started
  Timer train_timer;                   // restarted when the first step starts
  double elapsed_before = 0;           // training time before a resumed checkpoint
  double train_images_per_second = 0;  // set when the loop ends (0 for a diverged run)

  bool writes_files() const { return comm->rank() == 0; }
  double elapsed() const { return elapsed_before + train_timer.seconds(); }
  RunInfo info() const;
  // The plot's info panel for a run in `status` at (epoch, iteration) with rate lr.
  ProgressInfo progress_info(const std::string& status, int64_t epoch, int64_t iteration, double lr) const;
};

}  // namespace dlt

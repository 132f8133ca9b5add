// TrainingRun: one training run: what it trains (data, network, optimizer, loaders; filled by
// prepare_run), where it is (position, history, the current learning rate) and what it has come
// to (RunState). The trainer owns it and is its only writer after setup; observers get it const
// and return requests (observer.h).
#pragma once
#include <cstdint>
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
#include "train/run_files.h"
#include "train/run_state.h"
#include "train/trainer.h"
#include "util/timer.h"

namespace dlt {

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
  // step, iterations done, and ValidationPatience's best and count (checkpoints keep them).
  TrainPosition position;
  IterationLog history;                  // every step's record; appended by the trainer only
  double learn_rate = 0;                 // the rate of the current (before the first step: the next) step
  RunState state;                        // status, stop reason, latest validation, best network, warnings, note
  std::unique_ptr<ProgressTable> table;  // the terminal's table (rank 0): clear its bar before logging

  Timer wall;                          // since the run started
  Timer train_timer;                   // restarted when the first step starts
  double elapsed_before = 0;           // training time before a resumed checkpoint
  double train_images_per_second = 0;  // set when the loop ends (0 for a diverged run)

  bool writes_files() const { return comm->rank() == 0; }
  double elapsed() const { return elapsed_before + train_timer.seconds(); }
  RunInfo info() const;
  // The plot's info panel at (epoch, iteration) with rate lr, with state's status and reason.
  ProgressInfo progress_info(int64_t epoch, int64_t iteration, double lr) const;
  // progress.png's series and texts: the history, the status in the title, the note, the panel.
  ProgressSeries plot_series(int64_t epoch, int64_t iteration, double lr) const;
  // The final files for the ended run; model: its model.bin (null: none).
  RunFiles run_files(const ModelData* model) const;
};

}  // namespace dlt

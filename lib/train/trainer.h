// trainNetwork: trains a network from a Config and writes the run's outputs into a folder:
// model.bin, summary.json, log.csv, config.yaml and progress.png; config.yaml, log.csv and
// progress.png are kept current while it trains (live_files.h). The training step reads
// top to bottom in Trainer::step(); validation, checkpoints and logging run at their
// frequencies. Checkpoints (CheckpointPath) can be resumed bit-identically.
#pragma once
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "dist/communicator.h"
#include "tensor/device.h"

namespace dlt {

struct TrainArgs {
  std::string output_dir = "runs/latest";
  std::string resume;       // checkpoint file to continue from, or empty
  std::string config_text;  // the resolved config (written as config.yaml and into the model)
  // Data-parallel world (docs/distributed.md); null: this process alone. Each rank trains on
  // its share of every global mini-batch; only rank 0 prints and writes files.
  std::shared_ptr<Communicator> comm;
  // The device this process trains on, decided once with the execution (train/execution.h's
  // training_device); required: the trainer does not derive it from the options.
  std::optional<Device> device;
};

struct TrainResult {
  std::string status;  // completed | stopped-early | interrupted (a diverged run throws TrainingError after writing
                       // its outputs)
  int signal = 0;      // interrupted: the signal that stopped the run (SIGINT, SIGTERM); the exit code is 128 + it
  std::string stop_reason;  // why it ended, and which network model.bin is (summary.json's stop_reason message)
  std::string model_path;
  double validation_accuracy = 0;  // percent (NaN when there is no validation data); segmentation: pixels;
                                   // regression: the RMSE; multi-label: F1 (the headline, progress.h)
  std::string headline = "accuracy";  // its name: accuracy, rmse or f1
  double validation_mean_iou =
      std::numeric_limits<double>::quiet_NaN();  // segmentation: 0..1 (NaN for classification or no validation data)
};

TrainResult train_network(const Config& config, const TrainArgs& args);

}  // namespace dlt

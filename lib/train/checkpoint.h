// Checkpoints: the model (weights, statistics, classes, spec) plus the solver state, the
// position in training and the iteration log, in the model file format (a checkpoint is a
// loadable model). Written atomically, so kill -9 leaves the previous one intact.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "net/model_file.h"
#include "net/network.h"
#include "optim/optimizer.h"
#include "train/progress.h"

namespace dlt {

struct TrainPosition {
  int64_t epoch = 0;             // 0-based epoch to continue in
  int64_t batch_in_epoch = 0;    // batches of that epoch already done
  int64_t iteration = 0;         // iterations done
  double elapsed = 0;            // training seconds so far
  double best_val_loss = 1e300;  // the best ObjectiveMetricName value, to minimise: loss or -metric
  int64_t patience_count = 0;
};

void save_checkpoint(const std::string& path, Network& net, Optimizer& opt, const TrainPosition& pos,
                     const IterationLog& log, const std::string& training_yaml);
// Restores weights, statistics, solver state and the log; returns the position.
TrainPosition load_checkpoint(const std::string& path, Network& net, Optimizer& opt, IterationLog& log);
// The position alone (no network needed): ModelError for an unreadable file or a final model.
TrainPosition read_checkpoint_position(const std::string& path);
// The same in a data-parallel world: rank 0 reads its file at path and sends the bytes to
// every rank (broadcast_from_rank0 on `device`), so the other ranks need no copy of it (no
// shared file system); every rank then restores the same state.
TrainPosition load_checkpoint_from_rank0(Communicator& comm, Device device, const std::string& path, Network& net,
                                         Optimizer& opt, IterationLog& log);

}  // namespace dlt

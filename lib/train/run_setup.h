// Preparing a training run before its first step: the training and validation data
// (data.train must exist, with at least 2 classes and a mini-batch of images); the network,
// checked against the data (image-level or per-pixel output, the class count), its initial or
// transferred (base:) weights; each rank's loaders; the input normalization's statistics;
// rank 0's model broadcast to every rank; the optimizer. Throws ConfigError / DataError naming
// the option, the folder or the layer.
#pragma once
#include "train/training_run.h"

namespace dlt {

// Needs run.comm and run.device; fills the data, net, optimizer and loaders of run.
void prepare_run(TrainingRun& run);

}  // namespace dlt

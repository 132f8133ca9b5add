// The data-parallel steps of a training iteration (seed 004's aggregate* functions), each a
// collective every rank calls in the same order, a rank with an empty share included.
// Rank i holds n_i of the N images of the global mini-batch and a loss / gradient that are
// means over its own images; weighting by w_i = n_i / N before summing gives exactly the
// mean over the global mini-batch.
#pragma once
#include <cstdint>

#include "dist/communicator.h"

namespace dlt {

class Network;

struct GlobalTotals {
  double images = 0;    // N: images in the global mini-batch (all ranks)
  double loss = 0;      // mean loss over the N images
  double correct = 0;   // correct predictions over the N images
  double weight = 1;    // this rank's w = n / N
};

// All-reduces (n, n * loss, correct) of this rank's share.
GlobalTotals all_reduce_totals(Communicator& comm, int64_t images, double mean_loss, int64_t correct);

// grads <- sum over ranks of w_i * grads_i (one all-reduce of the flat buffer).
void all_reduce_gradients(Communicator& comm, Tensor& flat_grads, double weight);

// Batch-norm TrainedMean / TrainedVariance combined across ranks (seed 004's aggregateState):
//   mean = sum_i w_i mean_i;  variance = sum_i w_i (var_i + (mean_i - mean)^2).
// Two all-reduces for all batch-norm layers together. No-op without batch norm.
void aggregate_batch_norm_states(Communicator& comm, Network& net, double weight);

// Every rank takes rank 0's learnables and states (identical seeds make them equal already;
// this makes it certain, input normalization statistics included).
void broadcast_model(Communicator& comm, Network& net);

}  // namespace dlt

// The cross-entropy loss's options and totals, shared by Backend and AsyncDevice.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"

namespace dlt {

// The loss's options (pixelClassification): per-class weights (C floats on the backend's
// device; undefined: all 1) and whether a label of -1 (an undefined pixel) is allowed.
struct LossOptions {
  Tensor class_weights;
  bool undefined_labels = false;
};

// What a loss leaves on its device (Backend::cross_entropy_async), read by read_loss.
struct LossTotals {
  double loss_sum = 0;              // sum over the counted labels of w[l] * -log(p[l])
  double weight_sum = 0;            // W: the sum of their weights, the mean's denominator
  uint64_t correct = 0;             // counted labels whose first maximal probability is theirs
  uint64_t counted = 0;             // labels that are not undefined
  uint64_t first_bad = UINT64_MAX;  // the first sample with a label outside 0..C-1, if any
  uint64_t classes = 0;             // C
};

}  // namespace dlt

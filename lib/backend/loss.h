// The losses' options and totals, shared by Backend and AsyncDevice (MATLAB's names: trainnet's
// lossFcn and the output layers; the formulas are Backend::loss's in backend.h).
#pragma once
#include <cstdint>

#include "tensor/tensor.h"

namespace dlt {

enum class LossKind : int32_t {
  kCrossEntropy,        // softmax probs vs int32 labels (classification, pixelClassification)
  kBinaryCrossEntropy,  // sigmoid probs vs 0/1 float targets (multi-label)
  kMse,                 // half mean squared error (regressionLayer, trainnet "mse")
  kMae,                 // mean absolute error (trainnet "mae")
  kHuber,               // Huber loss (trainnet "huber"), transition point huber_delta
  kGeneralizedDice,     // softmax probs vs int32 pixel labels (generalizedDice, dicePixelClassificationLayer)
  kFocalCrossEntropy,   // softmax probs vs int32 labels (focalCrossEntropy, focalLossLayer)
  kTversky,             // softmax probs vs int32 pixel labels (MATLAB's tverskyPixelClassificationLayer example)
};

// The Tversky index's smoothing, added to its numerator and denominator (MATLAB's example
// layer's Epsilon): a class absent from an image and predicted nowhere has index 1.
inline constexpr double kTverskyEpsilon = 1e-8;

// Whether a loss compares float targets (regression, multi-label) rather than int32 labels.
inline bool float_targets(LossKind k) {
  return k == LossKind::kBinaryCrossEntropy || k == LossKind::kMse || k == LossKind::kMae || k == LossKind::kHuber;
}
inline bool regression_loss(LossKind k) { return k == LossKind::kMse || k == LossKind::kMae || k == LossKind::kHuber; }

// The loss's options: the kind and its parameters; per-class weights (C floats on the
// backend's device; undefined: all 1) and whether a label of -1 (an undefined pixel) is
// allowed, for the losses on int32 labels.
struct LossOptions {
  LossKind kind = LossKind::kCrossEntropy;
  Tensor class_weights;
  bool undefined_labels = false;
  float huber_delta = 1.f;    // huber: |e| <= delta is quadratic
  float focal_gamma = 2.f;    // focal: the modulating exponent
  float focal_alpha = 0.25f;  // focal: the balancing factor
  float tversky_alpha = 0.3f;  // tversky: the weight of the false positives
  float tversky_beta = 0.7f;   // tversky: the weight of the false negatives
  int64_t images = 0;         // N, the images: float targets are N rows; Dice's labels N * pixels
};

// What a loss leaves on its device (Backend::loss_async), read by read_loss. The CUDA kernels
// write the same struct.
struct LossTotals {
  double loss_sum = 0;              // the loss summed over what its mean divides by
  double weight_sum = 0;            // W: the mean's denominator
  uint64_t correct = 0;             // counted labels whose first maximal probability is theirs
  uint64_t counted = 0;             // labels that are not undefined; float targets: images
  uint64_t first_bad = UINT64_MAX;  // the first sample with a label outside 0..C-1 (or a target not 0/1)
  uint64_t classes = 0;             // C (float targets: values per image)
  // Regression (over every response value): squared, absolute and absolute percentage errors.
  double sq_sum = 0, abs_sum = 0, ape_sum = 0;
  uint64_t values = 0;     // N * R (multi-label: N * C)
  uint64_t ape_count = 0;  // values whose target is not 0 (MAPE's denominator)
  // Multi-label at the threshold 0.5: true positives, false positives, false negatives, and
  // images whose every label is right (exact match).
  uint64_t tp = 0, fp = 0, fn = 0, exact = 0;
};

}  // namespace dlt

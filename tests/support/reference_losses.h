// Double-precision references of the losses other than cross-entropy (Backend::loss's formulas
// in backend.h), written from the definitions: each loss, its metric sums and its gradient
// (through the softmax by ref::softmax_backward, through the sigmoid as p (1 - p) dL/dp).
// The oracle of the agreement rows (tests/backend/loss_rows.h) and of the gradient rows.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/loss.h"
#include "support/tensor_utils.h"

namespace dlt::ref {

using test::Vec;

struct LossResult {
  double loss = 0;    // the mean loss
  double weight = 0;  // its denominator
  int64_t correct = 0, counted = 0;
  double sq = 0, abs = 0, ape = 0;  // regression sums over the values
  int64_t ape_count = 0;
  int64_t tp = 0, fp = 0, fn = 0, exact = 0;  // multi-label counts at p >= 0.5
  Vec grad;                                   // with respect to the outputs (regression) or the logits (the others)
};

// mse, mae or huber (delta) of outputs y against targets t, n rows.
LossResult regression_loss(LossKind kind, int64_t n, const Vec& y, const Vec& t, double delta = 1.0);
// Sigmoid probabilities p against 0/1 targets, n rows.
LossResult binary_cross_entropy(int64_t n, const Vec& p, const Vec& t);
// Softmax probabilities (rows, c) against labels (-1: undefined), rows / images pixels per image.
LossResult generalized_dice(int64_t images, int64_t c, const Vec& probs, const std::vector<int32_t>& labels);
// The Tversky loss (alpha on the false positives, beta on the false negatives), as generalized_dice.
LossResult tversky(int64_t images, int64_t c, const Vec& probs, const std::vector<int32_t>& labels, double alpha,
                   double beta);
// weights empty: all 1.
LossResult focal_cross_entropy(int64_t c, const Vec& probs, const std::vector<int32_t>& labels, double gamma,
                               double alpha, const Vec& weights = {});

}  // namespace dlt::ref

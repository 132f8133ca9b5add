// Float targets (regression responses, multi-label 0/1) between the loader and the loss:
// response normalisation (data.ResponseNormalization zscore: the network learns
// (t - mean) / std, predictions are output * std + mean) and the regression errors in the
// responses' own units, summed on the host from a batch's outputs.
#pragma once
#include <vector>

#include "data/batch_loader.h"
#include "net/network.h"

namespace dlt {

// Normalises b.targets in place with the network's response statistics (none: unchanged).
void normalize_targets(const Network& net, Batch& b);

// Sums of the regression errors (in the responses' units) over response values.
struct RegressionSums {
  double squared = 0, absolute = 0, percentage = 0;  // sum of e^2, |e|, 100 |e| / |t| (t != 0)
  double values = 0, nonzero = 0;                    // values, and those whose target is not 0
  // outputs: the network's (N, 1, 1, R) outputs on any device; b.targets as normalised.
  void add(const Network& net, const Tensor& outputs, const Batch& b);
  double rmse() const;
  double mae() const;
  double mape() const;  // percent; NaN when every target is 0
};

// The training data's per-response mean and population standard deviation (a standard
// deviation of 0 becomes 1), for ResponseNormalization zscore.
void response_statistics(const std::vector<float>& rows, int64_t width, std::vector<float>& mean,
                         std::vector<float>& std);

}  // namespace dlt

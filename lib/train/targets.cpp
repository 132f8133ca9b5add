// Float targets: normalisation and the regression errors (targets.h).
#include "train/targets.h"

#include <cmath>
#include <limits>

namespace dlt {

void normalize_targets(const Network& net, Batch& b) {
  const std::vector<float>& mean = net.response_mean();
  const std::vector<float>& sd = net.response_std();
  if (mean.empty() || !b.targets.defined() || b.size == 0) return;
  const int64_t r = static_cast<int64_t>(mean.size());
  float* t = b.targets.data();
  for (int64_t i = 0; i < b.size; ++i)
    for (int64_t j = 0; j < r; ++j) t[i * r + j] = (t[i * r + j] - mean[j]) / sd[j];
}

void RegressionSums::add(const Network& net, const Tensor& outputs, const Batch& b) {
  if (b.size == 0) return;
  const Tensor host = outputs.device().is_cpu() ? outputs : outputs.to(Device::cpu());
  const std::vector<float>& mean = net.response_mean();
  const std::vector<float>& sd = net.response_std();
  const int64_t r = net.output_width();
  const float* y = host.data();
  const float* t = b.targets.data();
  for (int64_t i = 0; i < b.size; ++i)
    for (int64_t j = 0; j < r; ++j) {
      const double scale = sd.empty() ? 1.0 : sd[j], shift = mean.empty() ? 0.0 : mean[j];
      const double truth = t[i * r + j] * scale + shift;
      const double e = (static_cast<double>(y[i * r + j]) - t[i * r + j]) * scale;
      squared += e * e;
      absolute += std::abs(e);
      values += 1;
      if (truth != 0) {
        percentage += 100.0 * std::abs(e) / std::abs(truth);
        nonzero += 1;
      }
    }
}

double RegressionSums::rmse() const {
  return values > 0 ? std::sqrt(squared / values) : std::numeric_limits<double>::quiet_NaN();
}
double RegressionSums::mae() const { return values > 0 ? absolute / values : std::numeric_limits<double>::quiet_NaN(); }
double RegressionSums::mape() const {
  return nonzero > 0 ? percentage / nonzero : std::numeric_limits<double>::quiet_NaN();
}

void response_statistics(const std::vector<float>& rows, int64_t width, std::vector<float>& mean,
                         std::vector<float>& std) {
  const int64_t n = width > 0 ? static_cast<int64_t>(rows.size()) / width : 0;
  mean.assign(static_cast<size_t>(width), 0.f);
  std.assign(static_cast<size_t>(width), 1.f);
  for (int64_t j = 0; j < width && n > 0; ++j) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < n; ++i) s += rows[static_cast<size_t>(i * width + j)];
    const double m = s / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) {
      const double d = rows[static_cast<size_t>(i * width + j)] - m;
      ss += d * d;
    }
    const double sd = std::sqrt(ss / static_cast<double>(n));
    mean[static_cast<size_t>(j)] = static_cast<float>(m);
    std[static_cast<size_t>(j)] = sd > 0 ? static_cast<float>(sd) : 1.f;
  }
}

}  // namespace dlt

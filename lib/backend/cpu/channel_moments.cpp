// CpuBackend's synchronized batch-norm helpers: per-channel moments of an NHWC tensor
// (double accumulation, two passes) and the dx correction through the global statistics.
#include <omp.h>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/kernel_kinds.h"

namespace dlt {

namespace {

// Sums f(position, channel) over the positions of an (P, C) array into out (C), in double,
// each thread over a contiguous block of positions.
template <class F>
void channel_sums(int64_t positions, int64_t c, std::vector<double>& out, F f) {
  out.assign(static_cast<size_t>(c), 0.0);
  const int threads = positions * c > (1 << 15) ? omp_get_max_threads() : 1;
  std::vector<std::vector<double>> partial(static_cast<size_t>(threads), std::vector<double>(c, 0.0));
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int64_t begin = positions * t / threads, end = positions * (t + 1) / threads;
    double* acc = partial[static_cast<size_t>(t)].data();
    for (int64_t p = begin; p < end; ++p)
      for (int64_t j = 0; j < c; ++j) acc[j] += f(p, j);
  }
  for (const auto& part : partial)
    for (int64_t j = 0; j < c; ++j) out[static_cast<size_t>(j)] += part[static_cast<size_t>(j)];
}

}  // namespace

static void cpu_channel_moments(Backend&, const Tensor& x, int64_t positions, Tensor& mean, Tensor& var) {
  const int64_t c = mean.numel();
  const float* px = x.data();
  float* pm = mean.data();
  float* pv = var.data();
  std::vector<double> sums, squares;
  channel_sums(positions, c, sums, [&](int64_t p, int64_t j) { return static_cast<double>(px[p * c + j]); });
  for (auto& s : sums) s /= static_cast<double>(positions);
  channel_sums(positions, c, squares, [&](int64_t p, int64_t j) {
    const double d = px[p * c + j] - sums[static_cast<size_t>(j)];
    return d * d;
  });
  for (int64_t j = 0; j < c; ++j) {
    pm[j] = static_cast<float>(sums[static_cast<size_t>(j)]);
    pv[j] = static_cast<float>(squares[static_cast<size_t>(j)] / static_cast<double>(positions));
  }
}

static void cpu_batch_norm_dx_correction(Backend&, const Tensor& x, int64_t positions, const Tensor& mean,
                                         const Tensor& var, const Tensor& scale, float epsilon, double m,
                                         const Tensor& dshift, const Tensor& dscale, Tensor& dx) {
  const int64_t c = mean.numel();
  // Per channel: dx -= a + b * (x - mean) with a = k * dshift, b = k * dscale / sigma,
  // k = scale / (sigma * m).
  std::vector<float> a(static_cast<size_t>(c)), b(static_cast<size_t>(c)), mu(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) {
    const double sigma = std::sqrt(static_cast<double>(var.data()[j]) + epsilon);
    const double k = scale.data()[j] / (sigma * m);
    a[static_cast<size_t>(j)] = static_cast<float>(k * dshift.data()[j]);
    b[static_cast<size_t>(j)] = static_cast<float>(k * dscale.data()[j] / sigma);
    mu[static_cast<size_t>(j)] = mean.data()[j];
  }
  const float* px = x.data();
  float* pd = dx.data();
#pragma omp parallel for if (positions * c > (1 << 15)) schedule(static)
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t j = 0; j < c; ++j) {
      const size_t k = static_cast<size_t>(j);
      pd[p * c + j] -= a[k] + b[k] * (px[p * c + j] - mu[k]);
    }
}

DLT_REGISTER_KERNEL(ChannelMomentsKernel, DeviceType::kCpu, cpu_channel_moments);
DLT_REGISTER_KERNEL(BatchNormDxCorrectionKernel, DeviceType::kCpu, cpu_batch_norm_dx_correction);

}  // namespace dlt

// Channel shuffle and channel slice (backend.h) on NHWC tensors: per-pixel data movement in
// plain loops, parallel over pixels (no arithmetic; oneDNN's shuffle primitive would need a
// primitive per shape for the same copies).
#include <algorithm>
#include <cstring>

#include "backend/cpu/cpu_backend.h"

namespace dlt {

// y[p, j * G + g] = x[p, g * K + j] with K = C / G: one pixel's C values, read in order.
void CpuBackend::do_channel_shuffle(const Tensor& x, Tensor& y, const ChannelShuffleDesc& d) {
  const int64_t c = d.c, groups = d.groups, k = c / groups;
  const float* px = x.data();
  float* py = y.data();
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < d.pixels; ++p) {
    const float* __restrict src = px + p * c;
    float* __restrict dst = py + p * c;
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t j = 0; j < k; ++j) dst[j * groups + g] = src[g * k + j];
  }
}

void CpuBackend::do_channel_slice(const Tensor& x, Tensor& y, const ChannelSliceDesc& d) {
  const float* px = x.data();
  float* py = y.data();
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < d.pixels; ++p) std::memcpy(py + p * d.count, px + p * d.c + d.start, sizeof(float) * d.count);
}

void CpuBackend::do_channel_slice_backward(const Tensor& dy, Tensor& dx, const ChannelSliceDesc& d) {
  const float* pdy = dy.data();
  float* pdx = dx.data();
  const int64_t end = d.start + d.count;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < d.pixels; ++p) {
    float* row = pdx + p * d.c;
    std::fill(row, row + d.start, 0.f);
    std::memcpy(row + d.start, pdy + p * d.count, sizeof(float) * d.count);
    std::fill(row + end, row + d.c, 0.f);
  }
}

}  // namespace dlt

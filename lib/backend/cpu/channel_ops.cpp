// Channel shuffle and channel slice (backend.h) on NHWC tensors: per-pixel data movement in
// plain loops, parallel over pixels (no arithmetic; oneDNN's shuffle primitive would need a
// primitive per shape for the same copies).
#include <algorithm>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/kernel_kinds.h"

namespace dlt {

// y[p, j * G + g] = x[p, g * K + j] with K = C / G: one pixel's C values, read in order.
static void cpu_channel_shuffle(Backend&, const Tensor& x, Tensor& y, const ChannelShuffleDesc& d) {
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

static void cpu_channel_slice(Backend&, const Tensor& x, Tensor& y, const ChannelSliceDesc& d) {
  const float* px = x.data();
  float* py = y.data();
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < d.pixels; ++p) std::memcpy(py + p * d.count, px + p * d.c + d.start, sizeof(float) * d.count);
}

static void cpu_channel_slice_backward(Backend&, const Tensor& dy, Tensor& dx, const ChannelSliceDesc& d) {
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

DLT_REGISTER_KERNEL(ChannelShuffleKernel, DeviceType::kCpu, cpu_channel_shuffle);
DLT_REGISTER_KERNEL(ChannelSliceKernel, DeviceType::kCpu, cpu_channel_slice);
DLT_REGISTER_KERNEL(ChannelSliceBackwardKernel, DeviceType::kCpu, cpu_channel_slice_backward);

}  // namespace dlt

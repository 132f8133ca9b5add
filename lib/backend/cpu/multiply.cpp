// CpuBackend's element-wise product with broadcasting (Backend::multiply, multiply_backward):
// plain OpenMP loops over rows of C channels (memory-bound, cheap), each input's row either
// its own or, for an input repeated over the pixels, its image's one row. The gradient of a
// repeated input is summed over the pixels in double, in pixel order, per (image, block of
// channels): the result does not depend on the thread count.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/kernel_kinds.h"

namespace dlt {
namespace {

constexpr int64_t kParallelMin = 1 << 14;  // elements below which threads cost more than they save
constexpr int64_t kChannelBlock = 64;      // channels per task of the summed gradient

// Row r = (image, pixel) of input x: its own row, or its image's row when repeated.
inline const float* row_of(const Tensor& x, int64_t r, const ProductDesc& d) {
  const bool full = x.numel() == d.n * d.pixels * d.c;
  return x.data() + (full ? r : r / d.pixels) * d.c;
}

}  // namespace

static void cpu_multiply(Backend&, const std::vector<const Tensor*>& xs, Tensor& y, const ProductDesc& d) {
  const int64_t rows = d.n * d.pixels, c = d.c;
  float* py = y.data();
#pragma omp parallel for if (rows * c > kParallelMin) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    float* out = py + r * c;
    const float* a = row_of(*xs[0], r, d);
    for (int64_t j = 0; j < c; ++j) out[j] = a[j];
    for (size_t k = 1; k < xs.size(); ++k) {
      const float* b = row_of(*xs[k], r, d);
      for (int64_t j = 0; j < c; ++j) out[j] *= b[j];
    }
  }
}

static void cpu_multiply_backward(Backend&, const Tensor& dy, const std::vector<const Tensor*>& xs, size_t i,
                                  Tensor& dx, const ProductDesc& d) {
  const int64_t rows = d.n * d.pixels, c = d.c;
  std::vector<const Tensor*> others;
  for (size_t k = 0; k < xs.size(); ++k)
    if (k != i) others.push_back(xs[k]);
  // g = dy * the other inputs, for channels [j0, j1) of row r, into g.
  auto product = [&](int64_t r, int64_t j0, int64_t j1, float* g) {
    const float* a = dy.data() + r * c;
    for (int64_t j = j0; j < j1; ++j) g[j - j0] = a[j];
    for (const Tensor* x : others) {
      const float* b = row_of(*x, r, d);
      for (int64_t j = j0; j < j1; ++j) g[j - j0] *= b[j];
    }
  };
  if (dx.numel() == rows * c) {
    float* pdx = dx.data();
#pragma omp parallel for if (rows * c > kParallelMin) schedule(static)
    for (int64_t r = 0; r < rows; ++r) product(r, 0, c, pdx + r * c);
    return;
  }
  // Input i is repeated over the pixels: dx (n, c) sums its pixels' products.
  const int64_t blocks = (c + kChannelBlock - 1) / kChannelBlock;
  float* pdx = dx.data();
#pragma omp parallel for if (rows * c > kParallelMin) schedule(static)
  for (int64_t t = 0; t < d.n * blocks; ++t) {
    const int64_t img = t / blocks, j0 = t % blocks * kChannelBlock, j1 = std::min(c, j0 + kChannelBlock);
    double acc[kChannelBlock] = {};
    float g[kChannelBlock];
    for (int64_t p = 0; p < d.pixels; ++p) {
      product(img * d.pixels + p, j0, j1, g);
      for (int64_t j = 0; j < j1 - j0; ++j) acc[j] += g[j];
    }
    for (int64_t j = 0; j < j1 - j0; ++j) pdx[img * c + j0 + j] = static_cast<float>(acc[j]);
  }
}

DLT_REGISTER_KERNEL(MultiplyKernel, DeviceType::kCpu, cpu_multiply);
DLT_REGISTER_KERNEL(MultiplyBackwardKernel, DeviceType::kCpu, cpu_multiply_backward);

}  // namespace dlt

// CpuBackend's element-wise product with broadcasting (Backend::multiply, multiply_backward):
// plain OpenMP loops over rows of C channels (memory-bound, cheap), each input's row either
// its own, its image's one row (repeated over the pixels) or its pixel's one value (repeated
// over the channels). The gradient of an input repeated over the pixels is summed over them in
// double, in pixel order, per (image, block of channels); of one repeated over the channels, over
// them in double, in channel order: the result does not depend on the thread count.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/kernel_kinds.h"

namespace dlt {
namespace {

constexpr int64_t kParallelMin = 1 << 14;  // elements below which threads cost more than they save
constexpr int64_t kChannelBlock = 64;      // channels per task of the summed gradient

// An input and its extent.
struct Operand {
  const float* x;
  ProductDesc::Extent extent;
};

std::vector<Operand> operands(const std::vector<const Tensor*>& xs, const ProductDesc& d) {
  std::vector<Operand> ops;
  for (size_t i = 0; i < xs.size(); ++i) ops.push_back({xs[i]->data(), d.extent(i, xs[i]->numel())});
  return ops;
}

// Row r = (image, pixel) of an operand: its own row, its image's row, or its pixel's one value.
inline const float* row_of(const Operand& o, int64_t r, const ProductDesc& d) {
  switch (o.extent) {
    case ProductDesc::kChannels:
      return o.x + r / d.pixels * d.c;
    case ProductDesc::kPixels:
      return o.x + r;
    default:
      return o.x + r * d.c;
  }
}

// out[j0, j1) = (or *=, when times) the operand's values at channels [j0, j1) of row r.
inline void take(const Operand& o, int64_t r, int64_t j0, int64_t j1, const ProductDesc& d, float* out, bool times) {
  const float* b = row_of(o, r, d);
  if (o.extent == ProductDesc::kPixels) {
    const float v = b[0];
    for (int64_t j = j0; j < j1; ++j) out[j - j0] = times ? out[j - j0] * v : v;
  } else {
    for (int64_t j = j0; j < j1; ++j) out[j - j0] = times ? out[j - j0] * b[j] : b[j];
  }
}

}  // namespace

static void cpu_multiply(Backend&, const std::vector<const Tensor*>& xs, Tensor& y, const ProductDesc& d) {
  const int64_t rows = d.n * d.pixels, c = d.c;
  const std::vector<Operand> ops = operands(xs, d);
  float* py = y.data();
#pragma omp parallel for if (rows * c > kParallelMin) schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < ops.size(); ++k) take(ops[k], r, 0, c, d, py + r * c, k > 0);
}

static void cpu_multiply_backward(Backend&, const Tensor& dy, const std::vector<const Tensor*>& xs, size_t i,
                                  Tensor& dx, const ProductDesc& d) {
  const int64_t rows = d.n * d.pixels, c = d.c;
  const std::vector<Operand> all = operands(xs, d);
  std::vector<Operand> others{{dy.data(), ProductDesc::kFull}};
  for (size_t k = 0; k < all.size(); ++k)
    if (k != i) others.push_back(all[k]);
  // g = dy * the other inputs, for channels [j0, j1) of row r, into g.
  auto product = [&](int64_t r, int64_t j0, int64_t j1, float* g) {
    for (size_t k = 0; k < others.size(); ++k) take(others[k], r, j0, j1, d, g, k > 0);
  };
  float* pdx = dx.data();
  switch (all[i].extent) {
    case ProductDesc::kFull:
#pragma omp parallel for if (rows * c > kParallelMin) schedule(static)
      for (int64_t r = 0; r < rows; ++r) product(r, 0, c, pdx + r * c);
      return;
    case ProductDesc::kPixels: {  // dx (n, pixels) sums each row's products over the channels
#pragma omp parallel for if (rows * c > kParallelMin) schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        float g[kChannelBlock];
        double acc = 0;
        for (int64_t j0 = 0; j0 < c; j0 += kChannelBlock) {
          const int64_t j1 = std::min(c, j0 + kChannelBlock);
          product(r, j0, j1, g);
          for (int64_t j = 0; j < j1 - j0; ++j) acc += g[j];
        }
        pdx[r] = static_cast<float>(acc);
      }
      return;
    }
    case ProductDesc::kChannels:
      break;
  }
  // Input i is repeated over the pixels: dx (n, c) sums its pixels' products.
  const int64_t blocks = (c + kChannelBlock - 1) / kChannelBlock;
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

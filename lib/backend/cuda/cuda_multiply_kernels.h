// Launchers of the broadcasting product's kernels (cuda_multiply_kernels.cu), for
// Backend::multiply and multiply_backward: y (n, pixels, c), each factor (n, pixels, c), (n, c)
// used for every pixel of its image, or (n, pixels) used for every channel of its pixel (its
// extent, ProductDesc::Extent). Products are taken left to right
// with __fmul_rn, as the CPU backend's float loop. Each launcher enqueues on stream and checks
// the launch; nothing synchronizes.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dlt::cuda {

// Factors of one kernel launch; more are taken in further launches (product) or by the caller.
constexpr int kProductChunk = 8;

struct Factors {
  const float* x[kProductChunk];
  unsigned char extent[kProductChunk];  // ProductDesc::Extent
  int k;
};

// y = f.x[0] * ... * f.x[k-1], or y *= that product when accumulate (y then is no factor).
void product(const Factors& f, bool accumulate, float* y, int64_t n, int64_t pixels, int64_t c, cudaStream_t stream);

// out (n, c) = the sum over each image's pixels of the product of the factors, in double, in
// a fixed order (deterministic). scratch: product_sum_scratch(n, pixels, c) doubles.
size_t product_sum_scratch(int64_t n, int64_t pixels, int64_t c);
void product_sum(const Factors& f, float* out, int64_t n, int64_t pixels, int64_t c, double* scratch,
                 cudaStream_t stream);
// out (n, pixels) = the sum over each pixel's channels of the product of the factors, in double,
// in channel order.
void product_channel_sum(const Factors& f, float* out, int64_t n, int64_t pixels, int64_t c, cudaStream_t stream);

}  // namespace dlt::cuda

// Adaptive average pooling's kernels (cuda_adaptive_pool_kernels.h): one thread per output value
// summing its region (forward), one per input value gathering dy from the outputs whose regions
// hold it (backward: no atomics, the same order as the CPU's), grid-stride.
#include "backend/cuda/cuda_adaptive_pool_kernels.h"
#include "backend/cuda/cuda_launch.cuh"

namespace dlt::cuda {
namespace {

__device__ inline int64_t region_begin(int64_t i, int64_t in, int64_t out) { return i * in / out; }
__device__ inline int64_t region_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

__global__ void forward_kernel(const float* x, float* y, AdaptivePoolSizes d) {
  const int64_t total = d.n * d.out_h * d.out_w * d.c;
  for (int64_t k = first_index(); k < total; k += grid_stride()) {
    const int64_t ch = k % d.c, j = k / d.c % d.out_w, i = k / (d.c * d.out_w) % d.out_h,
                  n = k / (d.c * d.out_w * d.out_h);
    const int64_t h0 = region_begin(i, d.h, d.out_h), h1 = region_end(i, d.h, d.out_h);
    const int64_t w0 = region_begin(j, d.w, d.out_w), w1 = region_end(j, d.w, d.out_w);
    float s = 0.f;
    for (int64_t hh = h0; hh < h1; ++hh)
      for (int64_t ww = w0; ww < w1; ++ww) s += x[((n * d.h + hh) * d.w + ww) * d.c + ch];
    y[k] = s * (1.f / static_cast<float>((h1 - h0) * (w1 - w0)));
  }
}

__global__ void backward_kernel(const float* dy, float* dx, AdaptivePoolSizes d) {
  const int64_t total = d.n * d.h * d.w * d.c;
  for (int64_t k = first_index(); k < total; k += grid_stride()) {
    const int64_t ch = k % d.c, ww = k / d.c % d.w, hh = k / (d.c * d.w) % d.h, n = k / (d.c * d.w * d.h);
    float s = 0.f;
    for (int64_t i = 0; i < d.out_h; ++i) {
      const int64_t h0 = region_begin(i, d.h, d.out_h), h1 = region_end(i, d.h, d.out_h);
      if (hh < h0 || hh >= h1) continue;
      for (int64_t j = 0; j < d.out_w; ++j) {
        const int64_t w0 = region_begin(j, d.w, d.out_w), w1 = region_end(j, d.w, d.out_w);
        if (ww < w0 || ww >= w1) continue;
        s += dy[((n * d.out_h + i) * d.out_w + j) * d.c + ch] * (1.f / static_cast<float>((h1 - h0) * (w1 - w0)));
      }
    }
    dx[k] = s;
  }
}

}  // namespace

void adaptive_pool_forward(const float* x, float* y, const AdaptivePoolSizes& d, cudaStream_t stream) {
  forward_kernel<<<grid_for(d.n * d.out_h * d.out_w * d.c), kThreads, 0, stream>>>(x, y, d);
  DLT_LAUNCH_CHECK();
}

void adaptive_pool_backward(const float* dy, float* dx, const AdaptivePoolSizes& d, cudaStream_t stream) {
  backward_kernel<<<grid_for(d.n * d.h * d.w * d.c), kThreads, 0, stream>>>(dy, dx, d);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda

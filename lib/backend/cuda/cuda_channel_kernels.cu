// The channel shuffle kernel: one thread per output value, grid-stride (a gather; the reads of
// one pixel stay inside its c values, so a warp touches few cache lines).
#include "backend/cuda/cuda_channel_kernels.h"
#include "backend/cuda/cuda_launch.cuh"

namespace dlt::cuda {

namespace {

__global__ void channel_shuffle_forward_kernel(const float* x, float* y, int64_t total, int64_t c, int64_t groups) {
  const int64_t k = c / groups;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t p = i / c, o = i - p * c;
    const int64_t j = o / groups, g = o - j * groups;
    y[i] = x[p * c + g * k + j];
  }
}

}  // namespace

void channel_shuffle(const float* x, float* y, int64_t pixels, int64_t c, int64_t groups, cudaStream_t stream) {
  const int64_t total = pixels * c;
  if (total <= 0) return;
  channel_shuffle_forward_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, y, total, c, groups);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda

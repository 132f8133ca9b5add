// Launchers of adaptive average pooling's kernels (cuda_adaptive_pool_kernels.cu) on NHWC
// tensors, the regions of backend/adaptive_pool_op.h. Each enqueues on stream and checks the
// launch.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace dlt::cuda {

// AdaptivePoolDesc's sizes (the .cu files include only the CUDA backend's plain headers).
struct AdaptivePoolSizes {
  int64_t n, h, w, c, out_h, out_w;
};

// y (n, out_h, out_w, c) = the mean of each output's region of x (n, h, w, c).
void adaptive_pool_forward(const float* x, float* y, const AdaptivePoolSizes& d, cudaStream_t stream);
// dx (n, h, w, c) = the sum of dy / (region size) over the outputs whose regions hold the value.
void adaptive_pool_backward(const float* dy, float* dx, const AdaptivePoolSizes& d, cudaStream_t stream);

}  // namespace dlt::cuda

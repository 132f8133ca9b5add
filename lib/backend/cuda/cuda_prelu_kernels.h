// Launchers of PReLU's kernels (cuda_prelu_kernels.cu) on NHWC tensors of `rows` pixels of c
// channels, alpha of `alphas` values (1: shared, or c). Each enqueues on stream and checks the
// launch.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace dlt::cuda {

// y = x where x > 0, alpha x elsewhere.
void prelu_forward(const float* x, const float* alpha, float* y, int64_t rows, int64_t c, int64_t alphas,
                   cudaStream_t stream);
// dx = dy where x > 0, alpha dy elsewhere; dalpha (may be null) = the sum of dy x over x <= 0,
// per channel or over all, in double and a fixed order (sums: c doubles of scratch).
void prelu_backward(const float* x, const float* alpha, const float* dy, float* dx, float* dalpha, double* sums,
                    int64_t rows, int64_t c, int64_t alphas, cudaStream_t stream);

}  // namespace dlt::cuda

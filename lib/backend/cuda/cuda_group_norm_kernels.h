// Launchers of group normalization's kernels (cuda_group_norm_kernels.cu) on NHWC tensors
// x (n, pixels, c) whose c channels are `groups` contiguous groups (GroupNormDesc). One block
// per image and group sums its pixels * c / groups values in double in a fixed order (the mean,
// then the squared deviations); the element-wise passes read those statistics. Each launcher
// enqueues on stream and checks the launch.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace dlt::cuda {

// mean and var (n * groups, biased) of each image's groups.
void group_norm_stats(const float* x, float* mean, float* var, int64_t n, int64_t pixels, int64_t c, int64_t groups,
                      cudaStream_t stream);

// y = (x - mean) / sqrt(var + epsilon) * scale[ch] + offset[ch].
void group_norm_apply(const float* x, const float* mean, const float* var, const float* scale, const float* offset,
                      float* y, int64_t n, int64_t pixels, int64_t c, int64_t groups, float epsilon,
                      cudaStream_t stream);

// dx = rstd (g - mean(g) - xhat mean(g xhat)) over each group, g = dy scale[ch]; sums: 2 * n *
// groups doubles of scratch.
void group_norm_backward_data(const float* x, const float* dy, const float* scale, const float* mean, const float* var,
                              float* dx, double* sums, int64_t n, int64_t pixels, int64_t c, int64_t groups,
                              float epsilon, cudaStream_t stream);

// dscale[ch] = the sum of dy xhat, doffset[ch] = the sum of dy over images and pixels (either
// may be null), in double and a fixed order.
void group_norm_backward_params(const float* x, const float* dy, const float* mean, const float* var, float* dscale,
                                float* doffset, int64_t n, int64_t pixels, int64_t c, int64_t groups, float epsilon,
                                cudaStream_t stream);

}  // namespace dlt::cuda

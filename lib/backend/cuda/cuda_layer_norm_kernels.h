// Launchers of layer normalization's own kernels (cuda_layer_norm_kernels.cu) over rows of
// `length` values whose value j has channel j % c (LayerNormDesc). Statistics per row in
// float, two passes (the mean, then the mean of squared deviations): one warp per row when
// length <= kLayerNormWarpMax, else one block per row. Each launcher enqueues on stream and
// checks the launch.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dlt::cuda {

constexpr int64_t kLayerNormWarpMax = 1024;

// y = (x - mean) / sqrt(var + epsilon) * scale[j % c] + offset[j % c] per row; mean and var
// (rows, biased) are written when not null.
void layer_norm_forward(const float* x, const float* scale, const float* offset, float* y, float* mean, float* var,
                        int64_t rows, int64_t length, int64_t c, float epsilon, cudaStream_t stream);

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) per row, g = dy * scale[j % c],
// xhat = (x - mean) * rstd, rstd = 1 / sqrt(var + epsilon).
void layer_norm_backward_data(const float* x, const float* dy, const float* scale, const float* mean, const float* var,
                              float* dx, int64_t rows, int64_t length, int64_t c, float epsilon, cudaStream_t stream);

// dscale (c) = sum of dy * xhat, doffset (c) = sum of dy, over every row and pixel, in double
// and a fixed order (deterministic); either may be null. scratch:
// layer_norm_param_scratch(rows, length, c) doubles.
size_t layer_norm_param_scratch(int64_t rows, int64_t length, int64_t c);
void layer_norm_backward_params(const float* x, const float* dy, const float* mean, const float* var, float* dscale,
                                float* doffset, double* scratch, int64_t rows, int64_t length, int64_t c, float epsilon,
                                cudaStream_t stream);

}  // namespace dlt::cuda

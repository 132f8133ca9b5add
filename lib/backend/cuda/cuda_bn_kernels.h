// Batch normalization in training with dltrain's own kernels (BatchNormKernels: dltrain, env
// DLT_BN_KERNELS=dltrain; cuda_batch_norm_op.cpp), NHWC float32, per-channel statistics over
// p = N * H * W positions. What cuDNN's calls need two more passes for: the fused relu is
// applied while normalizing (cuDNN: a separate relu pass) and its mask is recomputed from x
// inside the backward's two passes (cuDNN: a masking pass first). Traffic per element: forward
// 12 bytes (read x twice, write y), backward 20 (read x and dy twice, write dx). Sums in double,
// over a fixed grid in a fixed order: deterministic.
// Every launcher enqueues on stream and returns cudaGetLastError(); callers wrap it in DLT_CUDA.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dlt::cuda {

// Bytes of scratch bn_train_forward and bn_train_backward need for p positions of c channels.
size_t bn_train_scratch_bytes(int64_t p, int64_t c);

// mean (c), var (c) = the batch mean and biased variance of x (p, c); y = (x - mean) k + offset
// with k = scale / sqrt(var + epsilon), then relu when relu is set (a NaN passes through).
// scratch: bn_train_scratch_bytes(p, c), 8-byte aligned. p, c >= 1.
cudaError_t bn_train_forward(const float* x, const float* scale, const float* offset, float* y, float* mean,
                             float* var, float epsilon, bool relu, int64_t p, int64_t c, void* scratch,
                             cudaStream_t stream);

// The backward with the batch statistics mean and var (biased) of bn_train_forward:
//   g = dy, or (offset != null: the fused relu) 0 where (x - mean) k + offset is not > 0;
//   xhat = (x - mean) / sqrt(var + epsilon);  doffset = sum g;  dscale = sum g xhat;
//   dx = k (g - doffset / p - xhat dscale / p).
// dscale and doffset may be null (not written). scratch as bn_train_forward's.
cudaError_t bn_train_backward(const float* x, const float* dy, const float* mean, const float* var,
                              const float* scale, const float* offset, float epsilon, float* dx, float* dscale,
                              float* doffset, int64_t p, int64_t c, void* scratch, cudaStream_t stream);

}  // namespace dlt::cuda

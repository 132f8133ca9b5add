// Launchers of the CUDA backend's own kernels: the element-wise work, optimizer updates, channel
// copies and batch-norm reductions that no cuDNN / cuBLAS call covers (the losses:
// cuda_loss_kernels.h). Each enqueues on stream, checks the launch and returns without
// synchronizing; n == 0 launches nothing.
// Float arithmetic is written as the CPU backend's (no FMA contraction), so results agree bit
// for bit except for the reductions (double accumulation in another order).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dlt::cuda {

void fill_value(float* p, int64_t n, float value, cudaStream_t stream);
// y = a * x + b * y (y is not read when b == 0)
void axpby(float a, const float* x, float b, float* y, int64_t n, cudaStream_t stream);
// y = xs[0] + ... + xs[k-1], added in that order; y may alias xs[0..kSumChunk-1] only.
constexpr int kSumChunk = 8;
void sum(const float* const* xs, int k, float* y, int64_t n, cudaStream_t stream);
void scale(float* p, int64_t n, float s, cudaStream_t stream);
void clamp(float* p, int64_t n, float lo, float hi, cudaStream_t stream);
void mul(const float* x, const float* m, float* y, int64_t n, cudaStream_t stream);
// y[i] = (x[i] - shift[i % ns]) * mul[i % nm]; mul may be null (then 1).
void shift_scale(const float* x, const float* shift, int64_t ns, const float* mul, int64_t nm, float* y, int64_t n,
                 cudaStream_t stream);
// mask[i] = keep_value if hash(key, i) >= p (as a 24-bit uniform) else 0; y = x * mask.
void dropout_forward(const float* x, float* y, float* mask, int64_t n, uint64_t key, float p, float keep_value,
                     cudaStream_t stream);

// dst[r * dst_pitch + j] = src[r * src_pitch + j] for r < rows, j < width (in floats): one
// input's channel run of a channel concatenation, or its split.
void copy_strided(const float* src, int64_t src_pitch, float* dst, int64_t dst_pitch, int64_t rows, int64_t width,
                  cudaStream_t stream);

// A per-step scalar of an update: `at` (device memory, read by the kernel, so a captured CUDA
// graph replays with the value current at its launch) when set, else `value`.
struct Scalar {
  float value;
  const float* at;
};
// Fused optimizer updates, formulas as Backend's (UpdateRule in backend.h).
void sgdm_update(float* w, const float* g, float* v, int64_t n, Scalar lr, float momentum, float l2,
                 cudaStream_t stream);
// c1 = 1 / (1 - b1^t), c2 = 1 / (1 - b2^t), computed by the caller. adam and adamw: wd is
// adamw's decoupled weight decay (w scaled by 1 - lr wd first), 0 for adam.
void adam_update(float* w, const float* g, float* m, float* s, int64_t n, Scalar lr, float b1, float b2, float eps,
                 Scalar c1, Scalar c2, float l2, float wd, cudaStream_t stream);
void rmsprop_update(float* w, const float* g, float* s, int64_t n, Scalar lr, float b2, float eps, float l2,
                    cudaStream_t stream);

// ---- reductions (cuda_reduce.cu); deterministic: a fixed grid, fixed summation order ----

// *result (device) = sum of x[i]^2 in double. scratch: sum_squares_scratch() doubles.
size_t sum_squares_scratch();
void sum_squares(const float* x, int64_t n, double* scratch, double* result, cudaStream_t stream);
// Clipping by norm with nothing read back: norms[0] = sqrt((accumulate ? norms[0]^2 : 0) + sum
// of x[i]^2) (in double, stored as float; scratch as sum_squares); clip_to_norm scales p by
// threshold / norms[0] (in double, rounded to float once) when that norm > threshold.
void l2_norm_into(const float* x, int64_t n, double* scratch, float* norms, bool accumulate, cudaStream_t stream);
void clip_to_norm(float* p, int64_t n, const float* norms, double threshold, cudaStream_t stream);

// Max unpooling (Backend::max_pool_indices, max_unpool, max_unpool_backward): planes of
// plane_in pooled and plane_out input positions, NHWC. max_unpool adds into a zeroed y.
void max_pool_indices(const float* x, int32_t* idx, int64_t n, int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow,
                      int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t pad_t, int64_t pad_l,
                      cudaStream_t stream);
void max_unpool(const float* x, const int32_t* idx, float* y, int64_t n, int64_t plane_in, int64_t plane_out, int64_t c,
                cudaStream_t stream);
void max_unpool_backward(const float* dy, const int32_t* idx, float* dx, int64_t n, int64_t plane_in, int64_t plane_out,
                         int64_t c, cudaStream_t stream);

// Per-channel mean and biased variance of x (positions, c) in double, two passes.
// scratch: channel_moments_scratch(positions, c) doubles. positions > 0.
size_t channel_moments_scratch(int64_t positions, int64_t c);
void channel_moments(const float* x, int64_t positions, int64_t c, float* mean, float* var, double* scratch,
                     cudaStream_t stream);

// Per-channel sum of x (positions, c) in double, one pass, in a fixed order (deterministic):
// a convolution's bias gradient. cudnnConvolutionBackwardBias took 2.0 ms for dy of 512x32x32x64
// on an H200 (2026-11-26); this reads dy once. scratch: channel_sum_scratch(positions, c) doubles.
size_t channel_sum_scratch(int64_t positions, int64_t c);
void channel_sum(const float* x, int64_t positions, int64_t c, float* sum, double* scratch, cudaStream_t stream);

// Backend::batch_norm_dx_correction over dx (positions, c); scratch: 3 * c floats.
void batch_norm_dx_correction(const float* x, int64_t positions, int64_t c, const float* mean, const float* var,
                              const float* scale, float epsilon, double m, const float* dshift, const float* dscale,
                              float* dx, float* scratch, cudaStream_t stream);

}  // namespace dlt::cuda

// Launchers of the CUDA ops' own small kernels (cuda_op_kernels.cu): explicit NHWC padding and
// cropping (cuDNN pads symmetrically only), leaky relu, fills, and the batch-norm pieces cuDNN
// has no call for (biased variance, relu mask, backward with constant statistics), and the
// bfloat16 conversions of Precision: mixed.
// Every launcher enqueues on stream and returns cudaGetLastError(); callers wrap it in DLT_CUDA.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dlt::cuda {

// xp (n, h + pt + pb, w + pl + pr, c) = x (n, h, w, c) surrounded by value.
cudaError_t pad_nhwc(const float* x, float* xp, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pt, int64_t pb,
                     int64_t pl, int64_t pr, float value, cudaStream_t stream);
// x (n, h, w, c) = the interior of xp (n, h + pt + pb, w + pl + pr, c).
cudaError_t crop_nhwc(const float* xp, float* x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pt, int64_t pb,
                      int64_t pl, int64_t pr, cudaStream_t stream);

// y (n, oh, ow, c) = x * kh kw / (the taps of each output's window inside the (h, w) input;
// windows at stride (sh, sw) from top / left padding pt, pl): an average pooling that counted
// padding as zeros made one that leaves it out. y may alias x.
cudaError_t avg_pool_exclude_scale(const float* x, float* y, int64_t n, int64_t oh, int64_t ow, int64_t c, int64_t h,
                                   int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t pt, int64_t pl,
                                   cudaStream_t stream);

cudaError_t fill(float* p, int64_t count, float value, cudaStream_t stream);

// y = x > 0 ? x : alpha x;  dx = x > 0 ? dy : alpha dy  (dx may alias dy).
cudaError_t leaky_relu_forward(const float* x, float* y, int64_t count, float alpha, cudaStream_t stream);
cudaError_t leaky_relu_backward(const float* x, const float* dy, float* dx, int64_t count, float alpha,
                                cudaStream_t stream);

// var (c) = the biased variance from cuDNN's unbiased running variance over m positions:
// var * (m - 1) / m, and 0 when m == 1.
cudaError_t bn_biased_variance(float* var, int64_t c, int64_t m, cudaStream_t stream);
// invstd (c) = 1 / sqrt(var + epsilon).
cudaError_t bn_inv_std(const float* var, float* invstd, int64_t c, float epsilon, cudaStream_t stream);
// dyp (p, c) = dy where scale (x - mean) invstd + offset > 0 (the fused relu's mask), else 0.
cudaError_t bn_relu_mask(const float* x, const float* dy, const float* mean, const float* invstd, const float* scale,
                         const float* offset, float* dyp, int64_t p, int64_t c, cudaStream_t stream);

// Batch-norm backward with constant statistics over x (p, c):
//   dy' = dy masked by relu when offset != nullptr (the fused relu), xhat = (x - mean) invstd,
//   dx = scale invstd dy',  dscale = sum dy' xhat,  doffset = sum dy'.
// partial must hold bn_global_backward_partial_floats(p, c) floats. Deterministic.
int64_t bn_global_backward_partial_floats(int64_t p, int64_t c);
cudaError_t bn_global_backward(const float* x, const float* dy, const float* mean, const float* invstd,
                               const float* scale, const float* offset, float* dx, float* dscale, float* doffset,
                               float* partial, int64_t p, int64_t c, cudaStream_t stream);

// ---- Precision: mixed (bfloat16 operands, float32 results) ----
// Rounding to bfloat16 is round-to-nearest-even (__float2bfloat16_rn), as oneDNN's reorders.
// y (count) = bf16(x).
cudaError_t float_to_bf16(const float* x, __nv_bfloat16* y, int64_t count, cudaStream_t stream);
// y (count) = float(x) (exact).
cudaError_t bf16_to_float(const __nv_bfloat16* x, float* y, int64_t count, cudaStream_t stream);
// y (rows, c) = float(x) + b, then relu when relu is set (NaN stays NaN), clipped at ceiling when
// finite (min(max(v, 0), ceiling), as the clipped relu op); b (c) may be null.
cudaError_t bf16_bias_act(const __nv_bfloat16* x, const float* b, float* y, int64_t rows, int64_t c, bool relu,
                          float ceiling, cudaStream_t stream);
// y (rows, c) = y + b, then relu when relu is set, in place (NaN stays NaN), clipped at ceiling
// when finite; b (c) may be null. The epilogue of a convolution run as a cuDNN graph-API plan.
cudaError_t bias_act(float* y, const float* b, int64_t rows, int64_t c, bool relu, float ceiling, cudaStream_t stream);
// pad_nhwc with value 0 into a bfloat16 xp: xp = bf16(x) surrounded by zeros.
cudaError_t pad_nhwc_bf16(const float* x, __nv_bfloat16* xp, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pt,
                          int64_t pb, int64_t pl, int64_t pr, cudaStream_t stream);
// crop_nhwc from a bfloat16 xp: x = float(the interior of xp).
cudaError_t crop_nhwc_bf16(const __nv_bfloat16* xp, float* x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pt,
                           int64_t pb, int64_t pl, int64_t pr, cudaStream_t stream);

}  // namespace dlt::cuda

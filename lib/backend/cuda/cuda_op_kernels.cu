// The CUDA ops' own small kernels (see cuda_op_kernels.h): grid-stride elementwise kernels and
// a deterministic two-pass per-channel reduction for batch norm with constant statistics, and
// the bfloat16 conversions of Precision: mixed.
#include "backend/cuda/cuda_op_kernels.h"

namespace dlt::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t count) {
  int64_t b = (count + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > 8192) b = 8192;  // grid-stride loops cover the rest
  return static_cast<unsigned>(b);
}

__global__ void pad_nhwc_kernel(const float* x, float* xp, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pt,
                                int64_t pl, int64_t hp, int64_t wp, float value) {
  const int64_t total = n * hp * wp * c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = i % c;
    int64_t r = i / c;
    const int64_t xw = r % wp - pl;
    r /= wp;
    const int64_t xh = r % hp - pt;
    const int64_t b = r / hp;
    xp[i] = (xh >= 0 && xh < h && xw >= 0 && xw < w) ? x[((b * h + xh) * w + xw) * c + ch] : value;
  }
}

// y = x * taps / (the window's taps inside the input), per output position of an average
// pooling (N, OH, OW, C): count_include_pad's average turned into count-exclude's.
__global__ void avg_pool_exclude_scale_kernel(const float* x, float* y, int64_t total, int64_t c, int64_t oh,
                                              int64_t ow, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh,
                                              int64_t sw, int64_t pt, int64_t pl) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i / c;
    const int64_t ox = r % ow;
    r /= ow;
    const int64_t oy = r % oh;
    const int64_t y0 = oy * sh - pt, x0 = ox * sw - pl;
    const int64_t rows = min(y0 + kh, h) - max(y0, int64_t(0)), cols = min(x0 + kw, w) - max(x0, int64_t(0));
    y[i] = x[i] * (static_cast<float>(kh * kw) / static_cast<float>(rows * cols));
  }
}

__global__ void crop_nhwc_kernel(const float* xp, float* x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pt,
                                 int64_t pl, int64_t hp, int64_t wp) {
  const int64_t total = n * h * w * c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = i % c;
    int64_t r = i / c;
    const int64_t xw = r % w;
    r /= w;
    const int64_t xh = r % h;
    const int64_t b = r / h;
    x[i] = xp[((b * hp + xh + pt) * wp + xw + pl) * c + ch];
  }
}

__global__ void fill_kernel(float* p, int64_t count, float value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = value;
}

__global__ void leaky_relu_forward_kernel(const float* x, float* y, int64_t count, float alpha) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    y[i] = v > 0.f ? v : alpha * v;
  }
}

__global__ void leaky_relu_backward_kernel(const float* x, const float* dy, float* dx, int64_t count, float alpha) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = dy[i];
    dx[i] = x[i] > 0.f ? g : alpha * g;
  }
}

__global__ void bn_biased_variance_kernel(float* var, int64_t c, int64_t m) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= c) return;
  var[i] = m > 1 ? static_cast<float>(static_cast<double>(var[i]) * double(m - 1) / double(m)) : 0.f;
}

__global__ void bn_inv_std_kernel(const float* var, float* invstd, int64_t c, float epsilon) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= c) return;
  invstd[i] = static_cast<float>(1.0 / sqrt(static_cast<double>(var[i]) + double(epsilon)));
}

__global__ void bn_relu_mask_kernel(const float* x, const float* dy, const float* mean, const float* invstd,
                                    const float* scale, const float* offset, float* dyp, int64_t p, int64_t c) {
  const int64_t total = p * c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = i % c;
    const float pre = scale[ch] * ((x[i] - mean[ch]) * invstd[ch]) + offset[ch];
    dyp[i] = pre > 0.f ? dy[i] : 0.f;
  }
}

// Rows of the reduction: block (32 channels, 8 row lanes); grid (channel blocks, splits).
constexpr int kRowLanes = 8;
int64_t row_splits(int64_t p) {
  int64_t s = (p + kRowLanes - 1) / kRowLanes;
  if (s > 128) s = 128;
  return s < 1 ? 1 : s;
}

__global__ void bn_global_backward_kernel(const float* x, const float* dy, const float* mean, const float* invstd,
                                          const float* scale, const float* offset, float* dx, float* partial, int64_t p,
                                          int64_t c) {
  __shared__ float s_dy[kRowLanes][32];
  __shared__ float s_dyx[kRowLanes][32];
  const int64_t ch = blockIdx.x * int64_t(32) + threadIdx.x;
  float acc_dy = 0.f, acc_dyx = 0.f;
  if (ch < c) {
    const float mu = mean[ch], is = invstd[ch], sc = scale[ch];
    const float off = offset ? offset[ch] : 0.f;
    const int64_t step = int64_t(gridDim.y) * kRowLanes;
    for (int64_t r = blockIdx.y * int64_t(kRowLanes) + threadIdx.y; r < p; r += step) {
      const int64_t i = r * c + ch;
      const float xhat = (x[i] - mu) * is;
      float g = dy[i];
      if (offset && !(sc * xhat + off > 0.f)) g = 0.f;
      dx[i] = sc * is * g;
      acc_dy += g;
      acc_dyx += g * xhat;
    }
  }
  s_dy[threadIdx.y][threadIdx.x] = acc_dy;
  s_dyx[threadIdx.y][threadIdx.x] = acc_dyx;
  __syncthreads();
  if (threadIdx.y == 0 && ch < c) {
    float a = 0.f, b = 0.f;
    for (int k = 0; k < kRowLanes; ++k) {
      a += s_dy[k][threadIdx.x];
      b += s_dyx[k][threadIdx.x];
    }
    partial[blockIdx.y * c + ch] = a;                         // doffset part
    partial[(gridDim.y + blockIdx.y) * int64_t(c) + ch] = b;  // dscale part
  }
}

__global__ void bn_global_finalize_kernel(const float* partial, int64_t splits, int64_t c, float* dscale,
                                          float* doffset) {
  const int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (ch >= c) return;
  double a = 0, b = 0;
  for (int64_t s = 0; s < splits; ++s) {
    a += partial[s * c + ch];
    b += partial[(splits + s) * c + ch];
  }
  if (doffset) doffset[ch] = static_cast<float>(a);
  if (dscale) dscale[ch] = static_cast<float>(b);
}

__global__ void float_to_bf16_kernel(const float* x, __nv_bfloat16* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16_rn(x[i]);
}

__global__ void bf16_to_float_kernel(const __nv_bfloat16* x, float* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __bfloat162float(x[i]);
}

__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float to_float(float v) { return v; }

template <class T>
__global__ void bias_act_kernel(const T* x, const float* b, float* y, int64_t total, int64_t c, bool relu,
                                float ceiling) {
  const bool clip = relu && ceiling < INFINITY;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    float v = to_float(x[i]);
    if (b) v += b[i % c];
    if (clip)
      y[i] = fminf(fmaxf(v, 0.f), ceiling);  // as the clipped relu op (cuda_act_kernels.cu)
    else
      y[i] = (relu && v < 0.f) ? 0.f : v;  // a NaN passes through, as CUDNN_PROPAGATE_NAN
  }
}

__global__ void pad_nhwc_bf16_kernel(const float* x, __nv_bfloat16* xp, int64_t n, int64_t h, int64_t w, int64_t c,
                                     int64_t pt, int64_t pl, int64_t hp, int64_t wp) {
  const int64_t total = n * hp * wp * c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = i % c;
    int64_t r = i / c;
    const int64_t xw = r % wp - pl;
    r /= wp;
    const int64_t xh = r % hp - pt;
    const int64_t b = r / hp;
    const float v = (xh >= 0 && xh < h && xw >= 0 && xw < w) ? x[((b * h + xh) * w + xw) * c + ch] : 0.f;
    xp[i] = __float2bfloat16_rn(v);
  }
}

__global__ void crop_nhwc_bf16_kernel(const __nv_bfloat16* xp, float* x, int64_t n, int64_t h, int64_t w, int64_t c,
                                      int64_t pt, int64_t pl, int64_t hp, int64_t wp) {
  const int64_t total = n * h * w * c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = i % c;
    int64_t r = i / c;
    const int64_t xw = r % w;
    r /= w;
    const int64_t xh = r % h;
    const int64_t b = r / h;
    x[i] = __bfloat162float(xp[((b * hp + xh + pt) * wp + xw + pl) * c + ch]);
  }
}

}  // namespace

cudaError_t pad_nhwc(const float* x, float* xp, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pt, int64_t pb,
                     int64_t pl, int64_t pr, float value, cudaStream_t stream) {
  const int64_t hp = h + pt + pb, wp = w + pl + pr;
  pad_nhwc_kernel<<<blocks_for(n * hp * wp * c), kThreads, 0, stream>>>(x, xp, n, h, w, c, pt, pl, hp, wp, value);
  return cudaGetLastError();
}

cudaError_t crop_nhwc(const float* xp, float* x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pt, int64_t pb,
                      int64_t pl, int64_t pr, cudaStream_t stream) {
  const int64_t hp = h + pt + pb, wp = w + pl + pr;
  crop_nhwc_kernel<<<blocks_for(n * h * w * c), kThreads, 0, stream>>>(xp, x, n, h, w, c, pt, pl, hp, wp);
  return cudaGetLastError();
}

cudaError_t avg_pool_exclude_scale(const float* x, float* y, int64_t n, int64_t oh, int64_t ow, int64_t c, int64_t h,
                                   int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t pt, int64_t pl,
                                   cudaStream_t stream) {
  const int64_t total = n * oh * ow * c;
  avg_pool_exclude_scale_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, total, c, oh, ow, h, w, kh, kw, sh,
                                                                            sw, pt, pl);
  return cudaGetLastError();
}

cudaError_t fill(float* p, int64_t count, float value, cudaStream_t stream) {
  fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(p, count, value);
  return cudaGetLastError();
}

cudaError_t leaky_relu_forward(const float* x, float* y, int64_t count, float alpha, cudaStream_t stream) {
  leaky_relu_forward_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, y, count, alpha);
  return cudaGetLastError();
}

cudaError_t leaky_relu_backward(const float* x, const float* dy, float* dx, int64_t count, float alpha,
                                cudaStream_t stream) {
  leaky_relu_backward_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, dy, dx, count, alpha);
  return cudaGetLastError();
}

cudaError_t bn_biased_variance(float* var, int64_t c, int64_t m, cudaStream_t stream) {
  bn_biased_variance_kernel<<<blocks_for(c), kThreads, 0, stream>>>(var, c, m);
  return cudaGetLastError();
}

cudaError_t bn_inv_std(const float* var, float* invstd, int64_t c, float epsilon, cudaStream_t stream) {
  bn_inv_std_kernel<<<blocks_for(c), kThreads, 0, stream>>>(var, invstd, c, epsilon);
  return cudaGetLastError();
}

cudaError_t bn_relu_mask(const float* x, const float* dy, const float* mean, const float* invstd, const float* scale,
                         const float* offset, float* dyp, int64_t p, int64_t c, cudaStream_t stream) {
  bn_relu_mask_kernel<<<blocks_for(p * c), kThreads, 0, stream>>>(x, dy, mean, invstd, scale, offset, dyp, p, c);
  return cudaGetLastError();
}

int64_t bn_global_backward_partial_floats(int64_t p, int64_t c) { return 2 * row_splits(p) * c; }

cudaError_t bn_global_backward(const float* x, const float* dy, const float* mean, const float* invstd,
                               const float* scale, const float* offset, float* dx, float* dscale, float* doffset,
                               float* partial, int64_t p, int64_t c, cudaStream_t stream) {
  const int64_t splits = row_splits(p);
  dim3 grid(static_cast<unsigned>((c + 31) / 32), static_cast<unsigned>(splits));
  dim3 block(32, kRowLanes);
  bn_global_backward_kernel<<<grid, block, 0, stream>>>(x, dy, mean, invstd, scale, offset, dx, partial, p, c);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  bn_global_finalize_kernel<<<blocks_for(c), kThreads, 0, stream>>>(partial, splits, c, dscale, doffset);
  return cudaGetLastError();
}

cudaError_t float_to_bf16(const float* x, __nv_bfloat16* y, int64_t count, cudaStream_t stream) {
  float_to_bf16_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, y, count);
  return cudaGetLastError();
}

cudaError_t bf16_to_float(const __nv_bfloat16* x, float* y, int64_t count, cudaStream_t stream) {
  bf16_to_float_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, y, count);
  return cudaGetLastError();
}

cudaError_t bf16_bias_act(const __nv_bfloat16* x, const float* b, float* y, int64_t rows, int64_t c, bool relu,
                          float ceiling, cudaStream_t stream) {
  bias_act_kernel<<<blocks_for(rows * c), kThreads, 0, stream>>>(x, b, y, rows * c, c, relu, ceiling);
  return cudaGetLastError();
}

cudaError_t bias_act(float* y, const float* b, int64_t rows, int64_t c, bool relu, float ceiling, cudaStream_t stream) {
  bias_act_kernel<<<blocks_for(rows * c), kThreads, 0, stream>>>(y, b, y, rows * c, c, relu, ceiling);
  return cudaGetLastError();
}

cudaError_t pad_nhwc_bf16(const float* x, __nv_bfloat16* xp, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pt,
                          int64_t pb, int64_t pl, int64_t pr, cudaStream_t stream) {
  const int64_t hp = h + pt + pb, wp = w + pl + pr;
  pad_nhwc_bf16_kernel<<<blocks_for(n * hp * wp * c), kThreads, 0, stream>>>(x, xp, n, h, w, c, pt, pl, hp, wp);
  return cudaGetLastError();
}

cudaError_t crop_nhwc_bf16(const __nv_bfloat16* xp, float* x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pt,
                           int64_t pb, int64_t pl, int64_t pr, cudaStream_t stream) {
  const int64_t hp = h + pt + pb, wp = w + pl + pr;
  crop_nhwc_bf16_kernel<<<blocks_for(n * h * w * c), kThreads, 0, stream>>>(xp, x, n, h, w, c, pt, pl, hp, wp);
  return cudaGetLastError();
}

}  // namespace dlt::cuda

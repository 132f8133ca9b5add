// Batch normalization in training with dltrain's own kernels (BatchNormKernels: dltrain; see
// cuda_bn_kernels.h): statistics in one pass, the normalization with its fused relu in a second,
// and the backward in two passes that recompute the relu's mask from x. Sums run in double over
// a fixed grid in a fixed order (deterministic).
#include "backend/cuda/cuda_bn_kernels.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "backend/cuda/cuda_launch.cuh"

namespace dlt::cuda {
namespace {

constexpr int kLanes = 32;  // channels per block (threadIdx.x)
constexpr int kRows = 8;    // positions per block step (threadIdx.y)

// Groups of positions (gridDim.y): each thread sums at least 16 positions, at most 256 groups.
int64_t groups_for(int64_t p) {
  int64_t g = (p + kRows * 16 - 1) / (kRows * 16);
  if (g < 1) g = 1;
  if (g > 256) g = 256;
  return g;
}

// The scratch of both directions (bn_train_scratch_bytes): two double partials per group and
// channel (a, b), then four float vectors of c (f), and the per-channel reduction's grid.
struct Reduction {
  int64_t groups;
  double *a, *b;
  float* f;
  dim3 grid, block{kLanes, kRows};
  Reduction(void* scratch, int64_t p, int64_t c)
      : groups(groups_for(p)),
        a(static_cast<double*>(scratch)),
        b(a + groups * c),
        f(reinterpret_cast<float*>(b + groups * c)),
        grid(static_cast<unsigned>((c + kLanes - 1) / kLanes), static_cast<unsigned>(groups)) {}
  static size_t bytes(int64_t p, int64_t c) {
    return static_cast<size_t>(2 * groups_for(p) * c) * sizeof(double) + static_cast<size_t>(4 * c) * sizeof(float);
  }
};

// 1 / sqrt(var + epsilon) from the float variance, and k = scale * that: the same bits in the
// forward's normalization and the backward's recomputed relu mask.
__device__ __forceinline__ float bn_inv_std(float var, float epsilon) {
  return static_cast<float>(1.0 / sqrt(static_cast<double>(var) + static_cast<double>(epsilon)));
}

// Sums two per-thread values over the block's row lanes; row lane 0 writes them to
// a[blockIdx.y * c + ch] and b[blockIdx.y * c + ch].
__device__ void write_partials(double s1, double s2, int64_t ch, int64_t c, double* a, double* b) {
  __shared__ double acc1[kRows][kLanes];
  __shared__ double acc2[kRows][kLanes];
  acc1[threadIdx.y][threadIdx.x] = s1;
  acc2[threadIdx.y][threadIdx.x] = s2;
  __syncthreads();
  if (threadIdx.y == 0 && ch < c) {
    double t1 = 0, t2 = 0;
    for (int r = 0; r < kRows; ++r) {
      t1 += acc1[r][threadIdx.x];
      t2 += acc2[r][threadIdx.x];
    }
    a[static_cast<int64_t>(blockIdx.y) * c + ch] = t1;
    b[static_cast<int64_t>(blockIdx.y) * c + ch] = t2;
  }
}

// partial_1 / partial_2 = per group, sum of (x - shift) and of (x - shift)^2, where channel ch's
// shift is its value at the first position (sums of x - shift keep the variance's digits when
// the mean is large against the spread).
__global__ void bn_stats_partial_kernel(const float* __restrict__ x, int64_t p, int64_t c, double* partial_1,
                                        double* partial_2) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * kLanes + threadIdx.x;
  double s1 = 0, s2 = 0;
  if (ch < c) {
    const double shift = x[ch];
    const int64_t step = static_cast<int64_t>(gridDim.y) * kRows;
#pragma unroll 4
    for (int64_t r = static_cast<int64_t>(blockIdx.y) * kRows + threadIdx.y; r < p; r += step) {
      const double v = static_cast<double>(x[r * c + ch]) - shift;
      s1 += v;
      s2 += v * v;
    }
  }
  write_partials(s1, s2, ch, c, partial_1, partial_2);
}

// Per channel: mean and biased variance from the groups' sums; k = scale * invstd for the
// normalization (invstd = 1 / sqrt(var + epsilon) from the float variance, as the backward).
__global__ void bn_stats_finalize_kernel(const float* __restrict__ x, const double* partial_1,
                                         const double* partial_2, int64_t groups, int64_t p, int64_t c,
                                         const float* scale, float epsilon, float* mean, float* var, float* k) {
  for (int64_t ch = first_index(); ch < c; ch += grid_stride()) {
    double s1 = 0, s2 = 0;
    for (int64_t g = 0; g < groups; ++g) {
      s1 += partial_1[g * c + ch];
      s2 += partial_2[g * c + ch];
    }
    const double m = static_cast<double>(p);
    const double d = s1 / m;
    double v = s2 / m - d * d;
    if (v < 0) v = 0;  // rounding
    const float vf = static_cast<float>(v);
    mean[ch] = static_cast<float>(static_cast<double>(x[ch]) + d);
    var[ch] = vf;
    k[ch] = __fmul_rn(scale[ch], bn_inv_std(vf, epsilon));
  }
}

// The pre-activation of forward and backward alike: (x - mean) k + offset.
__device__ __forceinline__ float bn_pre(float x, float mu, float k, float off) {
  return __fmaf_rn(__fsub_rn(x, mu), k, off);
}

// y of one value at channel ch: (x - mean) k + offset, relu'd when relu (a NaN passes through).
__device__ __forceinline__ float bn_y(float xv, int64_t ch, const float* mean, const float* k, const float* offset,
                                      bool relu) {
  const float o = bn_pre(xv, mean[ch], k[ch], offset[ch]);
  return (relu && o < 0.f) ? 0.f : o;
}

// 4 channels per thread when c % 4 == 0 (vec), else 1.
template <bool kVec>
__global__ void bn_apply_kernel(const float* __restrict__ x, const float* __restrict__ mean,
                                const float* __restrict__ k, const float* __restrict__ offset, float* __restrict__ y,
                                int64_t total, int64_t c, bool relu) {
  if constexpr (kVec) {
    const auto* x4 = reinterpret_cast<const float4*>(x);
    auto* y4 = reinterpret_cast<float4*>(y);
    for (int64_t q = first_index(); q < total / 4; q += grid_stride()) {
      const int64_t ch = (q * 4) % c;
      const float4 v = x4[q];
      y4[q] = make_float4(bn_y(v.x, ch, mean, k, offset, relu), bn_y(v.y, ch + 1, mean, k, offset, relu),
                          bn_y(v.z, ch + 2, mean, k, offset, relu), bn_y(v.w, ch + 3, mean, k, offset, relu));
    }
  } else {
    for (int64_t i = first_index(); i < total; i += grid_stride()) y[i] = bn_y(x[i], i % c, mean, k, offset, relu);
  }
}

// Per channel: invstd, k = scale * invstd (as the forward's finalize).
__device__ __forceinline__ void bn_channel(const float* mean, const float* var, const float* scale, float epsilon,
                                           int64_t ch, float* mu, float* is, float* k) {
  *mu = mean[ch];
  *is = bn_inv_std(var[ch], epsilon);
  *k = __fmul_rn(scale[ch], *is);
}

// partial_g / partial_gx = per group, sum of g and of g xhat, where g = dy masked by the fused
// relu (offset != null: where the pre-activation is not > 0, g = 0) and xhat = (x - mean) invstd.
__global__ void bn_backward_partial_kernel(const float* __restrict__ x, const float* __restrict__ dy,
                                           const float* mean, const float* var, const float* scale,
                                           const float* offset, float epsilon, int64_t p, int64_t c, double* partial_g,
                                           double* partial_gx) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * kLanes + threadIdx.x;
  double sg = 0, sgx = 0;
  if (ch < c) {
    float mu, is, k;
    bn_channel(mean, var, scale, epsilon, ch, &mu, &is, &k);
    const float off = offset ? offset[ch] : 0.f;
    const int64_t step = static_cast<int64_t>(gridDim.y) * kRows;
#pragma unroll 4
    for (int64_t r = static_cast<int64_t>(blockIdx.y) * kRows + threadIdx.y; r < p; r += step) {
      const float xv = x[r * c + ch];
      float g = dy[r * c + ch];
      if (offset && !(bn_pre(xv, mu, k, off) > 0.f)) g = 0.f;
      const float xhat = __fmul_rn(__fsub_rn(xv, mu), is);
      sg += g;
      sgx += static_cast<double>(g) * xhat;
    }
  }
  write_partials(sg, sgx, ch, c, partial_g, partial_gx);
}

// Per channel: doffset = sum g, dscale = sum g xhat (each written where given), and the
// coefficients of dx = k (g - doffset / p - xhat dscale / p): coef[ch] = doffset / p,
// coef[c + ch] = dscale / p, coef[2c + ch] = invstd, coef[3c + ch] = k (as the partial kernel's).
__global__ void bn_backward_finalize_kernel(const double* partial_g, const double* partial_gx, int64_t groups,
                                            int64_t p, int64_t c, const float* mean, const float* var,
                                            const float* scale, float epsilon, float* dscale, float* doffset,
                                            float* coef) {
  for (int64_t ch = first_index(); ch < c; ch += grid_stride()) {
    float mu, is, k;
    bn_channel(mean, var, scale, epsilon, ch, &mu, &is, &k);
    coef[2 * c + ch] = is;
    coef[3 * c + ch] = k;
    double sg = 0, sgx = 0;
    for (int64_t g = 0; g < groups; ++g) {
      sg += partial_g[g * c + ch];
      sgx += partial_gx[g * c + ch];
    }
    if (doffset) doffset[ch] = static_cast<float>(sg);
    if (dscale) dscale[ch] = static_cast<float>(sgx);
    coef[ch] = static_cast<float>(sg / static_cast<double>(p));
    coef[c + ch] = static_cast<float>(sgx / static_cast<double>(p));
  }
}

// dx of one value at channel ch: k (g - doffset / p - xhat dscale / p) with the finalize
// kernel's coefficients.
__device__ __forceinline__ float bn_dx(float xv, float g, int64_t ch, int64_t c, const float* mean,
                                       const float* offset, const float* coef) {
  const float mu = mean[ch], is = coef[2 * c + ch], k = coef[3 * c + ch];
  if (offset && !(bn_pre(xv, mu, k, offset[ch]) > 0.f)) g = 0.f;
  const float xhat = __fmul_rn(__fsub_rn(xv, mu), is);
  return __fmul_rn(k, __fsub_rn(__fsub_rn(g, coef[ch]), __fmul_rn(xhat, coef[c + ch])));
}

// 4 channels per thread when c % 4 == 0 (vec), else 1.
template <bool kVec>
__global__ void bn_backward_apply_kernel(const float* __restrict__ x, const float* __restrict__ dy,
                                         const float* __restrict__ mean, const float* __restrict__ offset,
                                         const float* __restrict__ coef, float* __restrict__ dx, int64_t total,
                                         int64_t c) {
  if constexpr (kVec) {
    const auto* x4 = reinterpret_cast<const float4*>(x);
    const auto* g4 = reinterpret_cast<const float4*>(dy);
    auto* dx4 = reinterpret_cast<float4*>(dx);
    for (int64_t q = first_index(); q < total / 4; q += grid_stride()) {
      const int64_t ch = (q * 4) % c;
      const float4 v = x4[q], g = g4[q];
      dx4[q] = make_float4(bn_dx(v.x, g.x, ch, c, mean, offset, coef), bn_dx(v.y, g.y, ch + 1, c, mean, offset, coef),
                           bn_dx(v.z, g.z, ch + 2, c, mean, offset, coef), bn_dx(v.w, g.w, ch + 3, c, mean, offset, coef));
    }
  } else {
    for (int64_t i = first_index(); i < total; i += grid_stride()) dx[i] = bn_dx(x[i], dy[i], i % c, c, mean, offset, coef);
  }
}

// Whether every pointer is 16-byte aligned and c a multiple of 4 (float4 rows of one channel
// group never straddle two positions).
bool aligned4(int64_t c, std::initializer_list<const float*> ptrs) {
  if (c % 4 != 0) return false;
  for (const float* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

}  // namespace

size_t bn_train_scratch_bytes(int64_t p, int64_t c) { return Reduction::bytes(p, c); }

cudaError_t bn_train_forward(const float* x, const float* scale, const float* offset, float* y, float* mean,
                             float* var, float epsilon, bool relu, int64_t p, int64_t c, void* scratch,
                             cudaStream_t stream) {
  if (p < 1 || c < 1) return cudaErrorInvalidValue;
  const Reduction r(scratch, p, c);  // a, b: sums of x - shift and its square; f: k
  bn_stats_partial_kernel<<<r.grid, r.block, 0, stream>>>(x, p, c, r.a, r.b);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  bn_stats_finalize_kernel<<<grid_for(c), kThreads, 0, stream>>>(x, r.a, r.b, r.groups, p, c, scale, epsilon, mean,
                                                                 var, r.f);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  const int64_t total = p * c;
  if (aligned4(c, {x, y}))
    bn_apply_kernel<true><<<grid_for(total / 4), kThreads, 0, stream>>>(x, mean, r.f, offset, y, total, c, relu);
  else
    bn_apply_kernel<false><<<grid_for(total), kThreads, 0, stream>>>(x, mean, r.f, offset, y, total, c, relu);
  return cudaGetLastError();
}

cudaError_t bn_train_backward(const float* x, const float* dy, const float* mean, const float* var,
                              const float* scale, const float* offset, float epsilon, float* dx, float* dscale,
                              float* doffset, int64_t p, int64_t c, void* scratch, cudaStream_t stream) {
  if (p < 1 || c < 1) return cudaErrorInvalidValue;
  const Reduction r(scratch, p, c);  // a, b: sums of g and g xhat; f: the coefficients of dx
  bn_backward_partial_kernel<<<r.grid, r.block, 0, stream>>>(x, dy, mean, var, scale, offset, epsilon, p, c, r.a, r.b);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  bn_backward_finalize_kernel<<<grid_for(c), kThreads, 0, stream>>>(r.a, r.b, r.groups, p, c, mean, var, scale,
                                                                    epsilon, dscale, doffset, r.f);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  const int64_t total = p * c;
  if (aligned4(c, {x, dy, dx}))
    bn_backward_apply_kernel<true><<<grid_for(total / 4), kThreads, 0, stream>>>(x, dy, mean, offset, r.f, dx, total, c);
  else
    bn_backward_apply_kernel<false><<<grid_for(total), kThreads, 0, stream>>>(x, dy, mean, offset, r.f, dx, total, c);
  return cudaGetLastError();
}

}  // namespace dlt::cuda

// Layer normalization's kernels (cuda_layer_norm_kernels.h). A row is handled by one warp
// (length <= kLayerNormWarpMax; kThreads / 32 rows per block) or one block; its sums go
// through shuffles (and shared memory across a block's warps) in a fixed order and are
// broadcast from one lane, so every thread of a row uses the same mean and variance. The
// scale and offset gradients are a two-pass per-channel sum over all pixels of all rows
// (partials per group of pixels, then the groups in order), as channel_sum in cuda_reduce.cu.
#include "backend/cuda/cuda_launch.cuh"
#include "backend/cuda/cuda_layer_norm_kernels.h"

namespace dlt::cuda {
namespace {

constexpr int kWarpsPerBlock = kThreads / 32;
constexpr int kLanes = 32;  // channels per block of the parameter sums (threadIdx.x)
constexpr int kRows = 8;    // pixels per block step (threadIdx.y)

// Which threads share a row: a warp (kBlock false) or the whole block.
template <bool kBlock>
struct RowThreads {
  __device__ static int lane() { return kBlock ? threadIdx.x : threadIdx.x & 31; }
  __device__ static int count() { return kBlock ? blockDim.x : 32; }
  __device__ static int64_t first_row() {
    return kBlock ? blockIdx.x : static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  }
  __device__ static int64_t row_step() { return kBlock ? gridDim.x : static_cast<int64_t>(gridDim.x) * kWarpsPerBlock; }
};

// The sum of v over the row's threads, the same value in each. Every thread of the row calls it.
template <bool kBlock>
__device__ float row_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  v = __shfl_sync(0xffffffffu, v, 0);
  if constexpr (!kBlock) {
    return v;
  } else {
    __shared__ float warp_sums[kWarpsPerBlock];
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    float total = 0.f;
    for (int w = 0; w < kWarpsPerBlock; ++w) total += warp_sums[w];
    __syncthreads();  // warp_sums is reused by the next call
    return total;
  }
}

__device__ inline int64_t channel_of(int64_t j, int64_t length, int64_t c) { return length == c ? j : j % c; }

template <bool kBlock>
__global__ void layer_norm_forward_kernel(const float* x, const float* scale, const float* offset, float* y,
                                          float* mean, float* var, int64_t rows, int64_t length, int64_t c,
                                          float epsilon) {
  using T = RowThreads<kBlock>;
  const int lane = T::lane(), lanes = T::count();
  const float inv_length = 1.f / static_cast<float>(length);
  for (int64_t r = T::first_row(); r < rows; r += T::row_step()) {
    const float* xr = x + r * length;
    float s = 0.f;
    for (int64_t j = lane; j < length; j += lanes) s += xr[j];
    const float mu = row_sum<kBlock>(s) * inv_length;
    float q = 0.f;
    for (int64_t j = lane; j < length; j += lanes) {
      const float d = xr[j] - mu;
      q += d * d;
    }
    const float v = row_sum<kBlock>(q) * inv_length;
    const float rstd = 1.f / sqrtf(v + epsilon);
    float* yr = y + r * length;
    for (int64_t j = lane; j < length; j += lanes) {
      const int64_t ch = channel_of(j, length, c);
      yr[j] = (xr[j] - mu) * rstd * scale[ch] + offset[ch];
    }
    if (lane == 0 && mean) {
      mean[r] = mu;
      var[r] = v;
    }
  }
}

template <bool kBlock>
__global__ void layer_norm_backward_data_kernel(const float* x, const float* dy, const float* scale, const float* mean,
                                                const float* var, float* dx, int64_t rows, int64_t length, int64_t c,
                                                float epsilon) {
  using T = RowThreads<kBlock>;
  const int lane = T::lane(), lanes = T::count();
  const float inv_length = 1.f / static_cast<float>(length);
  for (int64_t r = T::first_row(); r < rows; r += T::row_step()) {
    const float* xr = x + r * length;
    const float* dyr = dy + r * length;
    const float mu = mean[r], rstd = 1.f / sqrtf(var[r] + epsilon);
    // g is rounded once (__fmul_rn: never contracted into an fma with what follows), so that the
    // sums and the second pass see the same g: with one value per row (C = 1, xhat = 0) dx is
    // then exactly 0, as on the CPU; a contracted g - mean_g left the product's rounding error
    // times rstd (1.2e-5 on the H200).
    float sg = 0.f, sgx = 0.f;
    for (int64_t j = lane; j < length; j += lanes) {
      const float g = __fmul_rn(dyr[j], scale[channel_of(j, length, c)]);
      sg += g;
      sgx += g * ((xr[j] - mu) * rstd);
    }
    const float mean_g = row_sum<kBlock>(sg) * inv_length;
    const float mean_gx = row_sum<kBlock>(sgx) * inv_length;
    float* dxr = dx + r * length;
    for (int64_t j = lane; j < length; j += lanes) {
      const float g = __fmul_rn(dyr[j], scale[channel_of(j, length, c)]);
      const float xhat = (xr[j] - mu) * rstd;
      dxr[j] = rstd * (g - mean_g - xhat * mean_gx);
    }
  }
}

// partials[g * c + ch] = sum of dy * xhat, partials[(groups + g) * c + ch] = sum of dy over
// group g's pixels (pixel p of row p / per_row, its values at p * c).
__global__ void layer_norm_param_partial_kernel(const float* x, const float* dy, const float* mean, const float* var,
                                                int64_t pixels, int64_t per_row, int64_t c, float epsilon,
                                                double* partials) {
  __shared__ double acc_scale[kRows][kLanes], acc_offset[kRows][kLanes];
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * kLanes + threadIdx.x;
  const int64_t groups = gridDim.y;
  double ss = 0, so = 0;
  if (ch < c) {
    for (int64_t p = static_cast<int64_t>(blockIdx.y) * kRows + threadIdx.y; p < pixels; p += groups * kRows) {
      const int64_t r = p / per_row;
      const float rstd = 1.f / sqrtf(var[r] + epsilon);
      const float g = dy[p * c + ch];
      ss += static_cast<double>(g) * static_cast<double>((x[p * c + ch] - mean[r]) * rstd);
      so += static_cast<double>(g);
    }
  }
  acc_scale[threadIdx.y][threadIdx.x] = ss;
  acc_offset[threadIdx.y][threadIdx.x] = so;
  __syncthreads();
  if (threadIdx.y == 0 && ch < c) {
    double ts = 0, to = 0;
    for (int k = 0; k < kRows; ++k) {
      ts += acc_scale[k][threadIdx.x];
      to += acc_offset[k][threadIdx.x];
    }
    partials[static_cast<int64_t>(blockIdx.y) * c + ch] = ts;
    partials[(groups + blockIdx.y) * c + ch] = to;
  }
}

__global__ void layer_norm_param_finalize_kernel(const double* partials, int64_t groups, int64_t c, float* dscale,
                                                 float* doffset) {
  for (int64_t ch = first_index(); ch < c; ch += grid_stride()) {
    double ts = 0, to = 0;
    for (int64_t g = 0; g < groups; ++g) {
      ts += partials[g * c + ch];
      to += partials[(groups + g) * c + ch];
    }
    if (dscale) dscale[ch] = static_cast<float>(ts);
    if (doffset) doffset[ch] = static_cast<float>(to);
  }
}

int64_t pixel_groups(int64_t pixels) {
  // Each thread sums at least 32 pixels; at most 256 groups of partials per channel.
  int64_t g = (pixels + kRows * 32 - 1) / (kRows * 32);
  return g < 1 ? 1 : g > 256 ? 256 : g;
}

unsigned row_blocks(int64_t rows, bool block_rows) {
  return block_rows ? grid_for(rows, 1) : grid_for(rows, kWarpsPerBlock);
}

}  // namespace

void layer_norm_forward(const float* x, const float* scale, const float* offset, float* y, float* mean, float* var,
                        int64_t rows, int64_t length, int64_t c, float epsilon, cudaStream_t stream) {
  if (rows <= 0 || length <= 0) return;
  if (length <= kLayerNormWarpMax)
    layer_norm_forward_kernel<false>
        <<<row_blocks(rows, false), kThreads, 0, stream>>>(x, scale, offset, y, mean, var, rows, length, c, epsilon);
  else
    layer_norm_forward_kernel<true>
        <<<row_blocks(rows, true), kThreads, 0, stream>>>(x, scale, offset, y, mean, var, rows, length, c, epsilon);
  DLT_LAUNCH_CHECK();
}

void layer_norm_backward_data(const float* x, const float* dy, const float* scale, const float* mean, const float* var,
                              float* dx, int64_t rows, int64_t length, int64_t c, float epsilon, cudaStream_t stream) {
  if (rows <= 0 || length <= 0) return;
  if (length <= kLayerNormWarpMax)
    layer_norm_backward_data_kernel<false>
        <<<row_blocks(rows, false), kThreads, 0, stream>>>(x, dy, scale, mean, var, dx, rows, length, c, epsilon);
  else
    layer_norm_backward_data_kernel<true>
        <<<row_blocks(rows, true), kThreads, 0, stream>>>(x, dy, scale, mean, var, dx, rows, length, c, epsilon);
  DLT_LAUNCH_CHECK();
}

size_t layer_norm_param_scratch(int64_t rows, int64_t length, int64_t c) {
  return static_cast<size_t>(2 * pixel_groups(rows * (length / c)) * c);
}

void layer_norm_backward_params(const float* x, const float* dy, const float* mean, const float* var, float* dscale,
                                float* doffset, double* scratch, int64_t rows, int64_t length, int64_t c, float epsilon,
                                cudaStream_t stream) {
  if (c <= 0 || (!dscale && !doffset)) return;
  const int64_t per_row = length / c, pixels = rows * per_row, groups = pixel_groups(pixels);
  const dim3 block(kLanes, kRows);
  const dim3 grid(static_cast<unsigned>((c + kLanes - 1) / kLanes), static_cast<unsigned>(groups));
  layer_norm_param_partial_kernel<<<grid, block, 0, stream>>>(x, dy, mean, var, pixels, per_row, c, epsilon, scratch);
  DLT_LAUNCH_CHECK();
  layer_norm_param_finalize_kernel<<<grid_for(c), kThreads, 0, stream>>>(scratch, groups, c, dscale, doffset);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda

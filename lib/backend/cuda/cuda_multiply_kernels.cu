// The broadcasting product's kernels (cuda_multiply_kernels.h): a grid-stride product over
// (n, pixels, c), a two-pass per-(image, channel) sum over the pixels (partials per group of
// pixels, then the groups in order), as channel_sum in cuda_reduce.cu, and a per-pixel sum over
// the channels (a thread per pixel).
#include "backend/cuda/cuda_launch.cuh"
#include "backend/cuda/cuda_multiply_kernels.h"

namespace dlt::cuda {
namespace {

constexpr int kLanes = 32;  // channels per block of the sum (threadIdx.x)
constexpr int kRows = 8;    // pixels per block step (threadIdx.y)

// Factor j's value at element i = (img * pixels + pixel) * c + ch.
__device__ inline float factor_at(const Factors& f, int j, int64_t i, int64_t img, int64_t ch, int64_t c) {
  return f.extent[j] == 1 ? f.x[j][img * c + ch] : f.extent[j] == 2 ? f.x[j][i / c] : f.x[j][i];
}

// The product of the factors at element (img, pixel, ch), index i = (img * pixels + pixel) * c + ch.
__device__ inline float product_at(const Factors& f, int64_t i, int64_t img, int64_t ch, int64_t c) {
  float v = factor_at(f, 0, i, img, ch, c);
  for (int j = 1; j < f.k; ++j) v = __fmul_rn(v, factor_at(f, j, i, img, ch, c));
  return v;
}

__global__ void product_kernel(Factors f, bool accumulate, float* y, int64_t total, int64_t pixels, int64_t c) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t ch = i % c, img = i / c / pixels;
    const float v = product_at(f, i, img, ch, c);
    y[i] = accumulate ? __fmul_rn(y[i], v) : v;
  }
}

// partials[(img * groups + group) * c + ch] = the sum over the group's pixels.
__global__ void product_partial_kernel(Factors f, int64_t n, int64_t pixels, int64_t c, double* partials) {
  __shared__ double acc[kRows][kLanes];
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * kLanes + threadIdx.x;
  const int64_t groups = gridDim.y;
  for (int64_t img = blockIdx.z; img < n; img += gridDim.z) {
    double s = 0;
    if (ch < c)
      for (int64_t p = static_cast<int64_t>(blockIdx.y) * kRows + threadIdx.y; p < pixels; p += groups * kRows)
        s += static_cast<double>(product_at(f, (img * pixels + p) * c + ch, img, ch, c));
    acc[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && ch < c) {
      double t = 0;
      for (int r = 0; r < kRows; ++r) t += acc[r][threadIdx.x];
      partials[(img * groups + blockIdx.y) * c + ch] = t;
    }
    __syncthreads();  // acc is reused by the next image
  }
}

__global__ void product_finalize_kernel(const double* partials, int64_t n, int64_t groups, int64_t c, float* out) {
  for (int64_t i = first_index(); i < n * c; i += grid_stride()) {
    const int64_t img = i / c, ch = i % c;
    double s = 0;
    for (int64_t g = 0; g < groups; ++g) s += partials[(img * groups + g) * c + ch];
    out[i] = static_cast<float>(s);
  }
}

// out[r] = the sum over row r's channels (row r = img * pixels + pixel), one thread per row.
__global__ void product_channel_sum_kernel(Factors f, int64_t rows, int64_t pixels, int64_t c, float* out) {
  for (int64_t r = first_index(); r < rows; r += grid_stride()) {
    double s = 0;
    for (int64_t ch = 0; ch < c; ++ch) s += static_cast<double>(product_at(f, r * c + ch, r / pixels, ch, c));
    out[r] = static_cast<float>(s);
  }
}

int64_t pixel_groups(int64_t pixels) {
  // Each thread sums at least 32 pixels; at most 64 groups per image.
  int64_t g = (pixels + kRows * 32 - 1) / (kRows * 32);
  return g < 1 ? 1 : g > 64 ? 64 : g;
}

}  // namespace

void product(const Factors& f, bool accumulate, float* y, int64_t n, int64_t pixels, int64_t c, cudaStream_t stream) {
  const int64_t total = n * pixels * c;
  if (total <= 0 || f.k <= 0) return;
  product_kernel<<<grid_for(total), kThreads, 0, stream>>>(f, accumulate, y, total, pixels, c);
  DLT_LAUNCH_CHECK();
}

size_t product_sum_scratch(int64_t n, int64_t pixels, int64_t c) {
  return static_cast<size_t>(n * pixel_groups(pixels) * c);
}

void product_sum(const Factors& f, float* out, int64_t n, int64_t pixels, int64_t c, double* scratch,
                 cudaStream_t stream) {
  if (n <= 0 || c <= 0 || f.k <= 0) return;
  if (pixels <= 0) {
    DLT_CUDA(cudaMemsetAsync(out, 0, static_cast<size_t>(n * c) * sizeof(float), stream));
    return;
  }
  const int64_t groups = pixel_groups(pixels);
  const dim3 block(kLanes, kRows);
  const dim3 grid(static_cast<unsigned>((c + kLanes - 1) / kLanes), static_cast<unsigned>(groups),
                  static_cast<unsigned>(n < 65535 ? n : 65535));
  product_partial_kernel<<<grid, block, 0, stream>>>(f, n, pixels, c, scratch);
  DLT_LAUNCH_CHECK();
  product_finalize_kernel<<<grid_for(n * c), kThreads, 0, stream>>>(scratch, n, groups, c, out);
  DLT_LAUNCH_CHECK();
}

void product_channel_sum(const Factors& f, float* out, int64_t n, int64_t pixels, int64_t c, cudaStream_t stream) {
  const int64_t rows = n * pixels;
  if (rows <= 0 || f.k <= 0) return;
  product_channel_sum_kernel<<<grid_for(rows), kThreads, 0, stream>>>(f, rows, pixels, c, out);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda

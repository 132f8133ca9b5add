// The CUDA backend's reductions: sum of squares, per-channel moments of NHWC tensors (two
// passes in double) and the synchronized batch-norm dx correction (the losses:
// cuda_loss_kernels.cu). Every sum runs over a fixed grid in a fixed order: results do not
// change from run to run.
#include <cmath>

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_launch.cuh"

namespace dlt::cuda {

namespace {

constexpr int kReduceBlocks = 1024;  // partial sums of sum_squares

// One partial per block: partials[blockIdx.x] = sum over its grid-stride share of x^2.
__global__ void sum_squares_partial_kernel(const float* x, int64_t n, double* partials) {
  double s = 0;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const double v = x[i];
    s += v * v;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// One block: *out = sum of values[0..count).
__global__ void sum_doubles_kernel(const double* values, int64_t count, double* out) {
  double s = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += values[i];
  s = block_sum(s);
  if (threadIdx.x == 0) *out = s;
}

// One block: *norm = sqrt((accumulate ? *norm^2 : 0) + sum of values[0..count)), in double,
// rounded to float once (a norm, not a sum of squares: float holds norms up to FLT_MAX).
__global__ void sum_doubles_into_kernel(const double* values, int64_t count, float* norm, bool accumulate) {
  double s = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += values[i];
  s = block_sum(s);
  if (threadIdx.x == 0) {
    const double before = accumulate ? static_cast<double>(*norm) : 0.0;
    *norm = static_cast<float>(sqrt(__dadd_rn(__dmul_rn(before, before), s)));
  }
}

// p *= threshold / *norm when the norm exceeds threshold, as CpuBackend::clip_to_norm.
__global__ void clip_to_norm_kernel(float* p, int64_t n, const float* norm, double threshold) {
  const double r = static_cast<double>(*norm);
  if (!(r > threshold)) return;
  const float s = static_cast<float>(threshold / r);
  for (int64_t i = first_index(); i < n; i += grid_stride()) p[i] = __fmul_rn(p[i], s);
}

constexpr int kMomentLanes = 32;  // channels per block (threadIdx.x)
constexpr int kMomentRows = 8;    // positions per block step (threadIdx.y)

// partials[blockIdx.y * c + ch] = sum over this block's positions of x (center == null) or of
// (x - center[ch])^2, for the 32 channels of blockIdx.x.
__global__ void channel_partial_kernel(const float* x, int64_t positions, int64_t c, const double* center,
                                       double* partials) {
  __shared__ double acc[kMomentRows][kMomentLanes];
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * kMomentLanes + threadIdx.x;
  double s = 0;
  if (ch < c) {
    const double mu = center ? center[ch] : 0.0;
    const int64_t step = static_cast<int64_t>(gridDim.y) * kMomentRows;
    for (int64_t p = static_cast<int64_t>(blockIdx.y) * kMomentRows + threadIdx.y; p < positions; p += step) {
      const double v = static_cast<double>(x[p * c + ch]) - mu;
      s += center ? v * v : v;
    }
  }
  acc[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && ch < c) {
    double t = 0;
    for (int r = 0; r < kMomentRows; ++r) t += acc[r][threadIdx.x];
    partials[static_cast<int64_t>(blockIdx.y) * c + ch] = t;
  }
}

// out[ch] = (sum over the groups of partials) / divisor, as float and (when out_d) double.
__global__ void channel_finalize_kernel(const double* partials, int64_t groups, int64_t c, int64_t divisor, float* out,
                                        double* out_d) {
  for (int64_t ch = first_index(); ch < c; ch += grid_stride()) {
    double s = 0;
    for (int64_t g = 0; g < groups; ++g) s += partials[g * c + ch];
    const double r = s / static_cast<double>(divisor);
    out[ch] = static_cast<float>(r);
    if (out_d) out_d[ch] = r;
  }
}

// Per channel, as the CPU backend: k = scale / (sigma m), a = k dshift, b = k dscale / sigma.
__global__ void bn_correction_coef_kernel(const float* mean, const float* var, const float* scale, float epsilon,
                                          double m, const float* dshift, const float* dscale, int64_t c, float* coef) {
  for (int64_t j = first_index(); j < c; j += grid_stride()) {
    const double sigma = sqrt(static_cast<double>(var[j]) + static_cast<double>(epsilon));
    const double k = static_cast<double>(scale[j]) / (sigma * m);
    coef[j] = static_cast<float>(k * static_cast<double>(dshift[j]));
    coef[c + j] = static_cast<float>(k * static_cast<double>(dscale[j]) / sigma);
    coef[2 * c + j] = mean[j];
  }
}

// dx -= a + b * (x - mean), per element of (positions, c).
__global__ void bn_correction_kernel(const float* x, int64_t n, int64_t c, const float* coef, float* dx) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t j = i % c;
    const float corr = __fadd_rn(coef[j], __fmul_rn(coef[c + j], __fsub_rn(x[i], coef[2 * c + j])));
    dx[i] = __fsub_rn(dx[i], corr);
  }
}

int64_t moment_groups(int64_t positions) {
  // Each thread sums at least 32 positions; at most 256 groups of partials per channel.
  int64_t g = (positions + kMomentRows * 32 - 1) / (kMomentRows * 32);
  if (g < 1) g = 1;
  if (g > 256) g = 256;
  return g;
}

}  // namespace

size_t sum_squares_scratch() { return kReduceBlocks; }

namespace {

// Launches the per-block partial sums of x^2 into scratch; returns how many blocks wrote one.
unsigned sum_squares_partials(const float* x, int64_t n, double* scratch, cudaStream_t stream) {
  const unsigned blocks = n > 0 ? grid_for(n) : 1;
  const unsigned used = blocks < kReduceBlocks ? blocks : kReduceBlocks;
  sum_squares_partial_kernel<<<used, kThreads, 0, stream>>>(x, n, scratch);
  DLT_LAUNCH_CHECK();
  return used;
}

}  // namespace

void sum_squares(const float* x, int64_t n, double* scratch, double* result, cudaStream_t stream) {
  const unsigned used = sum_squares_partials(x, n, scratch, stream);
  sum_doubles_kernel<<<1, kThreads, 0, stream>>>(scratch, used, result);
  DLT_LAUNCH_CHECK();
}

void l2_norm_into(const float* x, int64_t n, double* scratch, float* norms, bool accumulate, cudaStream_t stream) {
  const unsigned used = sum_squares_partials(x, n, scratch, stream);
  sum_doubles_into_kernel<<<1, kThreads, 0, stream>>>(scratch, used, norms, accumulate);
  DLT_LAUNCH_CHECK();
}

void clip_to_norm(float* p, int64_t n, const float* norms, double threshold, cudaStream_t stream) {
  if (n <= 0) return;
  clip_to_norm_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, n, norms, threshold);
  DLT_LAUNCH_CHECK();
}

size_t channel_moments_scratch(int64_t positions, int64_t c) {
  return static_cast<size_t>((moment_groups(positions) + 1) * c);
}

void channel_moments(const float* x, int64_t positions, int64_t c, float* mean, float* var, double* scratch,
                     cudaStream_t stream) {
  if (positions <= 0 || c <= 0) return;
  const int64_t groups = moment_groups(positions);
  double* partials = scratch;
  double* mean_d = scratch + groups * c;
  const dim3 block(kMomentLanes, kMomentRows);
  const dim3 grid(static_cast<unsigned>((c + kMomentLanes - 1) / kMomentLanes), static_cast<unsigned>(groups));
  channel_partial_kernel<<<grid, block, 0, stream>>>(x, positions, c, nullptr, partials);
  DLT_LAUNCH_CHECK();
  channel_finalize_kernel<<<grid_for(c), kThreads, 0, stream>>>(partials, groups, c, positions, mean, mean_d);
  DLT_LAUNCH_CHECK();
  channel_partial_kernel<<<grid, block, 0, stream>>>(x, positions, c, mean_d, partials);
  DLT_LAUNCH_CHECK();
  channel_finalize_kernel<<<grid_for(c), kThreads, 0, stream>>>(partials, groups, c, positions, var, nullptr);
  DLT_LAUNCH_CHECK();
}

size_t channel_sum_scratch(int64_t positions, int64_t c) { return static_cast<size_t>(moment_groups(positions) * c); }

void channel_sum(const float* x, int64_t positions, int64_t c, float* sum, double* scratch, cudaStream_t stream) {
  if (c <= 0) return;
  if (positions <= 0) {
    DLT_CUDA(cudaMemsetAsync(sum, 0, static_cast<size_t>(c) * sizeof(float), stream));
    return;
  }
  const int64_t groups = moment_groups(positions);
  const dim3 block(kMomentLanes, kMomentRows);
  const dim3 grid(static_cast<unsigned>((c + kMomentLanes - 1) / kMomentLanes), static_cast<unsigned>(groups));
  channel_partial_kernel<<<grid, block, 0, stream>>>(x, positions, c, nullptr, scratch);
  DLT_LAUNCH_CHECK();
  channel_finalize_kernel<<<grid_for(c), kThreads, 0, stream>>>(scratch, groups, c, 1, sum, nullptr);
  DLT_LAUNCH_CHECK();
}

void batch_norm_dx_correction(const float* x, int64_t positions, int64_t c, const float* mean, const float* var,
                              const float* scale, float epsilon, double m, const float* dshift, const float* dscale,
                              float* dx, float* scratch, cudaStream_t stream) {
  if (positions <= 0 || c <= 0 || m <= 0) return;
  bn_correction_coef_kernel<<<grid_for(c), kThreads, 0, stream>>>(mean, var, scale, epsilon, m, dshift, dscale, c,
                                                                  scratch);
  DLT_LAUNCH_CHECK();
  const int64_t n = positions * c;
  bn_correction_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, n, c, scratch, dx);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda

// Group normalization's kernels (cuda_group_norm_kernels.h). The per-group sums run one block
// per (image, group) over the group's values (pixel p, channel j of the group at
// (i * pixels + p) * c + group * cg + j), through block_sum (double, fixed order); the
// per-channel parameter sums one block per channel over every image's pixels.
#include "backend/cuda/cuda_group_norm_kernels.h"
#include "backend/cuda/cuda_launch.cuh"

namespace dlt::cuda {
namespace {

// The offset of value e (0 .. pixels * cg) of group s (image s / groups, group s % groups).
__device__ inline int64_t group_offset(int64_t s, int64_t e, int64_t pixels, int64_t c, int64_t groups) {
  const int64_t cg = c / groups, i = s / groups, g = s % groups;
  return (i * pixels + e / cg) * c + g * cg + e % cg;
}

__global__ void stats_kernel(const float* x, float* mean, float* var, int64_t pixels, int64_t c, int64_t groups) {
  __shared__ double mu;
  const int64_t s = blockIdx.x, count = pixels * (c / groups);
  double sum = 0;
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x) sum += x[group_offset(s, e, pixels, c, groups)];
  sum = block_sum(sum);
  if (threadIdx.x == 0) mu = sum / static_cast<double>(count);
  __syncthreads();
  const double m = mu;
  double sq = 0;
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
    const double d = x[group_offset(s, e, pixels, c, groups)] - m;
    sq += d * d;
  }
  sq = block_sum(sq);
  if (threadIdx.x == 0) {
    mean[s] = static_cast<float>(m);
    var[s] = static_cast<float>(sq / static_cast<double>(count));
  }
}

__global__ void apply_kernel(const float* x, const float* mean, const float* var, const float* scale,
                             const float* offset, float* y, int64_t total, int64_t pixels, int64_t c, int64_t groups,
                             float epsilon) {
  const int64_t cg = c / groups;
  for (int64_t k = first_index(); k < total; k += grid_stride()) {
    const int64_t ch = k % c, s = (k / (pixels * c)) * groups + ch / cg;
    const float rstd = rsqrtf(var[s] + epsilon);
    y[k] = (x[k] - mean[s]) * rstd * scale[ch] + offset[ch];
  }
}

// sums[s] = the sum of g = dy scale over group s, sums[n groups + s] = the sum of g xhat.
__global__ void backward_sums_kernel(const float* x, const float* dy, const float* scale, const float* mean,
                                     const float* var, double* sums, int64_t stats, int64_t pixels, int64_t c,
                                     int64_t groups, float epsilon) {
  const int64_t s = blockIdx.x, count = pixels * (c / groups), cg = c / groups;
  const float mu = mean[s], rstd = rsqrtf(var[s] + epsilon);
  double sg = 0, sgx = 0;
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
    const int64_t k = group_offset(s, e, pixels, c, groups);
    const double g = static_cast<double>(dy[k]) * scale[(s % groups) * cg + e % cg];
    sg += g;
    sgx += g * static_cast<double>((x[k] - mu) * rstd);
  }
  sg = block_sum(sg);
  sgx = block_sum(sgx);
  if (threadIdx.x == 0) {
    sums[s] = sg;
    sums[stats + s] = sgx;
  }
}

__global__ void backward_data_kernel(const float* x, const float* dy, const float* scale, const float* mean,
                                     const float* var, const double* sums, float* dx, int64_t total, int64_t stats,
                                     int64_t pixels, int64_t c, int64_t groups, float epsilon) {
  const int64_t cg = c / groups;
  const double count = static_cast<double>(pixels * cg);
  for (int64_t k = first_index(); k < total; k += grid_stride()) {
    const int64_t ch = k % c, s = (k / (pixels * c)) * groups + ch / cg;
    const float rstd = rsqrtf(var[s] + epsilon);
    const double xhat = static_cast<double>((x[k] - mean[s]) * rstd);
    const double g = static_cast<double>(dy[k]) * scale[ch];
    dx[k] = static_cast<float>(rstd * (g - sums[s] / count - xhat * sums[stats + s] / count));
  }
}

__global__ void backward_params_kernel(const float* x, const float* dy, const float* mean, const float* var,
                                       float* dscale, float* doffset, int64_t n, int64_t pixels, int64_t c,
                                       int64_t groups, float epsilon) {
  const int64_t ch = blockIdx.x, cg = c / groups;
  double ss = 0, so = 0;
  for (int64_t r = threadIdx.x; r < n * pixels; r += blockDim.x) {
    const int64_t k = r * c + ch, s = (r / pixels) * groups + ch / cg;
    const float d = dy[k];
    ss += static_cast<double>(d) * static_cast<double>((x[k] - mean[s]) * rsqrtf(var[s] + epsilon));
    so += d;
  }
  ss = block_sum(ss);
  so = block_sum(so);
  if (threadIdx.x == 0) {
    if (dscale) dscale[ch] = static_cast<float>(ss);
    if (doffset) doffset[ch] = static_cast<float>(so);
  }
}

}  // namespace

void group_norm_stats(const float* x, float* mean, float* var, int64_t n, int64_t pixels, int64_t c, int64_t groups,
                      cudaStream_t stream) {
  if (n <= 0 || pixels <= 0 || c <= 0) return;
  stats_kernel<<<static_cast<unsigned>(n * groups), kThreads, 0, stream>>>(x, mean, var, pixels, c, groups);
  DLT_LAUNCH_CHECK();
}

void group_norm_apply(const float* x, const float* mean, const float* var, const float* scale, const float* offset,
                      float* y, int64_t n, int64_t pixels, int64_t c, int64_t groups, float epsilon,
                      cudaStream_t stream) {
  const int64_t total = n * pixels * c;
  if (total <= 0) return;
  apply_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, mean, var, scale, offset, y, total, pixels, c, groups,
                                                         epsilon);
  DLT_LAUNCH_CHECK();
}

void group_norm_backward_data(const float* x, const float* dy, const float* scale, const float* mean, const float* var,
                              float* dx, double* sums, int64_t n, int64_t pixels, int64_t c, int64_t groups,
                              float epsilon, cudaStream_t stream) {
  const int64_t total = n * pixels * c, stats = n * groups;
  if (total <= 0) return;
  backward_sums_kernel<<<static_cast<unsigned>(stats), kThreads, 0, stream>>>(x, dy, scale, mean, var, sums, stats,
                                                                              pixels, c, groups, epsilon);
  DLT_LAUNCH_CHECK();
  backward_data_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, dy, scale, mean, var, sums, dx, total, stats,
                                                                 pixels, c, groups, epsilon);
  DLT_LAUNCH_CHECK();
}

void group_norm_backward_params(const float* x, const float* dy, const float* mean, const float* var, float* dscale,
                                float* doffset, int64_t n, int64_t pixels, int64_t c, int64_t groups, float epsilon,
                                cudaStream_t stream) {
  if (c <= 0 || (!dscale && !doffset)) return;
  backward_params_kernel<<<static_cast<unsigned>(c), kThreads, 0, stream>>>(x, dy, mean, var, dscale, doffset, n,
                                                                            pixels, c, groups, epsilon);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda

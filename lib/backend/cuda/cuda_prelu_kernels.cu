// PReLU's kernels (cuda_prelu_kernels.h): element-wise passes (grid-stride), and the alpha
// gradient as one block per channel summing its rows through block_sum (double, fixed order),
// then (shared alpha) one block summing the channels in order.
#include "backend/cuda/cuda_launch.cuh"
#include "backend/cuda/cuda_prelu_kernels.h"

namespace dlt::cuda {
namespace {

__global__ void forward_kernel(const float* x, const float* alpha, float* y, int64_t total, int64_t c, int64_t alphas) {
  for (int64_t k = first_index(); k < total; k += grid_stride()) {
    const float a = alpha[alphas == 1 ? 0 : k % c];
    y[k] = x[k] > 0.f ? x[k] : a * x[k];
  }
}

__global__ void backward_data_kernel(const float* x, const float* alpha, const float* dy, float* dx, int64_t total,
                                     int64_t c, int64_t alphas) {
  for (int64_t k = first_index(); k < total; k += grid_stride()) {
    const float a = alpha[alphas == 1 ? 0 : k % c];
    dx[k] = x[k] > 0.f ? dy[k] : a * dy[k];
  }
}

// sums[ch] = the sum of dy x over channel ch's values with x <= 0.
__global__ void channel_sums_kernel(const float* x, const float* dy, double* sums, int64_t rows, int64_t c) {
  const int64_t ch = blockIdx.x;
  double s = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    const float v = x[r * c + ch];
    if (!(v > 0.f)) s += static_cast<double>(dy[r * c + ch]) * v;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) sums[ch] = s;
}

__global__ void finish_kernel(const double* sums, float* dalpha, int64_t c, int64_t alphas) {
  if (alphas == c) {
    for (int64_t ch = first_index(); ch < c; ch += grid_stride()) dalpha[ch] = static_cast<float>(sums[ch]);
    return;
  }
  if (first_index() != 0) return;
  double all = 0;
  for (int64_t ch = 0; ch < c; ++ch) all += sums[ch];
  dalpha[0] = static_cast<float>(all);
}

}  // namespace

void prelu_forward(const float* x, const float* alpha, float* y, int64_t rows, int64_t c, int64_t alphas,
                   cudaStream_t stream) {
  const int64_t total = rows * c;
  if (total <= 0) return;
  forward_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, alpha, y, total, c, alphas);
  DLT_LAUNCH_CHECK();
}

void prelu_backward(const float* x, const float* alpha, const float* dy, float* dx, float* dalpha, double* sums,
                    int64_t rows, int64_t c, int64_t alphas, cudaStream_t stream) {
  const int64_t total = rows * c;
  if (total <= 0) return;
  backward_data_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, alpha, dy, dx, total, c, alphas);
  DLT_LAUNCH_CHECK();
  if (!dalpha) return;
  channel_sums_kernel<<<static_cast<unsigned>(c), kThreads, 0, stream>>>(x, dy, sums, rows, c);
  DLT_LAUNCH_CHECK();
  finish_kernel<<<grid_for(c), kThreads, 0, stream>>>(sums, dalpha, c, alphas);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda

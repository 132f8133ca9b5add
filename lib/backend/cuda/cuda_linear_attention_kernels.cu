// The ReLU linear attention's element-wise kernels (backend/linear_attention_op.h), grid-stride
// loops over the tokens' channels of every head: the gather of relu(Q), relu(K) and [V 1] into
// (images * heads, tokens, channels) planes, the division into y, the gradient of the products'
// result, and the scatter of dQ, dK or dV back into the joint tensor.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_launch.cuh"

namespace dlt::cuda {

namespace {

struct Plane {
  int64_t s, h, d;
  // Element e of (images, tokens, heads, d): its token t, head j, channel i and plane row.
  __device__ void split(int64_t e, int64_t& t, int64_t& j, int64_t& i, int64_t& row) const {
    t = e / (h * d);
    const int64_t r = e % (h * d);
    j = r / d;
    i = r % d;
    row = ((t / s) * h + j) * s + t % s;
  }
};

__global__ void gather_kernel(const float* x, float* q, float* k, float* v, int64_t total, Plane pl) {
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    int64_t t, j, i, row;
    pl.split(e, t, j, i, row);
    const float* in = x + t * pl.h * 3 * pl.d + j * 3 * pl.d;
    q[row * pl.d + i] = fmaxf(in[i], 0.f);
    k[row * pl.d + i] = fmaxf(in[pl.d + i], 0.f);
    v[row * (pl.d + 1) + i] = in[2 * pl.d + i];
    if (i == 0) v[row * (pl.d + 1) + pl.d] = 1.f;
  }
}

__global__ void divide_kernel(const float* num, float* y, float* den, float eps, int64_t total, Plane pl) {
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    int64_t t, j, i, row;
    pl.split(e, t, j, i, row);
    const float* in = num + row * (pl.d + 1);
    const float dn = in[pl.d] + eps;
    y[e] = in[i] / dn;
    if (i == 0) den[row] = dn;
  }
}

// One thread per token and head: its d gradients and the denominator's.
__global__ void num_grad_kernel(const float* y, const float* dy, const float* den, float* g, int64_t total, Plane pl) {
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const int64_t t = e / pl.h, j = e % pl.h, row = ((t / pl.s) * pl.h + j) * pl.s + t % pl.s;
    const float *gy = dy + e * pl.d, *yr = y + e * pl.d;
    const float inv = 1.f / den[row];
    float* out = g + row * (pl.d + 1);
    float dot = 0.f;
    for (int64_t i = 0; i < pl.d; ++i) {
      out[i] = gy[i] * inv;
      dot += gy[i] * yr[i];
    }
    out[pl.d] = -dot * inv;
  }
}

__global__ void scatter_kernel(const float* x, const float* g, float* dx, int64_t offset, bool relu, int64_t total,
                               Plane pl) {
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    int64_t t, j, i, row;
    pl.split(e, t, j, i, row);
    const int64_t at = t * pl.h * 3 * pl.d + j * 3 * pl.d + offset + i;
    const float v = g[row * pl.d + i];
    dx[at] = relu && !(x[at] > 0.f) ? 0.f : v;
  }
}

}  // namespace

void linear_attention_gather(const float* x, float* q, float* k, float* v, int64_t n, int64_t s, int64_t h, int64_t d,
                             cudaStream_t stream) {
  const int64_t total = n * s * h * d;
  gather_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, q, k, v, total, Plane{s, h, d});
  DLT_LAUNCH_CHECK();
}

void linear_attention_divide(const float* num, float* y, float* den, float eps, int64_t n, int64_t s, int64_t h,
                             int64_t d, cudaStream_t stream) {
  const int64_t total = n * s * h * d;
  divide_kernel<<<grid_for(total), kThreads, 0, stream>>>(num, y, den, eps, total, Plane{s, h, d});
  DLT_LAUNCH_CHECK();
}

void linear_attention_num_grad(const float* y, const float* dy, const float* den, float* g, int64_t n, int64_t s,
                               int64_t h, int64_t d, cudaStream_t stream) {
  const int64_t total = n * s * h;
  num_grad_kernel<<<grid_for(total), kThreads, 0, stream>>>(y, dy, den, g, total, Plane{s, h, d});
  DLT_LAUNCH_CHECK();
}

void linear_attention_scatter(const float* x, const float* g, float* dx, int64_t offset, bool relu, int64_t n,
                              int64_t s, int64_t h, int64_t d, cudaStream_t stream) {
  const int64_t total = n * s * h * d;
  scatter_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, g, dx, offset, relu, total, Plane{s, h, d});
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda

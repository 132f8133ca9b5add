// The separable self-attention kernels (backend/separable_attention_op.h): one block of kThreads
// per pixel group (an image's pixels at one offset inside the patches), its softmax and sums
// reduced in double in a fixed order; the backward keeps the context's gradient in shared memory.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_launch.cuh"

namespace dlt::cuda {

namespace {

struct Groups {
  int64_t h, w, c, ph, pw;
  __device__ int64_t pixels() const { return (h / ph) * (w / pw); }
  // The pixel index (n, h, w) of group g's p-th pixel; g = n * ph pw + i pw + j.
  __device__ int64_t pixel(int64_t g, int64_t p) const {
    const int64_t n = g / (ph * pw), o = g % (ph * pw), i = o / pw, j = o % pw, nw = w / pw;
    return (n * h + (p / nw) * ph + i) * w + (p % nw) * pw + j;
  }
};

// The value v of every thread, reduced by max; valid in every thread.
__device__ float block_max(float v) {
  __shared__ float warp_max[kThreads / 32];
  __shared__ float result;
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, offset));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_max[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = warp_max[0];
    for (int i = 1; i < kThreads / 32; ++i) m = fmaxf(m, warp_max[i]);
    result = m;
  }
  __syncthreads();
  return result;
}

// block_sum's total in every thread.
__device__ double block_total(double v) {
  __shared__ double result;
  const double t = block_sum(v);
  if (threadIdx.x == 0) result = t;
  __syncthreads();
  return result;
}

__global__ void separable_forward_kernel(const float* x, float* y, float* scores, float* context, Groups gr) {
  const int64_t g = blockIdx.x, pixels = gr.pixels(), c = gr.c, xc = 1 + 2 * c;
  float top = -INFINITY;
  for (int64_t p = threadIdx.x; p < pixels; p += blockDim.x) top = fmaxf(top, x[gr.pixel(g, p) * xc]);
  top = block_max(top);
  double sum = 0;
  for (int64_t p = threadIdx.x; p < pixels; p += blockDim.x) {
    const int64_t at = gr.pixel(g, p);
    const float e = expf(x[at * xc] - top);
    scores[at] = e;
    sum += e;
  }
  const float inv = static_cast<float>(1.0 / block_total(sum));
  for (int64_t p = threadIdx.x; p < pixels; p += blockDim.x) scores[gr.pixel(g, p)] *= inv;
  __syncthreads();
  float* ctx = context + g * c;
  for (int64_t i = threadIdx.x; i < c; i += blockDim.x) {
    float acc = 0.f;
    for (int64_t p = 0; p < pixels; ++p) {
      const int64_t at = gr.pixel(g, p);
      acc += scores[at] * x[at * xc + 1 + i];
    }
    ctx[i] = acc;
  }
  __syncthreads();
  for (int64_t e = threadIdx.x; e < pixels * c; e += blockDim.x) {
    const int64_t at = gr.pixel(g, e / c), i = e % c;
    y[at * c + i] = fmaxf(x[at * xc + 1 + c + i], 0.f) * ctx[i];
  }
}

__global__ void separable_backward_kernel(const float* x, const float* dy, const float* scores, const float* context,
                                          float* dx, Groups gr) {
  extern __shared__ float dctx[];
  const int64_t g = blockIdx.x, pixels = gr.pixels(), c = gr.c, xc = 1 + 2 * c;
  const float* ctx = context + g * c;
  for (int64_t i = threadIdx.x; i < c; i += blockDim.x) {
    float acc = 0.f;
    for (int64_t p = 0; p < pixels; ++p) {
      const int64_t at = gr.pixel(g, p);
      acc += dy[at * c + i] * fmaxf(x[at * xc + 1 + c + i], 0.f);
    }
    dctx[i] = acc;
  }
  __syncthreads();
  for (int64_t e = threadIdx.x; e < pixels * c; e += blockDim.x) {
    const int64_t at = gr.pixel(g, e / c), i = e % c;
    dx[at * xc + 1 + c + i] = x[at * xc + 1 + c + i] > 0.f ? dy[at * c + i] * ctx[i] : 0.f;
    dx[at * xc + 1 + i] = scores[at] * dctx[i];
  }
  double weighted = 0;
  for (int64_t p = threadIdx.x; p < pixels; p += blockDim.x) {
    const int64_t at = gr.pixel(g, p);
    float ds = 0.f;
    for (int64_t i = 0; i < c; ++i) ds += x[at * xc + 1 + i] * dctx[i];
    dx[at * xc] = ds;
    weighted += static_cast<double>(scores[at]) * ds;
  }
  const float mean = static_cast<float>(block_total(weighted));
  for (int64_t p = threadIdx.x; p < pixels; p += blockDim.x) {
    const int64_t at = gr.pixel(g, p);
    dx[at * xc] = scores[at] * (dx[at * xc] - mean);
  }
}

}  // namespace

// Declared where they are called (cuda_separable_attention_op.cpp).
void separable_attention_forward(const float* x, float* y, float* scores, float* context, int64_t n, int64_t h,
                                 int64_t w, int64_t c, int64_t ph, int64_t pw, cudaStream_t stream) {
  const Groups gr{h, w, c, ph, pw};
  separable_forward_kernel<<<static_cast<unsigned>(n * ph * pw), kThreads, 0, stream>>>(x, y, scores, context, gr);
  DLT_LAUNCH_CHECK();
}

void separable_attention_backward(const float* x, const float* dy, const float* scores, const float* context, float* dx,
                                  int64_t n, int64_t h, int64_t w, int64_t c, int64_t ph, int64_t pw,
                                  cudaStream_t stream) {
  const Groups gr{h, w, c, ph, pw};
  separable_backward_kernel<<<static_cast<unsigned>(n * ph * pw), kThreads, static_cast<size_t>(c) * sizeof(float),
                              stream>>>(x, dy, scores, context, dx, gr);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda

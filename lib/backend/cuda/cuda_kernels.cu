// The CUDA backend's element-wise kernels, dropout, strided channel copies (concatenation) and
// fused optimizer updates: grid-stride loops over int64 indices. Products and sums use the
// _rn intrinsics, which the compiler never fuses into FMAs, so each result is the one the
// CPU backend's plain float expression gives. Reductions are in cuda_reduce.cu.
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_launch.cuh"
#include "backend/dropout_hash.h"

namespace dlt::cuda {

namespace {

__device__ inline float fmul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float fadd(float a, float b) { return __fadd_rn(a, b); }
__device__ inline float fsub(float a, float b) { return __fsub_rn(a, b); }

__global__ void fill_kernel(float* p, int64_t n, float value) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) p[i] = value;
}

__global__ void axpby_kernel(float a, const float* x, float b, float* y, int64_t n) {
  if (b == 0.f) {  // y may hold garbage (NaN): do not read it
    for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = fmul(a, x[i]);
  } else {
    for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = fadd(fmul(a, x[i]), fmul(b, y[i]));
  }
}

struct SumInputs {
  const float* x[kSumChunk];
  int k;
};

// accumulate: y += x[0] + ... (a later chunk); otherwise y = x[0] + ...
__global__ void sum_kernel(SumInputs in, bool accumulate, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float s = accumulate ? y[i] : in.x[0][i];
    for (int j = accumulate ? 0 : 1; j < in.k; ++j) s = fadd(s, in.x[j][i]);
    y[i] = s;
  }
}

__global__ void scale_kernel(float* p, int64_t n, float s) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) p[i] = fmul(p[i], s);
}

__global__ void clamp_kernel(float* p, int64_t n, float lo, float hi) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) p[i] = fminf(fmaxf(p[i], lo), hi);
}

__global__ void mul_kernel(const float* x, const float* m, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = fmul(x[i], m[i]);
}

__global__ void shift_scale_kernel(const float* x, const float* shift, int64_t ns, const float* mul, int64_t nm,
                                   float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float d = fsub(x[i], shift[i % ns]);
    y[i] = mul ? fmul(d, mul[i % nm]) : d;
  }
}

__global__ void dropout_kernel(const float* x, float* y, float* mask, int64_t n, uint64_t key, float p,
                               float keep_value) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    // The CPU backend's hash (dropout_hash.h): masks agree bit for bit.
    const float u = fmul(static_cast<float>(dropout_hash(key, static_cast<uint64_t>(i)) >> 40), 0x1p-24f);
    const float m = u >= p ? keep_value : 0.f;
    mask[i] = m;
    y[i] = fmul(x[i], m);
  }
}

__global__ void copy_strided_kernel(const float* src, int64_t src_pitch, float* dst, int64_t dst_pitch, int64_t rows,
                                    int64_t width) {
  const int64_t n = rows * width;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t r = i / width, j = i - r * width;
    dst[r * dst_pitch + j] = src[r * src_pitch + j];
  }
}

// A per-step scalar: by value (captured as it was), or read from device memory (what a
// replayed CUDA graph needs: the caller refreshes the value before each launch).
__device__ inline float load(Scalar s) { return s.at ? *s.at : s.value; }

// v = momentum * v - lr * (g + l2 * w); w += v
__global__ void sgdm_kernel(float* w, const float* g, float* v, int64_t n, Scalar lr_in, float momentum, float l2) {
  const float lr = load(lr_in);
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float vi = fsub(fmul(momentum, v[i]), fmul(lr, fadd(g[i], fmul(l2, w[i]))));
    v[i] = vi;
    w[i] = fadd(w[i], vi);
  }
}

// g' = g + l2 w; m = b1 m + (1-b1) g'; s = b2 s + (1-b2) g' g';
// w = w (1 - lr wd) - lr (m c1) / (sqrt(s c2) + eps)   (adam: wd = 0, so 1 - lr wd is exactly 1)
__global__ void adam_kernel(float* w, const float* g, float* m, float* s, int64_t n, Scalar lr_in, float b1, float b2,
                            float eps, Scalar c1_in, Scalar c2_in, float l2, float wd) {
  const float lr = load(lr_in), c1 = load(c1_in), c2 = load(c2_in);
  const float one_b1 = fsub(1.f, b1), one_b2 = fsub(1.f, b2), keep = fsub(1.f, fmul(lr, wd));
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float wi = w[i];
    const float gi = fadd(g[i], fmul(l2, wi));
    const float mi = fadd(fmul(b1, m[i]), fmul(one_b1, gi));
    const float si = fadd(fmul(b2, s[i]), fmul(fmul(one_b2, gi), gi));
    m[i] = mi;
    s[i] = si;
    w[i] = fsub(fmul(wi, keep), __fdiv_rn(fmul(lr, fmul(mi, c1)), fadd(__fsqrt_rn(fmul(si, c2)), eps)));
  }
}

// g' = g + l2 w; s = b2 s + (1-b2) g' g'; w -= lr g' / (sqrt(s) + eps)
__global__ void rmsprop_kernel(float* w, const float* g, float* s, int64_t n, Scalar lr_in, float b2, float eps,
                               float l2) {
  const float lr = load(lr_in);
  const float one_b2 = fsub(1.f, b2);
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float wi = w[i];
    const float gi = fadd(g[i], fmul(l2, wi));
    const float si = fadd(fmul(b2, s[i]), fmul(fmul(one_b2, gi), gi));
    s[i] = si;
    w[i] = fsub(wi, __fdiv_rn(fmul(lr, gi), fadd(__fsqrt_rn(si), eps)));
  }
}

}  // namespace

void fill_value(float* p, int64_t n, float value, cudaStream_t stream) {
  if (n <= 0) return;
  fill_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, n, value);
  DLT_LAUNCH_CHECK();
}

void axpby(float a, const float* x, float b, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  axpby_kernel<<<grid_for(n), kThreads, 0, stream>>>(a, x, b, y, n);
  DLT_LAUNCH_CHECK();
}

void sum(const float* const* xs, int k, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0 || k <= 0) return;
  for (int first = 0; first < k; first += kSumChunk) {
    SumInputs in{};
    in.k = k - first < kSumChunk ? k - first : kSumChunk;
    for (int j = 0; j < in.k; ++j) in.x[j] = xs[first + j];
    sum_kernel<<<grid_for(n), kThreads, 0, stream>>>(in, first > 0, y, n);
    DLT_LAUNCH_CHECK();
  }
}

void scale(float* p, int64_t n, float s, cudaStream_t stream) {
  if (n <= 0) return;
  scale_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, n, s);
  DLT_LAUNCH_CHECK();
}

void clamp(float* p, int64_t n, float lo, float hi, cudaStream_t stream) {
  if (n <= 0) return;
  clamp_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, n, lo, hi);
  DLT_LAUNCH_CHECK();
}

void mul(const float* x, const float* m, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  mul_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, m, y, n);
  DLT_LAUNCH_CHECK();
}

void shift_scale(const float* x, const float* shift, int64_t ns, const float* mul, int64_t nm, float* y, int64_t n,
                 cudaStream_t stream) {
  if (n <= 0) return;
  shift_scale_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, shift, ns, mul, nm > 0 ? nm : 1, y, n);
  DLT_LAUNCH_CHECK();
}

void dropout_forward(const float* x, float* y, float* mask, int64_t n, uint64_t key, float p, float keep_value,
                     cudaStream_t stream) {
  if (n <= 0) return;
  dropout_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, mask, n, key, p, keep_value);
  DLT_LAUNCH_CHECK();
}

void copy_strided(const float* src, int64_t src_pitch, float* dst, int64_t dst_pitch, int64_t rows, int64_t width,
                  cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return;
  copy_strided_kernel<<<grid_for(rows * width), kThreads, 0, stream>>>(src, src_pitch, dst, dst_pitch, rows, width);
  DLT_LAUNCH_CHECK();
}

void sgdm_update(float* w, const float* g, float* v, int64_t n, Scalar lr, float momentum, float l2,
                 cudaStream_t stream) {
  if (n <= 0) return;
  sgdm_kernel<<<grid_for(n), kThreads, 0, stream>>>(w, g, v, n, lr, momentum, l2);
  DLT_LAUNCH_CHECK();
}

void adam_update(float* w, const float* g, float* m, float* s, int64_t n, Scalar lr, float b1, float b2, float eps,
                 Scalar c1, Scalar c2, float l2, float wd, cudaStream_t stream) {
  if (n <= 0) return;
  adam_kernel<<<grid_for(n), kThreads, 0, stream>>>(w, g, m, s, n, lr, b1, b2, eps, c1, c2, l2, wd);
  DLT_LAUNCH_CHECK();
}

void rmsprop_update(float* w, const float* g, float* s, int64_t n, Scalar lr, float b2, float eps, float l2,
                    cudaStream_t stream) {
  if (n <= 0) return;
  rmsprop_kernel<<<grid_for(n), kThreads, 0, stream>>>(w, g, s, n, lr, b2, eps, l2);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda

namespace dlt::cuda {
namespace {

// One thread per pooled element: the first maximum of its window, rows first (as the CPU).
__global__ void max_pool_indices_kernel(const float* x, int32_t* idx, int64_t total, int64_t h, int64_t w, int64_t c,
                                        int64_t oh, int64_t ow, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                                        int64_t pad_t, int64_t pad_l) {
  for (int64_t k = first_index(); k < total; k += grid_stride()) {
    const int64_t ch = k % c, j = k / c % ow, i = k / (c * ow) % oh, n = k / (c * ow * oh);
    int64_t best = -1;
    float bv = 0.f;
    for (int64_t a = 0; a < kh; ++a) {
      const int64_t y = i * sh - pad_t + a;
      if (y < 0 || y >= h) continue;
      for (int64_t b = 0; b < kw; ++b) {
        const int64_t xw = j * sw - pad_l + b;
        if (xw < 0 || xw >= w) continue;
        const float v = x[((n * h + y) * w + xw) * c + ch];
        if (best < 0 || v > bv) best = y * w + xw, bv = v;
      }
    }
    idx[k] = static_cast<int32_t>(best < 0 ? 0 : best);
  }
}

__global__ void max_unpool_kernel(const float* x, const int32_t* idx, float* y, int64_t total, int64_t plane_in,
                                  int64_t plane_out, int64_t c) {
  for (int64_t k = first_index(); k < total; k += grid_stride()) {
    const int64_t n = k / (plane_in * c), ch = k % c;
    atomicAdd(y + (n * plane_out + idx[k]) * c + ch, x[k]);  // overlapping windows may share
  }
}

__global__ void max_unpool_backward_kernel(const float* dy, const int32_t* idx, float* dx, int64_t total,
                                           int64_t plane_in, int64_t plane_out, int64_t c) {
  for (int64_t k = first_index(); k < total; k += grid_stride()) {
    const int64_t n = k / (plane_in * c), ch = k % c;
    dx[k] = dy[(n * plane_out + idx[k]) * c + ch];
  }
}

}  // namespace

void max_pool_indices(const float* x, int32_t* idx, int64_t n, int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow,
                      int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t pad_t, int64_t pad_l,
                      cudaStream_t stream) {
  const int64_t total = n * oh * ow * c;
  if (total == 0) return;
  max_pool_indices_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, idx, total, h, w, c, oh, ow, kh, kw, sh, sw,
                                                                    pad_t, pad_l);
  DLT_LAUNCH_CHECK();
}

void max_unpool(const float* x, const int32_t* idx, float* y, int64_t n, int64_t plane_in, int64_t plane_out, int64_t c,
                cudaStream_t stream) {
  const int64_t total = n * plane_in * c;
  if (total == 0) return;
  max_unpool_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, idx, y, total, plane_in, plane_out, c);
  DLT_LAUNCH_CHECK();
}

void max_unpool_backward(const float* dy, const int32_t* idx, float* dx, int64_t n, int64_t plane_in, int64_t plane_out,
                         int64_t c, cudaStream_t stream) {
  const int64_t total = n * plane_in * c;
  if (total == 0) return;
  max_unpool_backward_kernel<<<grid_for(total), kThreads, 0, stream>>>(dy, idx, dx, total, plane_in, plane_out, c);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda

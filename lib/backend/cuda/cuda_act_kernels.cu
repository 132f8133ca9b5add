// Activation kernels (cuda_act_kernels.h): one grid-stride kernel per kind and direction,
// float arithmetic with CUDA's accurate expf / tanhf / erff (no fast-math intrinsics).
#include "backend/cuda/cuda_act_kernels.h"
#include "backend/cuda/cuda_launch.cuh"

namespace dlt::cuda {
namespace {

constexpr float kInvSqrt2 = 0.707106781f;      // 1 / sqrt 2
constexpr float kInvSqrt2Pi = 0.398942280f;    // 1 / sqrt(2 pi)
constexpr float kGeluTanhBeta = 0.797884561f;  // sqrt(2 / pi)
constexpr float kGeluTanhKappa = 0.044715f;

__device__ inline float sigmoid(float v) { return 1.f / (1.f + expf(-v)); }

template <ActKernel K>
__device__ inline float act_value(float v, float alpha, float beta) {
  if constexpr (K == ActKernel::kClippedRelu) return fminf(fmaxf(v, 0.f), alpha);
  if constexpr (K == ActKernel::kSigmoid) return sigmoid(v);
  if constexpr (K == ActKernel::kTanh) return tanhf(v);
  if constexpr (K == ActKernel::kSwish) return v * sigmoid(v);
  if constexpr (K == ActKernel::kGelu) return 0.5f * v * (1.f + erff(v * kInvSqrt2));
  if constexpr (K == ActKernel::kGeluTanh)
    return 0.5f * v * (1.f + tanhf(kGeluTanhBeta * (v + kGeluTanhKappa * v * v * v)));
  if constexpr (K == ActKernel::kHardSigmoid) return fminf(fmaxf(alpha * v + beta, 0.f), 1.f);
  if constexpr (K == ActKernel::kHardSwish) return v * fminf(fmaxf(v + 3.f, 0.f), 6.f) / 6.f;
  return 0.f;
}

// dy/dx at v.
template <ActKernel K>
__device__ inline float act_slope(float v, float alpha, float beta) {
  if constexpr (K == ActKernel::kClippedRelu) return v > 0.f && v < alpha ? 1.f : 0.f;
  if constexpr (K == ActKernel::kSigmoid) {
    const float s = sigmoid(v);
    return s * (1.f - s);
  }
  if constexpr (K == ActKernel::kTanh) {
    const float t = tanhf(v);
    return 1.f - t * t;
  }
  if constexpr (K == ActKernel::kSwish) {
    const float s = sigmoid(v);
    return s * (1.f + v * (1.f - s));
  }
  if constexpr (K == ActKernel::kGelu)
    return 0.5f * (1.f + erff(v * kInvSqrt2)) + v * kInvSqrt2Pi * expf(-0.5f * v * v);
  if constexpr (K == ActKernel::kGeluTanh) {
    const float t = tanhf(kGeluTanhBeta * (v + kGeluTanhKappa * v * v * v));
    return 0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * kGeluTanhBeta * (1.f + 3.f * kGeluTanhKappa * v * v);
  }
  if constexpr (K == ActKernel::kHardSigmoid) {
    const float u = alpha * v + beta;
    return u > 0.f && u < 1.f ? alpha : 0.f;
  }
  if constexpr (K == ActKernel::kHardSwish) return v < -3.f ? 0.f : v <= 3.f ? v / 3.f + 0.5f : 1.f;
  return 0.f;
}

template <ActKernel K>
__global__ void act_forward_kernel(const float* x, float* y, int64_t count, float alpha, float beta) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) y[i] = act_value<K>(x[i], alpha, beta);
}

template <ActKernel K>
__global__ void act_backward_kernel(const float* x, const float* dy, float* dx, int64_t count, float alpha,
                                    float beta) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) dx[i] = act_slope<K>(x[i], alpha, beta) * dy[i];
}

template <ActKernel K>
void launch(bool forward, const float* x, const float* dy, float* out, int64_t count, float alpha, float beta,
            cudaStream_t stream) {
  if (forward)
    act_forward_kernel<K><<<grid_for(count), kThreads, 0, stream>>>(x, out, count, alpha, beta);
  else
    act_backward_kernel<K><<<grid_for(count), kThreads, 0, stream>>>(x, dy, out, count, alpha, beta);
}

cudaError_t run(ActKernel kind, bool forward, const float* x, const float* dy, float* out, int64_t count, float alpha,
                float beta, cudaStream_t stream) {
  switch (kind) {
    case ActKernel::kClippedRelu:
      launch<ActKernel::kClippedRelu>(forward, x, dy, out, count, alpha, beta, stream);
      break;
    case ActKernel::kSigmoid:
      launch<ActKernel::kSigmoid>(forward, x, dy, out, count, alpha, beta, stream);
      break;
    case ActKernel::kTanh:
      launch<ActKernel::kTanh>(forward, x, dy, out, count, alpha, beta, stream);
      break;
    case ActKernel::kSwish:
      launch<ActKernel::kSwish>(forward, x, dy, out, count, alpha, beta, stream);
      break;
    case ActKernel::kGelu:
      launch<ActKernel::kGelu>(forward, x, dy, out, count, alpha, beta, stream);
      break;
    case ActKernel::kGeluTanh:
      launch<ActKernel::kGeluTanh>(forward, x, dy, out, count, alpha, beta, stream);
      break;
    case ActKernel::kHardSigmoid:
      launch<ActKernel::kHardSigmoid>(forward, x, dy, out, count, alpha, beta, stream);
      break;
    case ActKernel::kHardSwish:
      launch<ActKernel::kHardSwish>(forward, x, dy, out, count, alpha, beta, stream);
      break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t act_forward(ActKernel kind, const float* x, float* y, int64_t count, float alpha, float beta,
                        cudaStream_t stream) {
  return run(kind, true, x, nullptr, y, count, alpha, beta, stream);
}

cudaError_t act_backward(ActKernel kind, const float* x, const float* dy, float* dx, int64_t count, float alpha,
                         float beta, cudaStream_t stream) {
  return run(kind, false, x, dy, dx, count, alpha, beta, stream);
}

}  // namespace dlt::cuda

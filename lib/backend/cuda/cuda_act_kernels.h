// Launchers of the activation kernels (cuda_act_kernels.cu) for the kinds cuDNN's legacy
// activations lack or define otherwise: clipped relu, sigmoid, tanh, swish, gelu (erf and tanh
// forms), hard sigmoid and hard swish, with ops.h's formulas and PyTorch's derivatives at the
// kinks. Plain header (the .cu files are C++17 and see only the CUDA backend's own headers).
// Every launcher enqueues on stream and returns cudaGetLastError(); callers wrap it in DLT_CUDA.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace dlt::cuda {

// ops.h's ActKind values that run on these kernels.
enum class ActKernel { kClippedRelu, kSigmoid, kTanh, kSwish, kGelu, kGeluTanh, kHardSigmoid, kHardSwish };

// y (count) = f(x); alpha: clipped relu's ceiling, hard sigmoid's slope; beta: its offset.
cudaError_t act_forward(ActKernel kind, const float* x, float* y, int64_t count, float alpha, float beta,
                        cudaStream_t stream);
// dx (count) = f'(x) dy; dx may alias dy.
cudaError_t act_backward(ActKernel kind, const float* x, const float* dy, float* dx, int64_t count, float alpha,
                         float beta, cudaStream_t stream);

}  // namespace dlt::cuda

// Internal to the CUDA backend: the per-device context (compute and copy streams, cuDNN and
// cuBLAS handles bound to the compute stream, a shared workspace) and error checks that throw
// DeviceError naming the call and the fix. The ops (cuda_*_op.cpp) register their factories
// with the op registry; every op runs on ctx.stream; nothing synchronizes the host unless a
// value must be read.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "backend/ops.h"

namespace dlt::cuda {

[[noreturn]] void throw_cuda(cudaError_t e, const char* expr, const char* file, int line);
[[noreturn]] void throw_cudnn(cudnnStatus_t s, const char* expr, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t s, const char* expr, const char* file, int line);

#define DLT_CUDA(expr)                                                                     \
  do {                                                                                     \
    cudaError_t dlt_e_ = (expr);                                                           \
    if (dlt_e_ != cudaSuccess) ::dlt::cuda::throw_cuda(dlt_e_, #expr, __FILE__, __LINE__); \
  } while (0)
#define DLT_CUDNN(expr)                                                                              \
  do {                                                                                               \
    cudnnStatus_t dlt_s_ = (expr);                                                                   \
    if (dlt_s_ != CUDNN_STATUS_SUCCESS) ::dlt::cuda::throw_cudnn(dlt_s_, #expr, __FILE__, __LINE__); \
  } while (0)
#define DLT_CUBLAS(expr)                                                                               \
  do {                                                                                                 \
    cublasStatus_t dlt_s_ = (expr);                                                                    \
    if (dlt_s_ != CUBLAS_STATUS_SUCCESS) ::dlt::cuda::throw_cublas(dlt_s_, #expr, __FILE__, __LINE__); \
  } while (0)

// cudaEventQuery without a trace: cudaErrorNotReady is no error, but the runtime keeps it as
// the thread's last error, which the next kernel launch check (cudaGetLastError) would report
// as that kernel's failure; it is cleared (PyTorch does the same after its event queries).
cudaError_t query_event(cudaEvent_t e);

struct CudaContext {
  int device = 0;
  cudaStream_t stream = nullptr;       // compute: every op and kernel
  cudaStream_t copy_stream = nullptr;  // host -> device uploads (Backend::upload_begin)
  cudnnHandle_t cudnn = nullptr;       // bound to stream
  cublasHandle_t cublas = nullptr;     // bound to stream
  // A device scratch buffer of at least bytes shared by all ops of this device (they run one
  // at a time on stream); grows on demand through the caching allocator.
  void* workspace(size_t bytes);
  // Counts workspace() calls: an op that finds it one above the count after its own last call
  // (and the same pointer) knows nobody else took the workspace in between, so what it left
  // there is still there (Precision: mixed convolutions keep the rounded dy between backward
  // weights and backward data).
  uint64_t workspace_calls() const { return ws_calls_; }

 private:
  void* ws_ = nullptr;
  size_t ws_bytes_ = 0;
  uint64_t ws_calls_ = 0;
};

// The context of device index (created on first use; makes that device current).
CudaContext& context(int device);

}  // namespace dlt::cuda

// The CUDA backend's error reporting (throw_cuda / throw_cudnn / throw_cublas: the call, where,
// the library's words and what to do; allocation failures read "out of GPU memory ...") and
// the per-device CudaContext (non-blocking streams, handles bound to the compute stream,
// the shared workspace). Contexts live until the process ends and are never destroyed.
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_common.h"
#include "util/error.h"

namespace dlt::cuda {

namespace {

std::string where(const char* expr, const char* file, int line) {
  std::string f = file;
  const size_t lib = f.rfind("lib/");
  if (lib != std::string::npos) f = f.substr(lib);
  return std::string(expr) + " at " + f + ":" + std::to_string(line);
}

constexpr const char* kOomFix =
    "lower MiniBatchSize, use a smaller network, or free the GPU from other processes "
    "(nvidia-smi)";

}  // namespace

void throw_cuda(cudaError_t e, const char* expr, const char* file, int line) {
  const std::string what = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw DeviceError("out of GPU memory in " + where(expr, file, line) + " (" + what + "); " + kOomFix);
  }
  std::string fix;
  switch (e) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
      fix =
          "check the NVIDIA driver with nvidia-smi and CUDA_VISIBLE_DEVICES, or use "
          "ExecutionEnvironment: cpu";
      break;
    case cudaErrorInvalidDevice:
      fix = "choose a GPUDevice below the number of visible GPUs (nvidia-smi)";
      break;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      fix =
          "this dltrain was not compiled for this GPU: rebuild with "
          "-DCMAKE_CUDA_ARCHITECTURES=native";
      break;
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorAssert:
      fix =
          "a kernel faulted (possibly an earlier, asynchronous one; the GPU context is now "
          "unusable): rerun with CUDA_LAUNCH_BLOCKING=1 under compute-sanitizer to find it";
      break;
    default:
      fix =
          "errors of asynchronous work surface at a later call: rerun with "
          "CUDA_LAUNCH_BLOCKING=1 to find the failing operation";
  }
  throw DeviceError("CUDA error in " + where(expr, file, line) + ": " + what + " (" + fix + ")");
}

void throw_cudnn(cudnnStatus_t s, const char* expr, const char* file, int line) {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  std::string what = cudnnGetErrorString(s);
  if (detail[0]) what += std::string(": ") + detail;
  if (s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
      s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED) {
    (void)cudaGetLastError();  // the library's failed cudaMalloc, not for a later launch check
    throw DeviceError("out of GPU memory in " + where(expr, file, line) + " (cuDNN " + what + "); " + kOomFix);
  }
  std::string fix;
  switch (CUDNN_STATUS_CATEGORY(s)) {
    case CUDNN_STATUS_NOT_SUPPORTED:
      fix =
          "cuDNN does not support this layer configuration on this GPU: change its filter "
          "size, stride, padding or dilation, or use ExecutionEnvironment: cpu";
      break;
    case CUDNN_STATUS_BAD_PARAM:
      fix =
          "a descriptor or pointer passed to cuDNN is invalid (a dltrain bug: please report "
          "it with the network config)";
      break;
    case CUDNN_STATUS_NOT_INITIALIZED:
      fix =
          "check that libcudnn matches the CUDA runtime and driver (nvidia-smi, ldconfig -p "
          "| grep cudnn)";
      break;
    default:
      fix = "rerun with CUDA_LAUNCH_BLOCKING=1 and CUDNN_LOGERR_DBG=1 to see the failing call";
  }
  throw DeviceError("cuDNN error in " + where(expr, file, line) + ": " + what + " (" + fix + ")");
}

void throw_cublas(cublasStatus_t s, const char* expr, const char* file, int line) {
  const std::string what = cublasGetStatusString(s);
  if (s == CUBLAS_STATUS_ALLOC_FAILED) {
    (void)cudaGetLastError();  // as for cuDNN above
    throw DeviceError("out of GPU memory in " + where(expr, file, line) + " (cuBLAS " + what + "); " + kOomFix);
  }
  std::string fix;
  switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
      fix = "check the NVIDIA driver and that libcublas matches the CUDA runtime";
      break;
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_NOT_SUPPORTED:
      fix = "this GPU does not support the requested operation; use ExecutionEnvironment: cpu";
      break;
    case CUBLAS_STATUS_INVALID_VALUE:
      fix =
          "a matrix size or pointer passed to cuBLAS is invalid (a dltrain bug: please report "
          "it with the network config)";
      break;
    default:
      fix = "rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing operation";
  }
  throw DeviceError("cuBLAS error in " + where(expr, file, line) + ": " + what + " (" + fix + ")");
}

cudaError_t query_event(cudaEvent_t e) {
  const cudaError_t r = cudaEventQuery(e);
  if (r == cudaErrorNotReady) (void)cudaGetLastError();
  return r;
}

void* CudaContext::workspace(size_t bytes) {
  ++ws_calls_;
  if (ws_ && bytes <= ws_bytes_) return ws_;
  CachingAllocator& alloc = caching_allocator(device);
  // Grow in 1 MiB steps. The old block goes back to the cache; users of it are queued on
  // stream before anything that receives it next, so no synchronization is needed.
  constexpr size_t kMiB = size_t(1) << 20;
  const size_t want = (bytes + kMiB - 1) / kMiB * kMiB;
  void* fresh = alloc.allocate(want);
  if (ws_) alloc.deallocate(ws_, ws_bytes_);
  ws_ = fresh;
  ws_bytes_ = want;
  return ws_;
}

namespace {

CudaContext* create_context(int device) {
  auto ctx = std::make_unique<CudaContext>();
  ctx->device = device;
  use_device(device);
  DLT_CUDA(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
  DLT_CUDA(cudaStreamCreateWithFlags(&ctx->copy_stream, cudaStreamNonBlocking));
  DLT_CUDNN(cudnnCreate(&ctx->cudnn));
  DLT_CUDNN(cudnnSetStream(ctx->cudnn, ctx->stream));
  DLT_CUBLAS(cublasCreate(&ctx->cublas));
  DLT_CUBLAS(cublasSetStream(ctx->cublas, ctx->stream));
  // cuBLAS's workspace: one block of the caching allocator for the context's life, set after
  // cublasSetStream (which resets it to cuBLAS's own pool). Otherwise cuBLAS allocates from
  // its stream-ordered pool, outside our cache: a CUDA graph capture records those
  // allocations and each recapture takes another workspace (PyTorch sets one for that
  // reason), and the cache's free blocks cannot serve it. Size as NVIDIA recommends for
  // cublasSetWorkspace: 32 MiB on Hopper (compute capability 9) and later, 4 MiB before.
  int major = 0;
  DLT_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  const size_t cublas_bytes = (major >= 9 ? size_t(32) : size_t(4)) << 20;
  void* cublas_ws = caching_allocator(device).allocate(cublas_bytes);
  DLT_CUBLAS(cublasSetWorkspace(ctx->cublas, cublas_ws, cublas_bytes));
  return ctx.release();
}

}  // namespace

CudaContext& context(int device) {
  static std::mutex mu;
  // Leaked on purpose: destroying handles and streams after the CUDA runtime shut down (static
  // destruction order) fails.
  static auto* contexts = new std::vector<CudaContext*>();
  std::lock_guard<std::mutex> lock(mu);
  check_device_index(device);
  if (contexts->size() <= static_cast<size_t>(device)) contexts->resize(static_cast<size_t>(device) + 1, nullptr);
  CudaContext*& c = (*contexts)[static_cast<size_t>(device)];
  if (!c) c = create_context(device);
  return *c;
}

}  // namespace dlt::cuda

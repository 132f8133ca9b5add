// CudaBackend: construction, name, what its kernels share (scratch and read-back buffers),
// overlapped uploads (pinned staging buffers on the copy stream, events between the streams),
// synchronize, the peak memory, and cuda::backend(index, options). The kernels are registered
// in the files that implement them (cuda_elementwise.cpp, cuda_*_op.cpp, ...).
#include "backend/cuda/cuda_backend.h"

#include <cstdio>
#include <cstring>
#include <mutex>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_common.h"
#include "util/error.h"

namespace dlt {

namespace {
constexpr size_t kMaxStaging = 8;  // uploads in flight before upload_begin waits for one
constexpr size_t kStagingStep = size_t(1) << 20;
}  // namespace

CudaBackend::DeviceState& CudaBackend::DeviceState::of(int device) {
  static std::mutex mu;
  // Leaked on purpose, as the contexts and allocators: nothing CUDA may run at static
  // destruction time.
  static auto* states = new std::vector<DeviceState*>();
  std::lock_guard<std::mutex> lock(mu);
  if (states->size() <= static_cast<size_t>(device)) states->resize(static_cast<size_t>(device) + 1, nullptr);
  DeviceState*& st = (*states)[static_cast<size_t>(device)];
  if (st) return *st;
  cuda::use_device(device);
  auto fresh = std::make_unique<DeviceState>();
  fresh->result_d_ = cuda::caching_allocator(device).allocate(kResultBytes);
  DLT_CUDA(cudaMallocHost(&fresh->result_h_, kResultBytes));
  DLT_CUDA(cudaMallocHost(&fresh->loss_h_, kResultBytes));
  DLT_CUDA(cudaEventCreateWithFlags(&fresh->loss_mark_, cudaEventDisableTiming));
  DLT_CUDA(cudaEventCreateWithFlags(&fresh->compute_mark_, cudaEventDisableTiming));
  DLT_CUDA(cudaEventCreateWithFlags(&fresh->upload_mark_, cudaEventDisableTiming));
  st = fresh.release();
  return *st;
}

CudaBackend::CudaBackend(int device, const BackendOptions& options)
    : Backend(Device::cuda(device), options, this),
      device_(device),
      ctx_(cuda::context(device)),
      alloc_(cuda::caching_allocator(device)),
      s_(DeviceState::of(device)) {}

// Backends live until the process ends (cuda_backend leaks them on purpose), and their GPU's
// DeviceState with them; this waits for the work issued, ignoring errors, as a destructor must.
CudaBackend::~CudaBackend() {
  cudaSetDevice(device_);
  cudaStreamSynchronize(ctx_.stream);
  cudaStreamSynchronize(ctx_.copy_stream);
}

void CudaBackend::enter() const { cuda::use_device(device_); }

CudaBackend& cuda_backend_of(Backend& b) { return static_cast<CudaBackend&>(b); }
cuda::CudaContext& cuda_context(Backend& b) { return cuda_backend_of(b).context(); }

std::string cuda::library_versions() {
  auto dotted = [](int v, int major_div, int minor_div, int minor_mod) {
    return std::to_string(v / major_div) + "." + std::to_string(v / minor_div % minor_mod);
  };
  int driver = 0, runtime = 0;
  std::string out = "CUDA driver ";
  out += cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0 ? dotted(driver, 1000, 10, 100) : "none";
  (void)cudaGetLastError();
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) out += ", runtime " + dotted(runtime, 1000, 10, 100);
  const size_t cudnn = cudnnGetVersion();  // major * 10000 + minor * 100 + patch (cuDNN 9)
  out += ", cuDNN " + std::to_string(cudnn / 10000) + "." + std::to_string(cudnn / 100 % 100) + "." +
         std::to_string(cudnn % 100);
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    out += ", cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  return out;
}

std::string CudaBackend::name() const {
  cudaDeviceProp prop{};
  DLT_CUDA(cudaGetDeviceProperties(&prop, device_));
  int runtime = 0;
  DLT_CUDA(cudaRuntimeGetVersion(&runtime));
  const size_t cudnn = cudnnGetVersion();  // major * 10000 + minor * 100 + patch (cuDNN 9)
  char gib[32];
  std::snprintf(gib, sizeof(gib), "%.1f", static_cast<double>(prop.totalGlobalMem) / (1 << 30));
  return "cuda:" + std::to_string(device_) + " (" + prop.name + ", compute capability " + std::to_string(prop.major) +
         "." + std::to_string(prop.minor) + ", " + gib + " GiB, cuDNN " + std::to_string(cudnn / 10000) + "." +
         std::to_string(cudnn / 100 % 100) + "." + std::to_string(cudnn % 100) + ", CUDA " +
         std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) + ")";
}

void* CudaBackend::scratch(size_t bytes) {
  if (s_.scratch_ && bytes <= s_.scratch_bytes_) return s_.scratch_;
  // The old block may still be read by queued kernels; it goes back to the cache, whose next
  // user is queued after them on the same stream.
  const size_t want = cuda::size_class(bytes);
  void* fresh = alloc_.allocate(want);
  if (s_.scratch_) alloc_.deallocate(s_.scratch_, s_.scratch_bytes_);
  s_.scratch_ = fresh;
  s_.scratch_bytes_ = want;
  return s_.scratch_;
}

void* CudaBackend::result_buffer() const { return s_.result_d_; }

const void* CudaBackend::read_back(size_t bytes) {
  DLT_CHECK(bytes <= kResultBytes, "read_back: " << bytes << " bytes");
  not_capturing("reading a value back");
  DLT_CUDA(cudaMemcpyAsync(s_.result_h_, s_.result_d_, bytes, cudaMemcpyDeviceToHost, ctx_.stream));
  DLT_CUDA(cudaStreamSynchronize(ctx_.stream));
  return s_.result_h_;
}

CudaBackend::Staging& CudaBackend::free_staging(size_t bytes) {
  auto is_free = [](const Staging& s) {
    const cudaError_t e = cuda::query_event(s.done);
    if (e == cudaErrorNotReady) return false;
    DLT_CUDA(e);
    return true;
  };
  Staging* pick = nullptr;
  for (Staging& s : s_.staging_)  // a free buffer that is large enough
    if (s.bytes >= bytes && is_free(s)) return s;
  for (Staging& s : s_.staging_)  // else a free one to grow
    if (is_free(s)) {
      pick = &s;
      break;
    }
  if (!pick && s_.staging_.size() < kMaxStaging) {
    s_.staging_.emplace_back();
    pick = &s_.staging_.back();
    DLT_CUDA(cudaEventCreateWithFlags(&pick->done, cudaEventDisableTiming));
  }
  if (!pick) {  // every buffer is in flight: wait for the first one's copy
    pick = &s_.staging_.front();
    DLT_CUDA(cudaEventSynchronize(pick->done));
  }
  if (pick->bytes < bytes) {
    if (pick->host) DLT_CUDA(cudaFreeHost(pick->host));
    pick->host = nullptr;
    pick->bytes = 0;
    const size_t want = (bytes + kStagingStep - 1) / kStagingStep * kStagingStep;
    DLT_CUDA(cudaMallocHost(&pick->host, want));
    pick->bytes = want;
  }
  return *pick;
}

void CudaBackend::upload_begin(const Tensor& host, Tensor& dst) {
  DLT_CHECK(dst.defined() && dst.device() == device(),
            "upload_begin: destination is on " << dst.device().str() << ", not " << device().str());
  DLT_CHECK(host.numel() == dst.numel(), "upload_begin: " << host.shape().str() << " into " << dst.shape().str());
  if (!host.device().is_cpu()) {  // already on a GPU: an ordinary (synchronous) copy
    dst.copy_from(host);
    return;
  }
  const size_t bytes = host.bytes();
  if (bytes == 0) return;
  not_capturing("an upload");
  enter();
  Staging& s = free_staging(bytes);
  std::memcpy(s.host, host.data(), bytes);
  // The copy must not overwrite dst (or a reused block behind it) while work queued so far
  // may still read it.
  DLT_CUDA(cudaEventRecord(s_.compute_mark_, ctx_.stream));
  DLT_CUDA(cudaStreamWaitEvent(ctx_.copy_stream, s_.compute_mark_, 0));
  DLT_CUDA(cudaMemcpyAsync(dst.data(), s.host, bytes, cudaMemcpyHostToDevice, ctx_.copy_stream));
  DLT_CUDA(cudaEventRecord(s.done, ctx_.copy_stream));
  s_.upload_pending_ = true;
}

void CudaBackend::upload_wait() {
  if (!s_.upload_pending_) return;
  enter();
  DLT_CUDA(cudaEventRecord(s_.upload_mark_, ctx_.copy_stream));
  DLT_CUDA(cudaStreamWaitEvent(ctx_.stream, s_.upload_mark_, 0));
  s_.upload_pending_ = false;
}

size_t CudaBackend::peak_memory_bytes() const { return alloc_.peak_bytes(); }

void CudaBackend::synchronize() {
  not_capturing("synchronize");
  enter();
  DLT_CUDA(cudaStreamSynchronize(ctx_.copy_stream));
  DLT_CUDA(cudaStreamSynchronize(ctx_.stream));
}

// One CudaBackend per (GPU, BackendOptions) asked for; all of a GPU's share its context
// (streams, handles, workspace), caching allocator and DeviceState.
Backend& cuda::backend(int index, const BackendOptions& options) {
  static std::mutex mu;
  // Leaked on purpose, as the contexts and allocators: nothing CUDA may run at static
  // destruction time.
  static auto* backends = new std::vector<CudaBackend*>();
  std::lock_guard<std::mutex> lock(mu);
  const int count = cuda::device_count();
  if (count == 0)
    throw DeviceError(
        "no CUDA GPU is visible (this dltrain is built with CUDA, but the driver reports no "
        "device): check nvidia-smi and CUDA_VISIBLE_DEVICES, or use ExecutionEnvironment: cpu");
  if (index < 0 || index >= count)
    throw DeviceError("cuda:" + std::to_string(index) + " does not exist: " + std::to_string(count) +
                      " CUDA GPU(s) are visible (choose GPUDevice 0.." + std::to_string(count - 1) + ")");
  for (CudaBackend* b : *backends)
    if (b->device().index == index && b->options() == options) return *b;
  backends->push_back(new CudaBackend(index, options));
  return *backends->back();
}

}  // namespace dlt

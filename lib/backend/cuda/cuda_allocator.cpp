// The caching device allocator (size-class free lists, one retry after freeing the cache on
// out-of-memory, peak counters), the synchronous host<->device copies behind Tensor::to and
// copy_from, and the device count. Overlapped uploads are CudaBackend::upload_begin's.
#include "backend/cuda/cuda_allocator.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_common.h"
#include "util/error.h"

namespace dlt::cuda {

namespace {

constexpr size_t kMinBlock = 512;
constexpr size_t kLargeBlock = size_t(32) << 20;  // from here: multiples of kLargeStep
constexpr size_t kLargeStep = size_t(2) << 20;

std::string mib(size_t bytes) { return std::to_string((bytes + (size_t(1) << 19)) >> 20) + " MiB"; }

// Devices this process has made current with cudaSetDevice (bit per index below 64). Since
// CUDA 12 cudaSetDevice initializes the device's primary context at once (hundreds of MiB of
// GPU memory), so a guard switches back only to a device in this set: a thread that never
// chose one reports device 0 from cudaGetDevice, and switching "back" to it would create a
// context on GPU 0 in a process that trains on GPU N.
std::atomic<uint64_t> g_set_devices{0};

void set_device(int device) {
  DLT_CUDA(cudaSetDevice(device));
  if (device < 64) g_set_devices.fetch_or(uint64_t{1} << device);
}

bool was_set(int device) { return device >= 0 && device < 64 && (g_set_devices.load() >> device & 1) != 0; }

}  // namespace

void use_device(int device) {
  int current = -1;
  DLT_CUDA(cudaGetDevice(&current));
  if (current != device || !was_set(device)) set_device(device);
}

DeviceGuard::DeviceGuard(int device) {
  DLT_CUDA(cudaGetDevice(&previous_));
  if (previous_ != device || !was_set(device)) set_device(device);
}

DeviceGuard::~DeviceGuard() {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current == previous_ || !was_set(previous_)) return;
  if (cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();  // not for a launch check
}

size_t size_class(size_t bytes) {
  if (bytes <= kMinBlock) return kMinBlock;
  if (bytes >= kLargeBlock) return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
  size_t top = kMinBlock;  // the power of two at or above bytes
  while (top < bytes) top <<= 1;
  const size_t step = top / 8;  // classes top/2 + k * top/8: four per power of two
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::allocate(size_t bytes) {
  const size_t size = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (capturing_) {
    const std::string what = "cuda:" + std::to_string(device_) + " was asked for " + std::to_string(bytes) +
                             " bytes while capturing a CUDA graph";
    if (capture_fault_.empty()) capture_fault_ = what;
    throw DeviceError(what +
                      " (a captured step must allocate nothing: run more warm-up steps "
                      "before capturing, or unset DLT_CUDA_GRAPH)");
  }
  char* ptr = nullptr;
  // Reuse the smallest cached block that fits with at most 1/8 slack (the same class below
  // 32 MiB, where neighbouring classes differ by more than that).
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first <= size + size / 8) {
    ptr = it->second;
    live_[ptr] = it->first;
    in_use_ += it->first;
    free_.erase(it);
  } else {
    ptr = static_cast<char*>(malloc_or_throw(size, bytes));
    live_[ptr] = size;
    in_use_ += size;
  }
  if (in_use_ > peak_in_use_) peak_in_use_ = in_use_;
  return ptr;
}

void CachingAllocator::deallocate(void* ptr, size_t) {
  // Called from Storage's destructor: must not throw. A pointer this allocator did not hand
  // out is ignored (there is nothing safe to do with it).
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(static_cast<char*>(ptr));
  if (it == live_.end()) return;
  if (capturing_ && capture_fault_.empty())
    capture_fault_ = "a block of " + std::to_string(it->second) +
                     " bytes was freed on cuda:" + std::to_string(device_) + " while capturing a CUDA graph";
  if (graph_valid_ && graph_blocks_.count(it->first)) {  // the graph would write into it
    graph_valid_ = false;
    graph_blocks_.clear();
  }
  in_use_ -= it->second;
  free_.emplace(it->second, it->first);
  live_.erase(it);
}

void* CachingAllocator::malloc_or_throw(size_t size, size_t requested) {
  DeviceGuard guard(device_);
  void* ptr = nullptr;
  cudaError_t e = cudaMalloc(&ptr, size);
  if (e == cudaErrorMemoryAllocation && !free_.empty()) {
    (void)cudaGetLastError();  // out-of-memory is not sticky; clear it before retrying
    release_cache_locked();
    e = cudaMalloc(&ptr, size);
  }
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
    throw DeviceError("out of GPU memory: cuda:" + std::to_string(device_) + " could not allocate " + mib(requested) +
                      " (tensors hold " + mib(in_use_) + "; the GPU has " + mib(free_bytes) + " free of " +
                      mib(total_bytes) + "); lower MiniBatchSize or use a smaller network");
  }
  if (e != cudaSuccess) throw_cuda(e, "cudaMalloc", __FILE__, __LINE__);
  reserved_ += size;
  if (reserved_ > peak_reserved_) peak_reserved_ = reserved_;
  return ptr;
}

void CachingAllocator::release_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cache_locked();
}

void CachingAllocator::release_cache_locked() {
  DeviceGuard guard(device_);
  // Freed blocks may still be read by queued kernels; cudaFree only after they finished.
  DLT_CUDA(cudaDeviceSynchronize());
  for (auto& [size, ptr] : free_) {
    DLT_CUDA(cudaFree(ptr));
    reserved_ -= size;
  }
  free_.clear();
}

void CachingAllocator::begin_capture() {
  std::lock_guard<std::mutex> lock(mu_);
  capturing_ = true;
  capture_fault_.clear();
  graph_valid_ = false;
  graph_blocks_.clear();
}

void CachingAllocator::end_capture() {
  std::lock_guard<std::mutex> lock(mu_);
  capturing_ = false;
  if (!capture_fault_.empty())
    throw DeviceError("CUDA graph capture failed: " + capture_fault_ +
                      " (a captured step must allocate and free nothing)");
  for (const auto& entry : live_) graph_blocks_.insert(entry.first);
  graph_valid_ = true;
}

void CachingAllocator::cancel_capture() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  capturing_ = false;
  graph_valid_ = false;
  graph_blocks_.clear();
}

bool CachingAllocator::graph_valid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return graph_valid_;
}

void CachingAllocator::drop_graph() { cancel_capture(); }

size_t CachingAllocator::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}
size_t CachingAllocator::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_reserved_;
}
size_t CachingAllocator::in_use_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}
size_t CachingAllocator::peak_in_use_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_in_use_;
}

void check_device_index(int device) {
  if (device < 0 || device >= device_count())
    throw DeviceError("cuda:" + std::to_string(device) + " does not exist: " + std::to_string(device_count()) +
                      " CUDA GPU(s) are visible (check nvidia-smi and CUDA_VISIBLE_DEVICES, or "
                      "use ExecutionEnvironment: cpu)");
}

CachingAllocator& caching_allocator(int device) {
  static std::mutex mu;
  // Leaked on purpose: device memory must not be freed after the CUDA runtime shut down.
  static auto* allocators = new std::vector<CachingAllocator*>();
  std::lock_guard<std::mutex> lock(mu);
  check_device_index(device);
  if (allocators->size() <= static_cast<size_t>(device)) allocators->resize(static_cast<size_t>(device) + 1, nullptr);
  CachingAllocator*& a = (*allocators)[static_cast<size_t>(device)];
  if (!a) a = new CachingAllocator(device);
  return *a;
}

namespace {
struct DeviceProbe {
  int count = 0;
  std::string reason;  // why count is 0
};
const DeviceProbe& probe_devices() {
  static const DeviceProbe probe = [] {
    DeviceProbe p;
    const cudaError_t st = cudaGetDeviceCount(&p.count);
    if (st != cudaSuccess) {  // no driver, no device, driver too old
      p.count = 0;
      p.reason = std::string(cudaGetErrorName(st)) + ": " + cudaGetErrorString(st);
      (void)cudaGetLastError();
    } else if (p.count == 0) {
      p.reason = "cudaGetDeviceCount found no device";
    }
    return p;
  }();
  return probe;
}
}  // namespace

int device_count() { return probe_devices().count; }
std::string unavailable_reason() { return probe_devices().reason; }

// Synchronous with respect to the host. Copies run on the compute stream of the GPU involved,
// so they are ordered after every kernel already queued there (the non-blocking compute
// stream does not synchronize with the legacy default stream that plain cudaMemcpy uses).
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0) return;
  if (!dst_device.is_cpu() && !src_device.is_cpu() && dst_device.index != src_device.index) {
    cuda::DeviceGuard guard(src_device.index);  // restores the caller's device at the end
    cuda::CudaContext& d = cuda::context(dst_device.index);
    cuda::CudaContext& s = cuda::context(src_device.index);  // (creating one makes it current)
    cuda::use_device(src_device.index);
    DLT_CUDA(cudaStreamSynchronize(d.stream));  // dst's queued readers are done
    DLT_CUDA(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, bytes, s.stream));
    DLT_CUDA(cudaStreamSynchronize(s.stream));
    return;
  }
  const int index = dst_device.is_cpu() ? src_device.index : dst_device.index;
  const cudaMemcpyKind kind = dst_device.is_cpu()   ? cudaMemcpyDeviceToHost
                              : src_device.is_cpu() ? cudaMemcpyHostToDevice
                                                    : cudaMemcpyDeviceToDevice;
  cuda::DeviceGuard guard(index);
  cuda::CudaContext& ctx = cuda::context(index);
  DLT_CUDA(cudaMemcpyAsync(dst, src, bytes, kind, ctx.stream));
  DLT_CUDA(cudaStreamSynchronize(ctx.stream));
}

}  // namespace dlt::cuda

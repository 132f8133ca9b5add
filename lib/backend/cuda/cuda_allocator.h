// The caching device allocator of one GPU (internal to the CUDA backend). Blocks are
// cudaMalloc'ed in size classes and kept on free lists when released, so steady-state training
// calls neither cudaMalloc nor cudaFree. Reuse is ordered on the device's compute stream; work
// on another stream (the upload copy stream) first waits for the compute stream.
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "tensor/device.h"

namespace dlt::cuda {

// Makes device current for the calling thread (cheap when it already is).
void use_device(int device);
// Throws DeviceError naming the device and the fix unless 0 <= device < device_count().
void check_device_index(int device);

// Makes device current for a scope and restores the caller's device after it: the allocator
// and the copies do not change which device the calling thread works on. A thread that had
// not chosen a device (cudaGetDevice's default 0, never set) keeps device instead: switching
// to an unused GPU would create a CUDA context there.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// Size class of a request: at least 512 bytes; below 32 MiB four classes per power of two
// (at most 25% over); from 32 MiB multiples of 2 MiB.
size_t size_class(size_t bytes);

// Thread-safe. Freed blocks go back to a free list immediately (no event): every consumer on
// the compute stream is queued after the previous owner's last use, which is what makes the
// reuse safe without synchronizing the host.
class CachingAllocator final : public Allocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) override;

  // Synchronizes the device and cudaFree's every cached (free) block.
  void release_cache();

  size_t reserved_bytes() const;  // cudaMalloc'ed now (in use + cached)
  size_t peak_bytes() const;      // most bytes cudaMalloc'ed at once since start
  size_t in_use_bytes() const;    // handed out to tensors now (size classes)
  size_t peak_in_use_bytes() const;

  // CUDA Graphs. Between begin_capture() and end_capture() allocate() throws DeviceError and
  // deallocate() records the fault (a destructor must not throw), which end_capture() then
  // throws: a captured graph must only use blocks that outlive it. From end_capture() on, the
  // blocks in use are the graph's; freeing any of them marks it stale (graph_valid() false)
  // until the next capture, as its kernels would write into memory that is no longer theirs.
  void begin_capture();
  void end_capture();
  void cancel_capture() noexcept;  // a failed capture: no graph
  bool graph_valid() const;
  void drop_graph();

 private:
  void* malloc_or_throw(size_t size, size_t requested);
  void release_cache_locked();

  int device_;
  mutable std::mutex mu_;
  std::map<char*, size_t> live_;       // handed out: base address -> block size
  std::multimap<size_t, char*> free_;  // cached, by size
  size_t reserved_ = 0, peak_reserved_ = 0, in_use_ = 0, peak_in_use_ = 0;
  bool capturing_ = false;
  std::string capture_fault_;     // the first allocation or free seen while capturing
  std::set<char*> graph_blocks_;  // blocks in use when the graph was captured
  bool graph_valid_ = false;
};

// The allocator of device (created on first use, never destroyed: tensors released during
// static destruction still find it).
CachingAllocator& caching_allocator(int device);

// The plugin's side of cuda_device_count(), cuda_unavailable_reason() (backend/backend.h) and
// of the GPU copies registered with the tensor layer (tensor/device.h's DeviceMemory), reached
// through the plugin table (cuda_plugin_api.h).
int device_count();
std::string unavailable_reason();
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);

}  // namespace dlt::cuda

// Devices and allocators. The GPU allocator and copies are linked in from backend/cuda, or
// from the CPU-only stub whose functions throw DeviceError. Synchronous host<->device copies go
// through copy_bytes() (called by Tensor::to and Tensor::copy_from); the backend's staged
// uploads (Backend::upload_begin) are the asynchronous path.
#pragma once
#include <cstddef>
#include <string>

namespace dlt {

enum class DeviceType { kCpu, kCuda };

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;
  static Device cpu() { return {DeviceType::kCpu, 0}; }
  static Device cuda(int i) { return {DeviceType::kCuda, i}; }
  bool is_cpu() const { return type == DeviceType::kCpu; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr, size_t bytes) = 0;
};

// The allocator for a device: 64-byte aligned host memory for the CPU; the CUDA backend's
// caching allocator for a GPU (throws DeviceError in a build without CUDA).
Allocator& allocator_for(Device device);

// GPU memory, declared here for the two functions above and defined below tensor/, in
// backend/cuda_plugin.cpp: they forward to the CUDA plugin libdltrain_cuda.so (opened on first
// use), or throw DeviceError naming why there is none (a CPU-only build: "built without CUDA";
// the plugin missing or refused by dlopen: its error).
Allocator& cuda_allocator(int device_index);
void cuda_copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);

// Copies bytes between any two devices (synchronous with respect to the host).
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);

}  // namespace dlt

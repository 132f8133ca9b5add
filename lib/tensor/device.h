// Devices and allocators. The CPU's memory is this layer's own; a GPU's allocator and copies
// are what the backend that owns the device registers here (register_device_memory: the CUDA
// plugin's, when backend/cuda_plugin.cpp loads it), as ggml's backends register buffer types,
// so the tensor layer calls nothing above it. Synchronous host<->device copies go through
// copy_bytes() (called by Tensor::to and Tensor::copy_from); the backend's staged uploads
// (Backend::upload_begin) are the asynchronous path.
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

// The memory of a GPU device type, as its backend provides it: the allocator of device
// index i, and copies between that type's devices and the host (either side may be the CPU).
struct DeviceMemory {
  Allocator& (*allocator)(int device_index) = nullptr;
  void (*copy_bytes)(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) = nullptr;
};

// Registers the memory functions of a non-CPU device type (both set, valid for the life of the
// process; {} removes them). Registering again replaces them. Thread-safe.
void register_device_memory(DeviceType type, const DeviceMemory& memory);
// What is registered for a non-CPU device type ({} when nothing is).
DeviceMemory device_memory(DeviceType type);

// The allocator for a device: 64-byte aligned host memory for the CPU; the registered
// allocator for a GPU. Throws DeviceError when nothing is registered for the device's type.
Allocator& allocator_for(Device device);

// Copies bytes between any two devices (synchronous with respect to the host): memcpy between
// host buffers, else the registered copy of the non-CPU side (DeviceError when none).
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);

}  // namespace dlt

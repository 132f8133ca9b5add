#include "tensor/tensor.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "build_config.h"
#include "util/check.h"
#include "util/error.h"

namespace dlt {

namespace {

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded ? rounded : 64);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* ptr, size_t) override { std::free(ptr); }
};

// What register_device_memory stored for the CUDA device type (null until the plugin loads).
struct Registered {
  std::atomic<Allocator& (*)(int)> allocator{nullptr};
  std::atomic<void (*)(void*, Device, const void*, Device, size_t)> copy{nullptr};
};

Registered& cuda_memory() {
  static Registered r;
  return r;
}

// The registered memory of `device`'s type, or DeviceError naming the device and why.
DeviceMemory memory_of(Device device) {
  const DeviceMemory m = device_memory(device.type);
  if (m.allocator && m.copy_bytes) return m;
  if (!DLT_HAVE_CUDA)
    throw DeviceError("a tensor on " + device.str() +
                      ", but this dltrain was built without CUDA: rebuild on a machine with the CUDA toolkit and "
                      "cuDNN (cmake -DDLTRAIN_CUDA=ON), or use ExecutionEnvironment: cpu");
  throw DeviceError("a tensor on " + device.str() +
                    ", but no CUDA backend is loaded in this process (the CUDA plugin registers GPU memory "
                    "when it loads: ask for the GPU first, e.g. backend_for(" +
                    device.str() + ") or cuda_device_count()); or use ExecutionEnvironment: cpu");
}

}  // namespace

void register_device_memory(DeviceType type, const DeviceMemory& memory) {
  DLT_CHECK(type == DeviceType::kCuda, "register_device_memory: only the CUDA device type has registered memory");
  DLT_CHECK(!memory.allocator == !memory.copy_bytes, "register_device_memory: one function of the two");
  Registered& r = cuda_memory();
  r.copy.store(memory.copy_bytes, std::memory_order_release);
  r.allocator.store(memory.allocator, std::memory_order_release);
}

DeviceMemory device_memory(DeviceType type) {
  DLT_CHECK(type == DeviceType::kCuda, "device_memory: only the CUDA device type has registered memory");
  Registered& r = cuda_memory();
  return DeviceMemory{r.allocator.load(std::memory_order_acquire), r.copy.load(std::memory_order_acquire)};
}

Allocator& allocator_for(Device device) {
  static CpuAllocator cpu;
  if (device.is_cpu()) return cpu;
  return memory_of(device).allocator(device.index);
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  memory_of(dst_device.is_cpu() ? src_device : dst_device).copy_bytes(dst, dst_device, src, src_device, bytes);
}

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  ptr_ = allocator_for(device).allocate(bytes);
}

Storage::~Storage() { allocator_for(device_).deallocate(ptr_, bytes_); }

Tensor::Tensor(const Shape& shape, Device device, DType dtype)
    : storage_(std::make_shared<Storage>(static_cast<size_t>(shape.numel()) * 4, device)),
      shape_(shape),
      dtype_(dtype) {}

Tensor Tensor::zeros(const Shape& shape, Device device) {
  Tensor t(shape, device);
  if (device.is_cpu()) {
    std::memset(t.data(), 0, t.bytes());
  } else {
    Tensor host(shape);
    std::memset(host.data(), 0, host.bytes());
    t.copy_from(host);
  }
  return t;
}

Tensor Tensor::view(const Shape& shape, int64_t offset) const {
  DLT_CHECK(defined(), "view of an empty tensor");
  DLT_CHECK((offset_ + offset + shape.numel()) * 4 <= static_cast<int64_t>(storage_->bytes()),
            "view " << shape.str() << " at " << offset << " exceeds storage");
  Tensor t = *this;
  t.offset_ = offset_ + offset;
  t.shape_ = shape;
  return t;
}

void Tensor::resize(const Shape& shape) {
  if (storage_ && (offset_ + shape.numel()) * 4 <= static_cast<int64_t>(storage_->bytes())) {
    shape_ = shape;
    return;
  }
  Device dev = device();
  storage_ = std::make_shared<Storage>(static_cast<size_t>(shape.numel()) * 4, dev);
  offset_ = 0;
  shape_ = shape;
}

Tensor Tensor::to(Device device) const {
  Tensor t(shape_, device, dtype_);
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  DLT_CHECK(src.numel() == numel(), "copy_from: " << src.shape().str() << " into " << shape_.str());
  copy_bytes(raw(), device(), src.raw(), src.device(), bytes());
}

}  // namespace dlt

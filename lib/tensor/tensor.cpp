#include "tensor/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

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

}  // namespace

Allocator& allocator_for(Device device) {
  static CpuAllocator cpu;
  if (device.is_cpu()) return cpu;
  return cuda_allocator(device.index);
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  cuda_copy_bytes(dst, dst_device, src, src_device, bytes);
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

// Tensor: a cheap handle (shared storage + offset + shape + dtype) over device memory.
// Copying a Tensor shares the storage; clone() copies the data. to(Device) is the only way
// data crosses host<->device. Storage has a capacity, so resize() within it never allocates
// (the network shrinks its buffers for a smaller last batch without reallocating).
#pragma once
#include <cstdint>
#include <memory>

#include "tensor/device.h"
#include "tensor/shape.h"

namespace dlt {

enum class DType { kF32, kI32 };

class Storage {
 public:
  Storage(size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(const Shape& shape, Device device = Device::cpu(), DType dtype = DType::kF32);
  static Tensor zeros(const Shape& shape, Device device = Device::cpu());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * elem_size(); }
  size_t elem_size() const { return 4; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  int64_t dim(int i) const { return shape_[i]; }

  float* data() { return reinterpret_cast<float*>(raw()); }
  const float* data() const { return reinterpret_cast<const float*>(raw()); }
  int32_t* data_i32() { return reinterpret_cast<int32_t*>(raw()); }
  const int32_t* data_i32() const { return reinterpret_cast<const int32_t*>(raw()); }

  // A view of numel(shape) elements starting at element offset, sharing storage.
  Tensor view(const Shape& shape, int64_t offset = 0) const;
  // Same data, new shape with the same element count.
  Tensor reshaped(const Shape& shape) const { return view(shape, 0); }
  // Changes the shape; reallocates only when the storage capacity is too small.
  void resize(const Shape& shape);
  // Elements the storage holds from this tensor's first one on (at least numel()): the
  // largest view(shape, 0) it can give.
  int64_t capacity() const { return storage_ ? static_cast<int64_t>(storage_->bytes() / elem_size()) - offset_ : 0; }

  Tensor to(Device device) const;
  Tensor clone() const { return to(device()); }
  // Copies src's elements into this tensor (numel must match; devices may differ).
  void copy_from(const Tensor& src);

 private:
  void* raw() const { return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(elem_size()); }
  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;
  Shape shape_;
  DType dtype_ = DType::kF32;
};

}  // namespace dlt

// The tensor layer's GPU memory is what a backend registers (tensor/device.h): a registered
// allocator and copy serve CUDA tensors (allocation, upload, download, release), and without
// one a CUDA tensor is a DeviceError that says what to do.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "util/error.h"

namespace dlt {

namespace {

// A stand-in GPU: host memory, with every call recorded.
struct FakeGpu {
  std::vector<std::string> calls;
};
FakeGpu fake;

class FakeAllocator final : public Allocator {
 public:
  explicit FakeAllocator(int index) : index_(index) {}
  void* allocate(size_t bytes) override {
    fake.calls.push_back("allocate " + std::to_string(index_) + " " + std::to_string(bytes));
    return std::malloc(bytes);
  }
  void deallocate(void* ptr, size_t bytes) override {
    fake.calls.push_back("deallocate " + std::to_string(index_) + " " + std::to_string(bytes));
    std::free(ptr);
  }

 private:
  int index_;
};

Allocator& fake_allocator(int index) {
  static FakeAllocator a0(0), a1(1);
  return index == 0 ? a0 : a1;
}

void fake_copy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  fake.calls.push_back("copy " + src_device.str() + " -> " + dst_device.str() + " " + std::to_string(bytes));
  std::memcpy(dst, src, bytes);
}

// Puts back what was registered before (the real plugin's in a CUDA build, or nothing).
struct RestoreRegistration {
  DeviceMemory saved = device_memory(DeviceType::kCuda);
  ~RestoreRegistration() { register_device_memory(DeviceType::kCuda, saved); }
};

}  // namespace

TEST_CASE("device memory: CUDA tensors use the registered allocator and copies", "[tensor]") {
  RestoreRegistration restore;
  register_device_memory(DeviceType::kCuda, DeviceMemory{&fake_allocator, &fake_copy});
  fake.calls.clear();
  {
    Tensor host(Shape{3});
    host.data()[0] = 1.5f, host.data()[1] = -2.f, host.data()[2] = 7.f;
    Tensor gpu = host.to(Device::cuda(1));
    CHECK(gpu.device() == Device::cuda(1));
    Tensor back = gpu.to(Device::cpu());
    CHECK(back.data()[0] == 1.5f);
    CHECK(back.data()[1] == -2.f);
    CHECK(back.data()[2] == 7.f);
  }
  const std::vector<std::string> expected = {"allocate 1 12", "copy cpu -> cuda:1 12", "copy cuda:1 -> cpu 12",
                                             "deallocate 1 12"};
  CHECK(fake.calls == expected);
}

TEST_CASE("device memory: a CUDA tensor with nothing registered is a DeviceError", "[tensor]") {
  RestoreRegistration restore;
  register_device_memory(DeviceType::kCuda, DeviceMemory{});
  CHECK(device_memory(DeviceType::kCuda).allocator == nullptr);
  try {
    Tensor t(Shape{4}, Device::cuda(0));
    FAIL("a CUDA tensor was made with no GPU memory registered");
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("a tensor on cuda:0") != std::string::npos);
    CHECK(what.find("ExecutionEnvironment: cpu") != std::string::npos);
  }
  Tensor host(Shape{2});
  CHECK_THROWS_AS(host.to(Device::cuda(0)), DeviceError);
}

}  // namespace dlt

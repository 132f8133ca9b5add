// The CUDA backend's host-side contract, testable with or without a GPU: the device count is 0
// (not an exception) without a driver, asking for a GPU then fails with a DeviceError that
// says what to do; the caching allocator's size classes; and, with a GPU, block reuse and the
// peak counter.
#include <catch2/catch.hpp>

#include <string>

#include "backend/backend.h"
#include "build_config.h"
#include "support/skip.h"
#include "tensor/tensor.h"
#include "util/error.h"
#if DLT_HAVE_CUDA
#include "backend/cuda/cuda_allocator.h"
#endif

namespace dlt {

TEST_CASE("cuda: no device means a count of 0 and a DeviceError that names the fix", "[backend][cuda][skippable]") {
  int count = -1;
  REQUIRE_NOTHROW(count = cuda_device_count());
  CHECK(count >= 0);
  DLT_SKIP_IF(count > 0, "this machine has " << count << " GPU(s) (the allocator case below runs)");
  try {
    backend_for(Device::cuda(0));
    FAIL("backend_for(cuda:0) did not throw without a GPU");
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("ExecutionEnvironment: cpu") != std::string::npos);
  }
  CHECK_THROWS_AS(Tensor(Shape{4}, Device::cuda(0)), DeviceError);
}

#if DLT_HAVE_CUDA
TEST_CASE("cuda allocator: size classes are at most 25% (2 MiB from 32 MiB) above the request", "[backend][cuda]") {
  CHECK(cuda::size_class(0) == 512);
  CHECK(cuda::size_class(512) == 512);
  CHECK(cuda::size_class(513) == 640);
  CHECK(cuda::size_class(1024) == 1024);
  CHECK(cuda::size_class(1025) == 1280);
  CHECK(cuda::size_class((size_t(32) << 20) + 1) == (size_t(34) << 20));
  size_t previous = 0;
  for (size_t bytes = 1; bytes < (size_t(64) << 20); bytes = bytes * 9 / 8 + 1) {
    const size_t c = cuda::size_class(bytes);
    INFO(bytes << " -> " << c);
    REQUIRE(c >= bytes);
    REQUIRE(c >= previous);
    REQUIRE((c <= 512 || c - bytes <= bytes / 4 || c - bytes < (size_t(2) << 20)));
    REQUIRE(cuda::size_class(c) == c);  // a class is its own class
    previous = c;
  }
}

TEST_CASE("cuda allocator: freed blocks are reused and the peak is counted", "[backend][cuda][skippable]") {
  DLT_SKIP_IF(cuda_device_count() == 0, "no GPU (" << cuda_unavailable_reason() << ")");
  cuda::CachingAllocator& a = cuda::caching_allocator(0);
  void* p = a.allocate(3000);
  const size_t reserved = a.reserved_bytes();
  a.deallocate(p, 3000);
  void* q = a.allocate(2900);  // same class (3072)
  CHECK(q == p);
  CHECK(a.reserved_bytes() == reserved);
  CHECK(a.peak_bytes() >= reserved);
  a.deallocate(q, 2900);
  CHECK(backend_for(Device::cuda(0)).peak_memory_bytes() >= reserved);
}
#endif

}  // namespace dlt

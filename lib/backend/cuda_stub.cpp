// CPU-only builds: the CUDA entry points exist and throw a clear DeviceError.
#include "backend/backend.h"
#include "util/error.h"

namespace dlt {

namespace {
[[noreturn]] void no_cuda() {
  throw DeviceError(
      "this dltrain was built without CUDA: rebuild on a machine with the CUDA toolkit and "
      "cuDNN (cmake -DDLTRAIN_CUDA=ON), or use ExecutionEnvironment: cpu");
}
}  // namespace

Allocator& cuda_allocator(int) { no_cuda(); }
void cuda_copy_bytes(void*, Device, const void*, Device, size_t) { no_cuda(); }
Backend& cuda_backend(int) { no_cuda(); }
int cuda_device_count() { return 0; }
std::string cuda_unavailable_reason() { return "this build has no CUDA backend (configure with -DDLTRAIN_CUDA=ON)"; }
std::string cuda_library_versions() { return ""; }

}  // namespace dlt

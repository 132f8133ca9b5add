// The main of dltrain_gpu_tests: with no usable GPU it prints "no GPU: skipped (...)" and
// exits 77, which CTest reports as skipped (SKIP_RETURN_CODE). DLT_GPU_TEST_DEVICE=cpu runs
// every test with the CPU as the device under test: a self-check of the tests themselves.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "backend/backend.h"
#include "build_config.h"
#include "dist/join_world.h"
#include "gpu/gpu_test_util.h"

namespace dlt::test::gpu {

namespace {
bool g_cpu_self_check = false;
}

Device device_under_test() { return g_cpu_self_check ? Device::cpu() : Device::cuda(0); }

}  // namespace dlt::test::gpu

int main(int argc, char* argv[]) {
  const char* dev = std::getenv("DLT_GPU_TEST_DEVICE");
  if (dev && std::strcmp(dev, "cpu") == 0) {
    dlt::test::gpu::g_cpu_self_check = true;
    std::printf("DLT_GPU_TEST_DEVICE=cpu: self-check of the GPU tests with the CPU as the device\n");
  } else {
    int count = 0;
    try {
      count = dlt::cuda_device_count();
    } catch (const std::exception& e) {
      std::printf("no GPU: skipped (cuda_device_count failed: %s)\n", e.what());
      return 77;
    }
    if (count == 0) {
      std::printf("no GPU: skipped (%s%s)\n", dlt::cuda_unavailable_reason().c_str(),
                  DLT_HAVE_CUDA ? "; check nvidia-smi and CUDA_VISIBLE_DEVICES" : "");
      if (DLT_HAVE_CUDA) std::printf("loaded: %s\n", dlt::cuda_library_versions().c_str());
      return 77;
    }
    std::printf("dltrain_gpu_tests: %d GPU(s); testing cuda:0 against the CPU backend\n", count);
    std::printf("loaded: %s%s%s\n", dlt::cuda_library_versions().c_str(),
                dlt::nccl_library_version().empty() ? "" : ", ", dlt::nccl_library_version().c_str());
  }
  std::fflush(stdout);
  return Catch::Session().run(argc, argv);
}

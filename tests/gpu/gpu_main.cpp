// The main of dltrain_gpu_tests: with no usable GPU it prints "SKIP: no GPU (...)" and
// exits 77, which CTest reports as skipped (SKIP_RETURN_CODE). DLT_GPU_TEST_DEVICE=cpu runs
// every test with the CPU as the device under test: a self-check of the tests themselves, where
// the cases that need a GPU skip (support/skip.h). Any failure exits 1, never 77 (as
// support/catch_main.cpp); listing the cases (CTest's test discovery) needs no GPU.
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
#include "support/skip.h"

namespace dlt::test::gpu {

namespace {
bool g_cpu_self_check = false;
}

Device device_under_test() { return g_cpu_self_check ? Device::cpu() : Device::cuda(0); }

}  // namespace dlt::test::gpu

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  Catch::Config& config = session.config();
  const bool listing = config.listTests() || config.listTestNamesOnly() || config.listTags() || config.listReporters();
  const char* dev = std::getenv("DLT_GPU_TEST_DEVICE");
  if (listing) {
    // nothing runs: no device to probe
  } else if (dev && std::strcmp(dev, "cpu") == 0) {
    dlt::test::gpu::g_cpu_self_check = true;
    std::printf("DLT_GPU_TEST_DEVICE=cpu: self-check of the GPU tests with the CPU as the device\n");
  } else {
    int count = 0;
    try {
      count = dlt::cuda_device_count();
    } catch (const std::exception& e) {
      std::printf("SKIP: no GPU (cuda_device_count failed: %s)\n", e.what());
      return 77;
    }
    if (count == 0) {
      std::printf("SKIP: no GPU (%s%s)\n", dlt::cuda_unavailable_reason().c_str(),
                  DLT_HAVE_CUDA ? "; check nvidia-smi and CUDA_VISIBLE_DEVICES" : "");
      if (DLT_HAVE_CUDA) std::printf("loaded: %s\n", dlt::cuda_library_versions().c_str());
      return 77;
    }
    std::printf("dltrain_gpu_tests: %d GPU(s); testing cuda:0 against the CPU backend\n", count);
    std::printf("loaded: %s%s%s\n", dlt::cuda_library_versions().c_str(),
                dlt::nccl_library_version().empty() ? "" : ", ", dlt::nccl_library_version().c_str());
  }
  std::fflush(stdout);
  dlt::test::set_running_one_case(
      Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config).size() == 1);
  return dlt::test::exit_code(session.run(), config);
}

// GPU worker placement without a GPU: which ExecutionEnvironment runs GPU workers, how many
// local workers multi-gpu starts, which GPU each rank takes, CUDA_VISIBLE_DEVICES parsing,
// the one-line DeviceErrors, and the file rendezvous that hands out the NCCL unique id.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

#include <unistd.h>

#include "backend/backend.h"
#include "build_config.h"
#include "dist/communicator.h"
#include "dist/gpu_workers.h"
#include "dist/join_world.h"
#include "dist/rendezvous.h"
#include "util/error.h"

using namespace dlt;
using Env = std::map<std::string, std::string>;

namespace {
std::string device_error(int visible, const Env& env, bool cuda, bool nccl) {
  try {
    check_gpu_workers(visible, env, cuda, nccl);
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "no error";
}
WorldInfo world(int rank, int size, int local_rank) {
  WorldInfo w;
  w.rank = rank, w.size = size, w.local_rank = local_rank, w.source = "slurm";
  return w;
}
}  // namespace

TEST_CASE("gpu workers: multi-gpu always, parallel only with NCCL and a GPU", "[dist]") {
  CHECK(uses_gpu_workers(ExecutionEnvironment::kMultiGpu));
  CHECK_FALSE(uses_gpu_workers(ExecutionEnvironment::kCpu));
  CHECK_FALSE(uses_gpu_workers(ExecutionEnvironment::kGpu));
  CHECK(uses_gpu_workers(ExecutionEnvironment::kParallel) == (DLT_HAVE_NCCL && cuda_device_count() > 0));
}

TEST_CASE("gpu workers: CUDA_VISIBLE_DEVICES as CUDA reads it", "[dist]") {
  CHECK(parse_visible_devices("0,1,2,3") == std::vector<std::string>{"0", "1", "2", "3"});
  CHECK(parse_visible_devices("3, 1") == std::vector<std::string>{"3", "1"});
  CHECK(parse_visible_devices("").empty());
  CHECK(parse_visible_devices("NoDevFiles").empty());
  CHECK(parse_visible_devices("-1").empty());
  CHECK(parse_visible_devices("2,x,3") == std::vector<std::string>{"2"});  // cut at the first bad entry
  CHECK(parse_visible_devices("GPU-8d1c2f,MIG-4a5b") == std::vector<std::string>{"GPU-8d1c2f", "MIG-4a5b"});
}

TEST_CASE("gpu workers: one clear DeviceError when multi-gpu cannot run", "[dist]") {
  CHECK_THAT(device_error(2, {}, false, false),
             Catch::StartsWith("ExecutionEnvironment 'multi-gpu' needs CUDA GPUs, but this dltrain was built "
                               "without CUDA"));
  CHECK_THAT(device_error(2, {}, true, false), Catch::Contains("needs NCCL, but this dltrain was built without it"));
  CHECK_THAT(device_error(0, {}, true, true), Catch::Contains("none is visible (check nvidia-smi"));
  CHECK_THAT(device_error(0, {{"CUDA_VISIBLE_DEVICES", ""}}, true, true),
             Catch::Contains("CUDA_VISIBLE_DEVICES='' hides them all"));
  CHECK(device_error(1, {}, true, true) == "no error");
  for (const std::string& m : {device_error(0, {}, false, false), device_error(0, {}, true, true)})
    CHECK(m.find('\n') == std::string::npos);
  // This build: a CPU build (or no GPU) refuses multi-gpu.
  if (cuda_device_count() == 0) CHECK_THROWS_AS(check_gpu_workers(cuda_device_count(), {}), DeviceError);
}

TEST_CASE("gpu workers: NumWorkers local workers, 0 = one per visible GPU", "[dist]") {
  CHECK(gpu_worker_count(0, 4) == 4);
  CHECK(gpu_worker_count(2, 4) == 2);
  CHECK(gpu_worker_count(4, 4) == 4);
  CHECK_THROWS_AS(gpu_worker_count(5, 4), DeviceError);
  try {
    gpu_worker_count(3, 2);
  } catch (const DeviceError& e) {
    CHECK_THAT(e.what(), Catch::Contains("NumWorkers is 3 but only 2 GPU(s) are visible"));
  }
}

TEST_CASE("gpu workers: rank -> GPU is the local rank, 0 when one GPU per task", "[dist]") {
  CHECK(gpu_for_rank(world(0, 4, 0), 4) == 0);
  CHECK(gpu_for_rank(world(3, 4, 3), 4) == 3);
  CHECK(gpu_for_rank(world(13, 16, 5), 8) == 5);  // second node of 2 x 8
  CHECK(gpu_for_rank(world(6, 8, 6), 1) == 0);    // srun --gpus-per-task=1: each task sees its own GPU
  WorldInfo local;
  local.rank = local.local_rank = 1, local.size = 2, local.source = "local";
  CHECK(gpu_for_rank(local, 2) == 1);
  try {
    gpu_for_rank(world(5, 8, 5), 4);
    FAIL("no error");
  } catch (const DeviceError& e) {
    CHECK_THAT(e.what(), Catch::Contains("rank 5 of 8 is local rank 5 on its node, which has only 4 GPU(s)"));
  }
}

TEST_CASE("gpu workers: a world of one needs no NCCL", "[dist]") {
  WorldInfo w;
  auto comm = join_gpu_world(w, 0, "unused", {}, {});
  CHECK(comm->size() == 1);
  CHECK(comm->kind() == "local");
  if (!DLT_HAVE_NCCL) CHECK_THROWS_AS(join_gpu_world(world(0, 2, 0), 0, "unused", {}, {}), DeviceError);
}

TEST_CASE("rendezvous file: published atomically, read by a waiting rank", "[dist]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dlt-rdv-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::string blob(128, '\0');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>(i * 7 + 1);  // binary, with zeros
  blob[5] = '\0';
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    publish_file(dir.string(), "nccl-unique-id", blob);
  });
  std::string got = wait_for_file(dir.string(), "nccl-unique-id", blob.size(), std::chrono::seconds(5), "rank 1 of 2");
  writer.join();
  CHECK(got == blob);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  CHECK(files == 1);  // no temporary left behind

  auto t0 = std::chrono::steady_clock::now();
  try {
    wait_for_file(dir.string(), "missing", 128, std::chrono::milliseconds(200), "rank 1 of 2");
    FAIL("no timeout");
  } catch (const CommError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("rank 1 of 2: timed out"));
    CHECK_THAT(e.what(), Catch::Contains("DLT_RENDEZVOUS"));
  }
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));  // a hang guard, not a speed limit
  fs::remove_all(dir);
}

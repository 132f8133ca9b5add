// plan_execution and resolve_device (train/execution.h): the one decision of how a run
// executes, from ExecutionEnvironment, NumWorkers, the launcher's world and the visible GPUs.
#include <catch2/catch.hpp>

#include "build_config.h"
#include "support/skip.h"
#include "train/execution.h"
#include "util/error.h"

using namespace dlt;
using Env = std::map<std::string, std::string>;

namespace {

TrainingOptions options(const std::string& environment, int64_t num_workers = 0) {
  TrainingOptions o;
  REQUIRE(parse_choice(environment, &o.execution_environment));
  o.num_workers = num_workers;
  return o;
}

// A visible_gpus that counts how often it was asked.
struct Gpus {
  int count = 0;
  int asked = 0;
  std::function<int()> fn() {
    return [this] {
      ++asked;
      return count;
    };
  }
};

}  // namespace

TEST_CASE("execution: cpu, gpu and auto train alone without asking for GPUs", "[train]") {
  for (const char* e : {"cpu", "gpu", "auto"}) {
    Gpus g;
    Execution x = plan_execution(options(e), -1, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}, g.fn());
    CHECK(x.role == Execution::Role::kAlone);
    CHECK(x.comm == Execution::Comm::kLocal);
    CHECK(g.asked == 0);
  }
}

TEST_CASE("execution: parallel without a cluster launcher starts CPU workers", "[train]") {
  Gpus g;
  Execution x = plan_execution(options("parallel"), -1, {}, g.fn());
  CHECK(x.role == Execution::Role::kLauncher);
  CHECK(x.workers == 2);  // NumWorkers 0: two CPU workers
  if (!DLT_HAVE_NCCL) {
    CHECK(x.comm == Execution::Comm::kGloo);
    CHECK(g.asked == 0);  // no NCCL: GPU workers are impossible, the driver is not started
  }
  CHECK(plan_execution(options("parallel", 3), -1, {}, [] { return 0; }).workers == 3);
}

TEST_CASE("execution: a cluster launcher's rank and a local worker join their world", "[train]") {
  Execution x =
      plan_execution(options("parallel"), -1, {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "1"}},
                     [] { return 0; });
  CHECK(x.role == Execution::Role::kRank);
  CHECK(x.comm == Execution::Comm::kGloo);
  CHECK(x.world.source == "slurm");
  CHECK(x.world.rank == 1);
  CHECK(x.world.size == 4);
  CHECK(x.gpu_device == -1);

  Execution w =
      plan_execution(options("parallel"), 2, {{"DLT_WORLD_SIZE", "3"}, {"DLT_RENDEZVOUS", "/tmp/x"}}, [] { return 0; });
  CHECK(w.role == Execution::Role::kRank);
  CHECK(w.world.source == "local");
  CHECK(w.world.rank == 2);
  CHECK_THROWS_AS(plan_execution(options("cpu"), 0, {}, [] { return 0; }), UsageError);  // not from a launcher
}

TEST_CASE("execution: multi-gpu in a build without CUDA or NCCL is a DeviceError", "[train][skippable]") {
  DLT_SKIP_IF(DLT_HAVE_CUDA && DLT_HAVE_NCCL, "this build has CUDA and NCCL (the multi-gpu case below runs)");
  CHECK_THROWS_AS(plan_execution(options("multi-gpu"), -1, {}, [] { return 4; }), DeviceError);
}

TEST_CASE("execution: multi-gpu starts one worker per GPU or places a rank on its GPU", "[train][skippable]") {
  DLT_SKIP_IF(!DLT_HAVE_CUDA || !DLT_HAVE_NCCL, "this build has no " << (DLT_HAVE_CUDA ? "NCCL" : "CUDA"));
  CHECK_THROWS_AS(plan_execution(options("multi-gpu"), -1, {}, [] { return 0; }), DeviceError);
  Execution x = plan_execution(options("multi-gpu"), -1, {}, [] { return 4; });
  CHECK(x.role == Execution::Role::kLauncher);
  CHECK(x.comm == Execution::Comm::kNccl);
  CHECK(x.workers == 4);
  CHECK_THROWS_AS(plan_execution(options("multi-gpu", 5), -1, {}, [] { return 4; }), DeviceError);
  // A one-task allocation (sbatch without srun) starts its own workers too.
  CHECK(plan_execution(options("multi-gpu"), -1, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}, [] {
          return 2;
        }).role == Execution::Role::kLauncher);
  Execution r = plan_execution(options("multi-gpu"), -1, {{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "3"}},
                               [] { return 4; });
  CHECK(r.role == Execution::Role::kRank);
  CHECK(r.gpu_device == 3);
}

TEST_CASE("execution: resolve_device", "[train]") {
  CHECK(resolve_device(options("cpu")).is_cpu());
  if (!DLT_HAVE_NCCL) CHECK(resolve_device(options("parallel")).is_cpu());  // CPU workers
  if (!DLT_HAVE_CUDA) {
    CHECK(resolve_device(options("auto")).is_cpu());
    CHECK_THROWS_AS(resolve_device(options("gpu")), DeviceError);
    CHECK_THROWS_AS(resolve_device(options("multi-gpu")), DeviceError);
  }
}

TEST_CASE("execution: training_device, the one decision of where this process trains", "[train]") {
  // Alone: resolve_device's answer.
  Execution alone;
  CHECK(training_device(alone, options("cpu")).is_cpu());
  // A rank of a CPU world trains on the CPU whatever GPUDevice says.
  Execution gloo;
  gloo.role = Execution::Role::kRank;
  gloo.comm = Execution::Comm::kGloo;
  TrainingOptions o = options("parallel");
  o.gpu_device = 5;
  if (!DLT_HAVE_NCCL) CHECK(training_device(gloo, o).is_cpu());
  // A rank of a GPU world trains on its own GPU (plan_execution's gpu_device), not GPUDevice:
  // without a GPU that is a DeviceError naming the missing GPU support.
  Execution nccl;
  nccl.role = Execution::Role::kRank;
  nccl.comm = Execution::Comm::kNccl;
  nccl.gpu_device = 1;
  if (!DLT_HAVE_CUDA) CHECK_THROWS_AS(training_device(nccl, options("multi-gpu")), DeviceError);
}

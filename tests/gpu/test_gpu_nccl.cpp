// The NCCL communicator in a world of one rank on the device under test (two ranks cannot
// share one GPU): init through the rendezvous file, every collective's values and ordering
// against the compute stream, async all-reduce + wait_all, kernel launches after the host polled
// NCCL's events, and a prompt destructor (ncclCommFinalize + ncclCommDestroy). Multi-GPU
// behaviour is for machines with several GPUs (docs/distributed.md).
#include <catch2/catch.hpp>

#include <chrono>

#include "build_config.h"
#include "gpu/gpu_test_util.h"
#include "support/skip.h"

#if DLT_HAVE_NCCL
#include "dist/nccl_communicator.h"
#endif

namespace dlt::test::gpu {

#if DLT_HAVE_NCCL
TEST_CASE("gpu: NCCL communicator of one rank", "[gpu][nccl][skippable]") {
  DLT_SKIP_IF(!testing_a_gpu(), "NCCL needs a GPU: the CPU self-check has none (this case runs in the gpu entry)");
  TempDir dir;
  CommOptions o;
  o.rank = 0;
  o.size = 1;
  o.rendezvous_dir = dir.path();
  o.timeout = std::chrono::milliseconds(30000);
  const Device dev = device_under_test();
  std::string fatal;
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  double init_seconds = 0;
  Clock::time_point destroy_start;
  {
    const auto init_start = Clock::now();
    auto comm = make_nccl_communicator(o, dev.index, [&](const std::string& m) { fatal = m; });
    init_seconds = seconds_since(init_start);
    REQUIRE(comm->kind() == "nccl");
    CHECK(comm->size() == 1);
    Backend& be = dut_backend();
    Rng rng(3);
    TensorPair p = random_pair(Shape{1000}, rng);
    // A value written on the compute stream just before the collective must be what it reduces.
    be.scale(p.dev, 2.f);
    comm->all_reduce_sum(p.dev);
    be.scale(p.dev, 0.5f);  // ordered after the collective
    CHECK(compare_tensors(p.dev, p.cpu).rel == 0.0);

    Tensor a = p.dev.clone(), b = p.dev.clone();
    comm->all_reduce_sum_async(a);
    comm->all_reduce_sum_async(b);
    comm->wait_all();
    be.axpby(1.f, a, -1.f, b);  // a - b, both reduced in a world of one: zero
    CHECK(be.sum_squares(b) == 0.0);
    CHECK(compare_tensors(a, p.cpu).rel == 0.0);

    double totals[3] = {1.5, -2.0, 7.0};
    comm->all_reduce_sum(totals, 3);
    CHECK(totals[0] == 1.5);
    CHECK(totals[2] == 7.0);
    // The host polled an event that was not ready yet: the next kernel's launch check
    // (cudaGetLastError) must not see that as its error.
    be.scale(a, 1.f);
    comm->broadcast(a, 0);
    CHECK(compare_tensors(a, p.cpu).rel == 0.0);
    comm->barrier();
    destroy_start = Clock::now();
  }
  const double destroy_seconds = seconds_since(destroy_start);
  Tensor after(Shape{4}, dev);
  dut_backend().scale(after, 1.f);  // nor after the destructor's polling
  CHECK(fatal.empty());
  // A prompt destructor (ncclCommFinalize + ncclCommDestroy): it undoes what the init measured
  // here set up (rendezvous, proxy thread, buffers), so it may take at most twice as long; the
  // fallback after a stuck finalize waits out min(timeout, 5 s), far longer than a one-rank init.
  INFO("init " << init_seconds << " s, destructor " << destroy_seconds << " s");
  CHECK(destroy_seconds <= 2 * init_seconds);
}
#endif

}  // namespace dlt::test::gpu

// The overlapped gradient all-reduce: GradientBuckets cuts the flat buffer from its end and
// starts each bucket once backward reports it final; Gloo's all_reduce_sum_async runs
// collectives in issue order on its thread, interleaved with synchronous ones; a failed
// started all-reduce surfaces from wait_all() as a CommError within the timeout.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>

#include "build_config.h"
#include "dist/communicator.h"
#include "dist/data_parallel.h"
#include "util/error.h"

using namespace dlt;

namespace {

// Claims a world of two and records what was started (offset into the flat buffer, length).
class RecordingCommunicator final : public Communicator {
 public:
  explicit RecordingCommunicator(const float* base) : base_(base) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void all_reduce_sum(Tensor&) override {}
  void all_reduce_sum(double*, int64_t) override {}
  void all_reduce_sum_async(Tensor& t) override { started.emplace_back(t.data() - base_, t.numel()); }
  void wait_all() override { ++waits; }
  void broadcast(Tensor&, int) override {}
  void barrier() override {}
  std::string kind() const override { return "recording"; }
  std::vector<std::pair<int64_t, int64_t>> started;
  int waits = 0;

 private:
  const float* base_;
};

}  // namespace

TEST_CASE("GradientBuckets: ranges cut from the end, started as backward completes them", "[dist]") {
  Tensor grads(Shape{1000});
  for (int i = 0; i < 1000; ++i) grads.data()[i] = 1.f;
  RecordingCommunicator comm(grads.data());
  GradientBuckets b(comm, grads, 300);
  REQUIRE(b.count() == 3);  // [700, 1000), [400, 700), [0, 400): a remainder < 150 joins the last
  b.begin(0.5);
  b.ready_from(950);
  CHECK(comm.started.empty());
  b.ready_from(700);
  REQUIRE(comm.started.size() == 1);
  CHECK(comm.started[0] == std::make_pair<int64_t, int64_t>(700, 300));
  CHECK(grads.data()[700] == 0.5f);  // scaled by the share before the sum
  CHECK(grads.data()[699] == 1.f);
  b.ready_from(100);
  REQUIRE(comm.started.size() == 2);
  CHECK(comm.started[1] == std::make_pair<int64_t, int64_t>(400, 300));
  b.finish();
  REQUIRE(comm.started.size() == 3);
  CHECK(comm.started[2] == std::make_pair<int64_t, int64_t>(0, 400));
  CHECK(comm.waits == 1);
  // The next iteration starts over.
  b.begin(1.0);
  b.finish();
  CHECK(comm.started.size() == 6);
  LocalCommunicator local;
  CHECK(GradientBuckets(local, grads, 10).count() == 0);  // one process: nothing to reduce
}

#if DLT_HAVE_GLOO
namespace {

std::string fresh_dir() {
  char tmpl[] = "/tmp/dlt-test-rdv-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

CommOptions options(int rank, const std::string& dir, int timeout_ms) {
  CommOptions o;
  o.rank = rank;
  o.size = 2;
  o.rendezvous_dir = dir;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  return o;
}

}  // namespace

TEST_CASE("Gloo: started all-reduces and synchronous ones run in issue order", "[dist]") {
  std::string dir = fresh_dir();
  auto body = [&](int rank) {
    auto c = make_cpu_communicator(options(rank, dir, 10000));
    int bad = 0;
    Tensor grads(Shape{5000});
    for (int it = 0; it < 3; ++it) {
      const double w = rank == 0 ? 0.75 : 0.25;
      for (int i = 0; i < 5000; ++i) grads.data()[i] = static_cast<float>((rank + 1) * (i % 97 + it));
      GradientBuckets b(*c, grads, 700);
      b.begin(w);
      for (int64_t off = 5000; off >= 0; off -= 250) {
        b.ready_from(off);
        if (off % 1000 == 0) {  // a synchronized batch norm's all-reduce between buckets
          double d[2] = {rank + 1.0, static_cast<double>(off)};
          c->all_reduce_sum(d, 2);
          bad += d[0] != 3.0 || d[1] != 2.0 * off;
        }
      }
      b.finish();
      for (int i = 0; i < 5000; ++i)  // 0.75 * v + 0.25 * 2v
        bad += grads.data()[i] != static_cast<float>(1.25 * (i % 97 + it));
    }
    return bad;
  };
  auto r1 = std::async(std::launch::async, body, 1);
  int bad0 = body(0);
  CHECK(bad0 == 0);
  CHECK(r1.get() == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Gloo: a started all-reduce whose peer is gone fails in wait_all()", "[dist]") {
  std::string dir = fresh_dir();
  // The peer leaves only once both ends are connected: rank 1's communicator can be complete
  // before rank 0's, and closing it then fails rank 0's rendezvous instead of its collective.
  std::promise<void> rank0_connected;
  auto peer = std::async(std::launch::async, [&] {
    auto c = make_cpu_communicator(options(1, dir, 1000));
    rank0_connected.get_future().wait();  // then closes its connections without any collective
  });
  const int timeout_ms = 1000;
  std::unique_ptr<Communicator> c;
  const auto connect_start = std::chrono::steady_clock::now();
  try {
    c = make_cpu_communicator(options(0, dir, timeout_ms));
  } catch (...) {
    rank0_connected.set_value();
    peer.get();
    throw;
  }
  const double connect_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - connect_start).count();
  rank0_connected.set_value();
  peer.get();
  Tensor t(Shape{64});
  auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    c->all_reduce_sum_async(t);
    c->wait_all();
  } catch (const CommError& e) {
    message = e.what();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(message << " after " << seconds << " s (connecting took " << connect_seconds << " s)");
  CHECK(message.find("rank 0 of 2: all_reduce_sum(64 floats) failed") != std::string::npos);
  // Prompt, not a hang: at the latest when the collective's timeout runs out, twice that for a
  // loaded machine, plus four times what connecting the two ranks took here (this machine's
  // present speed at the same kind of work: sockets, the rendezvous files).
  CHECK(seconds <= 2 * timeout_ms / 1000.0 + 4 * connect_seconds);
  CHECK_THROWS_AS(c->barrier(), CommError);  // later collectives fail with the same cause
  std::filesystem::remove_all(dir);
}
#endif

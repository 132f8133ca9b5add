// GlooCommunicator with two ranks on two threads (loopback TCP, FileStore in a temp dir):
// collectives give the right numbers, a missing peer becomes a CommError within the timeout,
// and the data-parallel helpers weight gradients, totals and batch-norm states by share.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <string>

#include "build_config.h"
#include "config/config.h"
#include "dist/communicator.h"
#include "dist/data_parallel.h"
#include "net/network.h"
#include "util/error.h"

using namespace dlt;

namespace {

std::string fresh_dir() {
  char tmpl[] = "/tmp/dlt-test-rdv-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

CommOptions options(int rank, int size, const std::string& dir, int timeout_ms = 10000) {
  CommOptions o;
  o.rank = rank;
  o.size = size;
  o.rendezvous_dir = dir;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  return o;
}

// Runs body(comm) on `size` threads, one rank each; returns what each rank's body returned.
template <typename T>
std::vector<T> on_ranks(int size, const std::function<T(Communicator&)>& body) {
  std::string dir = fresh_dir();
  std::vector<std::future<T>> fs;
  for (int r = 0; r < size; ++r)
    fs.push_back(std::async(std::launch::async, [&, r] {
      auto comm = make_cpu_communicator(options(r, size, dir));
      return body(*comm);
    }));
  std::vector<T> out;
  for (auto& f : fs) out.push_back(f.get());
  std::filesystem::remove_all(dir);
  return out;
}

}  // namespace

TEST_CASE("LocalCommunicator is a world of one whose collectives change nothing", "[dist]") {
  LocalCommunicator c;
  Tensor t(Shape{3});
  for (int i = 0; i < 3; ++i) t.data()[i] = static_cast<float>(i + 1);
  c.all_reduce_sum(t);
  c.broadcast(t, 0);
  c.barrier();
  CHECK(c.rank() == 0);
  CHECK(c.size() == 1);
  CHECK(t.data()[2] == 3.f);
  GlobalTotals g = all_reduce_totals(c, 8, 0.7, 5);
  CHECK(g.loss == 0.7);
  CHECK(g.images == 8);
  CHECK(g.weight == 1.0);
}

TEST_CASE("comm_timeout: seconds, huge ones capped so deadlines do not overflow", "[dist]") {
  CHECK(comm_timeout(60).count() == 60000);  // CommunicationTimeout's default
  CHECK(comm_timeout(2.5).count() == 2500);
  for (double huge : {1e12, std::numeric_limits<double>::infinity()}) {
    const auto t = comm_timeout(huge);
    CHECK(t.count() == static_cast<int64_t>(kMaxCommTimeoutSeconds * 1000));
    // A deadline (plus the watchdog's grace) fits in a time_point: computed without overflow
    // (now + t > now could be folded to true, signed overflow being undefined).
    const auto now = std::chrono::steady_clock::now();
    CHECK(t + std::chrono::seconds(2) < std::chrono::steady_clock::time_point::max() - now);
  }
}

#if DLT_HAVE_GLOO
TEST_CASE("Gloo all-reduce, broadcast and barrier over two ranks", "[dist]") {
  const int n = 100003;  // odd and large enough to be split into segments
  auto wrong = on_ranks<int>(2, [&](Communicator& c) {
    Tensor t(Shape{n});
    for (int i = 0; i < n; ++i) t.data()[i] = static_cast<float>((c.rank() + 1) * (i % 1000));
    c.all_reduce_sum(t);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += t.data()[i] != static_cast<float>(3 * (i % 1000));
    double d[2] = {0.25 * (c.rank() + 1), 1e12};
    c.all_reduce_sum(d, 2);
    bad += d[0] != 0.75 || d[1] != 2e12;
    Tensor b(Shape{5});
    for (int i = 0; i < 5; ++i) b.data()[i] = static_cast<float>(10 * c.rank() + i);
    c.broadcast(b, 1);
    for (int i = 0; i < 5; ++i) bad += b.data()[i] != static_cast<float>(10 + i);
    c.barrier();
    return bad;
  });
  CHECK(wrong[0] == 0);
  CHECK(wrong[1] == 0);
}

TEST_CASE("Gloo: a peer that never joins the collective is a CommError within the timeout", "[dist]") {
  std::string dir = fresh_dir();
  std::promise<void> rank0_done;
  auto peer = std::async(std::launch::async, [&] {
    auto c = make_cpu_communicator(options(1, 2, dir, 1000));
    rank0_done.get_future().wait();  // stays connected but never calls the all-reduce
  });
  auto c = make_cpu_communicator(options(0, 2, dir, 1000));
  Tensor t(Shape{16});
  auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    c->all_reduce_sum(t);
  } catch (const CommError& e) {
    message = e.what();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rank0_done.set_value();
  peer.get();
  INFO(message);
  CHECK(message.find("rank 0 of 2") != std::string::npos);
  CHECK(message.find("all_reduce_sum(16 floats)") != std::string::npos);
  CHECK(seconds >= 0.9);  // it waited for the 1 s timeout
  CHECK(seconds < 30);    // a hang guard, not a speed limit
  // Once a collective failed the communicator refuses further work instead of hanging.
  CHECK_THROWS_AS(c->barrier(), CommError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Gloo: a rendezvous nobody else joins fails with the directory named", "[dist]") {
  std::string dir = fresh_dir();
  auto start = std::chrono::steady_clock::now();
  try {
    make_cpu_communicator(options(0, 2, dir, 1000));
    FAIL("no error");
  } catch (const CommError& e) {
    CHECK(std::string(e.what()).find(dir) != std::string::npos);
  }
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 60);  // a hang guard
  std::filesystem::remove_all(dir);
}

TEST_CASE("data parallel: gradients, totals and batch-norm states weighted by share", "[dist]") {
  const std::string yaml =
      "- {type: imageInput, Name: in, InputSize: [4, 4, 2], Normalization: none}\n"
      "- {type: convolution2d, Name: conv, FilterSize: 1, NumFilters: 3}\n"
      "- {type: batchNormalization, Name: bn}\n"
      "- {type: fullyConnected, Name: fc, OutputSize: 2}\n"
      "- {type: softmax, Name: sm}\n"
      "- {type: classification, Name: out}\n";
  // Rank 0 holds 3 images, rank 1 holds 1: weights 0.75 and 0.25.
  auto errors = on_ranks<double>(2, [&](Communicator& c) {
    Network net(network_spec_from_yaml(yaml, "test"), Device::cpu());
    net.init_params(1);
    double err = 0;
    int64_t n = c.rank() == 0 ? 3 : 1;
    GlobalTotals g = all_reduce_totals(c, n, c.rank() == 0 ? 1.0 : 2.0, c.rank() == 0 ? 2 : 1);
    err += std::abs(g.images - 4) + std::abs(g.loss - 1.25) + std::abs(g.correct - 3) +
           std::abs(g.weight - (c.rank() == 0 ? 0.75 : 0.25));
    Tensor& grads = net.flat_grads();
    for (int64_t i = 0; i < grads.numel(); ++i) grads.data()[i] = static_cast<float>(c.rank() == 0 ? i : 4 * i);
    all_reduce_gradients(c, grads, g.weight);  // 0.75 i + 0.25 * 4 i = 1.75 i
    for (int64_t i = 0; i < grads.numel(); ++i) err += std::abs(grads.data()[i] - 1.75 * i) / (1 + i);
    auto& st = net.layer(2).states();
    REQUIRE(st.size() == 2);
    for (int ch = 0; ch < 3; ++ch) {
      st[0].value.data()[ch] = c.rank() == 0 ? 1.f + ch : 5.f + ch;  // means
      st[1].value.data()[ch] = c.rank() == 0 ? 2.f : 4.f;            // variances
    }
    aggregate_batch_norm_states(c, net, g.weight);
    for (int ch = 0; ch < 3; ++ch) {
      double mean = 0.75 * (1 + ch) + 0.25 * (5 + ch);   // = 2 + ch
      double var = 0.75 * (2 + 1.0) + 0.25 * (4 + 9.0);  // var_i + (mean_i - mean)^2
      err += std::abs(st[0].value.data()[ch] - mean) + std::abs(st[1].value.data()[ch] - var);
    }
    return err;
  });
  CHECK(errors[0] < 1e-5);
  CHECK(errors[1] < 1e-5);
}

// The float, on-device path of synchronized batch norm (used for GPU tensors) against the
// double-precision host path, here on CPU tensors over Gloo: activations of 0..255 pixels
// (means near 128, variances near 5000) must not lose the variance to cancellation.
TEST_CASE("synchronized batch-norm collectives: the float path matches the double path", "[dist]") {
  const int64_t c = 5;
  auto errors = on_ranks<double>(2, [&](Communicator& comm) {
    const double w = comm.rank() == 0 ? 0.75 : 0.25;
    Tensor m1(Shape{c}), v1(Shape{c}), a1(Shape{c}), b1(Shape{c});
    for (int64_t j = 0; j < c; ++j) {
      m1.data()[j] = static_cast<float>(120 + 3 * j + 7 * comm.rank());
      v1.data()[j] = static_cast<float>(4000 + 100 * j + 900 * comm.rank());
      a1.data()[j] = static_cast<float>(0.5 * j - comm.rank());
      b1.data()[j] = static_cast<float>(2 - j + 3 * comm.rank());
    }
    Tensor m2 = m1.clone(), v2 = v1.clone(), a2 = a1.clone(), b2 = b1.clone();
    Tensor scratch(Shape{c});
    sync_batch_norm_moments(comm, w, m1, v1, scratch);
    sync_batch_norm_moments_float(comm, w, m2, v2, scratch);
    sync_batch_norm_sums(comm, w, a1, b1);
    sync_batch_norm_sums_float(comm, w, a2, b2);
    double err = 0;
    for (int64_t j = 0; j < c; ++j) {
      err = std::max<double>(err, std::abs(m1.data()[j] - m2.data()[j]) / std::abs(m1.data()[j]));
      err = std::max<double>(err, std::abs(v1.data()[j] - v2.data()[j]) / std::abs(v1.data()[j]));
      err = std::max<double>(err, std::abs(a1.data()[j] - a2.data()[j]) / (1 + std::abs(a1.data()[j])));
      err = std::max<double>(err, std::abs(b1.data()[j] - b2.data()[j]) / (1 + std::abs(b1.data()[j])));
    }
    // The two ranks' mean differ by 7: the global variance is the weighted one plus 0.75*0.25*49.
    const double want_var0 = 0.75 * 4000 + 0.25 * 4900 + 0.75 * 0.25 * 49;
    err = std::max<double>(err, std::abs(v2.data()[0] - want_var0) / want_var0);
    return err;
  });
  CHECK(errors[0] < 1e-6);
  CHECK(errors[1] < 1e-6);
}
#endif

TEST_CASE("broadcast_from_rank0: any bytes (NaN patterns, odd length) reach every rank; a failed rank 0 is named",
          "[dist]") {
  std::string bytes(4097, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i % 4 == 3 ? 0x7f : 0xff - i % 7);
  auto got = on_ranks<std::string>(3, [&](Communicator& c) {
    return broadcast_from_rank0(c, c.rank() == 0 ? bytes : std::string("other"), false, Device::cpu(), "x");
  });
  for (const std::string& g : got) CHECK(g == bytes);
  auto empty = on_ranks<std::string>(
      2, [&](Communicator& c) { return broadcast_from_rank0(c, std::string(), false, Device::cpu(), "x"); });
  CHECK(empty == std::vector<std::string>{"", ""});
  auto failed = on_ranks<std::string>(2, [&](Communicator& c) {
    try {
      return broadcast_from_rank0(c, "unused", c.rank() == 0, Device::cpu(), "read the checkpoint a.bin");
    } catch (const CommError& e) {
      return std::string(e.what());
    }
  });
  CHECK(failed[0].empty());
  CHECK(failed[1] == "rank 1 of 2: rank 0 could not read the checkpoint a.bin (its own error says why)");
}

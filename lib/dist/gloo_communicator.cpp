// Gloo implementation of Communicator: FileStore rendezvous, full TCP mesh, one context.
// Every collective carries the timeout and a fresh tag; Gloo's exceptions (peer closed the
// connection, timeout) become CommError "rank R: <collective> failed: <cause>".
#include "dist/gloo_communicator.h"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <csignal>
#include <filesystem>
#include <functional>

#include "util/error.h"

namespace dlt {

namespace {

class GlooCommunicator final : public Communicator {
 public:
  explicit GlooCommunicator(const CommOptions& o) : rank_(o.rank), size_(o.size), timeout_(o.timeout) {
    // A peer that dies closes its sockets; writing to them must fail (EPIPE -> CommError),
    // not kill this process with SIGPIPE.
    signal(SIGPIPE, SIG_IGN);
    std::error_code ec;
    std::filesystem::create_directories(o.rendezvous_dir, ec);
    if (ec)
      throw CommError("rank " + std::to_string(rank_) + ": cannot create the rendezvous directory " + o.rendezvous_dir +
                      ": " + ec.message() + " (set DLT_RENDEZVOUS to a directory every worker can write)");
    try {
      gloo::transport::tcp::attr attr;
      if (!o.iface.empty())
        attr.iface = o.iface;
      else
        attr.hostname = o.hostname.empty() ? "127.0.0.1" : o.hostname;
      auto device = gloo::transport::tcp::CreateDevice(attr);
      gloo::rendezvous::FileStore store(o.rendezvous_dir);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
      ctx->setTimeout(timeout_);
      ctx->connectFullMesh(store, device);
      ctx_ = ctx;
    } catch (const std::exception& e) {
      throw CommError("rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                      ": rendezvous in " + o.rendezvous_dir + " failed: " + e.what() +
                      " (did every worker start, with the same world size and rendezvous directory?)");
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "gloo"; }

  void all_reduce_sum(Tensor& t) override {
    check_cpu(t, "all_reduce_sum");
    float* p = t.data();
    size_t n = static_cast<size_t>(t.numel());
    run("all_reduce_sum(" + std::to_string(n) + " floats)", [&] {
      gloo::AllreduceOptions opts(ctx_);
      opts.setOutput(p, n);
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
  }

  void all_reduce_sum(double* values, int64_t n) override {
    run("all_reduce_sum(" + std::to_string(n) + " doubles)", [&] {
      gloo::AllreduceOptions opts(ctx_);
      opts.setOutput(values, static_cast<size_t>(n));
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<double>));
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
  }

  void broadcast(Tensor& t, int root) override {
    check_cpu(t, "broadcast");
    float* p = t.data();
    size_t n = static_cast<size_t>(t.numel());
    run("broadcast(" + std::to_string(n) + " floats from rank " + std::to_string(root) + ")", [&] {
      gloo::BroadcastOptions opts(ctx_);
      opts.setOutput(p, n);
      opts.setRoot(root);
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    });
  }

  void barrier() override {
    run("barrier", [&] {
      gloo::BarrierOptions opts(ctx_);
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

 private:
  uint32_t next_tag() { return tag_++; }
  void check_cpu(const Tensor& t, const char* what) const {
    if (!t.device().is_cpu())
      throw CommError("rank " + std::to_string(rank_) + ": " + what + " over Gloo needs a CPU tensor, got one on " +
                      t.device().str() + " (GPU workers use the NCCL communicator)");
  }
  void run(const std::string& what, const std::function<void()>& f) {
    if (failed_)
      throw CommError("rank " + std::to_string(rank_) + ": " + what + " after an earlier collective failed");
    try {
      f();
    } catch (const std::exception& e) {
      failed_ = true;
      throw CommError("rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": " + what +
                      " failed: " + e.what() + " (a worker died, hung or was stopped; timeout " +
                      std::to_string(timeout_.count() / 1000.0).substr(0, 5) + " s, env DLT_COMM_TIMEOUT)");
    }
  }

  int rank_, size_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<gloo::Context> ctx_;
  uint32_t tag_ = 1;
  bool failed_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(const CommOptions& options) {
  return std::make_unique<GlooCommunicator>(options);
}

}  // namespace dlt

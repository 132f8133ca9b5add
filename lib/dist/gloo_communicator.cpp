// Gloo implementation of Communicator: FileStore or TCP-store rendezvous, full TCP mesh, one context.
// Every collective carries the timeout and a fresh tag; Gloo's exceptions (peer closed the
// connection, timeout) become CommError "rank R: <collective> failed: <cause>". One
// background thread runs every collective in issue order: all_reduce_sum_async returns at
// once (gradient buckets during backward), synchronous calls queue behind it and wait.
#include "dist/gloo_communicator.h"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "dist/peer_watch.h"
#include "dist/rendezvous.h"
#include "dist/tcp_store.h"
#include "util/error.h"
#include "util/log.h"
#include "util/timer.h"

namespace dlt {

namespace {

// Gloo's Store over our key-value store (a TCP rendezvous): get and wait poll until the key is
// set, with the communicator's timeout.
class GlooKeyValueStore final : public gloo::rendezvous::Store {
 public:
  GlooKeyValueStore(KeyValueStore& kv, std::chrono::milliseconds timeout, std::string who)
      : kv_(kv), timeout_(timeout), who_(std::move(who)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    kv_.set(key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::string v = kv_.wait_get(key, timeout_, who_);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    for (const std::string& k : keys) kv_.wait_get(k, timeout, who_);
  }

 private:
  KeyValueStore& kv_;
  std::chrono::milliseconds timeout_;
  std::string who_;
};

class GlooCommunicator final : public Communicator {
 public:
  explicit GlooCommunicator(const CommOptions& o)
      : rank_(o.rank), size_(o.size), timeout_(o.timeout), report_timing_(o.report_timing) {
    // A peer that dies closes its sockets; writing to them must fail (EPIPE -> CommError),
    // not kill this process with SIGPIPE.
    signal(SIGPIPE, SIG_IGN);
    std::unique_ptr<gloo::rendezvous::Store> store;
    if (o.rendezvous_tcp.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(o.rendezvous_dir, ec);
      if (ec)
        throw CommError("rank " + std::to_string(rank_) + ": cannot create the rendezvous directory " +
                        o.rendezvous_dir + ": " + ec.message() +
                        " (set DLT_RENDEZVOUS to a directory every worker can write)");
      store = std::make_unique<gloo::rendezvous::FileStore>(o.rendezvous_dir);
    } else {
      // Rank 0's server lives as long as this communicator: a rank done with connectFullMesh
      // cannot tell whether the others have read every address yet.
      kv_ = open_rendezvous_store(o);
      store = std::make_unique<GlooKeyValueStore>(*kv_, timeout_, rank_of(o));
      tcp_ = o.rendezvous_tcp;
    }
    try {
      gloo::transport::tcp::attr attr;
      attr.hostname = o.hostname.empty() ? "127.0.0.1" : o.hostname;
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
      ctx->setTimeout(timeout_);
      ctx->connectFullMesh(*store, device);
      ctx_ = ctx;
      if (!tcp_.empty()) start_peer_watch(o);
    } catch (const CommError&) {
      throw;
    } catch (const std::exception& e) {
      throw CommError(rank_of(o) + ": rendezvous through " + rendezvous_place(o) + " failed: " + e.what() +
                      " (did every worker start, with the same world size and rendezvous?)");
    }
    thread_ = std::thread([this] { loop(); });
  }

  ~GlooCommunicator() override {
    watch_.reset();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;  // collectives not yet started are dropped
    }
    cv_.notify_all();
    thread_.join();
    if (report_timing_ && count_ > 0)
      log::warn("gloo: {} collectives, {:.1f} ms busy in total ({:.3f} ms each)", count_, busy_ * 1e3,
                busy_ * 1e3 / static_cast<double>(count_));
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "gloo"; }

  void all_reduce_sum(Tensor& t) override {
    check_cpu(t, "all_reduce_sum");
    run(all_reduce_floats(t.data(), static_cast<size_t>(t.numel())));
  }

  void all_reduce_sum_async(Tensor& t) override {
    check_cpu(t, "all_reduce_sum_async");
    enqueue(all_reduce_floats(t.data(), static_cast<size_t>(t.numel())), nullptr);
  }

  void wait_all() override {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return queue_.empty() && !busy_now_; });
    if (async_error_) {
      std::exception_ptr e = async_error_;
      async_error_ = nullptr;
      std::rethrow_exception(e);
    }
  }

  void all_reduce_sum(double* values, int64_t n) override {
    run({"all_reduce_sum(" + std::to_string(n) + " doubles)", [=, this] {
           gloo::AllreduceOptions opts(ctx_);
           opts.setOutput(values, static_cast<size_t>(n));
           opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<double>));
           opts.setTag(next_tag());
           opts.setTimeout(timeout_);
           gloo::allreduce(opts);
         }});
  }

  void broadcast(Tensor& t, int root) override {
    check_cpu(t, "broadcast");
    float* p = t.data();
    size_t n = static_cast<size_t>(t.numel());
    run({"broadcast(" + std::to_string(n) + " floats from rank " + std::to_string(root) + ")", [=, this] {
           gloo::BroadcastOptions opts(ctx_);
           opts.setOutput(p, n);
           opts.setRoot(root);
           opts.setTag(next_tag());
           opts.setTimeout(timeout_);
           gloo::broadcast(opts);
         }});
  }

  void barrier() override {
    run({"barrier", [this] {
           gloo::BarrierOptions opts(ctx_);
           opts.setTag(next_tag());
           opts.setTimeout(timeout_);
           gloo::barrier(opts);
         }});
  }

 private:
  struct Task {
    std::string what;           // for the error message
    std::function<void()> run;  // the Gloo call; runs on the collective thread
  };

  Task all_reduce_floats(float* p, size_t n) {
    return {"all_reduce_sum(" + std::to_string(n) + " floats)", [=, this] {
              gloo::AllreduceOptions opts(ctx_);
              opts.setOutput(p, n);
              opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
              opts.setTag(next_tag());
              opts.setTimeout(timeout_);
              gloo::allreduce(opts);
            }};
  }

  // Heartbeats through rank 0's store, so that a failed collective can name the lost rank:
  // rank 0 beats into its own server, the others through a connection of their own.
  void start_peer_watch(const CommOptions& o) {
    std::shared_ptr<KeyValueStore> store = kv_;
    if (rank_ != 0)
      store = connect_tcp_store(parse_tcp_address(o.rendezvous_tcp, "the rendezvous address"), timeout_, rank_of(o));
    watch_ = std::make_unique<PeerWatch>(store, store->where(), rank_, size_, timeout_);
  }

  uint32_t next_tag() { return tag_++; }  // collective thread only
  void check_cpu(const Tensor& t, const char* what) const {
    if (!t.device().is_cpu())
      throw CommError("rank " + std::to_string(rank_) + ": " + what + " over Gloo needs a CPU tensor, got one on " +
                      t.device().str() + " (GPU workers use the NCCL communicator)");
  }

  // A synchronous collective: queued behind every started one; rethrows its failure.
  void run(Task task) {
    std::promise<void> done;
    std::future<void> f = done.get_future();
    enqueue(std::move(task), &done);
    f.get();
  }

  void enqueue(Task task, std::promise<void>* done) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back({std::move(task), done});
    }
    cv_.notify_all();
  }

  void loop() {
    for (;;) {
      Pending p;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) {
          for (Pending& q : queue_)
            if (q.done) q.done->set_exception(std::make_exception_ptr(CommError(stopped(q.task.what))));
          queue_.clear();
          idle_.notify_all();
          return;
        }
        p = std::move(queue_.front());
        queue_.pop_front();
        busy_now_ = true;
      }
      std::exception_ptr error = execute(p.task);
      {
        std::lock_guard<std::mutex> lock(mu_);
        busy_now_ = false;
        if (error && !p.done && !async_error_) async_error_ = error;
      }
      if (p.done) {
        if (error)
          p.done->set_exception(error);
        else
          p.done->set_value();
      }
      idle_.notify_all();
    }
  }

  std::exception_ptr execute(const Task& task) {
    if (first_error_) return first_error_;  // the root cause, for every later collective
    Timer t;
    try {
      task.run();
    } catch (const std::exception& e) {
      // The lost rank first: Gloo's own message names at most the neighbour this rank waited on.
      const std::string lost = watch_ ? watch_->lost_ranks() : std::string();
      return first_error_ = std::make_exception_ptr(CommError(
                 "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": " +
                 (lost.empty() ? "" : lost + ": ") + task.what + " failed: " + e.what() +
                 " (a worker died, hung, was stopped or cut off; timeout " +
                 std::to_string(timeout_.count() / 1000.0).substr(0, 5) + " s, training.CommunicationTimeout)"));
    }
    busy_ += t.seconds();
    ++count_;
    return nullptr;
  }

  std::string stopped(const std::string& what) const {
    return "rank " + std::to_string(rank_) + ": " + what + " after an earlier collective failed";
  }

  struct Pending {
    Task task;
    std::promise<void>* done = nullptr;  // null: started with all_reduce_sum_async
  };

  int rank_, size_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<KeyValueStore> kv_;  // a TCP rendezvous's store (rank 0: its server)
  std::string tcp_;                    // its address (empty: a FileStore rendezvous)
  std::unique_ptr<PeerWatch> watch_;   // heartbeats through it (TCP rendezvous only)
  std::shared_ptr<gloo::Context> ctx_;
  uint32_t tag_ = 1;
  std::exception_ptr first_error_;  // collective thread only
  // The queue of collectives, in issue order, and the thread that runs them.
  std::mutex mu_;
  std::condition_variable cv_, idle_;
  std::deque<Pending> queue_;
  bool busy_now_ = false, stop_ = false;
  std::exception_ptr async_error_;  // first failure of a started all-reduce, for wait_all()
  std::thread thread_;
  // CommunicationTiming: seconds spent inside collectives, reported at the end.
  bool report_timing_ = false;
  double busy_ = 0;
  int64_t count_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(const CommOptions& options) {
  return std::make_unique<GlooCommunicator>(options);
}

}  // namespace dlt

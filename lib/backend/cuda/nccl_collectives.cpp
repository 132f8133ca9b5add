// NCCL implementation of Communicator: non-blocking communicator, one high-priority comm
// stream per rank ordered against the device's compute stream with events, and a watchdog
// thread that polls ncclCommGetAsyncError and the pending collectives' events, aborting the
// communicator when one fails or overstays the timeout. Not here: CPU tensors (Gloo), processes,
// the rendezvous (the core's dist/nccl_communicator.cpp shares the id through NcclWorld::share_id).
#include "backend/cuda/nccl_collectives.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_common.h"
#include "util/error.h"

namespace dlt {

namespace {

using Clock = std::chrono::steady_clock;
// The watchdog acts this long after a deadline, so a caller waiting on the host reports first.
constexpr std::chrono::milliseconds kWatchdogGrace{2000};

using cuda::query_event;

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const NcclWorld& o, int device, CommFatalHandler on_fatal)
      : rank_(o.rank), size_(o.size), device_(device), timeout_(o.timeout), on_fatal_(std::move(on_fatal)) {
    DLT_CUDA(cudaSetDevice(device_));
    compute_ = cuda::context(device_).stream;
    int least = 0, greatest = 0;
    DLT_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    DLT_CUDA(cudaStreamCreateWithPriority(&comm_stream_, cudaStreamNonBlocking, greatest));
    DLT_CUDA(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));

    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    const std::string bytes = o.share_id(std::string(reinterpret_cast<const char*>(&id), sizeof(id)));
    if (bytes.size() != sizeof(id))
      throw CommError(who() + ": the shared NCCL id has " + std::to_string(bytes.size()) + " bytes, not " +
                      std::to_string(sizeof(id)));
    std::memcpy(&id, bytes.data(), sizeof(id));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const auto deadline = Clock::now() + timeout_;
    ncclResult_t r = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      std::string detail = comm_ ? ncclGetLastError(comm_) : "";
      if (comm_) ncclCommAbort(comm_);
      aborted_ = true;
      throw CommError(who() + ": NCCL init on GPU " + std::to_string(device_) + " failed: " + ncclGetErrorString(r) +
                      (detail.empty() ? "" : " (" + detail + ")") + hint());
    }
    wait_state("NCCL init (rendezvous through " + o.rendezvous + ")", deadline);
    watchdog_ = std::thread([this] { watch(); });
  }

  // Within at most a few seconds: waits for the issued collectives, then ncclCommFinalize +
  // ncclCommDestroy, which flush this rank's last sends (ncclCommAbort may drop data a peer on
  // another node is still receiving: its kernels finish before the proxy has sent it all).
  // Falls back to ncclCommAbort, which never waits for peers, so a rank that leaves with an
  // error is not held back by ranks still inside a collective.
  ~NcclCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return;  // leave CUDA resources to process exit: freeing may synchronize
    const auto deadline = Clock::now() + std::min<std::chrono::milliseconds>(timeout_, std::chrono::seconds(5));
    while (!pending_.empty() && Clock::now() < deadline) {
      if (query_event(pending_.front().done) == cudaErrorNotReady) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      free_events_.push_back(pending_.front().done);
      pending_.pop_front();
    }
    if (!pending_.empty() || !finalize_locked(deadline)) abort_locked();
    if (!pending_.empty()) return;  // unfinished work: freeing would synchronize with it
    for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
    cudaEventDestroy(ready_);
    cudaStreamDestroy(comm_stream_);
    if (host_buf_) cudaFreeHost(host_buf_);
    if (dev_buf_) cudaFree(dev_buf_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "nccl"; }

  void all_reduce_sum(Tensor& t) override {
    start_after_compute(t, "all_reduce_sum", -1);
    DLT_CUDA(cudaStreamWaitEvent(compute_, last_done_, 0));
  }

  void all_reduce_sum_async(Tensor& t) override { start_after_compute(t, "all_reduce_sum_async", -1); }

  void wait_all() override {
    check_health("wait_all");
    if (last_done_) DLT_CUDA(cudaStreamWaitEvent(compute_, last_done_, 0));
  }

  void broadcast(Tensor& t, int root) override {
    if (root < 0 || root >= size_)
      throw CommError(who() + ": broadcast from rank " + std::to_string(root) + ", which is not in the world");
    start_after_compute(t, "broadcast", root);
    DLT_CUDA(cudaStreamWaitEvent(compute_, last_done_, 0));
  }

  void all_reduce_sum(double* values, int64_t n) override {
    host_values("all_reduce_sum(" + std::to_string(n) + " doubles)", values, n);
  }

  void barrier() override {
    double zero = 0;
    host_values("barrier", &zero, 1);
  }

 private:
  struct Pending {
    cudaEvent_t done;
    Clock::time_point deadline;
    std::string what;
  };

  std::string who() const { return "rank " + std::to_string(rank_) + " of " + std::to_string(size_); }
  std::string seconds() const { return std::to_string(timeout_.count() / 1000.0).substr(0, 5) + " s"; }
  std::string hint() const {
    return " (a worker died, hung or was stopped, or the network failed; timeout " + seconds() +
           ", training.CommunicationTimeout; NCCL_DEBUG=WARN shows NCCL's view)";
  }

  void check_nccl(ncclResult_t r, const char* what) {
    if (r != ncclSuccess) throw CommError(who() + ": " + what + " failed: " + ncclGetErrorString(r) + hint());
  }

  // Aborts the communicator once (under mu_) and throws CommError with the collective's name.
  [[noreturn]] void fail(const std::string& what, const std::string& cause) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      abort_locked();
    }
    throw CommError(who() + ": " + what + " failed: " + cause + hint());
  }
  void abort_locked() {
    if (aborted_) return;
    aborted_ = true;
    ncclCommAbort(comm_);
  }
  // The orderly end (under mu_, no collective pending): ncclCommFinalize polled until it is
  // done or the deadline passes, then ncclCommDestroy. False, with the communicator still to
  // be aborted, when finalizing fails or takes too long (a peer gone or still training).
  bool finalize_locked(Clock::time_point deadline) {
    ncclResult_t r = ncclCommFinalize(comm_);
    while (r == ncclInProgress && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      r = state_locked();
    }
    if (r != ncclSuccess) return false;
    ncclCommDestroy(comm_);
    aborted_ = true;  // released: nothing may use comm_ any more
    return true;
  }

  // The communicator's state, under mu_: ncclSuccess, ncclInProgress or an error.
  ncclResult_t state_locked() {
    ncclResult_t st = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm_, &st);
    return r != ncclSuccess ? r : st;
  }
  std::string error_text_locked(ncclResult_t st) {
    std::string detail = ncclGetLastError(comm_);
    return std::string(ncclGetErrorString(st)) + (detail.empty() ? "" : ": " + detail);
  }

  void check_health(const std::string& what) {
    std::unique_lock<std::mutex> lock(mu_);
    if (aborted_) throw CommError(who() + ": " + what + " after an earlier collective failed");
    ncclResult_t st = state_locked();
    if (st == ncclSuccess || st == ncclInProgress) return;
    std::string cause = error_text_locked(st);
    lock.unlock();
    fail(what, cause);
  }

  // Polls until the non-blocking communicator leaves ncclInProgress (enqueue or init done).
  void wait_state(const std::string& what, Clock::time_point deadline) {
    for (int spins = 0;; ++spins) {
      std::unique_lock<std::mutex> lock(mu_);
      if (aborted_) throw CommError(who() + ": " + what + " after an earlier collective failed");
      ncclResult_t st = state_locked();
      if (st == ncclSuccess) return;
      if (st != ncclInProgress) {
        std::string cause = error_text_locked(st);
        lock.unlock();
        fail(what, cause);
      }
      lock.unlock();
      if (Clock::now() > deadline) fail(what, "timed out after " + seconds());
      if (spins > 100) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  void check_tensor(const Tensor& t, const std::string& what) const {
    if (t.device() != Device::cuda(device_))
      throw CommError(who() + ": " + what + " over NCCL needs a tensor on cuda:" + std::to_string(device_) +
                      ", got one on " + t.device().str() + " (CPU workers use the Gloo communicator)");
    if (t.dtype() != DType::kF32) throw CommError(who() + ": " + what + " over NCCL needs a float32 tensor");
  }

  cudaEvent_t take_event() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_events_.empty()) {
      cudaEvent_t e = free_events_.back();
      free_events_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    DLT_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }

  // Issues f on the comm stream (after the compute stream's work when after_compute), polls
  // the enqueue, records a completion event the watchdog tracks; sets last_done_.
  template <typename F>
  void issue(const std::string& what, bool after_compute, F&& f) {
    check_health(what);
    const auto deadline = Clock::now() + timeout_;
    if (after_compute) {
      DLT_CUDA(cudaEventRecord(ready_, compute_));
      DLT_CUDA(cudaStreamWaitEvent(comm_stream_, ready_, 0));
    }
    cudaEvent_t done = take_event();
    ncclResult_t r;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (aborted_) throw CommError(who() + ": " + what + " after an earlier collective failed");
      r = f();
    }
    if (r == ncclInProgress) {
      wait_state(what, deadline);
    } else if (r != ncclSuccess) {
      std::string cause;
      {
        std::lock_guard<std::mutex> lock(mu_);
        cause = error_text_locked(r);
      }
      fail(what, cause);
    }
    DLT_CUDA(cudaEventRecord(done, comm_stream_));
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back({done, deadline, what});
    }
    last_done_ = done;
  }

  void start_after_compute(Tensor& t, const std::string& name, int root) {
    const size_t n = static_cast<size_t>(t.numel());
    std::string what = name + "(" + std::to_string(n) + " floats" +
                       (root >= 0 ? " from rank " + std::to_string(root) : std::string()) + ")";
    check_tensor(t, what);
    float* p = t.data();
    issue(what, true, [&] {
      return root >= 0 ? ncclBroadcast(p, p, n, ncclFloat32, root, comm_, comm_stream_)
                       : ncclAllReduce(p, p, n, ncclFloat32, ncclSum, comm_, comm_stream_);
    });
  }

  // Host values: copied through a pinned buffer and a device buffer on the comm stream (it
  // needs nothing from the compute stream), then the host waits for the result.
  void host_values(const std::string& what, double* values, int64_t n) {
    if (n <= 0) return;
    const size_t count = static_cast<size_t>(n), bytes = count * sizeof(double);
    if (count > capacity_) {
      size_t cap = std::max<size_t>(count, 64);
      if (host_buf_) DLT_CUDA(cudaFreeHost(host_buf_));
      if (dev_buf_) DLT_CUDA(cudaFree(dev_buf_));
      host_buf_ = dev_buf_ = nullptr;
      capacity_ = 0;
      DLT_CUDA(cudaMallocHost(reinterpret_cast<void**>(&host_buf_), cap * sizeof(double)));
      DLT_CUDA(cudaMalloc(reinterpret_cast<void**>(&dev_buf_), cap * sizeof(double)));
      capacity_ = cap;
    }
    std::memcpy(host_buf_, values, bytes);
    DLT_CUDA(cudaMemcpyAsync(dev_buf_, host_buf_, bytes, cudaMemcpyHostToDevice, comm_stream_));
    issue(what, false,
          [&] { return ncclAllReduce(dev_buf_, dev_buf_, count, ncclFloat64, ncclSum, comm_, comm_stream_); });
    DLT_CUDA(cudaMemcpyAsync(host_buf_, dev_buf_, bytes, cudaMemcpyDeviceToHost, comm_stream_));
    cudaEvent_t copied = take_event();
    DLT_CUDA(cudaEventRecord(copied, comm_stream_));
    const auto deadline = Clock::now() + timeout_;
    for (int spins = 0;; ++spins) {
      cudaError_t e = query_event(copied);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) fail(what, std::string("CUDA error ") + cudaGetErrorString(e));
      if (spins % 64 == 0) check_health(what);
      if (Clock::now() > deadline) fail(what, "timed out after " + seconds());
      if (spins > 200) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_events_.push_back(copied);
    }
    std::memcpy(values, host_buf_, bytes);
  }

  // The watchdog: retires finished collectives; on an asynchronous NCCL error or a collective
  // past its deadline (plus a grace period) aborts the communicator and calls on_fatal_.
  void watch() {
    cudaSetDevice(device_);
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_ && !aborted_) {
      wake_.wait_for(lock, std::chrono::milliseconds(100));
      if (stop_ || aborted_) break;
      while (!pending_.empty() && query_event(pending_.front().done) == cudaSuccess) {
        free_events_.push_back(pending_.front().done);
        pending_.pop_front();
      }
      std::string problem;
      ncclResult_t st = state_locked();
      if (st != ncclSuccess && st != ncclInProgress)
        problem = (pending_.empty() ? std::string("a collective") : pending_.front().what) +
                  " failed: " + error_text_locked(st);
      else if (!pending_.empty() && Clock::now() > pending_.front().deadline + kWatchdogGrace)
        problem = pending_.front().what + " failed: timed out after " + seconds();
      if (problem.empty()) continue;
      abort_locked();
      std::string message = who() + ": " + problem + hint();
      lock.unlock();
      if (on_fatal_) on_fatal_(message);
      return;
    }
  }

  const int rank_, size_, device_;
  const std::chrono::milliseconds timeout_;
  CommFatalHandler on_fatal_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t compute_ = nullptr;      // the backend's stream for this device (not owned)
  cudaStream_t comm_stream_ = nullptr;  // every NCCL call of this rank, in issue order
  cudaEvent_t ready_ = nullptr;         // compute stream -> comm stream ordering
  cudaEvent_t last_done_ = nullptr;     // completion of the latest collective (main thread only)
  double* host_buf_ = nullptr;          // pinned, capacity_ doubles
  double* dev_buf_ = nullptr;           // device, capacity_ doubles
  size_t capacity_ = 0;

  std::mutex mu_;  // guards every NCCL call, pending_, free_events_, aborted_, stop_
  std::condition_variable wake_;
  std::deque<Pending> pending_;  // issued, not known to be finished; in issue order
  std::vector<cudaEvent_t> free_events_;
  bool aborted_ = false;
  bool stop_ = false;
  std::thread watchdog_;
};

}  // namespace

std::string nccl_loaded_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "NCCL (version unknown)";
  // NCCL >= 2.9: major * 10000 + minor * 100 + patch
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::unique_ptr<Communicator> make_nccl_collectives(const NcclWorld& world, int device, CommFatalHandler on_fatal) {
  return std::make_unique<NcclCommunicator>(world, device, std::move(on_fatal));
}

}  // namespace dlt

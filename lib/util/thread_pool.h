// A fixed pool of worker threads with one blocking primitive, parallel_for. Used by the data
// loader to decode and augment images; not used for compute (oneDNN uses OpenMP).
// Thread safety: parallel_for may be called from one thread at a time per pool.
// Its workers are named NAME-0, NAME-1, ... (what `top -H`, gdb and /proc/PID/task/*/comm show).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dlt {

// Names the calling thread (the first 15 bytes of name: Linux's limit).
void set_thread_name(const std::string& name);

class ThreadPool {
 public:
  // threads <= 0: one per hardware thread. A pool of 1 runs work on its single worker.
  explicit ThreadPool(int threads, const std::string& name = "dlt-pool");
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }
  // Runs fn(i, worker) for i in [0, n) on the workers (worker in [0, size())) and waits.
  // Indices are handed out dynamically, in increasing order. After a call throws, indices not
  // yet started are skipped; once every started call has finished, the exception of the
  // lowest failing index is rethrown here (deterministic for any thread count).
  void parallel_for(int64_t n, const std::function<void(int64_t, int)>& fn);

 private:
  void worker_loop(int worker, const std::string& name);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  const std::function<void(int64_t, int)>* fn_ = nullptr;
  int64_t n_ = 0, next_ = 0, finished_ = 0, error_index_ = 0;
  uint64_t generation_ = 0;
  int active_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

// Threads to use when 0 ("automatic") is asked for.
int default_thread_count();

}  // namespace dlt

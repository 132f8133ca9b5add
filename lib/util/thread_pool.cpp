// ThreadPool: workers sleep on a condition variable until parallel_for publishes a range.
#include "util/thread_pool.h"

#include <pthread.h>

#include <algorithm>

namespace dlt {

int default_thread_count() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void set_thread_name(const std::string& name) { pthread_setname_np(pthread_self(), name.substr(0, 15).c_str()); }

ThreadPool::ThreadPool(int threads, const std::string& name) {
  if (threads <= 0) threads = default_thread_count();
  workers_.reserve(threads);
  for (int w = 0; w < threads; ++w)
    workers_.emplace_back([this, w, name] { worker_loop(w, name + "-" + std::to_string(w)); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int)>& fn) {
  if (n <= 0) return;
  std::unique_lock<std::mutex> lock(mu_);
  fn_ = &fn;
  n_ = n;
  next_ = 0;
  finished_ = 0;
  error_ = nullptr;
  ++generation_;
  work_cv_.notify_all();
  done_cv_.wait(lock, [&] { return finished_ == n_ && active_ == 0; });
  fn_ = nullptr;
  std::exception_ptr err = error_;
  error_ = nullptr;
  lock.unlock();
  if (err) std::rethrow_exception(err);
}

void ThreadPool::worker_loop(int worker, const std::string& name) {
  set_thread_name(name);
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || (generation_ != seen && next_ < n_); });
    if (stop_) return;
    seen = generation_;
    ++active_;
    while (next_ < n_) {
      int64_t i = next_++;
      const auto* fn = fn_;
      const bool skip = error_ != nullptr;  // after a failure the rest is only counted
      lock.unlock();
      std::exception_ptr err;
      try {
        if (!skip) (*fn)(i, worker);
      } catch (...) {
        err = std::current_exception();
      }
      lock.lock();
      if (err && (!error_ || i < error_index_)) {  // the lowest failing index wins
        error_ = err;
        error_index_ = i;
      }
      ++finished_;
    }
    --active_;
    if (finished_ == n_ && active_ == 0) done_cv_.notify_all();
  }
}

}  // namespace dlt

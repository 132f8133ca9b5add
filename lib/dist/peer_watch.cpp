// Heartbeats through rank 0's TCP store (peer_watch.h). The thread owns its share of the state
// (a shared_ptr), so a rank other than 0 can leave it behind when the communicator goes: its
// store call may wait for a stopped or cut-off rank 0, and the process must not.
#include "dist/peer_watch.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace dlt {

namespace {
using Clock = std::chrono::steady_clock;
constexpr int kMaxWatched = 64;  // larger worlds only watch rank 0's store (n^2 reads otherwise)
constexpr int kStale = 3;        // intervals without a beat after which a rank is lost
constexpr const char* kLostKey = "dlt-lost";

std::string key_of(int rank) { return "dlt-alive/" + std::to_string(rank); }

std::string seconds(Clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", std::chrono::duration<double>(d).count());
  return buf;
}
}  // namespace

struct PeerWatch::State {
  std::shared_ptr<KeyValueStore> store;
  std::string where;
  int rank = 0, size = 1;
  std::chrono::milliseconds interval{1000};
  mutable std::mutex mu;
  std::condition_variable cv;
  bool stop = false, done = false;
  // Per rank: the last counter read and when it last changed (this host's clock).
  std::vector<std::string> seen;
  std::vector<Clock::time_point> changed;
  Clock::time_point store_ok;  // the last store call that succeeded
  std::string store_error;     // why the store failed (it is not used again)
  std::string to_publish;      // this rank's verdict, for the others (set under kLostKey)
  bool published = false;
  std::string reported;  // another rank's verdict, read from kLostKey

  void run() {
    beat();
    std::lock_guard<std::mutex> lock(mu);
    store.reset();  // rank 0's server goes with the communicator, not later with this thread
    done = true;
    cv.notify_all();
  }

  void beat() {
    uint64_t count = 0;
    std::string publish;
    for (;;) {
      try {
        if (!publish.empty()) store->set(kLostKey, publish);
        store->set(key_of(rank), std::to_string(++count));
        std::vector<std::pair<int, std::string>> values;
        if (size <= kMaxWatched)
          for (int r = 0; r < size; ++r)
            if (r != rank) values.emplace_back(r, store->try_get(key_of(r)).value_or(""));
        std::string lost = store->try_get(kLostKey).value_or("");
        std::lock_guard<std::mutex> lock(mu);
        const auto now = Clock::now();
        store_ok = now;
        for (auto& [r, v] : values)
          if (v != seen[r]) seen[r] = std::move(v), changed[r] = now;
        if (!publish.empty()) published = true, cv.notify_all();
        if (reported.empty() && !lost.empty() && to_publish.empty()) reported = lost;
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        store_error = e.what();
        return;  // the connection is broken or out of step: rank 0 is gone for this rank
      }
      std::unique_lock<std::mutex> lock(mu);
      publish.clear();
      if (cv.wait_for(lock, interval, [&] { return stop || (!to_publish.empty() && !published); })) {
        if (stop) return;
        publish = to_publish;
      }
    }
  }

  // The verdict now; empty when nothing is lost yet. A rank counts as lost when its counter
  // stood still for kStale intervals while this rank could still read the store (once rank
  // 0 is gone, every counter stands still). First this rank's own finding, then one another
  // rank published (a rank that fails later because an earlier one exited still names the
  // first loss), then rank 0's store.
  std::string verdict() {
    std::lock_guard<std::mutex> lock(mu);
    const auto now = Clock::now();
    const auto stale = kStale * interval;
    std::string ranks;
    int n = 0;
    auto oldest = now;
    if (size <= kMaxWatched)
      for (int r = 0; r < size; ++r)
        if (r != rank && store_ok - changed[r] > stale) {
          ranks += (n++ ? ", " : "") + std::to_string(r);
          oldest = std::min(oldest, changed[r]);
        }
    if (n > 0) {
      std::string v = std::string(n == 1 ? "lost rank " : "lost ranks ") + ranks + " (no heartbeat for " +
                      seconds(now - oldest) + " s";
      if (to_publish.empty()) to_publish = v + ", seen by rank " + std::to_string(rank) + ")", cv.notify_all();
      return v + ")";
    }
    if (!reported.empty()) return reported;
    if (rank != 0 && (!store_error.empty() || now - store_ok > stale))
      return "lost rank 0 (" + where + ", which it runs, " +
             (store_error.empty() ? "has not answered for " + seconds(now - store_ok) + " s" : "closed or broke off") +
             ")";
    return "";
  }
};

std::chrono::milliseconds PeerWatch::interval_for(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 8, std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
}

PeerWatch::PeerWatch(std::shared_ptr<KeyValueStore> store, std::string where, int rank, int size,
                     std::chrono::milliseconds timeout)
    : state_(std::make_shared<State>()) {
  State& s = *state_;
  s.store = std::move(store);
  s.where = std::move(where);
  s.rank = rank;
  s.size = size;
  s.interval = interval_for(timeout);
  s.seen.assign(static_cast<size_t>(size), "");
  s.changed.assign(static_cast<size_t>(size), Clock::now());
  s.store_ok = Clock::now();
  std::thread([st = state_] { st->run(); }).detach();
}

PeerWatch::~PeerWatch() {
  std::unique_lock<std::mutex> lock(state_->mu);
  // Rank 0 found the lost rank: its server stays up 2 more intervals, so that the others read
  // that verdict rather than name rank 0, whose exit they see next.
  if (state_->rank == 0 && !state_->to_publish.empty()) {
    state_->cv.wait_for(lock, 2 * state_->interval, [&] { return state_->published; });
    state_->cv.wait_for(lock, 2 * state_->interval, [] { return false; });
  }
  state_->stop = true;
  state_->cv.notify_all();
  // Rank 0's calls are local and quick; another rank's may wait for a lost rank 0, and the
  // thread finishes on its own (it owns the connection).
  if (state_->rank == 0) state_->cv.wait(lock, [&] { return state_->done; });
}

std::string PeerWatch::lost_ranks() {
  const auto deadline = Clock::now() + 4 * state_->interval;
  for (;;) {
    std::string v = state_->verdict();
    if (!v.empty() || Clock::now() >= deadline) return v;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace dlt

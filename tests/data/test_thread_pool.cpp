// ThreadPool (lib/util/thread_pool.h, used by the data loader): coverage, errors, reuse.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/thread_pool.h"

using namespace dlt;

TEST_CASE("ThreadPool runs every index once and reports the lowest failure", "[data]") {
  ThreadPool pool(3);
  CHECK(pool.size() == 3);
  std::vector<std::atomic<int>> hits(1000);
  std::atomic<int> bad_worker{0};  // Catch assertions are not thread-safe: count, check after
  pool.parallel_for(1000, [&](int64_t i, int worker) {
    if (worker < 0 || worker >= 3) bad_worker++;
    hits[i]++;
  });
  CHECK(bad_worker.load() == 0);
  for (auto& h : hits) CHECK(h.load() == 1);
  for (int rep = 0; rep < 20; ++rep) {
    try {
      pool.parallel_for(64, [](int64_t i, int) {
        if (i >= 5 && i % 5 == 0) throw std::runtime_error("item " + std::to_string(i));
      });
      FAIL("no exception");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "item 5");
    }
  }
  std::atomic<int64_t> sum{0};
  pool.parallel_for(10, [&](int64_t i, int) { sum += i; });  // usable after a failure
  CHECK(sum.load() == 45);
}

TEST_CASE("ThreadPool names its workers NAME-K; set_thread_name keeps 15 bytes", "[data]") {
  ThreadPool pool(3, "dlt-test");
  std::vector<std::string> names(pool.size());
  pool.parallel_for(64, [&](int64_t, int worker) {
    char buf[16] = {};
    pthread_getname_np(pthread_self(), buf, sizeof buf);
    names[worker] = buf;  // each worker writes only its own slot
  });
  for (int w = 0; w < pool.size(); ++w)
    if (!names[w].empty()) CHECK(names[w] == "dlt-test-" + std::to_string(w));
  CHECK(std::count_if(names.begin(), names.end(), [](const std::string& n) { return !n.empty(); }) >= 1);

  std::string seen;
  std::thread([&] {
    set_thread_name("a-name-longer-than-fifteen");
    char buf[16] = {};
    pthread_getname_np(pthread_self(), buf, sizeof buf);
    seen = buf;
  }).join();
  CHECK(seen == "a-name-longer-t");
}

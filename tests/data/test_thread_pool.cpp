// ThreadPool (lib/util/thread_pool.h, used by the data loader): coverage, errors, reuse.
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

// PeerWatch (dist/peer_watch.h): three ranks beating through rank 0's store on loopback. A rank
// that stops beating is named by the others; rank 0's store going away is "lost rank 0"; a
// rank that fails after the first loss (rank 0 found it and exits) names that first loss.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "dist/peer_watch.h"
#include "dist/tcp_store.h"

using namespace dlt;
using namespace std::chrono_literals;

namespace {
// A timeout of 1.6 s: heartbeats every 200 ms, a rank is lost after 600 ms without one.
constexpr auto kTimeout = 1600ms;

struct World {
  int port = 0;
  std::shared_ptr<KeyValueStore> server;
  std::unique_ptr<PeerWatch> watch[3];
  World() {
    server = serve_tcp_store(0, "rank 0 of 3", &port);
    watch[0] = std::make_unique<PeerWatch>(server, server->where(), 0, 3, kTimeout);
    for (int r = 1; r < 3; ++r) {
      std::shared_ptr<KeyValueStore> c = connect_tcp_store(TcpAddress{"127.0.0.1", port}, kTimeout, "rank");
      watch[r] = std::make_unique<PeerWatch>(c, c->where(), r, 3, kTimeout);
    }
  }
};
}  // namespace

TEST_CASE("peer watch: the interval follows the timeout", "[dist]") {
  CHECK(PeerWatch::interval_for(60s) == 2s);
  CHECK(PeerWatch::interval_for(3s) == 375ms);
  CHECK(PeerWatch::interval_for(100ms) == 100ms);
}

TEST_CASE("peer watch: every rank alive, then one stops beating", "[dist]") {
  World w;
  std::this_thread::sleep_for(700ms);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(w.watch[1]->lost_ranks().empty());  // waits 4 intervals for evidence, finds none
  CHECK(std::chrono::steady_clock::now() - t0 >= 790ms);
  w.watch[2].reset();  // rank 2 stops beating (as if stopped, killed or cut off)
  const std::string seen1 = w.watch[1]->lost_ranks();
  CHECK(seen1.rfind("lost rank 2 (no heartbeat for", 0) == 0);
  CHECK(w.watch[0]->lost_ranks().rfind("lost rank 2 (", 0) == 0);
}

TEST_CASE("peer watch: rank 0 gone is lost rank 0; a later failure names the first loss", "[dist]") {
  SECTION("rank 0's store closes") {
    World w;
    std::this_thread::sleep_for(400ms);
    w.watch[0].reset();
    w.server.reset();  // the last owner: the server stops
    const std::string v = w.watch[1]->lost_ranks();
    CHECK(v.rfind("lost rank 0 (the rendezvous server at 127.0.0.1:", 0) == 0);
    CHECK(v.find(", which it runs, closed or broke off)") != std::string::npos);
  }
  SECTION("rank 0 found rank 2 lost and exits: rank 1, failing next, still names rank 2") {
    World w;
    std::this_thread::sleep_for(400ms);
    w.watch[2].reset();
    CHECK(w.watch[0]->lost_ranks().rfind("lost rank 2 (", 0) == 0);
    w.watch[0].reset();  // stays 2 intervals for the others to read its verdict
    w.server.reset();
    CHECK(w.watch[1]->lost_ranks().rfind("lost rank 2 (", 0) == 0);
  }
}

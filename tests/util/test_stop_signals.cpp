// StopSignals (util/stop_signals.h): a first SIGINT or SIGTERM is only recorded; the earlier
// handlers come back with the destructor; an ignored signal stays ignored. (A second signal's
// default action ends the process: tests/cli/stop_signal.sh.)
#include <catch2/catch.hpp>
#include <csignal>
#include <string>

#include "util/stop_signals.h"

namespace {
volatile sig_atomic_t g_outer = 0;
void outer_handler(int sig) { g_outer = sig; }
}  // namespace

using dlt::StopSignals;

TEST_CASE("stop signals: the first is recorded, the process goes on", "[util][signals]") {
  struct sigaction outer {
  }, before{};
  outer.sa_handler = outer_handler;
  sigemptyset(&outer.sa_mask);
  sigaction(SIGINT, &outer, &before);
  {
    StopSignals s;
    CHECK(s.received() == 0);
    raise(SIGINT);  // delivered before raise returns (this thread, not blocked)
    CHECK(s.received() == SIGINT);
    CHECK(g_outer == 0);  // the earlier handler was replaced
  }
  {
    StopSignals s;  // a new one starts with none received
    CHECK(s.received() == 0);
  }
  raise(SIGINT);  // the earlier handler is back
  CHECK(g_outer == SIGINT);
  sigaction(SIGINT, &before, nullptr);
  CHECK(std::string(dlt::signal_name(SIGINT)) == "SIGINT");
  CHECK(std::string(dlt::signal_name(SIGTERM)) == "SIGTERM");
}

TEST_CASE("stop signals: SIGTERM is recorded; an ignored signal stays ignored", "[util][signals]") {
  struct sigaction ignore {
  }, before{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, &before);
  {
    StopSignals s;
    raise(SIGINT);  // ignored: nothing recorded
    CHECK(s.received() == 0);
    raise(SIGTERM);
    CHECK(s.received() == SIGTERM);
    struct sigaction now {};
    sigaction(SIGINT, nullptr, &now);
    CHECK(now.sa_handler == SIG_IGN);
  }
  sigaction(SIGINT, &before, nullptr);
}

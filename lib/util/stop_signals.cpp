// StopSignals (stop_signals.h): the handler does only async-signal-safe things: an atomic
// exchange, write(2) of a fixed line, and on a second signal signal() and raise().
#include "util/stop_signals.h"

#include <unistd.h>

#include <atomic>

namespace dlt {

namespace {

std::atomic<int> g_received{0};
static_assert(std::atomic<int>::is_always_lock_free);

constexpr char kIntLine[] = "\ndltrain: SIGINT: stopping after this iteration (press Ctrl-C again to stop at once)\n";
constexpr char kTermLine[] = "\ndltrain: SIGTERM: stopping after this iteration (send it again to stop at once)\n";

void on_stop_signal(int sig) {
  int none = 0;
  if (g_received.compare_exchange_strong(none, sig)) {
    const char* line = sig == SIGINT ? kIntLine : kTermLine;
    const size_t n = sig == SIGINT ? sizeof kIntLine - 1 : sizeof kTermLine - 1;
    [[maybe_unused]] ssize_t w = write(STDERR_FILENO, line, n);
    return;
  }
  // The second: the default action (blocked until this handler returns, then it ends the process).
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

StopSignals::StopSignals() {
  g_received.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  // A signal the process was started ignoring (`nohup`, a shell's background job) stays ignored.
  if (old_int_.sa_handler == SIG_IGN) sigaction(SIGINT, &old_int_, nullptr);
  if (old_term_.sa_handler == SIG_IGN) sigaction(SIGTERM, &old_term_, nullptr);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

int StopSignals::received() const { return g_received.load(); }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "a signal";
  }
}

}  // namespace dlt

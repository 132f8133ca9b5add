// StopSignals: while one lives, the first SIGINT or SIGTERM only asks the process to stop
// (the handler records the signal in an atomic and says on stderr that the run stops after
// this iteration); a second one of either kind takes the default action at once. The
// destructor puts the earlier handlers back. A signal that was ignored when it was made (the
// process was started ignoring it) stays ignored. One at a time per process.
#pragma once
#include <csignal>

namespace dlt {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first signal received since construction (SIGINT, SIGTERM), 0 for none.
  int received() const;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// "SIGINT", "SIGTERM", else "a signal".
const char* signal_name(int sig);

}  // namespace dlt

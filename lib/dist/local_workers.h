// Local worker processes: `dltrain train` with ExecutionEnvironment parallel / multi-gpu and
// no cluster launcher re-executes /proc/self/exe once per rank with a hidden --worker-rank
// flag, watches them, and stops them all when one fails or on Ctrl-C. The workers find each
// other through the directory it gives them (launcher_env.h reads it back).
#pragma once
#include <string>
#include <vector>

namespace dlt {

struct LocalLaunch {
  std::vector<std::string> args;  // argv of this process (argv[0] is replaced by /proc/self/exe)
  int workers = 2;
  int threads_per_worker = 0;      // > 0: appends --threads N
  double stop_grace_seconds = 10;  // SIGTERM, then SIGKILL after this long
};

// Starts the workers (env DLT_RENDEZVOUS = a fresh directory, DLT_WORLD_SIZE), waits for
// all. Returns 0 when all succeed. Otherwise stops the others and returns 3 after printing
// one line to stderr naming the first failing rank and its cause (signal, exit code and the
// worker's own error message); Ctrl-C / SIGTERM stop every worker (returns 130 / 143).
int run_local_workers(const LocalLaunch& launch);

// This process's command line (/proc/self/cmdline), to start workers with the same arguments.
std::vector<std::string> self_command_line();

}  // namespace dlt

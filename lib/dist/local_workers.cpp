// Local worker processes (local_workers.h): fork + exec of /proc/self/exe per rank, watched
// until all finish; the first failure (or Ctrl-C) stops the rest, and one line names the cause.
#include "dist/local_workers.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "util/error.h"

extern char** environ;

namespace dlt {

namespace fs = std::filesystem;

namespace {

volatile sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

std::string describe(int status) {
  if (WIFSIGNALED(status)) {
    int s = WTERMSIG(status);
    return "was killed by signal " + std::to_string(s) + " (" + strsignal(s) + ")";
  }
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

}  // namespace

std::vector<std::string> self_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  if (args.empty()) throw CommError("cannot read /proc/self/cmdline to start the worker processes");
  return args;
}

int run_local_workers(const LocalLaunch& l) {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = (fs::path(tmp && *tmp ? tmp : "/tmp") / "dltrain-rendezvous-XXXXXX").string();
  if (!mkdtemp(tmpl.data()))
    throw CommError("cannot create the rendezvous directory " + tmpl + ": " + std::strerror(errno) +
                    " (set TMPDIR to a writable directory)");
  const std::string dir = tmpl;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  // The workers' environment, made before fork: the child of a multithreaded process (the
  // CUDA driver's threads, started by cuda_device_count()) may only make async-signal-safe
  // calls until exec, and setenv is not one (its lock may be held by a thread that is gone).
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const std::string key = kv.substr(0, kv.find('='));
    if (key != "DLT_RENDEZVOUS" && key != "DLT_WORLD_SIZE" && key != "DLT_LOCAL_LAUNCH") env_strings.push_back(kv);
  }
  env_strings.push_back("DLT_RENDEZVOUS=" + dir);
  env_strings.push_back("DLT_WORLD_SIZE=" + std::to_string(l.workers));
  env_strings.push_back("DLT_LOCAL_LAUNCH=1");
  std::vector<char*> envp;
  for (auto& kv : env_strings) envp.push_back(kv.data());
  envp.push_back(nullptr);

  const pid_t parent = getpid();
  std::vector<pid_t> pids(l.workers, -1);
  for (int r = 0; r < l.workers; ++r) {
    std::vector<std::string> args = l.args;
    args.push_back("--worker-rank");
    args.push_back(std::to_string(r));
    if (l.threads_per_worker > 0) {
      args.push_back("--threads");
      args.push_back(std::to_string(l.threads_per_worker));
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGKILL);
      throw CommError(std::string("cannot start worker processes: fork failed: ") + std::strerror(errno));
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // no orphans when the launcher itself is killed
      if (getppid() != parent) _exit(1);
      sigaction(SIGINT, &old_int, nullptr);
      sigaction(SIGTERM, &old_term, nullptr);
      execve("/proc/self/exe", argv.data(), envp.data());
      std::fprintf(stderr, "dltrain: worker %d: cannot run /proc/self/exe: %s\n", r, std::strerror(errno));
      _exit(127);
    }
    pids[r] = pid;
  }

  // Watch: the first failure (or a stop signal) stops the rest.
  std::vector<int> status(l.workers, 0);
  std::vector<bool> done(l.workers, false), stopped_by_us(l.workers, false);
  std::vector<int> reaped_failures;  // ranks, in the order their failure was seen
  int alive = l.workers;
  bool stopping = false;
  auto kill_deadline = std::chrono::steady_clock::time_point::max();
  while (alive > 0) {
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < l.workers; ++r) {
        if (pids[r] != pid) continue;
        done[r] = true;
        status[r] = st;
        --alive;
        bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (!ok && !stopped_by_us[r]) reaped_failures.push_back(r);
      }
      continue;
    }
    if ((!reaped_failures.empty() || g_stop_signal) && !stopping) {
      stopping = true;
      for (int r = 0; r < l.workers; ++r)
        if (!done[r]) {
          stopped_by_us[r] = true;
          kill(pids[r], SIGTERM);
          kill(pids[r], SIGCONT);  // a stopped (SIGSTOP) worker acts on SIGTERM only when continued
        }
      kill_deadline = std::chrono::steady_clock::now() +
                      std::chrono::milliseconds(static_cast<int64_t>(l.stop_grace_seconds * 1000));
    }
    if (stopping && std::chrono::steady_clock::now() > kill_deadline) {
      for (int r = 0; r < l.workers; ++r)
        if (!done[r]) kill(pids[r], SIGKILL);
      kill_deadline = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);

  // The root cause, in the order the failures were seen: a worker killed by a signal from
  // outside, else one that failed on its own (not a communication error, exit code 3,
  // caused by another's death), else the first failure.
  int cause = reaped_failures.empty() ? -1 : reaped_failures.front();
  std::function<bool(int)> external = [&](int r) { return WIFSIGNALED(status[r]) && WTERMSIG(status[r]) != SIGPIPE; };
  std::function<bool(int)> own = [&](int r) { return WIFEXITED(status[r]) && WEXITSTATUS(status[r]) != 3; };
  for (const auto& wanted : {external, own}) {
    auto it = std::find_if(reaped_failures.begin(), reaped_failures.end(), wanted);
    if (it != reaped_failures.end()) {
      cause = *it;
      break;
    }
  }
  std::string message = cause >= 0
                            ? first_line((fs::path(dir) / ("error-rank-" + std::to_string(cause) + ".txt")).string())
                            : std::string();
  std::error_code ec;
  fs::remove_all(dir, ec);
  int others = l.workers - 1;
  if (g_stop_signal) {
    int sig = g_stop_signal;
    std::fprintf(stderr, "dltrain: interrupted by signal %d (%s); stopped all %d workers\n", sig, strsignal(sig),
                 l.workers);
    return 128 + sig;
  }
  if (cause >= 0) {
    const std::string stopped = others > 0 ? "; stopped the other " + std::to_string(others) + " worker(s)" : "";
    std::fprintf(stderr, "dltrain: worker error: rank %d of %d %s%s%s%s\n", cause, l.workers,
                 describe(status[cause]).c_str(), message.empty() ? "" : ": ", message.c_str(), stopped.c_str());
    return 3;
  }
  return 0;
}

}  // namespace dlt

// Launcher: cluster launcher variables, local worker processes (fork + exec of
// /proc/self/exe) watched until all finish (the first failure stops the rest), and which
// GPU each GPU worker takes.
#include "dist/launcher.h"

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

#include "backend/backend.h"
#include "build_config.h"
#include "dist/communicator.h"
#include "dist/host_address.h"
#include "dist/tcp_store.h"
#include "util/error.h"
#if DLT_HAVE_NCCL
#include "dist/nccl_communicator.h"
#endif

extern char** environ;

namespace dlt {

namespace fs = std::filesystem;

namespace {

using Env = std::map<std::string, std::string>;

const std::string* find(const Env& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? nullptr : &it->second;
}

int parse_int(const Env& env, const std::string& key, int min_value) {
  const std::string* v = find(env, key);
  if (!v) return -1;
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno != 0 || x < min_value || x > 1000000)
    throw ConfigError("environment variable " + key + " is '" + *v + "'; it must be an integer >= " +
                      std::to_string(min_value) + " (set by the cluster launcher: check how dltrain was started)");
  return static_cast<int>(x);
}

// rank / size / local_rank from three variables; source "none" when rank_var is unset.
WorldInfo read_world(const Env& env, const std::string& source, const std::string& rank_var,
                     const std::string& size_var, const std::string& local_var) {
  WorldInfo w;
  int rank = parse_int(env, rank_var, 0);
  if (rank < 0) return w;
  int size = parse_int(env, size_var, 1);
  if (size < 0)
    throw ConfigError(rank_var + " is set but " + size_var + " is not (" + source +
                      " sets both; start dltrain through the launcher or unset " + rank_var + ")");
  if (rank >= size)
    throw ConfigError(rank_var + " is " + std::to_string(rank) + " but " + size_var + " is " + std::to_string(size) +
                      " (ranks run from 0 to " + size_var + " - 1)");
  int local = parse_int(env, local_var, 0);
  w.rank = rank;
  w.size = size;
  w.local_rank = local < 0 ? 0 : local;
  w.source = source;
  return w;
}

std::string get(const Env& env, const std::string& key) {
  const std::string* v = find(env, key);
  return v ? *v : std::string();
}

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

WorldInfo parse_launcher_env(const Env& env) {
  WorldInfo w = read_world(env, "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK");
  if (w.source != "none") {
    std::string addr = get(env, "MASTER_ADDR"), port = get(env, "MASTER_PORT");
    if (!addr.empty() && !port.empty()) w.master = addr + ":" + port;
    w.job_id = get(env, "TORCHELASTIC_RUN_ID");
    if (w.job_id.empty() || w.job_id == "none") w.job_id = w.master;
    return w;
  }
  w = read_world(env, "mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK");
  if (w.source != "none") {
    w.job_id = get(env, "OMPI_MCA_ess_base_jobid");
    if (w.job_id.empty()) w.job_id = get(env, "OMPI_MCA_orte_ess_jobid");
    return w;
  }
  w = read_world(env, "slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID");
  if (w.source != "none") {
    w.job_id = get(env, "SLURM_JOB_ID");
    std::string step = get(env, "SLURM_STEP_ID");
    if (!step.empty()) w.job_id += "." + step;
  }
  return w;
}

Env environment_map() {
  Env env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::string cluster_rendezvous_dir(const WorldInfo& world, const std::string& output_dir, const Env& env) {
  std::string dir = get(env, "DLT_RENDEZVOUS");
  if (!dir.empty()) return dir;
  std::string id = world.job_id.empty() ? "default" : world.job_id;
  for (char& c : id)
    if (c == '/' || c == ':') c = '_';
  return (fs::path(output_dir) / ".rendezvous" / (world.source + "-" + id)).string();
}

namespace {
// torchrun --standalone names this machine (Python's socket.getfqdn()) as MASTER_ADDR. Where
// that name does not resolve and every rank runs here, the ranks meet at loopback instead:
// rank 0's server listens on every interface.
TcpAddress reachable(TcpAddress a, const WorldInfo& world, const Env& env) {
  if (world_on_this_host(world, "", env) && !host_resolves(a.host)) a.host = "127.0.0.1";
  return a;
}
}  // namespace

void set_cluster_rendezvous(CommOptions& o, const WorldInfo& world, const std::string& output_dir, const Env& env) {
  const std::string given = get(env, "DLT_RENDEZVOUS");
  constexpr const char* kTcp = "tcp://";
  if (given.rfind(kTcp, 0) == 0) {
    o.rendezvous_tcp = reachable(parse_tcp_address(given.substr(std::strlen(kTcp)), "DLT_RENDEZVOUS"), world, env).str();
    return;
  }
  if (given.empty() && world.source == "torchrun" && !world.master.empty()) {
    TcpAddress a = parse_tcp_address(world.master, "MASTER_ADDR:MASTER_PORT");
    const std::string agent = get(env, "TORCHELASTIC_USE_AGENT_STORE");
    if (agent == "True" || agent == "true" || agent == "1") {
      if (a.port == 65535)
        throw ConfigError("MASTER_PORT is 65535 and torchrun's agent holds it (TORCHELASTIC_USE_AGENT_STORE=" + agent +
                          "), so dltrain's rendezvous would need port 65536: choose a lower --master-port or set "
                          "DLT_RENDEZVOUS=tcp://HOST:PORT");
      ++a.port;
    }
    o.rendezvous_tcp = reachable(a, world, env).str();
    return;
  }
  o.rendezvous_dir = cluster_rendezvous_dir(world, output_dir, env);
}

std::vector<std::string> self_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  if (args.empty()) throw CommError("cannot read /proc/self/cmdline to start the worker processes");
  return args;
}

WorldInfo local_worker_world(int rank, const Env& env) {
  WorldInfo w;
  int size = parse_int(env, "DLT_WORLD_SIZE", 1);
  if (size < 0 || get(env, "DLT_RENDEZVOUS").empty())
    throw UsageError("--worker-rank is for the worker processes dltrain starts itself (DLT_WORLD_SIZE and "
                     "DLT_RENDEZVOUS are not set); leave it out");
  if (rank >= size)
    throw UsageError("--worker-rank " + std::to_string(rank) + " is outside a world of " + std::to_string(size));
  w.rank = w.local_rank = rank;
  w.size = size;
  w.source = "local";
  return w;
}

std::shared_ptr<Communicator> join_world(const WorldInfo& w, const std::string& output_dir, const Env& env) {
  CommOptions o;
  o.rank = w.rank;
  o.size = w.size;
  o.timeout = comm_timeout_from_env();
  if (w.source == "local") {
    o.rendezvous_dir = get(env, "DLT_RENDEZVOUS");
    o.hostname = "127.0.0.1";
  } else {
    set_cluster_rendezvous(o, w, output_dir, env);
    const std::string who = "rank " + std::to_string(w.rank) + " of " + std::to_string(w.size);
    o.hostname = gloo_address(env, world_on_this_host(w, o.rendezvous_tcp, env), who);
  }
  return make_cpu_communicator(o);
}

std::string worker_error_file(int rank) {
  const char* dir = std::getenv("DLT_RENDEZVOUS");
  const char* local = std::getenv("DLT_LOCAL_LAUNCH");
  if (!dir || !local || std::string(local) != "1") return {};
  return (fs::path(dir) / ("error-rank-" + std::to_string(rank) + ".txt")).string();
}

bool uses_gpu_workers(const std::string& environment) {
  if (environment == "multi-gpu") return true;
  return environment == "parallel" && DLT_HAVE_NCCL && cuda_device_count() > 0;
}

std::vector<std::string> parse_visible_devices(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    std::string e = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    e.erase(0, e.find_first_not_of(' '));
    e.erase(e.find_last_not_of(' ') + 1);
    bool index = !e.empty() && e.find_first_not_of("0123456789") == std::string::npos;
    bool uuid = e.rfind("GPU-", 0) == 0 || e.rfind("MIG-", 0) == 0;
    if (!index && !uuid) break;  // CUDA ignores this entry and every one after it
    out.push_back(e);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void check_gpu_workers(int visible_gpus, const Env& env, bool have_cuda, bool have_nccl) {
  const std::string head = "ExecutionEnvironment 'multi-gpu' needs ";
  if (!have_cuda)
    throw DeviceError(head + "CUDA GPUs, but this dltrain was built without CUDA (rebuild with the CUDA "
                             "toolkit, cuDNN and NCCL; use 'parallel' for CPU workers)");
  if (!have_nccl)
    throw DeviceError(head + "NCCL, but this dltrain was built without it (install NCCL and rebuild; "
                             "'gpu' trains on one GPU)");
  if (visible_gpus <= 0) {
    const std::string* cvd = find(env, "CUDA_VISIBLE_DEVICES");
    std::string why = cvd && parse_visible_devices(*cvd).empty()
                          ? "CUDA_VISIBLE_DEVICES='" + *cvd + "' hides them all"
                          : "check nvidia-smi and the driver";
    throw DeviceError(head + "CUDA GPUs, but none is visible (" + why + "; use 'parallel' for CPU workers)");
  }
}

void check_gpu_workers(int visible_gpus, const Env& env) {
  check_gpu_workers(visible_gpus, env, DLT_HAVE_CUDA != 0, DLT_HAVE_NCCL != 0);
}

int gpu_worker_count(int num_workers, int visible_gpus) {
  if (num_workers <= 0) return visible_gpus;
  if (num_workers > visible_gpus)
    throw DeviceError("NumWorkers is " + std::to_string(num_workers) + " but only " + std::to_string(visible_gpus) +
                      " GPU(s) are visible; NCCL needs one GPU per worker (set NumWorkers to at most " +
                      std::to_string(visible_gpus) + ", or 0 for one per GPU)");
  return num_workers;
}

int gpu_for_rank(const WorldInfo& w, int visible_gpus) {
  if (visible_gpus == 1) return 0;
  if (w.local_rank < visible_gpus) return w.local_rank;
  throw DeviceError("rank " + std::to_string(w.rank) + " of " + std::to_string(w.size) + " is local rank " +
                    std::to_string(w.local_rank) + " on its node, which has only " + std::to_string(visible_gpus) +
                    " GPU(s) visible; NCCL needs one GPU per rank (start at most " + std::to_string(visible_gpus) +
                    " tasks per node, or bind one GPU per task: srun --gpus-per-task=1)");
}

namespace {

// The NCCL watchdog's last word: one line where the launcher (or the user) reads it, exit 3.
[[maybe_unused]] void exit_on_comm_failure(int rank, const std::string& message) {
  std::string file = worker_error_file(rank);
  if (!file.empty()) {
    std::ofstream(file) << message << "\n";
  } else {
    std::fprintf(stderr, "dltrain: communication error: %s\n", message.c_str());
    std::fflush(stderr);
  }
  _exit(3);
}

}  // namespace

std::shared_ptr<Communicator> join_gpu_world(const WorldInfo& w, int device, const std::string& output_dir,
                                             const Env& env) {
  if (w.size <= 1) return std::make_shared<LocalCommunicator>();
#if DLT_HAVE_NCCL
  CommOptions o;
  o.rank = w.rank;
  o.size = w.size;
  o.timeout = comm_timeout_from_env();
  if (w.source == "local")
    o.rendezvous_dir = get(env, "DLT_RENDEZVOUS");
  else
    set_cluster_rendezvous(o, w, output_dir, env);
  const int rank = w.rank;
  return make_nccl_communicator(o, device, [rank](const std::string& m) { exit_on_comm_failure(rank, m); });
#else
  (void)device, (void)output_dir, (void)env;
  throw DeviceError("rank " + std::to_string(w.rank) + ": this dltrain was built without NCCL, so GPU workers " +
                    "cannot communicate (install NCCL and rebuild with CUDA; 'gpu' trains on one GPU, " +
                    "'parallel' on CPU workers in a build without GPUs)");
#endif
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
  struct sigaction old_int {}, old_term {};
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
  std::string message = cause >= 0 ? first_line((fs::path(dir) / ("error-rank-" + std::to_string(cause) + ".txt")).string())
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
    std::fprintf(stderr, "dltrain: worker error: rank %d of %d %s%s%s; stopped the other %d worker(s)\n", cause,
                 l.workers, describe(status[cause]).c_str(), message.empty() ? "" : ": ", message.c_str(), others);
    return 3;
  }
  return 0;
}

}  // namespace dlt

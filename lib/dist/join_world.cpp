// Joining the world (join_world.h): the rendezvous a cluster job's ranks meet at, then
// Gloo (CPU ranks) or NCCL (GPU ranks), and the NCCL watchdog's exit on a failed collective.
#include "dist/join_world.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "backend/cuda_plugin.h"
#include "build_config.h"
#include "dist/communicator.h"
#include "dist/host_address.h"
#include "dist/nccl_communicator.h"
#include "dist/tcp_store.h"
#include "util/error.h"

namespace dlt {

namespace fs = std::filesystem;
using Env = std::map<std::string, std::string>;

std::string cluster_rendezvous_dir(const WorldInfo& world, const std::string& output_dir, const Env& env) {
  std::string dir = env_value(env, "DLT_RENDEZVOUS");
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
  const std::string given = env_value(env, "DLT_RENDEZVOUS");
  constexpr const char* kTcp = "tcp://";
  if (given.rfind(kTcp, 0) == 0) {
    o.rendezvous_tcp =
        reachable(parse_tcp_address(given.substr(std::strlen(kTcp)), "DLT_RENDEZVOUS"), world, env).str();
    return;
  }
  if (given.empty() && world.source == "torchrun" && !world.master.empty()) {
    TcpAddress a = parse_tcp_address(world.master, "MASTER_ADDR:MASTER_PORT");
    const std::string agent = env_value(env, "TORCHELASTIC_USE_AGENT_STORE");
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

std::shared_ptr<Communicator> join_world(const WorldInfo& w, const std::string& output_dir, const Env& env,
                                         const CommOptions& settings) {
  CommOptions o = settings;
  o.rank = w.rank;
  o.size = w.size;
  if (w.source == "local") {
    o.rendezvous_dir = env_value(env, "DLT_RENDEZVOUS");
    o.hostname = "127.0.0.1";
  } else {
    set_cluster_rendezvous(o, w, output_dir, env);
    const std::string who = "rank " + std::to_string(w.rank) + " of " + std::to_string(w.size);
    o.hostname = gloo_address(env, world_on_this_host(w, o.rendezvous_tcp, env), who);
  }
  return make_cpu_communicator(o);
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

std::string nccl_library_version() {
  const CudaPluginApi* plugin = DLT_HAVE_NCCL ? cuda_plugin() : nullptr;
  return plugin && plugin->nccl_version ? plugin->nccl_version() : "";
}

std::shared_ptr<Communicator> join_gpu_world(const WorldInfo& w, int device, const std::string& output_dir,
                                             const Env& env, const CommOptions& settings) {
  if (w.size <= 1) return std::make_shared<LocalCommunicator>();
#if DLT_HAVE_NCCL
  CommOptions o = settings;
  o.rank = w.rank;
  o.size = w.size;
  if (w.source == "local")
    o.rendezvous_dir = env_value(env, "DLT_RENDEZVOUS");
  else
    set_cluster_rendezvous(o, w, output_dir, env);
  const int rank = w.rank;
  return make_nccl_communicator(o, device, [rank](const std::string& m) { exit_on_comm_failure(rank, m); });
#else
  (void)device, (void)output_dir, (void)env, (void)settings;
  throw DeviceError("rank " + std::to_string(w.rank) + ": this dltrain was built without NCCL, so GPU workers " +
                    "cannot communicate (install NCCL and rebuild with CUDA; 'gpu' trains on one GPU, " +
                    "'parallel' on CPU workers in a build without GPUs)");
#endif
}

}  // namespace dlt

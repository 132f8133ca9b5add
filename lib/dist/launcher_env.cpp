// Launcher variables -> WorldInfo (launcher_env.h): torchrun, Open MPI, SLURM, and the
// local workers' own DLT_WORLD_SIZE / DLT_RENDEZVOUS / DLT_LOCAL_LAUNCH.
#include "dist/launcher_env.h"

#include <cstdlib>
#include <filesystem>

#include "util/env.h"
#include "util/error.h"
#include "util/numbers.h"

extern char** environ;

namespace dlt {

namespace {

using Env = std::map<std::string, std::string>;

// The variable's value as an integer >= min_value, or -1 when unset.
int int_variable(const Env& env, const std::string& key, int min_value) {
  auto it = env.find(key);
  if (it == env.end()) return -1;
  const std::string& v = it->second;
  int64_t x = 0;
  if (!parse_int(v, &x) || x < min_value || x > 1000000)
    throw ConfigError("environment variable " + key + " is '" + v + "'; it must be an integer >= " +
                      std::to_string(min_value) + " (set by the cluster launcher: check how dltrain was started)");
  return static_cast<int>(x);
}

// rank / size / local_rank from three variables; source "none" when rank_var is unset.
WorldInfo read_world(const Env& env, const std::string& source, const std::string& rank_var,
                     const std::string& size_var, const std::string& local_var) {
  WorldInfo w;
  int rank = int_variable(env, rank_var, 0);
  if (rank < 0) return w;
  int size = int_variable(env, size_var, 1);
  if (size < 0)
    throw ConfigError(rank_var + " is set but " + size_var + " is not (" + source +
                      " sets both; start dltrain through the launcher or unset " + rank_var + ")");
  if (rank >= size)
    throw ConfigError(rank_var + " is " + std::to_string(rank) + " but " + size_var + " is " + std::to_string(size) +
                      " (ranks run from 0 to " + size_var + " - 1)");
  int local = int_variable(env, local_var, 0);
  w.rank = rank;
  w.size = size;
  w.local_rank = local < 0 ? 0 : local;
  w.source = source;
  return w;
}

}  // namespace

std::string env_value(const Env& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

WorldInfo parse_launcher_env(const Env& env) {
  WorldInfo w = read_world(env, "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK");
  if (w.source != "none") {
    std::string addr = env_value(env, "MASTER_ADDR"), port = env_value(env, "MASTER_PORT");
    if (!addr.empty() && !port.empty()) w.master = addr + ":" + port;
    w.job_id = env_value(env, "TORCHELASTIC_RUN_ID");
    if (w.job_id.empty() || w.job_id == "none") w.job_id = w.master;
    return w;
  }
  w = read_world(env, "mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK");
  if (w.source != "none") {
    w.job_id = env_value(env, "OMPI_MCA_ess_base_jobid");
    if (w.job_id.empty()) w.job_id = env_value(env, "OMPI_MCA_orte_ess_jobid");
    return w;
  }
  w = read_world(env, "slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID");
  if (w.source != "none") {
    w.job_id = env_value(env, "SLURM_JOB_ID");
    std::string step = env_value(env, "SLURM_STEP_ID");
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

WorldInfo local_worker_world(int rank, const Env& env) {
  WorldInfo w;
  int size = int_variable(env, "DLT_WORLD_SIZE", 1);
  if (size < 0 || env_value(env, "DLT_RENDEZVOUS").empty())
    throw UsageError(
        "--worker-rank is for the worker processes dltrain starts itself (DLT_WORLD_SIZE and "
        "DLT_RENDEZVOUS are not set); leave it out");
  if (rank >= size)
    throw UsageError("--worker-rank " + std::to_string(rank) + " is outside a world of " + std::to_string(size));
  w.rank = w.local_rank = rank;
  w.size = size;
  w.source = "local";
  return w;
}

std::string worker_error_file(int rank) {
  // Called while an error is being reported: a bad DLT_LOCAL_LAUNCH (set by dltrain itself)
  // counts as unset rather than throwing a second error.
  const std::string dir = env_text("DLT_RENDEZVOUS");
  bool local = false;
  if (dir.empty() || !parse_bool(env_text("DLT_LOCAL_LAUNCH"), &local) || !local) return {};
  return (std::filesystem::path(dir) / ("error-rank-" + std::to_string(rank) + ".txt")).string();
}

}  // namespace dlt

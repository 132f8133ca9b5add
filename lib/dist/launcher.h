// Process management for data-parallel training. Either a cluster launcher started every
// rank (srun, mpirun, torchrun: parse_launcher_env reads its variables), or `dltrain train`
// with ExecutionEnvironment parallel starts local workers itself (run_local_workers): it
// re-executes /proc/self/exe once per rank with a hidden --worker-rank flag, watches them,
// and stops them all when one fails or on Ctrl-C.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dlt {

class Communicator;

struct WorldInfo {
  int rank = 0, size = 1, local_rank = 0;
  std::string source = "none";  // none | slurm | mpi | torchrun | local
  std::string job_id;           // the launcher's job id, for the rendezvous directory
  std::string master;           // MASTER_ADDR:MASTER_PORT (torchrun), else empty
};

// Reads the world from a cluster launcher's variables, in this order: torchrun (RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), Open MPI (OMPI_COMM_WORLD_RANK, _SIZE,
// _LOCAL_RANK), SLURM srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID). source "none" when
// none is set. Throws ConfigError naming the variable for missing partners or bad values.
WorldInfo parse_launcher_env(const std::map<std::string, std::string>& env);
// The current process environment as a map.
std::map<std::string, std::string> environment_map();

// The shared directory ranks of a cluster job meet in: env DLT_RENDEZVOUS when set, else
// <output_dir>/.rendezvous/<source>-<job id> (output_dir must be on a shared file system).
std::string cluster_rendezvous_dir(const WorldInfo& world, const std::string& output_dir,
                                   const std::map<std::string, std::string>& env);

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

// The world of a worker that run_local_workers started (env DLT_WORLD_SIZE), source "local".
WorldInfo local_worker_world(int rank, const std::map<std::string, std::string>& env);

// Joins the world: Gloo over TCP, rendezvous in env DLT_RENDEZVOUS (local workers) or
// cluster_rendezvous_dir(); the address is loopback for local workers, else env
// DLT_GLOO_IFACE (an interface), DLT_GLOO_HOSTNAME or this host's name. Timeout: env
// DLT_COMM_TIMEOUT seconds (60).
std::shared_ptr<Communicator> join_world(const WorldInfo& world, const std::string& output_dir,
                                         const std::map<std::string, std::string>& env);

// In a worker started by run_local_workers: where it writes its error message instead of
// printing it (the launcher prints one line for the whole run). Empty elsewhere.
std::string worker_error_file(int rank);

}  // namespace dlt

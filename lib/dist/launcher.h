// Process management for data-parallel training. Either a cluster launcher started every
// rank (srun, mpirun, torchrun: parse_launcher_env reads its variables), or `dltrain train`
// with ExecutionEnvironment parallel / multi-gpu starts local workers itself
// (run_local_workers): it re-executes /proc/self/exe once per rank with a hidden
// --worker-rank flag, watches them, and stops them all when one fails or on Ctrl-C.
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

struct CommOptions;

// Where the ranks of a cluster job meet (docs/distributed.md "Rendezvous"), into o:
//  - env DLT_RENDEZVOUS=tcp://HOST:PORT: rank 0 serves a TCP store on PORT, the others
//    connect to HOST:PORT (tcp_store.h);
//  - env DLT_RENDEZVOUS=DIR: that shared directory;
//  - torchrun's MASTER_ADDR and MASTER_PORT: the TCP store at MASTER_ADDR on MASTER_PORT, or
//    on MASTER_PORT + 1 when torchrun's agent holds MASTER_PORT itself
//    (TORCHELASTIC_USE_AGENT_STORE=True);
//  - otherwise cluster_rendezvous_dir().
// Throws ConfigError naming the variable when an address or port is bad.
void set_cluster_rendezvous(CommOptions& o, const WorldInfo& world, const std::string& output_dir,
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
// set_cluster_rendezvous(); the address is loopback for local workers, else gloo_address()
// (host_address.h: DLT_GLOO_IFACE / GLOO_SOCKET_IFNAME, DLT_GLOO_HOSTNAME or this host's name,
// resolved here; loopback when it does not resolve and every rank is local). Timeout: env
// DLT_COMM_TIMEOUT seconds (60).
std::shared_ptr<Communicator> join_world(const WorldInfo& world, const std::string& output_dir,
                                         const std::map<std::string, std::string>& env);

// In a worker started by run_local_workers: where it writes its error message instead of
// printing it (the launcher prints one line for the whole run). Empty elsewhere.
std::string worker_error_file(int rank);

// ---- GPU workers: one rank per GPU, NCCL between them (docs/distributed.md) ----

// Whether ExecutionEnvironment `environment` runs GPU workers over NCCL: 'multi-gpu' always;
// 'parallel' when this build has NCCL and cuda_device_count() > 0 (else CPU workers, Gloo).
bool uses_gpu_workers(const std::string& environment);

// The entries of a CUDA_VISIBLE_DEVICES value as CUDA reads it: comma-separated indices or
// GPU-/MIG- UUIDs, cut at the first entry that is neither ("" and "NoDevFiles": none).
std::vector<std::string> parse_visible_devices(const std::string& value);

// Throws DeviceError "ExecutionEnvironment 'multi-gpu' needs ..." (one line: the reason and
// the fix) when this build lacks CUDA or NCCL or no GPU is visible. The first form uses this
// build's DLT_HAVE_CUDA / DLT_HAVE_NCCL.
void check_gpu_workers(int visible_gpus, const std::map<std::string, std::string>& env);
void check_gpu_workers(int visible_gpus, const std::map<std::string, std::string>& env, bool have_cuda,
                       bool have_nccl);

// How many local GPU workers to start: num_workers (NumWorkers), 0 meaning one per visible
// GPU. Throws DeviceError when that is more than the visible GPUs (NCCL needs one GPU per rank).
int gpu_worker_count(int num_workers, int visible_gpus);

// The CUDA device index (among the visible GPUs) of a GPU rank: its local rank, so local
// worker i gets GPU i; 0 when a single GPU is visible (the launcher bound one GPU per task,
// e.g. srun --gpus-per-task=1). Throws DeviceError when the local rank has no GPU of its own.
// Workers are bound by this index (cudaSetDevice), not by narrowing CUDA_VISIBLE_DEVICES,
// which would keep NCCL from CUDA IPC / NVLink between the processes.
int gpu_for_rank(const WorldInfo& world, int visible_gpus);

// Joins the world of GPU ranks on CUDA device `device`: NCCL (Local for a world of one). The
// ncclUniqueId goes from rank 0 to the others through the same rendezvous as join_world
// (DLT_RENDEZVOUS, else set_cluster_rendezvous()); timeout DLT_COMM_TIMEOUT. When
// the communicator's watchdog finds a failed or hung collective it writes the one-line
// message (to the launcher's error file for local workers, else stderr) and exits with code 3.
// Throws DeviceError "built without NCCL" in builds without NCCL, CommError when joining fails.
std::shared_ptr<Communicator> join_gpu_world(const WorldInfo& world, int device, const std::string& output_dir,
                                             const std::map<std::string, std::string>& env);

}  // namespace dlt

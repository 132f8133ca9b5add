// The world of this process as a launcher describes it: a cluster launcher's variables
// (srun, mpirun, torchrun), or those `dltrain train` gives the local workers it starts
// (DLT_WORLD_SIZE, DLT_RENDEZVOUS, DLT_LOCAL_LAUNCH). Parsing only: joining the world is
// join_world.h, starting workers local_workers.h.
#pragma once
#include <map>
#include <string>

namespace dlt {

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

// The value of key in env, "" when unset.
std::string env_value(const std::map<std::string, std::string>& env, const std::string& key);

// The world of a worker that run_local_workers started (env DLT_WORLD_SIZE), source "local".
WorldInfo local_worker_world(int rank, const std::map<std::string, std::string>& env);

// In a worker started by run_local_workers: where it writes its error message instead of
// printing it (the launcher prints one line for the whole run). Empty elsewhere.
std::string worker_error_file(int rank);

}  // namespace dlt

// parse_launcher_env: the world from srun, mpirun and torchrun variables; bad values are
// ConfigErrors naming the variable; the rendezvous directory each launcher's ranks share.
#include <catch2/catch.hpp>

#include "dist/join_world.h"
#include "dist/launcher_env.h"
#include "util/error.h"

using namespace dlt;
using Env = std::map<std::string, std::string>;

namespace {
std::string error_of(const Env& env) {
  try {
    parse_launcher_env(env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("launcher env: none of the launchers' variables", "[dist]") {
  WorldInfo w = parse_launcher_env({{"HOME", "/root"}, {"SLURM_JOB_ID", "17"}, {"SLURM_NTASKS", "4"}});
  CHECK(w.source == "none");
  CHECK(w.size == 1);
  CHECK(w.rank == 0);
}

TEST_CASE("launcher env: SLURM srun", "[dist]") {
  WorldInfo w = parse_launcher_env({{"SLURM_PROCID", "5"},
                                    {"SLURM_NTASKS", "8"},
                                    {"SLURM_LOCALID", "1"},
                                    {"SLURM_JOB_ID", "4242"},
                                    {"SLURM_STEP_ID", "0"}});
  CHECK(w.source == "slurm");
  CHECK(w.rank == 5);
  CHECK(w.size == 8);
  CHECK(w.local_rank == 1);
  CHECK(w.job_id == "4242.0");
  CHECK(cluster_rendezvous_dir(w, "/shared/run", {}) == "/shared/run/.rendezvous/slurm-4242.0");
  CHECK(cluster_rendezvous_dir(w, "/shared/run", {{"DLT_RENDEZVOUS", "/nfs/rdv"}}) == "/nfs/rdv");
}

TEST_CASE("launcher env: Open MPI mpirun", "[dist]") {
  WorldInfo w = parse_launcher_env({{"OMPI_COMM_WORLD_RANK", "3"},
                                    {"OMPI_COMM_WORLD_SIZE", "4"},
                                    {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                                    {"OMPI_MCA_ess_base_jobid", "99"},
                                    {"SLURM_PROCID", "0"},  // mpirun inside an allocation wins
                                    {"SLURM_NTASKS", "1"}});
  CHECK(w.source == "mpi");
  CHECK(w.rank == 3);
  CHECK(w.size == 4);
  CHECK(w.local_rank == 3);
  CHECK(w.job_id == "99");
}

TEST_CASE("launcher env: torchrun", "[dist]") {
  WorldInfo w = parse_launcher_env({{"RANK", "1"},
                                    {"WORLD_SIZE", "2"},
                                    {"LOCAL_RANK", "0"},
                                    {"MASTER_ADDR", "node7"},
                                    {"MASTER_PORT", "29500"},
                                    {"OMPI_COMM_WORLD_RANK", "0"},
                                    {"OMPI_COMM_WORLD_SIZE", "1"}});
  CHECK(w.source == "torchrun");
  CHECK(w.rank == 1);
  CHECK(w.size == 2);
  CHECK(w.local_rank == 0);
  CHECK(w.master == "node7:29500");
  CHECK(cluster_rendezvous_dir(w, "out", {}) == "out/.rendezvous/torchrun-node7_29500");
}

TEST_CASE("launcher env: bad values name the variable", "[dist]") {
  CHECK_THAT(error_of({{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}}), Catch::Contains("SLURM_PROCID is 'x'"));
  CHECK_THAT(error_of({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "2"}}),
             Catch::Contains("SLURM_PROCID is 2 but SLURM_NTASKS is 2"));
  CHECK_THAT(error_of({{"RANK", "0"}}), Catch::Contains("RANK is set but WORLD_SIZE is not"));
  CHECK_THAT(error_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), Catch::Contains("WORLD_SIZE is '0'"));
  CHECK_THAT(error_of({{"OMPI_COMM_WORLD_RANK", "-1"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
             Catch::Contains("OMPI_COMM_WORLD_RANK is '-1'"));
  CHECK_THAT(error_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1.5"}}), Catch::Contains("LOCAL_RANK"));
  CHECK_THAT(error_of({{"SLURM_PROCID", "0 "}, {"SLURM_NTASKS", "2"}}), Catch::Contains("SLURM_PROCID"));
}

TEST_CASE("launcher env: a local worker's world comes from DLT_WORLD_SIZE", "[dist]") {
  WorldInfo w = local_worker_world(1, {{"DLT_WORLD_SIZE", "3"}, {"DLT_RENDEZVOUS", "/tmp/x"}});
  CHECK(w.source == "local");
  CHECK(w.rank == 1);
  CHECK(w.size == 3);
  CHECK_THROWS_AS(local_worker_world(0, {}), UsageError);
  CHECK_THROWS_AS(local_worker_world(3, {{"DLT_WORLD_SIZE", "3"}, {"DLT_RENDEZVOUS", "/tmp/x"}}), UsageError);
}

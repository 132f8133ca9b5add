// Joining the world of data-parallel ranks once the launcher's variables are parsed
// (launcher_env.h): where the ranks meet (docs/distributed.md "Rendezvous") and the
// communicator that results, Gloo for CPU ranks, NCCL for GPU ranks. Starts no processes.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "dist/communicator.h"
#include "dist/launcher_env.h"

namespace dlt {

// The NCCL library this process loaded, "NCCL 2.27.7", or "" in a build without NCCL.
std::string nccl_library_version();

// The shared directory ranks of a cluster job meet in: env DLT_RENDEZVOUS when set, else
// <output_dir>/.rendezvous/<source>-<job id> (output_dir must be on a shared file system).
std::string cluster_rendezvous_dir(const WorldInfo& world, const std::string& output_dir,
                                   const std::map<std::string, std::string>& env);

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

// Joins the world: Gloo over TCP, rendezvous in env DLT_RENDEZVOUS (local workers) or
// set_cluster_rendezvous(); the address is loopback for local workers, else gloo_address()
// (host_address.h: DLT_GLOO_IFACE / GLOO_SOCKET_IFNAME, DLT_GLOO_HOSTNAME or this host's name,
// resolved here; loopback when it does not resolve and every rank is local). The timeout and
// timing report come from `settings` (CommunicationTimeout, CommunicationTiming); join_world
// fills in the rest.
std::shared_ptr<Communicator> join_world(const WorldInfo& world, const std::string& output_dir,
                                         const std::map<std::string, std::string>& env, const CommOptions& settings);

// Joins the world of GPU ranks on CUDA device `device`: NCCL (Local for a world of one). The
// ncclUniqueId goes from rank 0 to the others through the same rendezvous as join_world
// (DLT_RENDEZVOUS, else set_cluster_rendezvous()); the timeout is settings.timeout. When
// the communicator's watchdog finds a failed or hung collective it writes the one-line
// message (to the launcher's error file for local workers, else stderr) and exits with code 3.
// Throws DeviceError "built without NCCL" in builds without NCCL, CommError when joining fails.
std::shared_ptr<Communicator> join_gpu_world(const WorldInfo& world, int device, const std::string& output_dir,
                                             const std::map<std::string, std::string>& env,
                                             const CommOptions& settings);

}  // namespace dlt

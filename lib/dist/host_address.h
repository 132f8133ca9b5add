// The address a CPU (Gloo) rank tells the other ranks to reach it at, resolved by dltrain
// before Gloo sees it: Debian's libgloo crashes inside CreateDevice on a host name that does
// not resolve (fresh roots, containers, some cluster nodes), so Gloo only ever gets a numeric
// address that this machine can bind. Does not decide the rendezvous (join_world.h does).
#pragma once
#include <map>
#include <string>

namespace dlt {

struct WorldInfo;

// Whether every rank of `world` runs on this machine: a world of one; the launcher says so
// (torchrun's LOCAL_WORLD_SIZE, Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE equal to the world size,
// SLURM_STEP_NUM_NODES or SLURM_NNODES 1); or the ranks meet at a loopback address
// (rendezvous_tcp "127.x.y.z:P", "localhost:P", "[::1]:P"), which only this machine reaches.
bool world_on_this_host(const WorldInfo& world, const std::string& rendezvous_tcp,
                        const std::map<std::string, std::string>& env);

// The numeric address (e.g. "10.1.2.3", "fd00::5") of this machine for Gloo, in this order:
//  - env DLT_GLOO_IFACE, else GLOO_SOCKET_IFNAME (PyTorch's name; its first entry): that
//    interface's IPv4 address, else its global IPv6 one; CommError when it has none;
//  - env DLT_GLOO_HOSTNAME: its first resolved address this machine can bind; CommError
//    naming the variable when there is none;
//  - this host's name (gethostname), likewise; when it does not resolve (or only to an
//    address of another machine): "127.0.0.1" if on_this_host, else CommError naming the
//    name and the fixes (DLT_GLOO_HOSTNAME, GLOO_SOCKET_IFNAME, /etc/hosts).
// `who` begins the error messages ("rank 1 of 2").
std::string gloo_address(const std::map<std::string, std::string>& env, bool on_this_host, const std::string& who);

// Whether `host` (a name or a numeric address) resolves to any address.
bool host_resolves(const std::string& host);

// The first address `name` resolves to that a socket on this machine can bind, numeric;
// empty when none (then *why says why: the resolver's message, or the addresses found).
std::string resolve_local_address(const std::string& name, std::string* why);

}  // namespace dlt

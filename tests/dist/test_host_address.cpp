// host_address: which worlds count as all on this machine, the numeric address handed to
// Gloo, and the one-line CommErrors for names and interfaces that give none.
#include <catch2/catch.hpp>

#include "dist/host_address.h"
#include "dist/launcher_env.h"
#include "util/error.h"

using namespace dlt;
using Env = std::map<std::string, std::string>;

namespace {
WorldInfo world_of(int size) {
  WorldInfo w;
  w.size = size;
  w.source = "slurm";
  return w;
}
std::string error_of(const Env& env, bool on_this_host) {
  try {
    return "no error: " + gloo_address(env, on_this_host, "rank 1 of 2");
  } catch (const CommError& e) {
    return e.what();
  }
}
}  // namespace

TEST_CASE("host address: which worlds run on this machine alone", "[dist]") {
  CHECK(world_on_this_host(world_of(1), "", {}));
  CHECK_FALSE(world_on_this_host(world_of(2), "", {}));
  CHECK(world_on_this_host(world_of(4), "", {{"LOCAL_WORLD_SIZE", "4"}}));
  CHECK_FALSE(world_on_this_host(world_of(4), "", {{"LOCAL_WORLD_SIZE", "2"}}));
  CHECK(world_on_this_host(world_of(3), "", {{"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}}));
  CHECK(world_on_this_host(world_of(8), "", {{"SLURM_NNODES", "1"}}));
  CHECK_FALSE(world_on_this_host(world_of(8), "", {{"SLURM_NNODES", "2"}}));
  // srun's step may use fewer nodes than the allocation: the step's count decides.
  CHECK(world_on_this_host(world_of(8), "", {{"SLURM_STEP_NUM_NODES", "1"}, {"SLURM_NNODES", "4"}}));
  CHECK_FALSE(world_on_this_host(world_of(8), "127.0.0.1:29500", {{"SLURM_NNODES", "2"}}));
  CHECK(world_on_this_host(world_of(2), "127.0.0.1:29500", {}));
  CHECK(world_on_this_host(world_of(2), "127.5.0.1:29500", {}));
  CHECK(world_on_this_host(world_of(2), "localhost:29500", {}));
  CHECK(world_on_this_host(world_of(2), "[::1]:29500", {}));
  CHECK_FALSE(world_on_this_host(world_of(2), "node001:29500", {}));
  CHECK_FALSE(world_on_this_host(world_of(2), "10.0.0.1:29500", {}));
  CHECK_FALSE(world_on_this_host(world_of(2), "", {{"LOCAL_WORLD_SIZE", "two"}}));
}

TEST_CASE("host address: names resolve to an address this machine binds", "[dist]") {
  std::string why;
  CHECK(resolve_local_address("127.0.0.1", &why) == "127.0.0.1");
  std::string local = resolve_local_address("localhost", &why);
  CHECK((local == "127.0.0.1" || local == "::1"));
  CHECK(resolve_local_address("no-such-host.invalid", &why).empty());
  CHECK(why.find("does not resolve") != std::string::npos);
  // A documentation address (RFC 5737) resolves, numerically, but is no address of this machine.
  CHECK(resolve_local_address("192.0.2.1", &why).empty());
  CHECK(why == "it resolves to 192.0.2.1, not to an address of this machine");
}

TEST_CASE("host address: what Gloo is given, and the one-line errors", "[dist]") {
  CHECK(gloo_address({{"GLOO_SOCKET_IFNAME", "lo"}}, false, "r") == "127.0.0.1");
  CHECK(gloo_address({{"GLOO_SOCKET_IFNAME", "lo,eth0"}}, false, "r") == "127.0.0.1");
  CHECK(gloo_address({{"DLT_GLOO_IFACE", "lo"}, {"GLOO_SOCKET_IFNAME", "nosuchif0"}}, false, "r") == "127.0.0.1");
  CHECK(gloo_address({{"DLT_GLOO_HOSTNAME", "127.0.0.1"}}, false, "r") == "127.0.0.1");
  CHECK(error_of({{"DLT_GLOO_IFACE", "nosuchif0"}}, true) ==
        "rank 1 of 2: DLT_GLOO_IFACE names the network interface 'nosuchif0', which this machine does not have "
        "(list them with 'ip -brief address'; set DLT_GLOO_IFACE to one the other ranks reach)");
  // An explicit DLT_GLOO_HOSTNAME is never replaced by loopback, even for a one-host world.
  CHECK(error_of({{"DLT_GLOO_HOSTNAME", "192.0.2.1"}}, true) ==
        "rank 1 of 2: DLT_GLOO_HOSTNAME is '192.0.2.1', but it resolves to 192.0.2.1, not to an address of this "
        "machine (set it to a name or address of this machine that the other ranks reach)");
  // This host's own name: whatever it resolves to here, the answer is numeric and bindable.
  std::string own = gloo_address({}, true, "r");
  std::string why;
  CHECK(resolve_local_address(own, &why) == own);
}

// Making a Communicator (backend/collectives.h, the interface): the options of a world
// (rank, size, rendezvous, timeout) and the CPU factory. GlooCommunicator (CPU tensors, TCP)
// and NcclCommunicator (device tensors, one GPU per rank) implement it. Every collective of a
// multi-process world has a timeout and throws CommError naming the rank and the collective
// when a peer dies, hangs or misbehaves.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "backend/collectives.h"
#include "tensor/tensor.h"

namespace dlt {

struct CommOptions {
  int rank = 0, size = 1;
  std::string rendezvous_dir;                // shared directory for the FileStore rendezvous, or
  std::string rendezvous_tcp;                // HOST:PORT of rank 0's TCP store (wins when set; tcp_store.h)
  std::string hostname;                      // numeric address other ranks reach this one at (empty: loopback;
                                             // Gloo crashes on a name that does not resolve: host_address.h)
  std::chrono::milliseconds timeout{60000};  // every collective and the rendezvous
  bool report_timing = false;                // CommunicationTiming: log the time spent in collectives at the end
};

// The collective timeout of CommunicationTimeout seconds; larger values than
// kMaxCommTimeoutSeconds (about 115 days, e.g. Inf for no timeout) are capped to it.
constexpr double kMaxCommTimeoutSeconds = 1e7;
std::chrono::milliseconds comm_timeout(double seconds);

// A communicator for a CPU world: Local for size 1, else Gloo (throws CommError when this
// build has no Gloo, or when the rendezvous fails).
std::unique_ptr<Communicator> make_cpu_communicator(const CommOptions& options);

}  // namespace dlt

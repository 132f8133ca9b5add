// Communicator: the collectives data-parallel training needs (FL's DistributedApi): rank,
// size, in-place sum all-reduce, broadcast, barrier. LocalCommunicator is the world of one
// process (no-ops); GlooCommunicator (CPU tensors, TCP) and NcclCommunicator (device tensors,
// one GPU per rank) implement it. Every collective of a multi-process world has a timeout and throws
// CommError naming the rank and the collective when a peer dies, hangs or misbehaves.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "tensor/tensor.h"

namespace dlt {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Element-wise sum over all ranks, in place (float32 tensors; contiguous).
  virtual void all_reduce_sum(Tensor& t) = 0;
  virtual void all_reduce_sum(double* values, int64_t n) = 0;
  // Starts an in-place sum all-reduce that may run while the caller goes on computing (the
  // gradient buckets of backward). Collectives run in the order they are issued, started or
  // not; t must stay alive and unchanged until wait_all() returns. Default: synchronous.
  virtual void all_reduce_sum_async(Tensor& t) { all_reduce_sum(t); }
  // Waits for every started all-reduce; rethrows the first failure.
  virtual void wait_all() {}
  // Every rank receives root's values, in place.
  virtual void broadcast(Tensor& t, int root) = 0;
  virtual void barrier() = 0;
  // "gloo", "nccl" or "local", for logs.
  virtual std::string kind() const = 0;
};

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(Tensor&) override {}
  void all_reduce_sum(double*, int64_t) override {}
  void broadcast(Tensor&, int) override {}
  void barrier() override {}
  std::string kind() const override { return "local"; }
};

struct CommOptions {
  int rank = 0, size = 1;
  std::string rendezvous_dir;  // shared directory for the FileStore rendezvous, or
  std::string rendezvous_tcp;  // HOST:PORT of rank 0's TCP store (wins when set; tcp_store.h)
  std::string hostname;        // numeric address other ranks reach this one at (empty: loopback;
                               // Gloo crashes on a name that does not resolve: host_address.h)
  std::chrono::milliseconds timeout{60000};  // every collective and the rendezvous
  bool report_timing = false;  // CommunicationTiming: log the time spent in collectives at the end
};

// The collective timeout of CommunicationTimeout seconds; larger values than
// kMaxCommTimeoutSeconds (about 115 days, e.g. Inf for no timeout) are capped to it.
constexpr double kMaxCommTimeoutSeconds = 1e7;
std::chrono::milliseconds comm_timeout(double seconds);

// A communicator for a CPU world: Local for size 1, else Gloo (throws CommError when this
// build has no Gloo, or when the rendezvous fails).
std::unique_ptr<Communicator> make_cpu_communicator(const CommOptions& options);

}  // namespace dlt

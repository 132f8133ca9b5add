// Communicator: the tensor collectives data-parallel training needs (FL's DistributedApi):
// rank, size, in-place sum all-reduce, broadcast, barrier. An interface over tensors, so that
// layers that run collectives (synchronized batch norm) need nothing from lib/dist; lib/dist
// makes the CPU ones (dist/communicator.h: Gloo), the CUDA plugin the GPU one
// (backend/cuda/nccl_communicator.h: NCCL). LocalCommunicator is the world of one process (no-ops).
#pragma once
#include <cstdint>
#include <functional>
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

// Called from a communicator's watchdog thread with one line ("rank R of N: ...") when a
// collective fails asynchronously or overstays the timeout while the caller is not waiting for
// it (e.g. it is blocked in a CUDA synchronize behind the hung collective). The communicator is
// already aborted; the handler should report the line and end the process (it must not return
// into CUDA work of this device).
using CommFatalHandler = std::function<void(const std::string& message)>;

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

}  // namespace dlt

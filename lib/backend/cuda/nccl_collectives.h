// NcclCommunicator: collectives on CUDA tensors of one device over NCCL (one rank per GPU),
// the GPU implementation of Communicator (backend/collectives.h). Part of the CUDA plugin and
// built only when NCCL is found (DLT_HAVE_NCCL); the core reaches it through the plugin table
// (cuda_plugin_api.h), from dist/nccl_communicator.h. No CUDA types here.
#pragma once
#include <memory>
#include <string>

#include "backend/collectives.h"
#include "backend/cuda_plugin_api.h"

namespace dlt {

// Joins the NCCL world of world.size ranks on CUDA device `device` (made current). Rank 0
// creates the ncclUniqueId; world.share_id hands it to every rank. The communicator is
// non-blocking (ncclConfig_t::blocking = 0): init and every collective are bounded by
// world.timeout and end in CommError "rank R of N: <collective> ..." after ncclCommAbort
// instead of hanging. It returns once every rank has joined.
//
// Stream semantics (device = cuda(device), compute stream = cuda::context(device).stream):
// * all_reduce_sum(Tensor&), broadcast: ordered as if issued on the compute stream (they start
//   after all work already issued there, and work issued there later starts after them); the
//   host does not wait. They run on the communicator's own stream, like the async ones, so
//   every NCCL call of this rank is on one stream in issue order.
// * all_reduce_sum_async: starts after the work already issued on the compute stream but does
//   not hold back work issued there later (backward goes on); t must not be written or freed
//   until wait_all(). wait_all() makes the compute stream wait for every started collective
//   (no host block) and throws if one has already failed; host reads of t then need the usual
//   synchronization of the compute stream.
// * all_reduce_sum(double*, n) and barrier block the host until the result is there.
std::unique_ptr<Communicator> make_nccl_collectives(const NcclWorld& world, int device, CommFatalHandler on_fatal);
// "NCCL 2.27.7": ncclGetVersion of the library loaded (not the headers built against).
std::string nccl_loaded_version();

}  // namespace dlt

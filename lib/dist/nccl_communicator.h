// NcclCommunicator: collectives on CUDA tensors of one device over NCCL (one rank per GPU).
// Built only when CUDA and NCCL are found (DLT_HAVE_NCCL); everything else reaches it through
// join_gpu_world() in dist/join_world.h, which exists in every build. No CUDA types here.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "dist/communicator.h"

namespace dlt {

// Called from the watchdog thread with one line ("rank R of N: ...") when a collective fails
// asynchronously or overstays the timeout while the caller is not waiting for it (e.g. it is
// blocked in a CUDA synchronize behind the hung collective). The communicator is already
// aborted; the handler should report the line and end the process (it must not return into
// CUDA work of this device).
using CommFatalHandler = std::function<void(const std::string& message)>;

// Joins the NCCL world of options.size ranks on CUDA device `device` (made current).
// Rank 0 creates the ncclUniqueId and shares it (share_from_rank0: the file
// options.rendezvous_dir/nccl-unique-id, or the key nccl-unique-id of rank 0's TCP store when
// options.rendezvous_tcp is set); the other ranks poll for it until options.timeout. The
// communicator is non-blocking (ncclConfig_t::blocking = 0): init and every collective are
// bounded by options.timeout and end in CommError "rank R of N: <collective> ..." after
// ncclCommAbort instead of hanging.
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
std::unique_ptr<Communicator> make_nccl_communicator(const CommOptions& options, int device, CommFatalHandler on_fatal);
// "NCCL 2.27.7": ncclGetVersion of the library loaded (not the headers built against).
std::string nccl_loaded_version();

}  // namespace dlt

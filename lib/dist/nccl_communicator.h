// The GPU world's communicator: NCCL over the CUDA plugin (backend/cuda/nccl_collectives.h),
// one rank per GPU. join_gpu_world() in dist/join_world.h is the usual way in; this is the
// step that takes CommOptions. No CUDA types here; in every build.
#pragma once
#include <memory>

#include "dist/communicator.h"

namespace dlt {

// Joins the NCCL world of options.size ranks on CUDA device `device`. Rank 0's ncclUniqueId
// reaches the other ranks through share_from_rank0 (dist/rendezvous.h: the file
// options.rendezvous_dir/nccl-unique-id, removed once every rank has joined, or the key
// nccl-unique-id of rank 0's TCP store when options.rendezvous_tcp is set); the other ranks
// poll for it until options.timeout. Init and every collective are bounded by options.timeout
// (CommError naming the rank and the collective); on_fatal gets a failure no caller waits for.
// Stream semantics: backend/cuda/nccl_collectives.h. Throws DeviceError when the CUDA plugin
// is unusable or was built without NCCL.
std::unique_ptr<Communicator> make_nccl_communicator(const CommOptions& options, int device, CommFatalHandler on_fatal);

}  // namespace dlt

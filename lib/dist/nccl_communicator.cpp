// make_nccl_communicator (nccl_communicator.h): the rendezvous side of an NCCL world, in the
// core; the communicator itself is the CUDA plugin's.
#include "dist/nccl_communicator.h"

#include <filesystem>
#include <utility>

#include "backend/cuda_plugin.h"
#include "dist/rendezvous.h"
#include "util/error.h"

namespace dlt {

namespace {
constexpr const char* kIdFile = "nccl-unique-id";
}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const CommOptions& options, int device,
                                                     CommFatalHandler on_fatal) {
  const CudaPluginApi& plugin = cuda_plugin_or_throw();
  if (!plugin.make_nccl_communicator)
    throw DeviceError(rank_of(options) +
                      ": the CUDA backend was built without NCCL, so GPU workers cannot communicate (install "
                      "NCCL and rebuild with CUDA)");
  // Rank 0's TCP store (when the rendezvous is one) serves until every rank has joined, which
  // make_nccl_communicator waits for, so every rank has read the id by then.
  std::unique_ptr<KeyValueStore> id_server;
  NcclWorld world;
  world.rank = options.rank;
  world.size = options.size;
  world.timeout = options.timeout;
  world.rendezvous = rendezvous_place(options);
  world.share_id = [&options, &id_server](const std::string& bytes) {
    return share_from_rank0(options, kIdFile, bytes, bytes.size(), id_server);
  };
  std::unique_ptr<Communicator> comm = plugin.make_nccl_communicator(world, device, std::move(on_fatal));
  // Every rank has joined, so all have read the id file; a later job must not reuse it.
  if (options.rank == 0 && options.rendezvous_tcp.empty()) {
    std::error_code ec;
    std::filesystem::remove(std::filesystem::path(options.rendezvous_dir) / kIdFile, ec);
  }
  return comm;
}

}  // namespace dlt

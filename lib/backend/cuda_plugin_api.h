// The table the CUDA plugin (libdltrain_cuda.so: lib/backend/cuda, the only code that links the
// CUDA runtime, cuDNN, cuBLAS and NCCL) hands the core. The core dlopens the plugin when a GPU
// is first asked for (cuda_plugin.cpp) and calls the one extern "C" entry point below;
// everything else goes through the table's function pointers. Plugin and core come from the
// same build (same compiler, same headers), so the table may use C++ types; abi, version and
// the struct sizes reject a plugin from another build.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "backend/backend_options.h"
#include "backend/collectives.h"
#include "tensor/device.h"

namespace dlt {

class Backend;

// What the plugin's NCCL communicator needs of its world (the core's dist/nccl_communicator.cpp
// fills it from CommOptions): its place, the collective timeout, and how rank 0's ncclUniqueId
// reaches every rank.
struct NcclWorld {
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{60000};  // init and every collective
  std::string rendezvous;                    // where the ranks meet, for messages
  // Called once on every rank with this rank's id bytes (only rank 0's matter); returns rank 0's.
  std::function<std::string(const std::string& bytes)> share_id;
};

// Raise when the table's layout or a function's signature changes.
// 4: the plugin registers its kernels into the core's op registry when loaded (op_registry.h).
inline constexpr uint32_t kCudaPluginAbi = 4;
inline constexpr const char* kCudaPluginFile = "libdltrain_cuda.so";
inline constexpr const char* kCudaPluginEntry = "dltrain_cuda_plugin_v1";

struct CudaPluginApi {
  uint32_t abi;                 // kCudaPluginAbi of the plugin's build
  const char* version;          // DLT_VERSION of the plugin's build
  size_t api_size;              // sizeof(CudaPluginApi)
  size_t backend_options_size;  // sizeof(BackendOptions)
  // The meaning of the core functions of the same names (backend/backend.h).
  int (*device_count)();
  std::string (*unavailable_reason)();
  std::string (*library_versions)();
  // The GPU's backend whose ops follow `options` (one per GPU and options).
  Backend& (*backend)(int index, const BackendOptions& options);
  // The GPU memory the core registers with the tensor layer (tensor/device.h's DeviceMemory).
  Allocator& (*allocator)(int index);
  void (*copy_bytes)(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
  // backend/cuda/nccl_collectives.h; both null in a build without NCCL.
  std::unique_ptr<Communicator> (*make_nccl_communicator)(const NcclWorld& world, int device,
                                                          CommFatalHandler on_fatal);
  std::string (*nccl_version)();
};

}  // namespace dlt

// Defined by the plugin (backend/cuda/cuda_plugin_entry.cpp); never null.
extern "C" const dlt::CudaPluginApi* dltrain_cuda_plugin_v1();

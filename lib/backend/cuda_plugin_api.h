// The table the CUDA plugin (libdltrain_cuda.so: lib/backend/cuda and dist/nccl_communicator,
// the only code that links the CUDA runtime, cuDNN, cuBLAS and NCCL) hands the core. The core
// dlopens the plugin when a GPU is first asked for (cuda_plugin.cpp) and calls the one extern "C"
// entry point below; everything else goes through the table's function pointers. Plugin and
// core come from the same build (same compiler, same headers), so the table may use C++ types;
// abi, version and the struct sizes reject a plugin from another build.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "backend/backend_options.h"
#include "backend/communicator.h"
#include "tensor/device.h"

namespace dlt {

class Backend;
struct CommOptions;  // dist/communicator.h

// Raise when the table's layout or a function's signature changes.
inline constexpr uint32_t kCudaPluginAbi = 2;
inline constexpr const char* kCudaPluginFile = "libdltrain_cuda.so";
inline constexpr const char* kCudaPluginEntry = "dltrain_cuda_plugin_v1";

struct CudaPluginApi {
  uint32_t abi;                 // kCudaPluginAbi of the plugin's build
  const char* version;          // DLT_VERSION of the plugin's build
  size_t api_size;              // sizeof(CudaPluginApi)
  size_t backend_options_size;  // sizeof(BackendOptions)
  // The meaning of the core functions of the same names (backend/backend.h, tensor/device.h).
  int (*device_count)();
  std::string (*unavailable_reason)();
  std::string (*library_versions)();
  // The GPU's backend whose ops follow `options` (one per GPU and options).
  Backend& (*backend)(int index, const BackendOptions& options);
  Allocator& (*allocator)(int index);
  void (*copy_bytes)(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
  // dist/nccl_communicator.h (on_fatal: its CommFatalHandler); both null in a build without NCCL.
  std::unique_ptr<Communicator> (*make_nccl_communicator)(const CommOptions& options, int device,
                                                          std::function<void(const std::string&)> on_fatal);
  std::string (*nccl_version)();
};

}  // namespace dlt

// Defined by the plugin (backend/cuda/cuda_plugin_entry.cpp); never null.
extern "C" const dlt::CudaPluginApi* dltrain_cuda_plugin_v1();

// The CUDA plugin as the core sees it. In a build with CUDA, libdltrain_cuda.so (the CUDA
// backend, its allocator and the NCCL communicator: cuda_plugin_api.h) is dlopen'ed the first
// time anything asks for a GPU, so a CPU run never maps the CUDA runtime, cuDNN, cuBLAS or
// NCCL. Searched, in order: already loaded (a test binary that links it), next to the
// executable, then in ../lib beside it (an install prefix; the device bundle). cuda_device_count()
// and the other functions of backend.h go through here; a missing plugin or a missing CUDA
// library makes them report no GPU, with dlopen's reason. Thread-safe; loaded at most once.
#pragma once
#include <string>

#include "backend/cuda_plugin_api.h"

namespace dlt {

// The plugin's table; null when it is unusable (CPU-only build, not found, dlopen failed,
// another build's plugin). The first call loads it.
const CudaPluginApi* cuda_plugin();
// Why cuda_plugin() is null, one line naming the file and dlopen's error; "" when loaded.
const std::string& cuda_plugin_error();
// The plugin's table, or DeviceError(cuda_plugin_error() + what to do).
const CudaPluginApi& cuda_plugin_or_throw();
// One line for `dltrain --version` without loading anything: where the plugin is ("CUDA
// backend: /usr/lib/libdltrain_cuda.so, loaded when a GPU is asked for"), that it is missing,
// or that this build has none.
std::string cuda_plugin_summary();

}  // namespace dlt

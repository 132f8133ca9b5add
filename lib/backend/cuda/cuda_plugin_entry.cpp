// The CUDA plugin's one exported entry point (backend/cuda_plugin_api.h): the table through
// which the core reaches this library's backend, allocator, copies and NCCL communicator.
#include "backend/cuda_plugin_api.h"
#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_backend.h"
#include "build_config.h"
#if DLT_HAVE_NCCL
#include "backend/cuda/nccl_collectives.h"
#endif

namespace dlt {
namespace {

const CudaPluginApi kApi = {
    .abi = kCudaPluginAbi,
    .version = DLT_VERSION,
    .api_size = sizeof(CudaPluginApi),
    .backend_options_size = sizeof(BackendOptions),
    .device_count = &cuda::device_count,
    .unavailable_reason = &cuda::unavailable_reason,
    .library_versions = &cuda::library_versions,
    .backend = &cuda::backend,
    .allocator = [](int index) -> Allocator& { return cuda::caching_allocator(index); },
    .copy_bytes = &cuda::copy_bytes,
#if DLT_HAVE_NCCL
    .make_nccl_communicator = &make_nccl_collectives,
    .nccl_version = &nccl_loaded_version,
#else
    .make_nccl_communicator = nullptr,
    .nccl_version = nullptr,
#endif
};

}  // namespace
}  // namespace dlt

extern "C" __attribute__((visibility("default"))) const dlt::CudaPluginApi* dltrain_cuda_plugin_v1() {
  return &dlt::kApi;
}

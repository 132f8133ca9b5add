// The CUDA backend of one GPU. Its kernels, all on the context's compute stream, are registered
// for DeviceType::kCuda in the files that implement them (op_registry.h): the heavy ops on cuDNN,
// cuBLAS or own kernels (cuda_*_op.cpp), the element-wise work, losses and optimizer updates as
// own kernels (cuda_elementwise.cpp, cuda_losses.cpp, cuda_multiply.cpp, cuda_channel_ops.cpp).
// This class holds what they share: the device, its context, scratch and read-back buffers.
// Only sum_squares and the losses' kernels (Backend::cross_entropy, loss) wait for the GPU
// (they return values); uploads overlap compute through pinned staging buffers on the copy
// stream.
// One host thread drives a device at a time (the scratch and staging buffers are not locked).
// One CudaBackend per (GPU, BackendOptions): the options decide what the ops it makes do; all
// of a GPU's backends share its context, allocator and DeviceState below, so their work is one
// stream's, and a CUDA graph captured through one of them holds the others' work too.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "backend/async_device.h"
#include "backend/backend.h"

namespace dlt::cuda {
struct CudaContext;
class CachingAllocator;
// The plugin's side of backend_for(cuda(index), options) and cuda_library_versions()
// (backend/backend.h), reached through the plugin table (cuda_plugin_api.h).
Backend& backend(int index, const BackendOptions& options);
std::string library_versions();
}  // namespace dlt::cuda

namespace dlt {

class CudaBackend final : public Backend, public AsyncDevice {
 public:
  CudaBackend(int device, const BackendOptions& options);
  ~CudaBackend() override;
  // "cuda:0 (NVIDIA H100 80GB HBM3, compute capability 9.0, 79.2 GiB, cuDNN 9.19.0, CUDA 13.0)"
  std::string name() const override;

  // ---- AsyncDevice ----
  // CUDA Graphs (cuda_graph.cpp): stream capture of the compute stream in thread-local mode;
  // the allocator refuses to allocate or free while capturing and reports when a block the
  // graph uses is freed later (replay() then returns false).
  void begin_capture() override;
  void end_capture() override;
  void abort_capture() noexcept override;
  bool replay() override;
  void drop_capture() override;

  // Copies host into a pinned staging buffer (host may be reused on return) and enqueues the
  // upload on the copy stream after all work already queued on the compute stream (so dst
  // may still be read by that work). Until upload_wait(), nothing may read or write dst.
  void upload_begin(const Tensor& host, Tensor& dst) override;
  // Makes the compute stream wait for the uploads begun so far; does not block the host.
  void upload_wait() override;
  // Peak bytes cudaMalloc'ed by this device's caching allocator (tensors + cache + workspace).
  size_t peak_memory_bytes() const override;
  // Waits for the compute and copy streams.
  void synchronize() override;

  // ---- what its kernels use (the light kernels in cuda_elementwise.cpp, cuda_multiply.cpp and
  // cuda_channel_ops.cpp, the op factories in cuda_*_op.cpp: op_registry.h) ----
  void enter() const;  // makes this backend's GPU current for the calling thread
  cuda::CudaContext& context() const { return ctx_; }
  // A device buffer of at least bytes (grows on demand; used by one call at a time, on the
  // compute stream).
  void* scratch(size_t bytes);
  // A device buffer of kResultBytes for values that are read back, and read_back(): copies
  // bytes of it to pinned host memory, waits for the compute stream and returns that copy.
  static constexpr size_t kResultBytes = 256;
  void* result_buffer() const;
  const void* read_back(size_t bytes);
  // Backend::cross_entropy_async, loss_async and read_loss (AsyncDevice), by opt.kind, which
  // the loss kernels run as one (cuda_losses.cpp).
  void loss_async(const Tensor& probs, const Tensor& labels, const LossOptions& opt, Tensor& dlogits,
                  Tensor& totals) override;
  LossTotals read_loss_totals(const Tensor& totals) override;

 private:
  struct Staging {
    void* host = nullptr;  // pinned
    size_t bytes = 0;
    cudaEvent_t done = nullptr;  // recorded after the copy out of it
  };
  // What every backend of one GPU shares (DeviceState::of(device), made once, kept for the
  // process): the scratch and read-back buffers, the loss read without waiting for the step,
  // the upload staging and the CUDA graph.
  struct DeviceState;
  void not_capturing(const char* what) const;  // throws DeviceError while capturing
  Staging& free_staging(size_t bytes);

  int device_;
  cuda::CudaContext& ctx_;
  cuda::CachingAllocator& alloc_;
  DeviceState& s_;
};

struct CudaBackend::DeviceState {
  static DeviceState& of(int device);  // the GPU's (created on first use; makes that device current)
  void* scratch_ = nullptr;            // device, grows on demand; used by one call at a time
  size_t scratch_bytes_ = 0;
  void* result_d_ = nullptr;  // device, kResultBytes: values that are read back (result_buffer)
  void* result_h_ = nullptr;  // pinned host mirror of result_d_
  // loss_async also copies its totals to the pinned loss_h_ and records loss_mark_,
  // so read_loss_totals waits for the loss only, not for backward and the update issued after it.
  // loss_pending_: the totals tensor that copy is of (read once). In a capture both become
  // nodes of the graph (the record as cudaEventRecordExternal) and graph_loss_ names the
  // totals, which each replay makes pending.
  void* loss_h_ = nullptr;
  cudaEvent_t loss_mark_ = nullptr;
  const void* loss_pending_ = nullptr;
  const void* graph_loss_ = nullptr;
  std::vector<Staging> staging_;
  cudaEvent_t compute_mark_ = nullptr;  // compute stream -> copy stream
  cudaEvent_t upload_mark_ = nullptr;   // copy stream -> compute stream
  bool upload_pending_ = false;
  bool capturing_ = false;
  cudaGraphExec_t graph_ = nullptr;  // the instantiated capture, or null
};

// The CUDA backend behind b, for the kernels registered for DeviceType::kCuda (only a CUDA
// backend calls them), and its context (streams, handles, workspace) for the op factories.
CudaBackend& cuda_backend_of(Backend& b);
cuda::CudaContext& cuda_context(Backend& b);

}  // namespace dlt

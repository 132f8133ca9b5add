// The CUDA backend of one GPU: heavy ops from the cuDNN / cuBLAS factories (cuda_common.h),
// element-wise work, losses and optimizer updates as own kernels (cuda_kernels.h), all on the
// context's compute stream. Only sum_squares and cross_entropy wait for the GPU (they return
// values); uploads overlap compute through pinned staging buffers on the copy stream.
// One host thread drives a device at a time (the scratch and staging buffers are not locked).
// One CudaBackend per (GPU, BackendOptions): the options decide what the ops it makes do; all
// of a GPU's backends share its context, allocator and DeviceState below, so their work is one
// stream's, and a CUDA graph captured through one of them holds the others' work too.
#pragma once
#include <cuda_runtime.h>

#include <memory>
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

  std::unique_ptr<ConvOp> make_conv(const ConvDesc& d) override;
  std::unique_ptr<DeconvOp> make_deconv(const DeconvDesc& d) override;
  std::unique_ptr<FcOp> make_fc(const FcDesc& d) override;
  std::unique_ptr<PoolOp> make_pool(const PoolDesc& d) override;
  std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormDesc& d) override;
  std::unique_ptr<LrnOp> make_lrn(const LrnDesc& d) override;
  std::unique_ptr<ActOp> make_act(const ActDesc& d) override;
  std::unique_ptr<SoftmaxOp> make_softmax(int64_t rows, int64_t channels) override;
  std::unique_ptr<ConcatOp> make_concat(int64_t n, int64_t h, int64_t w, const std::vector<int64_t>& channels) override;
  std::unique_ptr<LayerNormOp> make_layer_norm(const LayerNormDesc& d) override;

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

 protected:
  void do_fill(Tensor& t, float value) override;
  void do_copy(const Tensor& src, Tensor& dst) override;
  void do_axpby(float a, const Tensor& x, float b, Tensor& y) override;
  void do_sum(const std::vector<const Tensor*>& xs, Tensor& y) override;
  void do_scale(Tensor& t, float s) override;
  void do_clamp(Tensor& t, float lo, float hi) override;
  double do_sum_squares(const Tensor& t) override;
  void do_l2_norm_into(const Tensor& t, Tensor& norms, int64_t index, bool accumulate) override;
  void do_clip_to_norm(Tensor& t, const Tensor& norms, int64_t index, double threshold) override;
  void do_shift_scale(const Tensor& x, const Tensor& shift, const Tensor& mul, Tensor& y) override;
  void do_dropout_forward(const Tensor& x, Tensor& y, Tensor& mask, float p, uint64_t key, float keep_value) override;
  void do_multiply_same_size(const Tensor& x, const Tensor& m, Tensor& y) override;
  void do_multiply(const std::vector<const Tensor*>& xs, Tensor& y,
                   const ProductDesc& d) override;  // cuda_multiply.cpp
  void do_multiply_backward(const Tensor& dy, const std::vector<const Tensor*>& xs, size_t i, Tensor& dx,
                            const ProductDesc& d) override;  // cuda_multiply.cpp
  void do_channel_moments(const Tensor& x, int64_t positions, Tensor& mean, Tensor& var) override;
  void do_batch_norm_dx_correction(const Tensor& x, int64_t positions, const Tensor& mean, const Tensor& var,
                                   const Tensor& scale, float epsilon, double m, const Tensor& dshift,
                                   const Tensor& dscale, Tensor& dx) override;
  void do_max_pool_indices(const Tensor& x, Tensor& idx, const PoolDesc& d) override;
  void do_max_unpool(const Tensor& x, const Tensor& idx, Tensor& y, const PoolDesc& d) override;
  void do_max_unpool_backward(const Tensor& dy, const Tensor& idx, Tensor& dx, const PoolDesc& d) override;
  void do_crop2d(const Tensor& x, Tensor& y, const CropDesc& d) override;
  void do_crop2d_backward(const Tensor& dy, Tensor& dx, const CropDesc& d) override;
  // cuda_channel_ops.cpp
  void do_channel_shuffle(const Tensor& x, Tensor& y, const ChannelShuffleDesc& d) override;
  void do_channel_slice(const Tensor& x, Tensor& y, const ChannelSliceDesc& d) override;
  void do_channel_slice_backward(const Tensor& dy, Tensor& dx, const ChannelSliceDesc& d) override;
  LossTotals do_cross_entropy(const Tensor& probs, const Tensor& labels, const LossOptions& opt,
                              Tensor& dlogits) override;
  void do_optimizer_update(const UpdateRule& rule, const UpdateScalars& k, Tensor& w, const Tensor& g, Tensor& m,
                           Tensor& s) override;
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
  void enter() const;                          // makes device_ current for the calling thread
  void not_capturing(const char* what) const;  // throws DeviceError while capturing
  void* scratch(size_t bytes);
  Staging& free_staging(size_t bytes);
  // Copies bytes of result_d_ to the pinned result_h_ and waits for the compute stream.
  void read_back(size_t bytes);

  int device_;
  cuda::CudaContext& ctx_;
  cuda::CachingAllocator& alloc_;
  DeviceState& s_;
};

struct CudaBackend::DeviceState {
  static DeviceState& of(int device);  // the GPU's (created on first use; makes that device current)
  void* scratch_ = nullptr;            // device, grows on demand; used by one call at a time
  size_t scratch_bytes_ = 0;
  void* result_d_ = nullptr;  // device, kResultBytes: values that are read back
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

}  // namespace dlt

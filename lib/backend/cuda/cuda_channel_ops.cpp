// The CUDA backend's channel shuffle and channel slice (backend.h), registered as DeviceType::kCuda
// kernels: the shuffle is its own gather kernel (cuda_channel_kernels.cu); the slice and its
// gradient are strided copies of a run of channels per pixel (the concatenation's copy_strided),
// the gradient into a zeroed dx.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_channel_kernels.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/kernel_kinds.h"

namespace dlt {

static void cuda_channel_shuffle(Backend& be, const Tensor& x, Tensor& y, const ChannelShuffleDesc& d) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  cuda::channel_shuffle(x.data(), y.data(), d.pixels, d.c, d.groups, gpu.context().stream);
}

static void cuda_channel_slice(Backend& be, const Tensor& x, Tensor& y, const ChannelSliceDesc& d) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  cuda::copy_strided(x.data() + d.start, d.c, y.data(), d.count, d.pixels, d.count, gpu.context().stream);
}

static void cuda_channel_slice_backward(Backend& be, const Tensor& dy, Tensor& dx, const ChannelSliceDesc& d) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  if (dx.bytes() == 0) return;
  DLT_CUDA(cudaMemsetAsync(dx.data(), 0, dx.bytes(), gpu.context().stream));
  cuda::copy_strided(dy.data(), d.count, dx.data() + d.start, d.c, d.pixels, d.count, gpu.context().stream);
}

DLT_REGISTER_KERNEL(ChannelShuffleKernel, DeviceType::kCuda, cuda_channel_shuffle);
DLT_REGISTER_KERNEL(ChannelSliceKernel, DeviceType::kCuda, cuda_channel_slice);
DLT_REGISTER_KERNEL(ChannelSliceBackwardKernel, DeviceType::kCuda, cuda_channel_slice_backward);

}  // namespace dlt

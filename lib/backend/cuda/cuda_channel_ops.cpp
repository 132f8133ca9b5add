// CudaBackend's channel shuffle and channel slice (backend.h): the shuffle is its own gather
// kernel (cuda_channel_kernels.cu); the slice and its gradient are strided copies of a run of
// channels per pixel (the concatenation's copy_strided), the gradient into a zeroed dx.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_channel_kernels.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"

namespace dlt {

void CudaBackend::do_channel_shuffle(const Tensor& x, Tensor& y, const ChannelShuffleDesc& d) {
  enter();
  cuda::channel_shuffle(x.data(), y.data(), d.pixels, d.c, d.groups, ctx_.stream);
}

void CudaBackend::do_channel_slice(const Tensor& x, Tensor& y, const ChannelSliceDesc& d) {
  enter();
  cuda::copy_strided(x.data() + d.start, d.c, y.data(), d.count, d.pixels, d.count, ctx_.stream);
}

void CudaBackend::do_channel_slice_backward(const Tensor& dy, Tensor& dx, const ChannelSliceDesc& d) {
  enter();
  if (dx.bytes() == 0) return;
  DLT_CUDA(cudaMemsetAsync(dx.data(), 0, dx.bytes(), ctx_.stream));
  cuda::copy_strided(dy.data(), d.count, dx.data() + d.start, d.c, d.pixels, d.count, ctx_.stream);
}

}  // namespace dlt

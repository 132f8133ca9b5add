// The CUDA backend's element-wise work, synchronized batch-norm helpers and optimizer updates,
// registered as DeviceType::kCuda kernels (kernel_kinds.h): on arguments Backend has checked,
// one or a few kernel launches on the compute stream. Only sum_squares waits for the GPU, to
// return its value (the losses: cuda_losses.cpp).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_op_kernels.h"
#include "backend/kernel_kinds.h"
#include "util/error.h"

namespace dlt {

static void cuda_fill(Backend& be, Tensor& t, float value) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  cuda::fill_value(t.data(), t.numel(), value, gpu.context().stream);
}

static void cuda_copy(Backend& be, const Tensor& src, Tensor& dst) {
  CudaBackend& gpu = cuda_backend_of(be);
  if (src.data() == dst.data() || src.bytes() == 0) return;
  gpu.enter();
  DLT_CUDA(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice, gpu.context().stream));
}

static void cuda_axpby(Backend& be, float a, const Tensor& x, float b, Tensor& y) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  cuda::axpby(a, x.data(), b, y.data(), y.numel(), gpu.context().stream);
}

static void cuda_sum(Backend& be, const std::vector<const Tensor*>& xs, Tensor& y) {
  CudaBackend& gpu = cuda_backend_of(be);
  std::vector<const float*> ptrs;
  ptrs.reserve(xs.size());
  for (size_t j = 0; j < xs.size(); ++j) {
    // Inputs after the first chunk are added into y in place: y must not be one of them.
    DLT_CHECK(j < static_cast<size_t>(cuda::kSumChunk) || xs[j]->data() != y.data(),
              "sum: the output aliases input " << j << " (only the first " << cuda::kSumChunk
                                               << " inputs may be the output)");
    ptrs.push_back(xs[j]->data());
  }
  gpu.enter();
  cuda::sum(ptrs.data(), static_cast<int>(ptrs.size()), y.data(), y.numel(), gpu.context().stream);
}

static void cuda_scale(Backend& be, Tensor& t, float s) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  cuda::scale(t.data(), t.numel(), s, gpu.context().stream);
}

static void cuda_clamp(Backend& be, Tensor& t, float lo, float hi) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  cuda::clamp(t.data(), t.numel(), lo, hi, gpu.context().stream);
}

static double cuda_sum_squares(Backend& be, const Tensor& t) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  auto* partials = static_cast<double*>(gpu.scratch(cuda::sum_squares_scratch() * sizeof(double)));
  cuda::sum_squares(t.data(), t.numel(), partials, static_cast<double*>(gpu.result_buffer()), gpu.context().stream);
  return *static_cast<const double*>(gpu.read_back(sizeof(double)));
}

static void cuda_l2_norm_into(Backend& be, const Tensor& t, Tensor& norms, int64_t index, bool accumulate) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  auto* partials = static_cast<double*>(gpu.scratch(cuda::sum_squares_scratch() * sizeof(double)));
  cuda::l2_norm_into(t.data(), t.numel(), partials, norms.data() + index, accumulate, gpu.context().stream);
}

static void cuda_clip_to_norm(Backend& be, Tensor& t, const Tensor& norms, int64_t index, double threshold) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  cuda::clip_to_norm(t.data(), t.numel(), norms.data() + index, threshold, gpu.context().stream);
}

static void cuda_shift_scale(Backend& be, const Tensor& x, const Tensor& shift, const Tensor& mul, Tensor& y) {
  CudaBackend& gpu = cuda_backend_of(be);
  const int64_t n = x.numel(), ns = shift.numel(), nm = mul.defined() ? mul.numel() : 1;
  gpu.enter();
  cuda::shift_scale(x.data(), shift.data(), ns, mul.defined() ? mul.data() : nullptr, nm, y.data(), n,
                    gpu.context().stream);
}

static void cuda_dropout_forward(Backend& be, const Tensor& x, Tensor& y, Tensor& mask, float p, uint64_t key,
                                 float keep_value) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  cuda::dropout_forward(x.data(), y.data(), mask.data(), x.numel(), key, p, keep_value, gpu.context().stream);
}

static void cuda_multiply_same_size(Backend& be, const Tensor& x, const Tensor& m, Tensor& y) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  cuda::mul(x.data(), m.data(), y.data(), x.numel(), gpu.context().stream);
}

static void cuda_channel_moments(Backend& be, const Tensor& x, int64_t positions, Tensor& mean, Tensor& var) {
  CudaBackend& gpu = cuda_backend_of(be);
  const int64_t c = mean.numel();
  gpu.enter();
  const size_t doubles = cuda::channel_moments_scratch(positions, c);
  auto* s = static_cast<double*>(gpu.scratch(doubles * sizeof(double)));
  cuda::channel_moments(x.data(), positions, c, mean.data(), var.data(), s, gpu.context().stream);
}

static void cuda_batch_norm_dx_correction(Backend& be, const Tensor& x, int64_t positions, const Tensor& mean,
                                          const Tensor& var, const Tensor& scale, float epsilon, double m,
                                          const Tensor& dshift, const Tensor& dscale, Tensor& dx) {
  CudaBackend& gpu = cuda_backend_of(be);
  const int64_t c = mean.numel();
  gpu.enter();
  auto* coef = static_cast<float*>(gpu.scratch(3 * static_cast<size_t>(c) * sizeof(float)));
  cuda::batch_norm_dx_correction(x.data(), positions, c, mean.data(), var.data(), scale.data(), epsilon, m,
                                 dshift.data(), dscale.data(), dx.data(), coef, gpu.context().stream);
}

static void cuda_max_pool_indices(Backend& be, const Tensor& x, Tensor& idx, const PoolDesc& d) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  cuda::max_pool_indices(x.data(), idx.data_i32(), d.n, d.h, d.w, d.c, d.out_h(), d.out_w(), d.kh, d.kw, d.stride_h,
                         d.stride_w, d.pad_t, d.pad_l, gpu.context().stream);
}

static void cuda_max_unpool(Backend& be, const Tensor& x, const Tensor& idx, Tensor& y, const PoolDesc& d) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  DLT_CUDA(cudaMemsetAsync(y.data(), 0, y.bytes(), gpu.context().stream));
  cuda::max_unpool(x.data(), idx.data_i32(), y.data(), d.n, d.out_h() * d.out_w(), d.h * d.w, d.c,
                   gpu.context().stream);
}

static void cuda_max_unpool_backward(Backend& be, const Tensor& dy, const Tensor& idx, Tensor& dx, const PoolDesc& d) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  cuda::max_unpool_backward(dy.data(), idx.data_i32(), dx.data(), d.n, d.out_h() * d.out_w(), d.h * d.w, d.c,
                            gpu.context().stream);
}

// Cropping is the interior of an explicit padding: the conv ops' crop_nhwc kernel, and its
// gradient their zero pad_nhwc kernel (which writes every element of dx).
static void cuda_crop2d(Backend& be, const Tensor& x, Tensor& y, const CropDesc& d) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  if (d.n == 0) return;
  DLT_CUDA(cuda::crop_nhwc(x.data(), y.data(), d.n, d.out_h, d.out_w, d.c, d.top, d.h - d.out_h - d.top, d.left,
                           d.w - d.out_w - d.left, gpu.context().stream));
}

static void cuda_crop2d_backward(Backend& be, const Tensor& dy, Tensor& dx, const CropDesc& d) {
  CudaBackend& gpu = cuda_backend_of(be);
  gpu.enter();
  if (d.n == 0) return;
  DLT_CUDA(cuda::pad_nhwc(dy.data(), dx.data(), d.n, d.out_h, d.out_w, d.c, d.top, d.h - d.out_h - d.top, d.left,
                          d.w - d.out_w - d.left, 0.f, gpu.context().stream));
}

static void cuda_optimizer_update(Backend& be, const UpdateRule& r, const UpdateScalars& k, Tensor& w, const Tensor& g,
                                  Tensor& m, Tensor& s) {
  CudaBackend& gpu = cuda_backend_of(be);
  auto arg = [](const ScalarArg& a) { return cuda::Scalar{a.value, a.at}; };
  gpu.enter();
  switch (r.solver) {
    case Solver::kSgdm:
      cuda::sgdm_update(w.data(), g.data(), m.data(), w.numel(), arg(k.lr), r.momentum, r.l2, gpu.context().stream);
      return;
    case Solver::kAdam:
    case Solver::kAdamW:
      cuda::adam_update(w.data(), g.data(), m.data(), s.data(), w.numel(), arg(k.lr), r.b1, r.b2, r.eps, arg(k.c1),
                        arg(k.c2), r.l2, r.solver == Solver::kAdamW ? r.wd : 0.f, gpu.context().stream);
      return;
    case Solver::kRmsprop:
      cuda::rmsprop_update(w.data(), g.data(), s.data(), w.numel(), arg(k.lr), r.b2, r.eps, r.l2, gpu.context().stream);
      return;
  }
}

DLT_REGISTER_KERNEL(FillKernel, DeviceType::kCuda, cuda_fill);
DLT_REGISTER_KERNEL(CopyKernel, DeviceType::kCuda, cuda_copy);
DLT_REGISTER_KERNEL(AxpbyKernel, DeviceType::kCuda, cuda_axpby);
DLT_REGISTER_KERNEL(SumKernel, DeviceType::kCuda, cuda_sum);
DLT_REGISTER_KERNEL(ScaleKernel, DeviceType::kCuda, cuda_scale);
DLT_REGISTER_KERNEL(ClampKernel, DeviceType::kCuda, cuda_clamp);
DLT_REGISTER_KERNEL(SumSquaresKernel, DeviceType::kCuda, cuda_sum_squares);
DLT_REGISTER_KERNEL(L2NormIntoKernel, DeviceType::kCuda, cuda_l2_norm_into);
DLT_REGISTER_KERNEL(ClipToNormKernel, DeviceType::kCuda, cuda_clip_to_norm);
DLT_REGISTER_KERNEL(ShiftScaleKernel, DeviceType::kCuda, cuda_shift_scale);
DLT_REGISTER_KERNEL(DropoutKernel, DeviceType::kCuda, cuda_dropout_forward);
DLT_REGISTER_KERNEL(MultiplySameSizeKernel, DeviceType::kCuda, cuda_multiply_same_size);
DLT_REGISTER_KERNEL(ChannelMomentsKernel, DeviceType::kCuda, cuda_channel_moments);
DLT_REGISTER_KERNEL(BatchNormDxCorrectionKernel, DeviceType::kCuda, cuda_batch_norm_dx_correction);
DLT_REGISTER_KERNEL(MaxPoolIndicesKernel, DeviceType::kCuda, cuda_max_pool_indices);
DLT_REGISTER_KERNEL(MaxUnpoolKernel, DeviceType::kCuda, cuda_max_unpool);
DLT_REGISTER_KERNEL(MaxUnpoolBackwardKernel, DeviceType::kCuda, cuda_max_unpool_backward);
DLT_REGISTER_KERNEL(Crop2dKernel, DeviceType::kCuda, cuda_crop2d);
DLT_REGISTER_KERNEL(Crop2dBackwardKernel, DeviceType::kCuda, cuda_crop2d_backward);
DLT_REGISTER_KERNEL(OptimizerUpdateKernel, DeviceType::kCuda, cuda_optimizer_update);

}  // namespace dlt

// Batch normalization on cuDNN, NHWC, per-channel (spatial) statistics.
// Training: cudnnBatchNormalizationForwardTrainingEx / BackwardEx in SPATIAL_PERSISTENT mode
// with CUDNN_BATCHNORM_OPS_BN (falls back to the plain SPATIAL calls where cuDNN refuses, or
// when BatchNormEx is false: backend_options.h, from the backend that makes the op).
// The interface wants the batch mean and BIASED variance: cuDNN writes those to its running
// buffers with exponentialAverageFactor = 1, the variance unbiased (m / (m - 1)), which a
// small kernel rescales. Fused relu: relu in place after cuDNN; backward masks dy itself
// (recomputing the pre-activation sign from x, the saved statistics and a copy of offset),
// because cuDNN's OPS_BN_ACTIVATION backward needs y and the offset, which backward is not
// given. global_stats: normalize with the given statistics and our own backward kernel.
// BatchNormKernels: dltrain (env DLT_BN_KERNELS=dltrain): training forward and backward by
// dltrain's own kernels instead (cuda_bn_kernels.h: the relu inside the normalizing pass and
// the mask inside the backward's passes), the batch statistics written to mean and var and
// read back from the mean and var backward is given (those of the last forward_training);
// inference and global_stats as above.
#include <sstream>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_bn_kernels.h"
#include "backend/cuda/cuda_op_kernels.h"
#include "backend/cuda/cuda_op_util.h"

namespace dlt::cuda {
namespace {

class CudaBatchNormOp final : public BatchNormOp {
 public:
  CudaBatchNormOp(const BatchNormDesc& d, CudaContext& ctx, const BackendOptions& options)
      : BatchNormOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx), opts_(options) {
    std::ostringstream os;
    os << "batch_norm (input " << d.n << "x" << d.h << "x" << d.w << "x" << d.c << ")";
    name_ = os.str();
    m_ = d.n * d.h * d.w;
    if (m_ < 1 || d.c < 1) throw ShapeError(name_ + ": needs at least one value per channel");
    if (!(d.epsilon > CUDNN_BN_MIN_EPSILON))
      throw ShapeError(name_ + ": Epsilon " + std::to_string(d.epsilon) + " must be > " +
                       std::to_string(CUDNN_BN_MIN_EPSILON));
    set_nhwc(x_desc_, d.n, d.h, d.w, d.c, name_);
    DLT_CUDNN(cudnnSetActivationDescriptor(act_desc_, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
    // SPATIAL_PERSISTENT through the Ex API when cuDNN accepts this shape and BatchNormEx is
    // on, else SPATIAL.
    mode_ = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
    DLT_CUDNN(cudnnDeriveBNTensorDescriptor(bn_desc_, x_desc_, mode_));
    size_t rs = 0;
    use_ex_ = !own_kernels_ && opts_.batch_norm_ex &&
              // The same descriptors as the calls below: no z (OPS_BN adds nothing) in forward, no
              // y in backward (the calls pass null for both), no activation.
              cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(ctx.cudnn, mode_, CUDNN_BATCHNORM_OPS_BN,
                                                                       x_desc_, nullptr, x_desc_, bn_desc_, nullptr,
                                                                       &fwd_ws_) == CUDNN_STATUS_SUCCESS &&
              cudnnGetBatchNormalizationBackwardExWorkspaceSize(ctx.cudnn, mode_, CUDNN_BATCHNORM_OPS_BN, x_desc_,
                                                                nullptr, x_desc_, nullptr, x_desc_, bn_desc_, nullptr,
                                                                &bwd_ws_) == CUDNN_STATUS_SUCCESS &&
              cudnnGetBatchNormalizationTrainingExReserveSpaceSize(ctx.cudnn, mode_, CUDNN_BATCHNORM_OPS_BN, nullptr,
                                                                   x_desc_, &rs) == CUDNN_STATUS_SUCCESS;
    if (!use_ex_) {
      mode_ = CUDNN_BATCHNORM_SPATIAL;
      fwd_ws_ = bwd_ws_ = rs = 0;
      DLT_CUDNN(cudnnDeriveBNTensorDescriptor(bn_desc_, x_desc_, mode_));
    }
    reserve_bytes_ = rs;
    if (rs > 0) reserve_ = device_floats(static_cast<int64_t>((rs + 3) / 4), ctx);
    if (d.fuse_relu) offset_copy_ = device_floats(d.c, ctx);
    if (!own_kernels_) {  // cuDNN's saved statistics and gradient targets (own kernels skip those)
      save_mean_ = device_floats(d.c, ctx);
      save_invstd_ = device_floats(d.c, ctx);
      dscale_own_ = device_floats(d.c, ctx);
      doffset_own_ = device_floats(d.c, ctx);
    }
  }

 protected:
  void do_forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                           Tensor& var) override {
    if (d_.fuse_relu)
      DLT_CUDA(
          cudaMemcpyAsync(offset_copy_.data(), offset.data(), offset.bytes(), cudaMemcpyDeviceToDevice, ctx_.stream));
    if (d_.global_stats) {
      normalize(x, scale, offset, mean, var, y);
      have_forward_ = true;
      return;
    }
    if (own_kernels_) {  // the statistics straight into mean and var, which backward is given
      void* scratch = ctx_.workspace(bn_train_scratch_bytes(m_, d_.c));
      DLT_CUDA(bn_train_forward(x.data(), scale.data(), offset.data(), y.data(), mean.data(), var.data(), d_.epsilon,
                                d_.fuse_relu, m_, d_.c, scratch, ctx_.stream));
      have_forward_ = true;
      return;
    }
    const float one = 1.f, zero = 0.f;
    // Factor 1 makes the running buffers the batch statistics; cuDNN still reads them
    // ((1 - 1) * old), so clear them first: a NaN there would survive the multiply by 0.
    DLT_CUDA(cudaMemsetAsync(mean.data(), 0, mean.bytes(), ctx_.stream));
    DLT_CUDA(cudaMemsetAsync(var.data(), 0, var.bytes(), ctx_.stream));
    if (use_ex_) {
      void* ws = ctx_.workspace(fwd_ws_);
      DLT_CUDNN(cudnnBatchNormalizationForwardTrainingEx(
          ctx_.cudnn, mode_, CUDNN_BATCHNORM_OPS_BN, &one, &zero, x_desc_, x.data(), nullptr, nullptr, x_desc_,
          y.data(), bn_desc_, scale.data(), offset.data(), 1.0, mean.data(), var.data(), d_.epsilon, save_mean_.data(),
          save_invstd_.data(), nullptr, ws, fwd_ws_, reserve_bytes_ ? reserve_.data() : nullptr, reserve_bytes_));
    } else {
      DLT_CUDNN(cudnnBatchNormalizationForwardTraining(
          ctx_.cudnn, mode_, &one, &zero, x_desc_, x.data(), x_desc_, y.data(), bn_desc_, scale.data(), offset.data(),
          1.0, mean.data(), var.data(), d_.epsilon, save_mean_.data(), save_invstd_.data()));
    }
    DLT_CUDA(bn_biased_variance(var.data(), d_.c, m_, ctx_.stream));
    if (d_.fuse_relu) relu_in_place(y);
    have_forward_ = true;
  }

  void do_forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, const Tensor& mean,
                            const Tensor& var, Tensor& y) override {
    normalize(x, scale, offset, mean, var, y);
  }

  void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& var,
                   Tensor& dx, Tensor& dscale, Tensor& doffset) override {
    if (!have_forward_) throw Error(name_ + ": backward called before forward_training (call it first)");
    if (own_kernels_) {
      void* scratch = ctx_.workspace(bn_train_scratch_bytes(m_, d_.c));
      DLT_CUDA(bn_train_backward(x.data(), dy.data(), mean.data(), var.data(), scale.data(),
                                 d_.fuse_relu ? offset_copy_.data() : nullptr, d_.epsilon, dx.data(),
                                 dscale.defined() ? dscale.data() : nullptr,
                                 doffset.defined() ? doffset.data() : nullptr, m_, d_.c, scratch, ctx_.stream));
      return;
    }
    float* ds = dscale.defined() ? dscale.data() : dscale_own_.data();
    float* dof = doffset.defined() ? doffset.data() : doffset_own_.data();
    if (d_.global_stats) {
      // Constant statistics: dx = scale / sigma * dy', dscale = sum dy' xhat, doffset = sum dy'.
      const size_t invstd_bytes = aligned_bytes(sizeof(float) * d_.c);
      const int64_t partial = bn_global_backward_partial_floats(m_, d_.c);
      char* base = static_cast<char*>(ctx_.workspace(invstd_bytes + sizeof(float) * partial));
      float* invstd = reinterpret_cast<float*>(base);
      DLT_CUDA(bn_inv_std(var.data(), invstd, d_.c, d_.epsilon, ctx_.stream));
      DLT_CUDA(bn_global_backward(x.data(), dy.data(), mean.data(), invstd, scale.data(),
                                  d_.fuse_relu ? offset_copy_.data() : nullptr, dx.data(), ds, dof,
                                  reinterpret_cast<float*>(base + invstd_bytes), m_, d_.c, ctx_.stream));
      return;
    }
    const size_t dyp_bytes = d_.fuse_relu ? aligned_bytes(x.bytes()) : 0;
    char* base = static_cast<char*>(ctx_.workspace(dyp_bytes + (use_ex_ ? bwd_ws_ : 0)));
    const float* g = dy.data();
    if (d_.fuse_relu) {
      float* dyp = reinterpret_cast<float*>(base);
      DLT_CUDA(bn_relu_mask(x.data(), dy.data(), save_mean_.data(), save_invstd_.data(), scale.data(),
                            offset_copy_.data(), dyp, m_, d_.c, ctx_.stream));
      g = dyp;
    }
    const float one = 1.f, zero = 0.f;
    if (use_ex_) {
      DLT_CUDNN(cudnnBatchNormalizationBackwardEx(
          ctx_.cudnn, mode_, CUDNN_BATCHNORM_OPS_BN, &one, &zero, &one, &zero, x_desc_, x.data(), nullptr, nullptr,
          x_desc_, g, nullptr, nullptr, x_desc_, dx.data(), bn_desc_, scale.data(), nullptr, ds, dof, d_.epsilon,
          save_mean_.data(), save_invstd_.data(), nullptr, base + dyp_bytes, bwd_ws_,
          reserve_bytes_ ? reserve_.data() : nullptr, reserve_bytes_));
    } else {
      DLT_CUDNN(cudnnBatchNormalizationBackward(ctx_.cudnn, mode_, &one, &zero, &one, &zero, x_desc_, x.data(), x_desc_,
                                                g, x_desc_, dx.data(), bn_desc_, scale.data(), ds, dof, d_.epsilon,
                                                save_mean_.data(), save_invstd_.data()));
    }
  }

 private:
  // y = scale (x - mean) / sqrt(var + eps) + offset with the given statistics (+ relu).
  void normalize(const Tensor& x, const Tensor& scale, const Tensor& offset, const Tensor& mean, const Tensor& var,
                 Tensor& y) {
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnBatchNormalizationForwardInference(ctx_.cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_desc_,
                                                      x.data(), x_desc_, y.data(), bn_desc_, scale.data(),
                                                      offset.data(), mean.data(), var.data(), d_.epsilon));
    if (d_.fuse_relu) relu_in_place(y);
  }

  void relu_in_place(Tensor& y) {
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnActivationForward(ctx_.cudnn, act_desc_, &one, x_desc_, y.data(), &zero, x_desc_, y.data()));
  }

  BatchNormDesc d_;
  CudaContext& ctx_;
  const BackendOptions opts_;  // its backend's
  std::string name_;
  int64_t m_ = 0;  // N * H * W values per channel
  cudnnBatchNormMode_t mode_ = CUDNN_BATCHNORM_SPATIAL;
  bool use_ex_ = false, have_forward_ = false;
  // BatchNormKernels: dltrain (training with batch statistics only).
  bool own_kernels_ = opts_.batch_norm_kernels == BatchNormKernels::kDltrain && !d_.global_stats;
  size_t fwd_ws_ = 0, bwd_ws_ = 0, reserve_bytes_ = 0;
  TensorDesc x_desc_;   // (N, H, W, C), also for y, dy, dx
  TensorDesc bn_desc_;  // (1, C, 1, 1)
  ActivationDesc act_desc_;
  Tensor reserve_;                   // cuDNN's reserve space between forward and backward
  Tensor save_mean_, save_invstd_;   // (C) cuDNN: batch mean and 1 / sqrt(var + eps) of the last forward
  Tensor offset_copy_;               // (C) offset of the last forward (fused relu's mask)
  Tensor dscale_own_, doffset_own_;  // (C) cuDNN: targets when the caller passes none
};

}  // namespace

static std::unique_ptr<BatchNormOp> make_batch_norm_op(const BatchNormDesc& d, CudaContext& ctx,
                                                       const BackendOptions& options) {
  return std::make_unique<CudaBatchNormOp>(d, ctx, options);
}

namespace {
std::unique_ptr<BatchNormOp> make_registered(Backend& b, const BatchNormDesc& d) {
  cuda_backend_of(b).enter();
  return make_batch_norm_op(d, cuda_context(b), b.options());
}
}  // namespace

DLT_REGISTER_OP(BatchNormDesc, DeviceType::kCuda, "cudnn", 0, make_registered, nullptr);

}  // namespace dlt::cuda

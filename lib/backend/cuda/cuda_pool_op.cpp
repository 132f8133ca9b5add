// Max and average pooling on cuDNN (NHWC). Max is CUDNN_POOLING_MAX_DETERMINISTIC; average is
// CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING (padding counts as zeros, as MATLAB). cuDNN pads
// symmetrically only: the excess of asymmetric padding is padded explicitly (-FLT_MAX for
// max, 0 for average) and the gradient cropped back. Average pooling that leaves padding out
// (exclude_padding) is the include-padding one with its output, and the gradient into its
// backward, scaled per position by kh kw / the taps inside the input (avg_pool_exclude_scale):
// one form whatever part of the padding cuDNN's symmetric padding takes. backward(dy, dx) gets no x or y, so a
// training forward keeps them: x (or its padded copy) and, for max pooling, a copy of y.
#include <algorithm>
#include <cfloat>
#include <sstream>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_op_kernels.h"
#include "backend/cuda/cuda_op_util.h"

namespace dlt::cuda {
namespace {

class CudaPoolOp final : public PoolOp {
 public:
  CudaPoolOp(const PoolDesc& d, CudaContext& ctx) : PoolOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {
    std::ostringstream os;
    os << (d.kind == PoolKind::kMax ? "max"
           : d.exclude_padding      ? "average (padding excluded)"
                                    : "average")
       << " pool (input " << d.n << "x" << d.h << "x" << d.w << "x" << d.c << ", window " << d.kh << "x" << d.kw
       << ", stride " << d.stride_h << "x" << d.stride_w << ", padding t" << d.pad_t << " b" << d.pad_b << " l"
       << d.pad_l << " r" << d.pad_r << ")";
    name_ = os.str();
    oh_ = d.out_h();
    ow_ = d.out_w();
    if (oh_ <= 0 || ow_ <= 0 || d.stride_h < 1 || d.stride_w < 1 || std::min({d.pad_t, d.pad_b, d.pad_l, d.pad_r}) < 0)
      throw ShapeError(name_ + ": the output would be " + std::to_string(oh_) + "x" + std::to_string(ow_) +
                       " (check PoolSize, Stride, Padding)");
    pad_ = PadSplit(d.h, d.w, d.pad_t, d.pad_b, d.pad_l, d.pad_r);
    set_nhwc(x_desc_, d.n, pad_.hx, pad_.wx, d.c, name_);
    set_nhwc(y_desc_, d.n, oh_, ow_, d.c, name_);
    const cudnnPoolingMode_t mode =
        d.kind == PoolKind::kMax ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    DLT_CUDNN(cudnnSetPooling2dDescriptor(pool_desc_, mode, CUDNN_PROPAGATE_NAN, to_int(d.kh, name_, "PoolSize"),
                                          to_int(d.kw, name_, "PoolSize"), to_int(pad_.ph, name_, "Padding"),
                                          to_int(pad_.pw, name_, "Padding"), to_int(d.stride_h, name_, "Stride"),
                                          to_int(d.stride_w, name_, "Stride")));
    int n = 0, c = 0, oh = 0, ow = 0;
    DLT_CUDNN(cudnnGetPooling2dForwardOutputDim(pool_desc_, x_desc_, &n, &c, &oh, &ow));
    if (n != d.n || c != d.c || oh != oh_ || ow != ow_) {
      std::ostringstream e;
      e << name_ << ": cuDNN computes an output of " << oh << "x" << ow << " but the layer expects " << oh_ << "x"
        << ow_ << " (report this shape as a bug)";
      throw ShapeError(e.str());
    }
    rescale_ = d.kind == PoolKind::kAverage && d.exclude_padding && (d.pad_t || d.pad_b || d.pad_l || d.pad_r);
    xp_bytes_ = pad_.explicit_pad ? aligned_bytes(sizeof(float) * d.n * pad_.hx * pad_.wx * d.c) : 0;
  }

 protected:
  void do_forward(const Tensor& x, Tensor& y, bool training) override {
    const float* xin = x.data();
    if (pad_.explicit_pad) {
      // Training keeps the padded input for backward; inference pads into the workspace.
      float* xp;
      if (training) {
        if (!xp_.defined()) xp_ = device_floats(d_.n * pad_.hx * pad_.wx * d_.c, ctx_);
        xp = xp_.data();
      } else {
        xp = static_cast<float*>(ctx_.workspace(xp_bytes_));
      }
      const float pad = d_.kind == PoolKind::kMax ? -FLT_MAX : 0.f;
      DLT_CUDA(pad_nhwc(x.data(), xp, d_.n, d_.h, d_.w, d_.c, pad_.et, pad_.eb, pad_.el, pad_.er, pad, ctx_.stream));
      xin = xp;
    }
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnPoolingForward(ctx_.cudnn, pool_desc_, &one, x_desc_, xin, &zero, y_desc_, y.data()));
    if (rescale_) DLT_CUDA(exclude_scale(y.data(), y.data()));
    if (!training) return;
    if (!pad_.explicit_pad) x_kept_ = x;  // a handle: the layer's input stays until its backward
    if (d_.kind == PoolKind::kMax) {
      // A copy: a following in-place layer may change y before backward.
      if (!y_copy_.defined()) y_copy_ = device_floats(y.numel(), ctx_);
      DLT_CUDA(cudaMemcpyAsync(y_copy_.data(), y.data(), y.bytes(), cudaMemcpyDeviceToDevice, ctx_.stream));
      y_kept_ = y_copy_;
    } else {
      y_kept_ = y;  // average pooling's backward does not read y's values
    }
    have_forward_ = true;
  }

  void do_backward(const Tensor& dy, Tensor& dx) override {
    if (!have_forward_)
      throw Error(name_ +
                  ": backward called before a training forward (call forward with "
                  "training = true first)");
    const float* xin = pad_.explicit_pad ? xp_.data() : x_kept_.data();
    float* dxp = pad_.explicit_pad ? static_cast<float*>(ctx_.workspace(xp_bytes_)) : dx.data();
    const float* g = dy.data();
    if (rescale_) {
      if (!dy_scaled_.defined()) dy_scaled_ = device_floats(dy.numel(), ctx_);
      DLT_CUDA(exclude_scale(g, dy_scaled_.data()));
      g = dy_scaled_.data();
    }
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnPoolingBackward(ctx_.cudnn, pool_desc_, &one, y_desc_, y_kept_.data(), y_desc_, g, x_desc_, xin,
                                   &zero, x_desc_, dxp));
    if (pad_.explicit_pad)
      DLT_CUDA(crop_nhwc(dxp, dx.data(), d_.n, d_.h, d_.w, d_.c, pad_.et, pad_.eb, pad_.el, pad_.er, ctx_.stream));
  }

 private:
  // dst = src * kh kw / the taps inside the input, per output position (exclude_padding).
  cudaError_t exclude_scale(const float* src, float* dst) const {
    return avg_pool_exclude_scale(src, dst, d_.n, oh_, ow_, d_.c, d_.h, d_.w, d_.kh, d_.kw, d_.stride_h, d_.stride_w,
                                  d_.pad_t, d_.pad_l, ctx_.stream);
  }

  PoolDesc d_;
  CudaContext& ctx_;
  std::string name_;
  int64_t oh_ = 0, ow_ = 0;
  bool rescale_ = false;  // average pooling without the padding in its divisor, over a padded input
  PadSplit pad_;          // symmetric padding for cuDNN + the excess padded explicitly
  bool have_forward_ = false;
  size_t xp_bytes_ = 0;
  TensorDesc x_desc_, y_desc_;  // (N, Hx, Wx, C), (N, OH, OW, C)
  PoolingDesc pool_desc_;
  Tensor xp_;         // (N, Hx, Wx, C) padded input of the last training forward
  Tensor x_kept_;     // (N, H, W, C) input of the last training forward (no explicit padding)
  Tensor y_copy_;     // (N, OH, OW, C) max pooling's output of the last training forward
  Tensor y_kept_;     // what backward passes as y
  Tensor dy_scaled_;  // (N, OH, OW, C) the gradient scaled for exclude_padding's backward
};

}  // namespace

static std::unique_ptr<PoolOp> make_pool_op(const PoolDesc& d, CudaContext& ctx) {
  return std::make_unique<CudaPoolOp>(d, ctx);
}

namespace {
std::unique_ptr<PoolOp> make_registered(Backend& b, const PoolDesc& d) {
  cuda_backend_of(b).enter();
  return make_pool_op(d, cuda_context(b));
}
}  // namespace

DLT_REGISTER_OP(PoolDesc, DeviceType::kCuda, "cudnn", 0, make_registered, nullptr);

}  // namespace dlt::cuda

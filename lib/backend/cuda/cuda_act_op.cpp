// Element-wise activations: relu and elu through cudnnActivationForward / Backward over a flat
// (numel, 1, 1, 1) tensor (in place allowed with identical descriptors, so dx may alias dy);
// leaky relu, which cuDNN's legacy activations lack, and the others (clipped relu, sigmoid, tanh,
// swish, gelu, hard sigmoid, hard swish: ops.h's formulas with PyTorch's derivatives at the
// kinks, which cuDNN's clipped relu and swish do not promise) through our own kernels.
#include <sstream>

#include "backend/cuda/cuda_act_kernels.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_op_kernels.h"
#include "backend/cuda/cuda_op_util.h"

namespace dlt::cuda {
namespace {

// Our kernel for the kind; false for the kinds cuDNN or the leaky relu kernel runs.
bool own_kernel(ActKind kind, ActKernel& k) {
  switch (kind) {
    case ActKind::kRelu:
    case ActKind::kLeakyRelu:
    case ActKind::kElu:
      return false;
    case ActKind::kClippedRelu:
      k = ActKernel::kClippedRelu;
      return true;
    case ActKind::kSigmoid:
      k = ActKernel::kSigmoid;
      return true;
    case ActKind::kTanh:
      k = ActKernel::kTanh;
      return true;
    case ActKind::kSwish:
      k = ActKernel::kSwish;
      return true;
    case ActKind::kGelu:
      k = ActKernel::kGelu;
      return true;
    case ActKind::kGeluTanh:
      k = ActKernel::kGeluTanh;
      return true;
    case ActKind::kHardSigmoid:
      k = ActKernel::kHardSigmoid;
      return true;
    case ActKind::kHardSwish:
      k = ActKernel::kHardSwish;
      return true;
  }
  return false;
}

class CudaActOp final : public ActOp {
 public:
  CudaActOp(const ActDesc& d, CudaContext& ctx) : ActOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {
    name_ = std::string(act_name(d.kind)) + " (" + std::to_string(d.numel) + " values)";
    if (d.numel < 1) throw ShapeError(name_ + ": needs at least one value");
    own_ = own_kernel(d.kind, kernel_);
    if (own_ || d.kind == ActKind::kLeakyRelu) return;
    DLT_CUDNN(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, to_int(d.numel, name_, "numel"), 1,
                                         1, 1));
    const cudnnActivationMode_t mode = d.kind == ActKind::kRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_ELU;
    DLT_CUDNN(
        cudnnSetActivationDescriptor(act_, mode, CUDNN_PROPAGATE_NAN, d.kind == ActKind::kElu ? double(d.alpha) : 0.0));
  }

 protected:
  void do_forward(const Tensor& x, Tensor& y) override {
    if (own_) {
      DLT_CUDA(act_forward(kernel_, x.data(), y.data(), d_.numel, d_.alpha, d_.beta, ctx_.stream));
      return;
    }
    if (d_.kind == ActKind::kLeakyRelu) {
      DLT_CUDA(leaky_relu_forward(x.data(), y.data(), d_.numel, d_.alpha, ctx_.stream));
      return;
    }
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnActivationForward(ctx_.cudnn, act_, &one, desc_, x.data(), &zero, desc_, y.data()));
  }

  void do_backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) override {
    if (own_) {
      DLT_CUDA(act_backward(kernel_, x.data(), dy.data(), dx.data(), d_.numel, d_.alpha, d_.beta, ctx_.stream));
      return;
    }
    if (d_.kind == ActKind::kLeakyRelu) {
      DLT_CUDA(leaky_relu_backward(x.data(), dy.data(), dx.data(), d_.numel, d_.alpha, ctx_.stream));
      return;
    }
    expect_gpu(y, d_.numel, ctx_, "activation backward", "y");
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnActivationBackward(ctx_.cudnn, act_, &one, desc_, y.data(), desc_, dy.data(), desc_, x.data(), &zero,
                                      desc_, dx.data()));
  }

 private:
  ActDesc d_;
  CudaContext& ctx_;
  std::string name_;
  bool own_ = false;
  ActKernel kernel_ = ActKernel::kSigmoid;  // when own_
  TensorDesc desc_;                         // (numel, 1, 1, 1) for x, y, dy, dx
  ActivationDesc act_;
};

}  // namespace

static std::unique_ptr<ActOp> make_act_op(const ActDesc& d, CudaContext& ctx) {
  return std::make_unique<CudaActOp>(d, ctx);
}

namespace {
std::unique_ptr<ActOp> make_registered(Backend& b, const ActDesc& d) {
  cuda_backend_of(b).enter();
  return make_act_op(d, cuda_context(b));
}
}  // namespace

DLT_REGISTER_OP(ActDesc, DeviceType::kCuda, "cudnn", 0, make_registered, nullptr);

}  // namespace dlt::cuda

// Softmax over the last dimension of a (rows, C) array on cuDNN: CUDNN_SOFTMAX_ACCURATE
// (subtracts the row maximum) in MODE_INSTANCE over a packed (rows, C, 1, 1) tensor.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_op_util.h"

namespace dlt::cuda {
namespace {

class CudaSoftmaxOp final : public SoftmaxOp {
 public:
  CudaSoftmaxOp(int64_t rows, int64_t channels, CudaContext& ctx)
      : SoftmaxOp(SoftmaxDesc{rows, channels}, Device::cuda(ctx.device)), ctx_(ctx) {
    const std::string name = "softmax (" + std::to_string(rows) + " rows of " + std::to_string(channels) + ")";
    if (rows < 1 || channels < 1) throw ShapeError(name + ": needs at least one row and class");
    to_int(rows * channels, name, "rows x classes");
    DLT_CUDNN(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, to_int(rows, name, "rows"),
                                         to_int(channels, name, "classes"), 1, 1));
  }

 protected:
  void do_forward(const Tensor& x, Tensor& y) override {
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnSoftmaxForward(ctx_.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, desc_,
                                  x.data(), &zero, desc_, y.data()));
  }

  void do_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnSoftmaxBackward(ctx_.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, desc_,
                                   y.data(), desc_, dy.data(), &zero, desc_, dx.data()));
  }

 private:
  CudaContext& ctx_;
  TensorDesc desc_;  // (rows, C, 1, 1) packed = row-major (rows, C)
};

}  // namespace

static std::unique_ptr<SoftmaxOp> make_softmax_op(int64_t rows, int64_t channels, CudaContext& ctx) {
  return std::make_unique<CudaSoftmaxOp>(rows, channels, ctx);
}

namespace {
std::unique_ptr<SoftmaxOp> make_registered(Backend& b, const SoftmaxDesc& d) {
  cuda_backend_of(b).enter();
  return make_softmax_op(d.rows, d.channels, cuda_context(b));
}
}  // namespace

DLT_REGISTER_OP(SoftmaxDesc, DeviceType::kCuda, "cudnn", 0, make_registered, nullptr);

}  // namespace dlt::cuda

// Cross-channel LRN on cuDNN: y = x / (k + alpha / size * sum over the window of x^2)^beta,
// window [c - (size-1)/2, c + size - 1 - (size-1)/2] (cuDNN's and MATLAB's). cuDNN's LRN is
// documented for packed NCHW only, so NHWC tensors are transposed with cudnnTransformTensor
// into the workspace, normalized there and transposed back. Backward recomputes the NCHW
// input and output from x (it is given), so no state lives between forward and backward.
#include <algorithm>
#include <sstream>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_op_util.h"

namespace dlt::cuda {
namespace {

class CudaLrnOp final : public LrnOp {
 public:
  CudaLrnOp(const LrnDesc& d, CudaContext& ctx) : LrnOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {
    std::ostringstream os;
    os << "lrn (input " << d.n << "x" << d.h << "x" << d.w << "x" << d.c << ", window " << d.size << ", alpha "
       << d.alpha << ", beta " << d.beta << ", k " << d.k << ")";
    name_ = os.str();
    if (d.size < CUDNN_LRN_MIN_N || d.size > CUDNN_LRN_MAX_N)
      throw ShapeError(name_ + ": cuDNN supports WindowChannelSize " + std::to_string(CUDNN_LRN_MIN_N) + " to " +
                       std::to_string(CUDNN_LRN_MAX_N) + " (use a smaller window or train on the CPU)");
    // The minima are doubles that floats round below (0.01f < 0.01): compare in float and give
    // cuDNN at least its minimum, so that Beta 0.01 and K 1e-5 themselves are accepted.
    if (d.beta < static_cast<float>(CUDNN_LRN_MIN_BETA) || d.k < static_cast<float>(CUDNN_LRN_MIN_K))
      throw ShapeError(name_ + ": cuDNN needs Beta >= " + std::to_string(CUDNN_LRN_MIN_BETA) +
                       " and K >= " + std::to_string(CUDNN_LRN_MIN_K) + " (change the layer or train on the CPU)");
    numel_ = d.n * d.h * d.w * d.c;
    set_nhwc(nhwc_, d.n, d.h, d.w, d.c, name_);
    DLT_CUDNN(cudnnSetTensor4dDescriptor(nchw_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, to_int(d.n, name_, "N"),
                                         to_int(d.c, name_, "C"), to_int(d.h, name_, "H"), to_int(d.w, name_, "W")));
    DLT_CUDNN(cudnnSetLRNDescriptor(lrn_, static_cast<unsigned>(d.size), d.alpha,
                                    std::max<double>(d.beta, CUDNN_LRN_MIN_BETA),
                                    std::max<double>(d.k, CUDNN_LRN_MIN_K)));
    buf_bytes_ = aligned_bytes(sizeof(float) * numel_);
  }

 protected:
  void do_forward(const Tensor& x, Tensor& y, bool /*training*/) override {
    char* base = static_cast<char*>(ctx_.workspace(2 * buf_bytes_));
    float* xt = reinterpret_cast<float*>(base);
    float* yt = reinterpret_cast<float*>(base + buf_bytes_);
    forward_nchw(x, xt, yt);
    transform(nchw_, yt, nhwc_, y.data());
  }

  void do_backward(const Tensor& x, const Tensor& dy, Tensor& dx) override {
    char* base = static_cast<char*>(ctx_.workspace(4 * buf_bytes_));
    float* xt = reinterpret_cast<float*>(base);
    float* yt = reinterpret_cast<float*>(base + buf_bytes_);
    float* dyt = reinterpret_cast<float*>(base + 2 * buf_bytes_);
    float* dxt = reinterpret_cast<float*>(base + 3 * buf_bytes_);
    forward_nchw(x, xt, yt);
    transform(nhwc_, dy.data(), nchw_, dyt);
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnLRNCrossChannelBackward(ctx_.cudnn, lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, nchw_, yt, nchw_, dyt,
                                           nchw_, xt, &zero, nchw_, dxt));
    transform(nchw_, dxt, nhwc_, dx.data());
  }

 private:
  // xt = x in NCHW, yt = LRN(xt).
  void forward_nchw(const Tensor& x, float* xt, float* yt) {
    transform(nhwc_, x.data(), nchw_, xt);
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(
        cudnnLRNCrossChannelForward(ctx_.cudnn, lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, nchw_, xt, &zero, nchw_, yt));
  }

  void transform(cudnnTensorDescriptor_t from, const float* src, cudnnTensorDescriptor_t to, float* dst) {
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnTransformTensor(ctx_.cudnn, &one, from, src, &zero, to, dst));
  }

  LrnDesc d_;
  CudaContext& ctx_;
  std::string name_;
  int64_t numel_ = 0;
  size_t buf_bytes_ = 0;    // one NCHW copy in the workspace
  TensorDesc nhwc_, nchw_;  // (N, C, H, W) in either memory order
  LrnDescriptor lrn_;
};

}  // namespace

static std::unique_ptr<LrnOp> make_lrn_op(const LrnDesc& d, CudaContext& ctx) {
  return std::make_unique<CudaLrnOp>(d, ctx);
}

namespace {
std::unique_ptr<LrnOp> make_registered(Backend& b, const LrnDesc& d) {
  cuda_backend_of(b).enter();
  return make_lrn_op(d, cuda_context(b));
}
}  // namespace

DLT_REGISTER_OP(LrnDesc, DeviceType::kCuda, "cudnn", 0, make_registered, nullptr);

}  // namespace dlt::cuda

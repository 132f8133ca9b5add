// Transposed convolution on cuDNN: the adjoint of a convolution whose input is the transposed
// convolution's output (N, OH, OW, K) and whose output is its input (N, H, W, C), with the
// filter (C, kh, kw, K) as cuDNN's NHWC filter of C outputs and K inputs. forward =
// cudnnConvolutionBackwardData, backward data = cudnnConvolutionForward, weights =
// cudnnConvolutionBackwardFilter (x and dy swapped), bias gradient = cuda::channel_sum.
// cuDNN pads symmetrically: the symmetric part of the cropping is its padding, the excess is
// cropped from a full output in the workspace (forward) and padded back with zeros into it
// (backward). Algorithms: cuDNN's heuristics (the first usable one within CudnnWorkspaceMB,
// FMA math unless AllowTF32, deterministic ones under Deterministic). Float32 only.
#include <sstream>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_op_kernels.h"
#include "backend/cuda/cuda_op_util.h"

namespace dlt::cuda {
namespace {

class CudaDeconvOp final : public DeconvOp {
 public:
  CudaDeconvOp(const DeconvDesc& d, CudaContext& ctx, const BackendOptions& options)
      : DeconvOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx), opts_(options), name_(describe(d)) {
    oh_ = d.out_h();
    ow_ = d.out_w();
    if (oh_ <= 0 || ow_ <= 0 || d.stride_h < 1 || d.stride_w < 1 ||
        std::min({d.crop_t, d.crop_b, d.crop_l, d.crop_r}) < 0)
      throw ShapeError(name_ + ": the output would be " + std::to_string(oh_) + "x" + std::to_string(ow_) +
                       " (check FilterSize, Stride, Cropping)");
    // The cropping as padding of the adjoint convolution's input: symmetric + explicit excess.
    crop_ = PadSplit(oh_, ow_, d.crop_t, d.crop_b, d.crop_l, d.crop_r);
    set_nhwc(full_desc_, d.n, crop_.hx, crop_.wx, d.k, name_);
    set_nhwc(out_desc_, d.n, oh_, ow_, d.k, name_);
    set_nhwc(in_desc_, d.n, d.h, d.w, d.c, name_);
    set_channels(b_desc_, d.k, name_);
    DLT_CUDNN(cudnnSetFilter4dDescriptor(w_desc_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, to_int(d.c, name_, "C"),
                                         to_int(d.k, name_, "K"), to_int(d.kh, name_, "kh"),
                                         to_int(d.kw, name_, "kw")));
    DLT_CUDNN(cudnnSetConvolution2dDescriptor(conv_desc_, to_int(crop_.ph, name_, "cropping"),
                                              to_int(crop_.pw, name_, "cropping"), to_int(d.stride_h, name_, "stride"),
                                              to_int(d.stride_w, name_, "stride"), 1, 1, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
    DLT_CUDNN(cudnnSetConvolutionMathType(conv_desc_, tf32_allowed(opts_) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
    int n = 0, c = 0, h = 0, w = 0;
    DLT_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv_desc_, full_desc_, w_desc_, &n, &c, &h, &w));
    if (n != d.n || c != d.c || h != d.h || w != d.w) {
      std::ostringstream os;
      os << name_ << ": cuDNN's adjoint convolution maps " << d.n << "x" << crop_.hx << "x" << crop_.wx << "x" << d.k
         << " to " << n << "x" << h << "x" << w << "x" << c << ", not to the input (report this shape as a bug)";
      throw ShapeError(os.str());
    }
    head_bytes_ = crop_.explicit_pad ? aligned_bytes(sizeof(float) * d.n * crop_.hx * crop_.wx * d.k) : 0;
    choose_algorithms();
  }

 protected:
  void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) override {
    char* base = static_cast<char*>(ctx_.workspace(head_bytes_ + bwd_data_ws_));
    float* full = crop_.explicit_pad ? reinterpret_cast<float*>(base) : y.data();
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnConvolutionBackwardData(ctx_.cudnn, &one, w_desc_, w.data(), in_desc_, x.data(), conv_desc_,
                                           bwd_data_algo_, base + head_bytes_, bwd_data_ws_, &zero, full_desc_, full));
    if (crop_.explicit_pad)
      DLT_CUDA(crop_nhwc(full, y.data(), d_.n, oh_, ow_, d_.k, crop_.et, crop_.eb, crop_.el, crop_.er, ctx_.stream));
    if (b.defined()) DLT_CUDNN(cudnnAddTensor(ctx_.cudnn, &one, b_desc_, b.data(), &one, out_desc_, y.data()));
  }

  void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    char* base = static_cast<char*>(ctx_.workspace(head_bytes_ + fwd_ws_));
    const float* full = padded_dy(dy, base);
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnConvolutionForward(ctx_.cudnn, &one, full_desc_, full, w_desc_, w.data(), conv_desc_, fwd_algo_,
                                      base + head_bytes_, fwd_ws_, &zero, in_desc_, dx.data()));
  }

  void do_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) override {
    const float one = 1.f, zero = 0.f;
    if (db.defined()) {
      // Our one-pass channel sum: cudnnConvolutionBackwardBias over NHWC took 2.0 ms for dy of
      // 512x32x32x64 on an H200, where reading dy once takes 0.04 ms (docs/gpu.md).
      const int64_t positions = d_.n * oh_ * ow_;
      auto* scratch = static_cast<double*>(ctx_.workspace(cuda::channel_sum_scratch(positions, d_.k) * sizeof(double)));
      cuda::channel_sum(dy.data(), positions, d_.k, db.data(), scratch, ctx_.stream);
    }
    char* base = static_cast<char*>(ctx_.workspace(head_bytes_ + bwd_filter_ws_));
    const float* full = padded_dy(dy, base);
    DLT_CUDNN(cudnnConvolutionBackwardFilter(ctx_.cudnn, &one, full_desc_, full, in_desc_, x.data(), conv_desc_,
                                             bwd_filter_algo_, base + head_bytes_, bwd_filter_ws_, &zero, w_desc_,
                                             dw.data()));
  }

 private:
  static std::string describe(const DeconvDesc& d) {
    std::ostringstream os;
    os << "transposed conv (input " << d.n << "x" << d.h << "x" << d.w << "x" << d.c << ", " << d.k << " filters "
       << d.kh << "x" << d.kw << ", stride " << d.stride_h << "x" << d.stride_w << ", cropping t" << d.crop_t << " b"
       << d.crop_b << " l" << d.crop_l << " r" << d.crop_r << ")";
    return os.str();
  }

  // dy itself, or dy surrounded by the excess cropping's zeros at the workspace head.
  const float* padded_dy(const Tensor& dy, char* base) {
    if (!crop_.explicit_pad) return dy.data();
    float* full = reinterpret_cast<float*>(base);
    DLT_CUDA(pad_nhwc(dy.data(), full, d_.n, oh_, ow_, d_.k, crop_.et, crop_.eb, crop_.el, crop_.er, 0.f, ctx_.stream));
    return full;
  }

  template <class Perf>
  bool usable(const Perf& p) const {
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > workspace_limit(opts_)) return false;
    if (deterministic_ && p.determinism != CUDNN_DETERMINISTIC) return false;
    return tf32_allowed(opts_) ||
           (p.mathType != CUDNN_TENSOR_OP_MATH && p.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
  }
  template <class Perf>
  const Perf& first_usable(const Perf* perf, int got, const char* dir) const {
    for (int i = 0; i < got; ++i)
      if (usable(perf[i])) return perf[i];
    throw ShapeError(name_ + ": cuDNN has no " + dir + " algorithm for this shape within " +
                     std::to_string(opts_.cudnn_workspace_mb) +
                     " MiB of workspace (raise CudnnWorkspaceMB, or set AllowTF32: true" +
                     (deterministic_ ? std::string(" or Deterministic: false") : std::string()) + ")");
  }
  void choose_algorithms() {
    int got = 0;
    cudnnConvolutionBwdDataAlgoPerf_t bd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    DLT_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx_.cudnn, w_desc_, in_desc_, conv_desc_, full_desc_,
                                                          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, bd));
    const auto& d = first_usable(bd, got, "forward (backward-data)");
    bwd_data_algo_ = d.algo;
    bwd_data_ws_ = d.memory;
    cudnnConvolutionFwdAlgoPerf_t fw[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    DLT_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(ctx_.cudnn, full_desc_, w_desc_, conv_desc_, in_desc_,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, fw));
    const auto& f = first_usable(fw, got, "backward data (forward)");
    fwd_algo_ = f.algo;
    fwd_ws_ = f.memory;
    cudnnConvolutionBwdFilterAlgoPerf_t bf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    DLT_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(ctx_.cudnn, full_desc_, in_desc_, conv_desc_, w_desc_,
                                                            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, bf));
    const auto& g = first_usable(bf, got, "backward filter");
    bwd_filter_algo_ = g.algo;
    bwd_filter_ws_ = g.memory;
  }

  DeconvDesc d_;
  CudaContext& ctx_;
  const BackendOptions opts_;  // its backend's
  std::string name_;
  int64_t oh_ = 0, ow_ = 0;
  PadSplit crop_;  // over the output: symmetric (cuDNN's padding) + the excess cropped explicitly
  bool deterministic_ = opts_.deterministic;
  size_t head_bytes_ = 0;  // the full (uncropped by the excess) output or padded dy, float32
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo_{};
  cudnnConvolutionFwdAlgo_t fwd_algo_{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo_{};
  size_t bwd_data_ws_ = 0, fwd_ws_ = 0, bwd_filter_ws_ = 0;
  TensorDesc full_desc_, out_desc_, in_desc_, b_desc_;  // (N, Hx, Wx, K), (N, OH, OW, K), (N, H, W, C), (K)
  FilterDesc w_desc_;                                   // (C, kh, kw, K)
  ConvolutionDesc conv_desc_;
};

}  // namespace

static std::unique_ptr<DeconvOp> make_deconv_op(const DeconvDesc& d, CudaContext& ctx, const BackendOptions& options) {
  return std::make_unique<CudaDeconvOp>(d, ctx, options);
}

namespace {
std::unique_ptr<DeconvOp> make_registered(Backend& b, const DeconvDesc& d) {
  cuda_backend_of(b).enter();
  return make_deconv_op(d, cuda_context(b), b.options());
}
}  // namespace

DLT_REGISTER_OP(DeconvDesc, DeviceType::kCuda, "cudnn", 0, make_registered, nullptr);

}  // namespace dlt::cuda

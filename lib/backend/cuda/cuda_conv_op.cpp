// Convolution on cuDNN: NHWC activations, KRSC (= our OHWI) filters, cross-correlation.
// Algorithms for forward, backward data and backward filter are chosen once per shape on first
// use and cached process-wide (conv_algo_cache.h). CudnnEngines auto: the fastest legacy
// algorithm (cudnnFind*AlgorithmEx within CudnnWorkspaceMB) is timed against the graph-API
// plans (cudnn_conv_engines.h: heuristics' suggestions, then every engine), each on the real
// buffers with its epilogue, and the fastest runs; legacy: cudnnFind only; graph: the plans only;
// exhaustive: auto with more plans (heuristics modes B and fallback, every engine's knobs varied).
// Deterministic: deterministic algorithms only, chosen by cuDNN's heuristics without timing, so
// every run and every rank makes the same choice. FusedConvolution false skips
// cudnnConvolutionBiasActivationForward (backend_options.h). cuDNN pads symmetrically only:
// asymmetric padding pads the excess explicitly into the workspace and crops the data gradient
// back.
// bf16 (Precision: mixed): cuDNN's PSEUDO_BFLOAT16_CONFIG (x, w, y bfloat16, float32 compute,
// tensor-op math, compute capability 8.0+). w / dy are rounded into bfloat16 copies at the
// head of the shared workspace, x into a bfloat16 buffer the op keeps from forward for backward
// weights; backward data takes the rounded dy backward weights left in the head when nobody
// took the workspace in between (the layers call the two back to back; ConvDesc::bf16 allows
// both). cuDNN's bfloat16 y / dx / dw come back to float32 by a kernel (y with the bias and
// relu), so the caller's tensors stay float32; db sums the float32 dy.
// Grouped convolutions (ConvDesc::groups > 1): the filter is (K, kh, kw, C/G) and
// cudnnSetConvolutionGroupCount tells the legacy API the groups; the graph API reads them from
// the filter's C/G against x's C (cudnn_conv_engines.cpp), so both paths take them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "backend/cuda/conv_algo_cache.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_op_kernels.h"
#include "backend/cuda/cuda_op_util.h"
#include "backend/cuda/cudnn_conv_engines.h"
#include "util/log.h"

namespace dlt::cuda {
namespace {

// Math mode: CUDNN_DEFAULT_MATH would allow TF32 tensor cores for float32 on Ampere and later
// (cuDNN >= 8), which breaks 1e-4 agreement with the CPU; CUDNN_FMA_MATH forbids them.
// AllowTF32 (env DLT_ALLOW_TF32=1) selects CUDNN_TENSOR_OP_MATH (TF32 allowed) for speed.
cudnnMathType_t conv_math(bool tf32) { return tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH; }
bool fp32_math_ok(cudnnMathType_t m, bool tf32) {
  return tf32 || (m != CUDNN_TENSOR_OP_MATH && m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
}

class CudaConvOp final : public ConvOp {
 public:
  CudaConvOp(const ConvDesc& d, CudaContext& ctx, const BackendOptions& options)
      : ConvOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx), opts_(options), name_(describe(d)) {
    if (d.bf16) require_bf16(ctx, name_);
    // A clipped ReLU (relu_ceiling) runs in the bias epilogue; the network fuses one on the GPU
    // only under CudaFusedClippedRelu (fusion_plan.cpp). A swish, GELU or hard swish is folded on the CPU only.
    DLT_CHECK(!d.inference_post_act, name_ << ": no swish, GELU or hard swish epilogue on the GPU");
    const cudnnDataType_t dtype = d.bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    oh_ = d.out_h();
    ow_ = d.out_w();
    if (oh_ <= 0 || ow_ <= 0 || d.stride_h < 1 || d.stride_w < 1 || d.dilation_h < 1 || d.dilation_w < 1 ||
        std::min({d.pad_t, d.pad_b, d.pad_l, d.pad_r}) < 0)
      throw ShapeError(name_ + ": the output would be " + std::to_string(oh_) + "x" + std::to_string(ow_) +
                       " (check FilterSize, Stride, Padding)");
    pad_ = PadSplit(d.h, d.w, d.pad_t, d.pad_b, d.pad_l, d.pad_r);
    set_nhwc(x_desc_, d.n, pad_.hx, pad_.wx, d.c, name_, dtype);
    set_nhwc(y_desc_, d.n, oh_, ow_, d.k, name_, dtype);
    set_channels(b_desc_, d.k, name_);
    DLT_CUDNN(cudnnSetFilter4dDescriptor(w_desc_, dtype, CUDNN_TENSOR_NHWC, to_int(d.k, name_, "K"),
                                         to_int(d.group_c(), name_, "C"), to_int(d.kh, name_, "kh"),
                                         to_int(d.kw, name_, "kw")));
    DLT_CUDNN(cudnnSetConvolution2dDescriptor(
        conv_desc_, to_int(pad_.ph, name_, "padding"), to_int(pad_.pw, name_, "padding"),
        to_int(d.stride_h, name_, "stride"), to_int(d.stride_w, name_, "stride"),
        to_int(d.dilation_h, name_, "dilation"), to_int(d.dilation_w, name_, "dilation"), CUDNN_CROSS_CORRELATION,
        CUDNN_DATA_FLOAT));
    DLT_CUDNN(cudnnSetConvolutionGroupCount(conv_desc_, to_int(d.groups, name_, "groups")));
    // Compute type float32 in both modes (bfloat16 sums are not offered, nor wanted).
    DLT_CUDNN(cudnnSetConvolutionMathType(conv_desc_, d.bf16 ? CUDNN_TENSOR_OP_MATH : conv_math(tf32_allowed(opts_))));
    DLT_CUDNN(cudnnSetActivationDescriptor(act_desc_, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
    int n = 0, k = 0, oh = 0, ow = 0;
    DLT_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv_desc_, x_desc_, w_desc_, &n, &k, &oh, &ow));
    if (n != d.n || k != d.k || oh != oh_ || ow != ow_) {
      std::ostringstream os;
      os << name_ << ": cuDNN computes an output of " << n << "x" << oh << "x" << ow << "x" << k
         << " but the layer expects " << d.n << "x" << oh_ << "x" << ow_ << "x" << d.k
         << " (report this shape as a bug)";
      throw ShapeError(os.str());
    }
    // The math switches: bit 0 TF32 (float32 only), bit 1 deterministic algorithms only, bits
    // 2-3 CudnnEngines (0 auto, 1 legacy, 2 graph, 3 exhaustive), bit 4 reduced-precision
    // reductions (bfloat16 only), bit 5 runtime-compiled engines (CudnnRuntimeCompiled); bits 6
    // and up CudnnWorkspaceMB (the choices fit within it).
    const int64_t math = (!d.bf16 && tf32_allowed(opts_) ? 1 : 0) | (deterministic_ ? 2 : 0) |
                         (static_cast<int64_t>(engines_) << 2) | (rpr_ ? 16 : 0) | (rtc_ ? 32 : 0) |
                         (opts_.cudnn_workspace_mb << 6);
    key_ = ConvAlgoKey{ctx.device, math,    dtype,   d.n,        pad_.hx,    pad_.wx,      d.c,          d.k,     d.kh,
                       d.kw,       pad_.ph, pad_.pw, d.stride_h, d.stride_w, d.dilation_h, d.dilation_w, d.groups};
    algos_ = conv_algo_cache().get(key_);
    if (d.bf16) {
      act_bf_bytes_ = aligned_bytes(sizeof(__nv_bfloat16) * d.n * pad_.hx * pad_.wx * d.c);
      w_bf_bytes_ = aligned_bytes(sizeof(__nv_bfloat16) * d.weight_numel());
      head_bytes_ = act_bf_bytes_ + w_bf_bytes_ + aligned_bytes(sizeof(__nv_bfloat16) * d.n * oh_ * ow_ * d.k);
    } else {
      head_bytes_ = pad_.explicit_pad ? aligned_bytes(sizeof(float) * d.n * pad_.hx * pad_.wx * d.c) : 0;
    }
    geometry_ = ConvGeometry{d.n,     pad_.hx, pad_.wx,    d.c,        d.k,          d.kh,         d.kw,  oh_,     ow_,
                             pad_.ph, pad_.pw, d.stride_h, d.stride_w, d.dilation_h, d.dilation_w, dtype, d.groups};
    max_ws_fwd_ = heuristic_ws_fwd();
    max_ws_bwd_data_ = heuristic_ws_bwd_data();
    max_ws_bwd_filter_ = heuristic_ws_bwd_filter();
  }

 protected:
  void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, bool relu) override {
    if (!algos_.has_fwd) conv_algo_cache().refresh(key_, algos_);
    const bool measure = !algos_.has_fwd;
    const auto since = measure ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const auto plans = measure ? plans_for(ConvDirection::kForward) : Plans{};
    const size_t ws_bytes = measure ? std::max(max_ws_fwd_, largest_workspace(plans)) : algos_.fwd_ws;
    char* base = static_cast<char*>(ctx_.workspace(head_bytes_ + ws_bytes));
    dy_bf_src_ = nullptr;  // a new step: no rounded dy in the head
    const void* xin = d_.bf16 ? rounded_x(x, base, /*reuse=*/false) : static_cast<const void*>(padded_input(x, base));
    const void* win = d_.bf16 ? bf16_weights(w, base) : static_cast<const void*>(w.data());
    void* yout = d_.bf16 ? static_cast<void*>(bf16_out(base)) : static_cast<void*>(y.data());
    void* ws = base + head_bytes_;
    const float one = 1.f, zero = 0.f;
    const bool clipped = std::isfinite(d_.relu_ceiling);  // cuDNN's fused call has no clip
    // The whole forward (convolution, then bias and relu, clipped when relu_ceiling is finite;
    // bf16: back to float32) by the legacy algorithm (plan null; fused where cuDNN supports it)
    // or by a graph-API plan.
    auto run = [&](const ConvPlan* plan) -> cudnnStatus_t {
      if (!plan && !d_.bf16 && relu && !clipped && b.defined() && fused_ok_ &&
          algos_.fwd == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
        // y = relu(conv(x) + 0 * y + b); cuDNN supports the relu fusion only for this algorithm.
        const cudnnStatus_t s = cudnnConvolutionBiasActivationForward(
            ctx_.cudnn, &one, x_desc_, xin, w_desc_, win, conv_desc_, algos_.fwd, ws, algos_.fwd_ws, &zero, y_desc_,
            yout, b_desc_, b.data(), act_desc_, y_desc_, yout);
        if (s == CUDNN_STATUS_SUCCESS) return s;
        // Any failure (not only "not supported"): conv + bias + relu from now on. A sticky
        // device error fails the unfused calls below as well and is reported there.
        log::warn(
            "{}: cudnnConvolutionBiasActivationForward failed ({}); using convolution, bias "
            "and relu as separate calls from now on",
            name_, cudnnGetErrorString(s));
        fused_ok_ = false;
      }
      const cudnnStatus_t s = plan ? plan->execute(ctx_.cudnn, mut(xin), mut(win), yout, ws)
                                   : cudnnConvolutionForward(ctx_.cudnn, &one, x_desc_, xin, w_desc_, win, conv_desc_,
                                                             algos_.fwd, ws, algos_.fwd_ws, &zero, y_desc_, yout);
      if (s != CUDNN_STATUS_SUCCESS) return s;
      const float* bias = b.defined() ? b.data() : nullptr;
      if (d_.bf16)
        DLT_CUDA(
            bf16_bias_act(bf16_out(base), bias, y.data(), d_.n * oh_ * ow_, d_.k, relu, d_.relu_ceiling, ctx_.stream));
      else if (bias || relu)
        DLT_CUDA(bias_act(y.data(), bias, d_.n * oh_ * ow_, d_.k, relu, d_.relu_ceiling, ctx_.stream));
      return s;
    };
    if (measure) {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int got = 0;
      if (deterministic_)  // reproducible: cuDNN's heuristic order, not timing
        DLT_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(ctx_.cudnn, x_desc_, w_desc_, conv_desc_, y_desc_,
                                                         CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
      else
        DLT_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(ctx_.cudnn, x_desc_, xin, w_desc_, win, conv_desc_, y_desc_,
                                                         yout, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf, ws,
                                                         ws_bytes));
      const int i = pick(perf, got, ws_bytes, "forward");
      algos_.fwd = perf[i].algo;
      algos_.fwd_ws = perf[i].memory;
      algos_.fwd_plan = choose(plans, "forward", run, since);
      if (algos_.fwd_plan) algos_.fwd_ws = algos_.fwd_plan->workspace();
      algos_.has_fwd = true;
      conv_algo_cache().put(key_, algos_);
    }
    DLT_CUDNN(run(algos_.fwd_plan.get()));
  }

  void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    if (!algos_.has_bwd_data) conv_algo_cache().refresh(key_, algos_);
    const bool measure = !algos_.has_bwd_data;
    const auto since = measure ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const auto plans = measure ? plans_for(ConvDirection::kBackwardData) : Plans{};
    const size_t ws_bytes = measure ? std::max(max_ws_bwd_data_, largest_workspace(plans)) : algos_.bwd_data_ws;
    char* base = static_cast<char*>(ctx_.workspace(head_bytes_ + ws_bytes));
    // The (padded) dx cuDNN writes: float32 into dx or the workspace head, or bfloat16.
    void* dxp = d_.bf16             ? static_cast<void*>(bf16_act(base))
                : pad_.explicit_pad ? static_cast<void*>(base)
                                    : static_cast<void*>(dx.data());
    const void* win = d_.bf16 ? bf16_weights(w, base) : static_cast<const void*>(w.data());
    // bf16: the dy backward weights rounded into the head, when nobody took the workspace since
    // (this call's workspace() is the only one after it) and it did not move.
    const bool dy_kept =
        d_.bf16 && dy_bf_src_ == dy.data() && dy_bf_base_ == base && ctx_.workspace_calls() == dy_bf_calls_ + 1;
    dy_bf_src_ = nullptr;
    const void* dyin = !d_.bf16  ? static_cast<const void*>(dy.data())
                       : dy_kept ? static_cast<const void*>(bf16_out(base))
                                 : static_cast<const void*>(bf16_dy(dy, base));
    void* ws = base + head_bytes_;
    const float one = 1.f, zero = 0.f;
    auto run = [&](const ConvPlan* plan) -> cudnnStatus_t {
      return plan ? plan->execute(ctx_.cudnn, dxp, mut(win), mut(dyin), ws)
                  : cudnnConvolutionBackwardData(ctx_.cudnn, &one, w_desc_, win, y_desc_, dyin, conv_desc_,
                                                 algos_.bwd_data, ws, algos_.bwd_data_ws, &zero, x_desc_, dxp);
    };
    if (measure) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      int got = 0;
      if (deterministic_)  // reproducible: cuDNN's heuristic order, not timing
        DLT_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx_.cudnn, w_desc_, y_desc_, conv_desc_, x_desc_,
                                                              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf));
      else
        DLT_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(ctx_.cudnn, w_desc_, win, y_desc_, dyin, conv_desc_,
                                                              x_desc_, dxp, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got,
                                                              perf, ws, ws_bytes));
      const int i = pick(perf, got, ws_bytes, "backward data");
      algos_.bwd_data = perf[i].algo;
      algos_.bwd_data_ws = perf[i].memory;
      algos_.bwd_data_plan = choose(plans, "backward data", run, since);
      if (algos_.bwd_data_plan) algos_.bwd_data_ws = algos_.bwd_data_plan->workspace();
      algos_.has_bwd_data = true;
      conv_algo_cache().put(key_, algos_);
    }
    DLT_CUDNN(run(algos_.bwd_data_plan.get()));
    if (d_.bf16 && pad_.explicit_pad)
      DLT_CUDA(crop_nhwc_bf16(bf16_act(base), dx.data(), d_.n, d_.h, d_.w, d_.c, pad_.et, pad_.eb, pad_.el, pad_.er,
                              ctx_.stream));
    else if (d_.bf16)
      DLT_CUDA(bf16_to_float(bf16_act(base), dx.data(), d_.n * d_.h * d_.w * d_.c, ctx_.stream));
    else if (pad_.explicit_pad)
      DLT_CUDA(crop_nhwc(static_cast<float*>(dxp), dx.data(), d_.n, d_.h, d_.w, d_.c, pad_.et, pad_.eb, pad_.el,
                         pad_.er, ctx_.stream));
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
    if (!algos_.has_bwd_filter) conv_algo_cache().refresh(key_, algos_);
    const bool measure = !algos_.has_bwd_filter;
    const auto since = measure ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const auto plans = measure ? plans_for(ConvDirection::kBackwardFilter) : Plans{};
    const size_t ws_bytes = measure ? std::max(max_ws_bwd_filter_, largest_workspace(plans)) : algos_.bwd_filter_ws;
    char* base = static_cast<char*>(ctx_.workspace(head_bytes_ + ws_bytes));
    // bf16: x as forward rounded it into the kept buffer when it was this x (the caller leaves x
    // unchanged between forward and backward), else rounded now.
    const void* xin = d_.bf16 ? rounded_x(x, base, /*reuse=*/true) : static_cast<const void*>(padded_input(x, base));
    const void* dyin = d_.bf16 ? bf16_dy(dy, base) : static_cast<const void*>(dy.data());
    if (d_.bf16) {  // left in the head for backward data
      dy_bf_src_ = dy.data();
      dy_bf_base_ = base;
      dy_bf_calls_ = ctx_.workspace_calls();
    }
    void* dwout = d_.bf16 ? static_cast<void*>(bf16_w(base)) : static_cast<void*>(dw.data());
    void* ws = base + head_bytes_;
    auto run = [&](const ConvPlan* plan) -> cudnnStatus_t {
      return plan ? plan->execute(ctx_.cudnn, mut(xin), dwout, mut(dyin), ws)
                  : cudnnConvolutionBackwardFilter(ctx_.cudnn, &one, x_desc_, xin, y_desc_, dyin, conv_desc_,
                                                   algos_.bwd_filter, ws, algos_.bwd_filter_ws, &zero, w_desc_, dwout);
    };
    if (measure) {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      int got = 0;
      if (deterministic_)  // reproducible: cuDNN's heuristic order, not timing
        DLT_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(ctx_.cudnn, x_desc_, y_desc_, conv_desc_, w_desc_,
                                                                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf));
      else
        DLT_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(ctx_.cudnn, x_desc_, xin, y_desc_, dyin, conv_desc_,
                                                                w_desc_, dwout, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                                                &got, perf, ws, ws_bytes));
      const int i = pick(perf, got, ws_bytes, "backward filter");
      algos_.bwd_filter = perf[i].algo;
      algos_.bwd_filter_ws = perf[i].memory;
      algos_.bwd_filter_plan = choose(plans, "backward filter", run, since);
      if (algos_.bwd_filter_plan) algos_.bwd_filter_ws = algos_.bwd_filter_plan->workspace();
      algos_.has_bwd_filter = true;
      conv_algo_cache().put(key_, algos_);
    }
    DLT_CUDNN(run(algos_.bwd_filter_plan.get()));
    if (d_.bf16) DLT_CUDA(bf16_to_float(bf16_w(base), dw.data(), d_.weight_numel(), ctx_.stream));
  }

 private:
  static std::string describe(const ConvDesc& d) {
    std::ostringstream os;
    os << "conv (input " << d.n << "x" << d.h << "x" << d.w << "x" << d.c << ", " << d.k << " filters " << d.kh << "x"
       << d.kw << ", stride " << d.stride_h << "x" << d.stride_w << ", padding t" << d.pad_t << " b" << d.pad_b << " l"
       << d.pad_l << " r" << d.pad_r << ", dilation " << d.dilation_h << "x" << d.dilation_w;
    if (d.groups > 1) os << ", " << d.groups << " groups";
    os << ")";
    return os.str();
  }

  using Plans = std::vector<std::shared_ptr<const ConvPlan>>;
  static constexpr int kMaxPlans = 40;             // graph-API plans measured per direction and shape
  static constexpr int kMaxPlansExhaustive = 200;  // the same under CudnnEngines: exhaustive

  // The graph-API plans to measure for dir beside the legacy algorithm (none under CudnnEngines:
  // legacy); under Deterministic only heuristics' first (the choice must not depend on timing).
  Plans plans_for(ConvDirection dir) const {
    if (engines_ == CudnnEngines::kLegacy) return {};
    PlanSearch search;
    search.tf32 = !d_.bf16 && tf32_allowed(opts_);
    search.reduced_precision_reduction = rpr_;
    search.runtime_compiled = rtc_;
    search.deterministic = deterministic_;
    search.heuristics_only = deterministic_;
    search.exhaustive = engines_ == CudnnEngines::kExhaustive && !deterministic_;
    search.workspace_limit = workspace_limit(opts_);
    search.max_plans = deterministic_ ? 1 : search.exhaustive ? kMaxPlansExhaustive : kMaxPlans;
    return conv_plans(ctx_.cudnn, geometry_, dir, search);
  }
  static size_t largest_workspace(const Plans& plans) {
    size_t m = 0;
    for (const auto& p : plans) m = std::max(m, p->workspace());
    return m;
  }
  // The plan to run, or null for the legacy algorithm. Deterministic: heuristics' first plan
  // (reproducible from run to run and between the ranks of a data-parallel run; PyTorch's
  // cudnn.benchmark=False), else the legacy algorithm. Otherwise measured: run(nullptr) (the
  // legacy algorithm; not under CudnnEngines: graph) and run(plan) for each plan are timed, the
  // fastest wins. Logged at debug level, with the host time since `since` (the start of choosing:
  // plans, cudnnFind, timing).
  template <class Run>
  std::shared_ptr<const ConvPlan> choose(const Plans& plans, const char* dir, Run& run,
                                         std::chrono::steady_clock::time_point since) const {
    if (plans.empty()) return nullptr;
    if (deterministic_) {
      log::debug("{} {}: cuDNN graph-API {} (heuristics' first deterministic plan; not timed)", name_, dir,
                 plans.front()->describe());
      return plans.front();
    }
    const float legacy = engines_ == CudnnEngines::kGraph
                             ? std::numeric_limits<float>::infinity()
                             : best_time_ms(
                                   ctx_.stream, [&] { return run(nullptr); }, std::numeric_limits<float>::infinity());
    float best = legacy;
    std::shared_ptr<const ConvPlan> chosen;
    for (const auto& p : plans) {
      const float t = best_time_ms(
          ctx_.stream, [&] { return run(p.get()); }, 2 * best);
      if (t < best) best = t, chosen = p;
    }
    const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
    log::debug(
        "{} {}: {} ({:.3f} ms with the epilogue; legacy algorithm {:.3f} ms; {} graph-API plans measured; choosing "
        "took {:.0f} ms)",
        name_, dir, chosen ? "cuDNN graph-API " + chosen->describe() : std::string("the legacy algorithm"),
        static_cast<double>(best), static_cast<double>(legacy), plans.size(), took);
    return chosen;
  }
  // The variant pack takes non-const pointers for inputs too; cuDNN only reads them.
  static void* mut(const void* p) { return const_cast<void*>(p); }

  // x itself, or x padded by the explicit excess into the start of the workspace.
  const float* padded_input(const Tensor& x, char* base) {
    if (!pad_.explicit_pad) return x.data();
    float* xp = reinterpret_cast<float*>(base);
    DLT_CUDA(pad_nhwc(x.data(), xp, d_.n, d_.h, d_.w, d_.c, pad_.et, pad_.eb, pad_.el, pad_.er, 0.f, ctx_.stream));
    return xp;
  }

  // bf16: the workspace head holds act (N, Hx, Wx, C) (x rounded and padded, or the padded dx),
  // w (K, kh, kw, C/G) (w rounded, or dw) and out (N, OH, OW, K) (y, or dy rounded), bfloat16.
  __nv_bfloat16* bf16_act(char* base) const { return reinterpret_cast<__nv_bfloat16*>(base); }
  __nv_bfloat16* bf16_w(char* base) const { return reinterpret_cast<__nv_bfloat16*>(base + act_bf_bytes_); }
  __nv_bfloat16* bf16_out(char* base) const {
    return reinterpret_cast<__nv_bfloat16*>(base + act_bf_bytes_ + w_bf_bytes_);
  }
  // x rounded (and padded) to bfloat16: into the buffer the op keeps for backward weights
  // (training ops), else into the workspace head. reuse: what the kept buffer holds when it was
  // rounded from this x (forward's), without rounding again.
  const __nv_bfloat16* rounded_x(const Tensor& x, char* base, bool reuse) {
    if (!keep_x_) return bf16_input(x, bf16_act(base));
    if (!x_bf_.defined()) x_bf_ = device_bf16(act_bf_bytes_ / sizeof(__nv_bfloat16), ctx_);
    auto* kept = reinterpret_cast<__nv_bfloat16*>(x_bf_.data());
    if (reuse && x_bf_src_ == x.data()) return kept;
    x_bf_src_ = x.data();
    return bf16_input(x, kept);
  }
  // x rounded (and padded) into xb.
  const __nv_bfloat16* bf16_input(const Tensor& x, __nv_bfloat16* xb) {
    if (pad_.explicit_pad)
      DLT_CUDA(pad_nhwc_bf16(x.data(), xb, d_.n, d_.h, d_.w, d_.c, pad_.et, pad_.eb, pad_.el, pad_.er, ctx_.stream));
    else
      DLT_CUDA(float_to_bf16(x.data(), xb, x.numel(), ctx_.stream));
    return xb;
  }
  const __nv_bfloat16* bf16_weights(const Tensor& w, char* base) {
    DLT_CUDA(float_to_bf16(w.data(), bf16_w(base), w.numel(), ctx_.stream));
    return bf16_w(base);
  }
  const __nv_bfloat16* bf16_dy(const Tensor& dy, char* base) {
    DLT_CUDA(float_to_bf16(dy.data(), bf16_out(base), dy.numel(), ctx_.stream));
    return bf16_out(base);
  }

  // Float32 may not use tensor cores unless TF32 is allowed; bfloat16 is meant for them.
  // Deterministic: no algorithm cuDNN marks non-deterministic.
  template <class Perf>
  bool usable(const Perf& p) const {
    if (deterministic_ && p.determinism != CUDNN_DETERMINISTIC) return false;
    return d_.bf16 || fp32_math_ok(p.mathType, tf32_allowed(opts_));
  }

  // The fastest measured algorithm that succeeded within the workspace and the math mode;
  // logged at debug level (--log-level debug) with its time, math type, determinism and
  // workspace, what a first run on a new GPU needs to see.
  template <class Perf>
  int pick(const Perf* perf, int got, size_t ws_bytes, const char* dir) const {
    for (int i = 0; i < got; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ws_bytes && usable(perf[i])) {
        log::debug(
            "{} {}: cuDNN algorithm {} ({:.3f} ms (-1: heuristics, not timed), {} math, {}, workspace {} KiB of "
            "{} KiB; {} offered)",
            name_, dir, static_cast<int>(perf[i].algo), static_cast<double>(perf[i].time),
            perf[i].mathType == CUDNN_TENSOR_OP_MATH ? "tensor-op"
            : perf[i].mathType == CUDNN_FMA_MATH     ? "fma"
                                                     : "default",
            perf[i].determinism == CUDNN_DETERMINISTIC ? "deterministic" : "non-deterministic", perf[i].memory >> 10,
            ws_bytes >> 10, got);
        return i;
      }
    throw DeviceError(name_ + ": cuDNN found no " + dir + " algorithm within a workspace of " +
                      std::to_string(ws_bytes >> 20) + " MiB (raise CudnnWorkspaceMB or set AllowTF32: true" +
                      (deterministic_ ? std::string(", or Deterministic: false") : std::string()) + ")");
  }

  // The largest workspace among the heuristics' supported algorithms that fit the limit: the
  // budget for measuring. Throws when cuDNN supports no algorithm for this shape at all.
  template <class Perf>
  size_t budget(const Perf* perf, int got, const char* dir) const {
    size_t best = 0;
    bool any = false;
    for (int i = 0; i < got; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= workspace_limit(opts_) && usable(perf[i])) {
        any = true;
        best = std::max(best, perf[i].memory);
      }
    if (!any)
      throw ShapeError(name_ + ": cuDNN has no " + dir + " algorithm for this shape within " +
                       std::to_string(opts_.cudnn_workspace_mb) +
                       " MiB of workspace (raise CudnnWorkspaceMB or change the layer)");
    return best;
  }
  size_t heuristic_ws_fwd() const {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    DLT_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(ctx_.cudnn, x_desc_, w_desc_, conv_desc_, y_desc_,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
    return budget(perf, got, "forward");
  }
  size_t heuristic_ws_bwd_data() const {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int got = 0;
    DLT_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx_.cudnn, w_desc_, y_desc_, conv_desc_, x_desc_,
                                                          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf));
    return budget(perf, got, "backward data");
  }
  size_t heuristic_ws_bwd_filter() const {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int got = 0;
    DLT_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(ctx_.cudnn, x_desc_, y_desc_, conv_desc_, w_desc_,
                                                            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf));
    return budget(perf, got, "backward filter");
  }

  ConvDesc d_;
  CudaContext& ctx_;
  const BackendOptions opts_;  // its backend's
  std::string name_;
  int64_t oh_ = 0, ow_ = 0;
  PadSplit pad_;                                // symmetric padding for cuDNN + the excess padded explicitly
  bool deterministic_ = opts_.deterministic;    // Deterministic
  bool fused_ok_ = opts_.fused_convolution;     // FusedConvolution; off once unsupported
  CudnnEngines engines_ = opts_.cudnn_engines;  // CudnnEngines
  ConvGeometry geometry_;                       // the problem, for graph-API plans
  // Workspace head: float32 the padded x or padded dx (explicit padding only); bf16 the
  // bfloat16 act, w and out buffers (act_bf_bytes_ and w_bf_bytes_ are their first two).
  size_t head_bytes_ = 0, act_bf_bytes_ = 0, w_bf_bytes_ = 0;
  size_t max_ws_fwd_ = 0, max_ws_bwd_data_ = 0, max_ws_bwd_filter_ = 0;  // measuring budgets
  // x, y and w as cuDNN convolves them (float32, or bfloat16 under bf16); b the bias (1, K, 1, 1)
  // of the fused float32 call.
  TensorDesc x_desc_, y_desc_, b_desc_;  // (N, Hx, Wx, C), (N, OH, OW, K), (K)
  FilterDesc w_desc_;                    // (K, kh, kw, C/G)
  ConvolutionDesc conv_desc_;
  ActivationDesc act_desc_;  // relu
  ConvAlgoKey key_{};
  ConvAlgos algos_;
  // bf16 training ops (not the folded inference ones, inference_relu): x rounded (and padded) by
  // forward, kept for backward weights (allocated at first use), and the x it was rounded from.
  bool keep_x_ = d_.bf16 && !d_.inference_relu;
  Tensor x_bf_;
  const float* x_bf_src_ = nullptr;
  // AllowReducedPrecisionReduction for this op (bfloat16 only), read once: the cache key and the
  // plan search must agree.
  bool rpr_ = d_.bf16 && opts_.allow_reduced_precision_reduction;
  // CudnnRuntimeCompiled for this op, read once (the cache key and the search): grouped and
  // depthwise only, as dense shapes have precompiled engines and compiling every runtime-compiled
  // engine of a network's dense convolutions took over a minute on an H200.
  bool rtc_ = d_.groups > 1 && opts_.cudnn_runtime_compiled;
  // bf16: the dy backward weights left rounded in the workspace head, where, and the context's
  // workspace_calls() then (null: none).
  const float* dy_bf_src_ = nullptr;
  const char* dy_bf_base_ = nullptr;
  uint64_t dy_bf_calls_ = 0;
};

}  // namespace

static std::unique_ptr<ConvOp> make_conv_op(const ConvDesc& d, CudaContext& ctx, const BackendOptions& options) {
  return std::make_unique<CudaConvOp>(d, ctx, options);
}

namespace {
std::unique_ptr<ConvOp> make_registered(Backend& b, const ConvDesc& d) {
  cuda_backend_of(b).enter();
  return make_conv_op(d, cuda_context(b), b.options());
}
// What the cuDNN convolution does not run, so that Backend::supports answers the network's fusion
// plan truthfully: the CPU's post-ops (a depthwise convolution after it, an input scaled per
// image and channel, a swish or GELU, a residual sum), a batch norm folded into the weights (inference folding was
// measured on the CPU only; the GPU runs the normalization apart, as before) and a clipped ReLU
// unless CudaFusedClippedRelu puts it in the bias epilogue (a clippedRelu layer then runs on its
// own).
bool accepts_registered(const Backend& b, const ConvDesc& d) {
  if (d.depthwise.kernel > 0 || d.scaled_input || d.inference_post_act || d.inference_sum || d.folded_affine)
    return false;
  return !std::isfinite(d.relu_ceiling) || b.options().cuda_fused_clipped_relu;
}
}  // namespace

DLT_REGISTER_OP(ConvDesc, DeviceType::kCuda, "cudnn", 0, make_registered, accepts_registered);

}  // namespace dlt::cuda

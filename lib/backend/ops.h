// Descriptors and interfaces of the heavy ops. Each layer creates its ops once per batch
// size (Backend::make(desc), from the kernels its device registered: op_registry.h) and keeps
// them: they hold oneDNN primitives or cuDNN descriptors, workspaces and chosen algorithms
// between forward and backward.
//
// Layouts (every backend): activations (N, H, W, C) NHWC float32; conv weights (K, kh, kw, C/G)
// "OHWI" (G = ConvDesc::groups, 1 for a dense convolution); fully-connected weights (K, H*W*C) over the input flattened
// in HWC order; biases and batch-norm scale/offset/mean/variance (C) or (K). Ops overwrite their outputs, including
// parameter gradients (each parameter has one owner).
//
// Each interface's public forward/backward methods are non-virtual: they check their arguments
// once for every backend (defined, the sizes of the op's descriptor, on the op's device; in
// ops.cpp) and call the protected do_* that each backend implements without checking again.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "tensor/tensor.h"

namespace dlt {

class ConvOp;
class DeconvOp;
class FcOp;
class PoolOp;
class BatchNormOp;
class BnReluMaxPoolOp;
class LrnOp;
class ActOp;
class SoftmaxOp;
class LayerNormOp;
class ConcatOp;

// Each descriptor names its op's interface (Op) and its name in the op registry (kOp,
// op_registry.h); Backend::make(desc) makes the op.

// A depthwise convolution (one filter per channel, kernel x kernel, stride, padding pad on the
// top and left; the bottom and right follow from out_h x out_w) that reads a 1x1 convolution's
// output, with its own bias and activation (relu, clipped at relu_ceiling when finite, or
// swish), run as that convolution's post-op in CPU inference (ConvOp::forward_depthwise): the
// expanded tensor between the two never reaches memory whole. kernel 0: none.
// project_k > 0: a linear 1x1 convolution to project_k channels (with bias, no activation)
// reads the depthwise output in the op's own layout, and forward_depthwise writes its output
// instead (MobileNetV2's projection): the expanded tensor is never reordered.
// The activations (ActDesc below); declared here for the convolutions' post-ops.
enum class ActKind;

struct DepthwisePostOp {
  int64_t kernel = 0, stride = 1, pad = 0, out_h = 0, out_w = 0;
  bool relu = false;
  float relu_ceiling = std::numeric_limits<float>::infinity();
  bool post_act = false;  // instead of relu: the activation act (a swish, a GELU) as a post-op
  ActKind act{};
  int64_t project_k = 0;
  int64_t out_channels(int64_t k) const { return project_k > 0 ? project_k : k; }
};

struct ConvDesc {
  using Op = ConvOp;
  static constexpr const char* kOp = "convolution";
  int64_t n = 1, h = 1, w = 1, c = 1;  // input
  int64_t k = 1, kh = 1, kw = 1;       // filters
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_t = 0, pad_b = 0, pad_l = 0, pad_r = 0;
  int64_t dilation_h = 1, dilation_w = 1;  // MATLAB's DilationFactor: 1 = dense
  // Grouped convolution: C and K divide into `groups` groups; output channel k sees the input
  // channels of group k / (K / groups) only (ONNX's and PyTorch's order). groups == C is a
  // depthwise convolution. Weights (K, kh, kw, C / groups).
  int64_t groups = 1;
  bool fuse_relu = false;  // forward writes relu(conv(x) + b)
  // The ReLU the op applies (fuse_relu's, or inference_relu's) clipped:
  // min(max(conv(x) + b, 0), relu_ceiling) when finite (a fused clippedRelu; the network asks
  // for it on the CPU only).
  float relu_ceiling = std::numeric_limits<float>::infinity();
  // forward(..., relu = true) writes relu(conv(x) + b) too, as one primitive where the backend
  // has one (inference with a following batchNormalization and its ReLU folded in; Network).
  bool inference_relu = false;
  // The network folds a per-channel affine (a following batchNormalization) into the weights
  // and bias it passes to forward (inference; net/fused_steps.cpp, on host memory): nothing
  // changes in the op's arithmetic. A kernel declines it where folding was never measured on
  // its device or its tensors are not host memory (the network then runs the normalization
  // apart).
  bool folded_affine = false;
  // With inference_relu: forward(..., relu = true) applies the activation inference_act instead
  // to z = conv(x) + b: a swish z * sigmoid(z) (EfficientNet's SiLU), a GELU, erf or tanh form
  // (PoolFormer's and EfficientFormer's MLPs), or a hard swish (MobileNetV3), folded in CPU
  // inference (the CPU backend only; the kinds are the activation layers' FusionTraits::post_act).
  bool inference_post_act = false;
  ActKind inference_act{};
  // Precision: mixed. x, w and dy are rounded to bfloat16 for the multiply; products are
  // summed, and y, dx, dw, db written, in float32 (the tensors stay float32). The op may keep
  // forward's rounded x and w for the backward passes, and one rounded dy for both: between
  // forward and backward of one step the caller leaves x, w and dy unchanged.
  bool bf16 = false;
  // The depthwise convolution forward_depthwise runs after this one (a float32 1x1 convolution,
  // stride 1, unpadded, one group); ConvOp::depthwise_ready says whether the op can.
  DepthwisePostOp depthwise;
  // forward_scaled multiplies x by a per-image, per-channel scale first (a float32 1x1
  // convolution without activation; CPU inference of squeeze-and-excitation's product and the
  // projection after it); ConvOp::scaled_ready says whether the op can.
  bool scaled_input = false;
  // forward_sum(x, w, b, r, y) writes y = conv(x) + b + r, then a ReLU when sum_relu: a
  // residual addition, and the ReLU after it, folded into the convolution that computes one of
  // its inputs (CPU inference; the plan asks for it on a convolution without an activation of
  // its own, its normalization folded or not).
  bool inference_sum = false;
  bool sum_relu = false;
  int64_t out_h() const { return (h + pad_t + pad_b - ((kh - 1) * dilation_h + 1)) / stride_h + 1; }
  int64_t out_w() const { return (w + pad_l + pad_r - ((kw - 1) * dilation_w + 1)) / stride_w + 1; }
  int64_t group_c() const { return c / groups; }  // input channels each filter sees
  // 1x1, stride 1, unpadded, one group (what a DepthwisePostOp may follow).
  bool is_pointwise() const {
    return kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && groups == 1 && pad_t == 0 && pad_b == 0 &&
           pad_l == 0 && pad_r == 0;
  }
  int64_t weight_numel() const { return k * kh * kw * group_c(); }
};

// b and db may be undefined (no bias; the CPU backend needs b in forward). The constructor
// throws ShapeError when groups does not divide C and K.
class ConvOp {
 public:
  virtual ~ConvOp() = default;
  // relu: apply a ReLU as well (needs ConvDesc::inference_relu or fuse_relu).
  void forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, bool relu = false);
  void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx);
  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db);
  // ConvDesc::depthwise after this convolution, as one op: z (N, out_h, out_w, K) =
  // act'(dw(act(conv(x) + b)) + dw_b), act this op's activation (fuse_relu's or inference_relu's),
  // act' the depthwise one's, dw_w (K, kernel, kernel, 1); y = z, or with project_k the
  // projection pj(z) + pj_b, pj_w (project_k, 1, 1, K) (undefined without). Only where
  // depthwise_ready().
  void forward_depthwise(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& dw_w, const Tensor& dw_b,
                         const Tensor& pj_w, const Tensor& pj_b, Tensor& y);
  // Whether this op has a kernel for ConvDesc::depthwise (oneDNN's fused 1x1 + depthwise on the
  // CPU, float32); when not, the caller runs the two convolutions apart.
  virtual bool depthwise_ready() const { return false; }
  // ConvDesc::scaled_input: y = conv(x * s) + b with s (N, C) one scale per image and input
  // channel, as one product of x with per-image weights w * s. Only where scaled_ready().
  void forward_scaled(const Tensor& x, const Tensor& s, const Tensor& w, const Tensor& b, Tensor& y);
  // Whether this op has a kernel for ConvDesc::scaled_input (on the CPU, float32, where the
  // per-image weights are small against the image); when not, the caller multiplies first.
  virtual bool scaled_ready() const { return false; }
  // ConvDesc::inference_sum: y = conv(x) + b + r (r of y's size), and its ReLU when sum_relu.
  void forward_sum(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& r, Tensor& y);

 protected:
  ConvOp(const ConvDesc& d, Device device);
  // relu: fuse_relu, or forward's relu.
  virtual void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, bool relu) = 0;
  virtual void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) = 0;
  virtual void do_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) = 0;
  // Reached only where depthwise_ready() (forward_depthwise checks).
  virtual void do_forward_depthwise(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                    const Tensor&, const Tensor&, Tensor&) {}
  // Reached only where scaled_ready() (forward_scaled checks).
  virtual void do_forward_scaled(const Tensor&, const Tensor&, const Tensor&, const Tensor&, Tensor&) {}
  // Every kernel that accepts ConvDesc::inference_sum overrides it (this one throws).
  virtual void do_forward_sum(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& r, Tensor& y);

 private:
  ConvDesc desc_;
  Device device_;
};

// Transposed convolution (MATLAB's transposedConv2dLayer, ONNX ConvTranspose): each input
// pixel scatters x[n, i, j, :] . w[:, a, b, k] into y[n, i * stride_h + a - crop_t,
// j * stride_w + b - crop_l, k]; outputs cropped away are dropped. Weights (C, kh, kw, K):
// input channel first, as ONNX's (C, K, kh, kw) and cuDNN's filter of the convolution whose
// data gradient this is. The adjoint of ConvDesc{h = out_h(), c = k, k = c, pad = crop}.
struct DeconvDesc {
  using Op = DeconvOp;
  static constexpr const char* kOp = "transposed_convolution";
  int64_t n = 1, h = 1, w = 1, c = 1;  // input
  int64_t k = 1, kh = 1, kw = 1;       // output channels, filter
  int64_t stride_h = 1, stride_w = 1;
  int64_t crop_t = 0, crop_b = 0, crop_l = 0, crop_r = 0;
  int64_t out_h() const { return (h - 1) * stride_h + kh - crop_t - crop_b; }
  int64_t out_w() const { return (w - 1) * stride_w + kw - crop_l - crop_r; }
};

// b and db as ConvOp's.
class DeconvOp {
 public:
  virtual ~DeconvOp() = default;
  void forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y);
  void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx);
  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db);

 protected:
  DeconvOp(const DeconvDesc& d, Device device) : desc_(d), device_(device) {}
  virtual void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) = 0;
  virtual void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) = 0;
  virtual void do_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) = 0;

 private:
  DeconvDesc desc_;
  Device device_;
};

struct FcDesc {
  using Op = FcOp;
  static constexpr const char* kOp = "fully_connected";
  int64_t n = 1, in = 1, out = 1;  // in = H*W*C of the input
  bool fuse_relu = false;          // as ConvDesc: the caller applies the relu backward to dy
  bool bf16 = false;               // as ConvDesc: bfloat16 multiplies, float32 sums and outputs
};

// b and db as ConvOp's.
class FcOp {
 public:
  virtual ~FcOp() = default;
  void forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y);
  void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx);
  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db);

 protected:
  FcOp(const FcDesc& d, Device device) : desc_(d), device_(device) {}
  virtual void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) = 0;
  virtual void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) = 0;
  virtual void do_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) = 0;

 private:
  FcDesc desc_;
  Device device_;
};

enum class PoolKind { kMax, kAverage };

struct PoolDesc {
  using Op = PoolOp;
  static constexpr const char* kOp = "pooling";
  int64_t n = 1, h = 1, w = 1, c = 1;
  int64_t kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_t = 0, pad_b = 0, pad_l = 0, pad_r = 0;
  PoolKind kind = PoolKind::kMax;
  // Average pooling only: divide by the window's taps inside the input (MATLAB's PaddingValue
  // "mean", ONNX's count_include_pad 0) instead of by kh * kw.
  bool exclude_padding = false;
  int64_t out_h() const { return (h + pad_t + pad_b - kh) / stride_h + 1; }
  int64_t out_w() const { return (w + pad_l + pad_r - kw) / stride_w + 1; }
};

// Average pooling counts padding as zeros (MATLAB's PaddingValue 0), or leaves it out of the
// divisor (exclude_padding, PaddingValue "mean"). Global average pooling is a PoolDesc with
// kh = h, kw = w.
class PoolOp {
 public:
  virtual ~PoolOp() = default;
  // training = true keeps what backward needs (max-pooling indices).
  void forward(const Tensor& x, Tensor& y, bool training);
  void backward(const Tensor& dy, Tensor& dx);

 protected:
  PoolOp(const PoolDesc& d, Device device) : desc_(d), device_(device) {}
  virtual void do_forward(const Tensor& x, Tensor& y, bool training) = 0;
  virtual void do_backward(const Tensor& dy, Tensor& dx) = 0;

 private:
  PoolDesc desc_;
  Device device_;
};

struct BatchNormDesc {
  using Op = BatchNormOp;
  static constexpr const char* kOp = "batch_norm";
  int64_t n = 1, h = 1, w = 1, c = 1;
  float epsilon = 1e-5f;
  bool fuse_relu = false;
  // Synchronized batch norm: forward_training normalizes with the mean and var it is GIVEN
  // (statistics of the global batch; nothing is written to them) and backward treats them
  // as constants (dx = scale / sigma * dy); Backend::batch_norm_dx_correction completes dx.
  bool global_stats = false;
};

class BatchNormOp {
 public:
  virtual ~BatchNormOp() = default;
  // Normalizes with the batch statistics and writes them (biased variance) to mean and var.
  void forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                        Tensor& var);
  void forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, const Tensor& mean,
                         const Tensor& var, Tensor& y);
  // Uses the statistics of the last forward_training. dy is the gradient of y (after relu
  // when fused: the op applies the relu backward itself). dscale and doffset may be undefined.
  void backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& var,
                Tensor& dx, Tensor& dscale, Tensor& doffset);

 protected:
  BatchNormOp(const BatchNormDesc& d, Device device) : desc_(d), device_(device) {}
  virtual void do_forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                                   Tensor& var) = 0;
  virtual void do_forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, const Tensor& mean,
                                    const Tensor& var, Tensor& y) = 0;
  virtual void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean,
                           const Tensor& var, Tensor& dx, Tensor& dscale, Tensor& doffset) = 0;

 private:
  BatchNormDesc desc_;
  Device device_;
};

// Batch normalization in training, its fused ReLU and a max pooling without padding that reads
// nothing else, as one op (net/fusion_plan.h, training; docs/performance.md "Outside the
// convolutions"). Batch norm then ReLU is monotone per channel (increasing where scale >= 0,
// decreasing where it is negative), so the pooling's window maximum is taken of sign(scale) * x
// and only the pooled values are normalized; backward scatters the pooled gradient to the
// window maxima and applies batch norm's backward in the same pass over x.
struct BnReluMaxPoolDesc {
  using Op = BnReluMaxPoolOp;
  static constexpr const char* kOp = "batch_norm_relu_max_pool";
  BatchNormDesc bn;  // n, h, w, c, epsilon (fuse_relu and global_stats are not read)
  int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1;
  int64_t out_h() const { return (bn.h - kh) / stride_h + 1; }
  int64_t out_w() const { return (bn.w - kw) / stride_w + 1; }
};

class BnReluMaxPoolOp {
 public:
  virtual ~BnReluMaxPoolOp() = default;
  // pooled = maxpool(relu(scale * (x - mean) / sqrt(var + epsilon) + offset)) with the batch's
  // statistics, which it writes to mean and var (biased variance), as BatchNormOp::forward_training.
  void forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& pooled, Tensor& mean,
                        Tensor& var);
  // From the last forward_training: dpooled is the gradient of pooled. Writes dscale and doffset
  // and, when dx is defined, the gradient of x through the pooling, the ReLU and batch norm.
  void backward(const Tensor& x, const Tensor& pooled, const Tensor& dpooled, const Tensor& scale, Tensor& dx,
                Tensor& dscale, Tensor& doffset);

 protected:
  BnReluMaxPoolOp(const BnReluMaxPoolDesc& d, Device device) : desc_(d), device_(device) {}
  virtual void do_forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& pooled,
                                   Tensor& mean, Tensor& var) = 0;
  virtual void do_backward(const Tensor& x, const Tensor& pooled, const Tensor& dpooled, const Tensor& scale,
                           Tensor& dx, Tensor& dscale, Tensor& doffset) = 0;

 private:
  BnReluMaxPoolDesc desc_;
  Device device_;
};

struct LrnDesc {
  using Op = LrnOp;
  static constexpr const char* kOp = "cross_channel_norm";
  int64_t n = 1, h = 1, w = 1, c = 1;
  int64_t size = 5;  // WindowChannelSize
  float alpha = 1e-4f, beta = 0.75f, k = 2.f;
};

// y = x / (k + alpha / size * sum over the window of x^2) ^ beta   (MATLAB and oneDNN agree)
class LrnOp {
 public:
  virtual ~LrnOp() = default;
  void forward(const Tensor& x, Tensor& y, bool training);
  void backward(const Tensor& x, const Tensor& dy, Tensor& dx);

 protected:
  LrnOp(const LrnDesc& d, Device device) : desc_(d), device_(device) {}
  virtual void do_forward(const Tensor& x, Tensor& y, bool training) = 0;
  virtual void do_backward(const Tensor& x, const Tensor& dy, Tensor& dx) = 0;

 private:
  LrnDesc desc_;
  Device device_;
};

// Element-wise activations, as PyTorch defines them (MATLAB's where MATLAB has the layer):
//   kRelu        max(x, 0)                          kSigmoid   1 / (1 + e^-x)
//   kLeakyRelu   x > 0 ? x : alpha x                kTanh      tanh(x)
//   kElu         x > 0 ? x : alpha (e^x - 1)        kSwish     x sigmoid(x)  (SiLU)
//   kClippedRelu min(max(x, 0), alpha)  (alpha = Ceiling; ReLU6 is alpha 6)
//   kGelu        x Phi(x) = x (1 + erf(x / sqrt 2)) / 2
//   kGeluTanh    x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2
//   kHardSigmoid max(0, min(1, alpha x + beta))  (PyTorch's Hardsigmoid: alpha 1/6, beta 1/2)
//   kHardSwish   x max(0, min(1, x / 6 + 1/2)) = x relu6(x + 3) / 6
// Derivatives at the kinks are PyTorch's: the clipped ones pass the gradient strictly inside
// the linear part only (clippedRelu on 0 < x < alpha, hardSigmoid where 0 < alpha x + beta < 1);
// hardSwish's is (2x + 3) / 6 on [-3, 3], 0 below and 1 above.
enum class ActKind : int {
  kRelu,
  kLeakyRelu,
  kElu,
  kClippedRelu,
  kSigmoid,
  kTanh,
  kSwish,
  kGelu,
  kGeluTanh,
  kHardSigmoid,
  kHardSwish
};

struct ActDesc {
  using Op = ActOp;
  static constexpr const char* kOp = "activation";
  int64_t numel = 1;
  ActKind kind = ActKind::kRelu;
  float alpha = 0.f;  // LeakyRelu's Scale, Elu's Alpha, ClippedRelu's Ceiling, HardSigmoid's Alpha
  float beta = 0.f;   // HardSigmoid's Beta
};

// "relu", "clipped relu", "gelu (tanh)", ...: for messages.
const char* act_name(ActKind kind);

class ActOp {
 public:
  virtual ~ActOp() = default;
  void forward(const Tensor& x, Tensor& y);
  // x and y are the forward input and output; dx may alias dy. Only backends that read y
  // (cuDNN's relu and elu) check it.
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx);

 protected:
  ActOp(const ActDesc& d, Device device) : desc_(d), device_(device) {}
  virtual void do_forward(const Tensor& x, Tensor& y) = 0;
  virtual void do_backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) = 0;

 private:
  ActDesc desc_;
  Device device_;
};

// Softmax over the channel (last) dimension of (N, H, W, C): rows = N * H * W.
struct SoftmaxDesc {
  using Op = SoftmaxOp;
  static constexpr const char* kOp = "softmax";
  int64_t rows = 1, channels = 1;
};

class SoftmaxOp {
 public:
  virtual ~SoftmaxOp() = default;
  void forward(const Tensor& x, Tensor& y);
  void backward(const Tensor& y, const Tensor& dy, Tensor& dx);

 protected:
  SoftmaxOp(const SoftmaxDesc& d, Device device) : numel_(d.rows * d.channels), device_(device) {}
  virtual void do_forward(const Tensor& x, Tensor& y) = 0;
  virtual void do_backward(const Tensor& y, const Tensor& dy, Tensor& dx) = 0;

 private:
  int64_t numel_;  // rows * C
  Device device_;
};

// Layer normalization (layerNormalization): each of `rows` rows of `length` consecutive values
// is normalized with its own mean and biased variance,
//   y = (x - mean) / sqrt(var + epsilon) * scale[j % c] + offset[j % c]  (value j of a row).
// channel-only: rows = N*H*W, length = C (each pixel over its channels); spatial-channel:
// rows = N, length = H*W*C (each image; in NHWC value j has channel j % C). length % c == 0.
struct LayerNormDesc {
  using Op = LayerNormOp;
  static constexpr const char* kOp = "layer_norm";
  int64_t rows = 1, length = 1, c = 1;
  float epsilon = 1e-5f;
};

// scale, offset, dscale, doffset (c); mean, var (rows); x, y, dx, dy (rows * length).
class LayerNormOp {
 public:
  virtual ~LayerNormOp() = default;
  // Writes each row's mean and biased variance, which backward reads.
  void forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                        Tensor& var);
  void forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y);
  // The gradient through the row statistics; dscale and doffset may be undefined (frozen).
  void backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& var,
                Tensor& dx, Tensor& dscale, Tensor& doffset);

 protected:
  // Throws ShapeError when length is not a multiple of c or a size is below 1.
  LayerNormOp(const LayerNormDesc& d, Device device);
  virtual void do_forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                                   Tensor& var) = 0;
  virtual void do_forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y) = 0;
  virtual void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean,
                           const Tensor& var, Tensor& dx, Tensor& dscale, Tensor& doffset) = 0;

 private:
  LayerNormDesc desc_;
  Device device_;
};

// The shape of an element-wise product with broadcasting (Backend::multiply): the output is
// (n, pixels, c) (pixels = H * W); each input is (n, pixels, c), or (n, 1, c) repeated over the
// pixels (squeeze-and-excitation's per-channel weights), or (n, pixels, 1) repeated over the
// channels (FocalNet's gates: one value per pixel). extents names each input's (by position);
// where it is empty, an input of n * c values (and pixels > 1) is repeated over the pixels and
// any other is full.
struct ProductDesc {
  enum Extent : uint8_t { kFull, kChannels, kPixels };  // (n, pixels, c), (n, 1, c), (n, pixels, 1)
  int64_t n = 1, pixels = 1, c = 1;
  std::vector<Extent> extents;
  // Input i's extent, for an input of `values` values.
  Extent extent(size_t i, int64_t values) const {
    if (i < extents.size()) return extents[i];
    return pixels > 1 && values == n * c ? kChannels : kFull;
  }
  int64_t values(Extent e) const { return e == kChannels ? n * c : e == kPixels ? n * pixels : n * pixels * c; }
};

// Concatenation along channels of NHWC tensors with equal N, H, W: input i has channels[i].
struct ConcatDesc {
  using Op = ConcatOp;
  static constexpr const char* kOp = "concat";
  int64_t n = 1, h = 1, w = 1;
  std::vector<int64_t> channels;
};

class ConcatOp {
 public:
  virtual ~ConcatOp() = default;
  void forward(const std::vector<const Tensor*>& xs, Tensor& y);
  // Splits dy into the inputs' gradients; null entries are skipped.
  void backward(const Tensor& dy, const std::vector<Tensor*>& dxs);

 protected:
  // Throws when channels is empty.
  ConcatOp(const ConcatDesc& d, Device device);
  virtual void do_forward(const std::vector<const Tensor*>& xs, Tensor& y) = 0;
  virtual void do_backward(const Tensor& dy, const std::vector<Tensor*>& dxs) = 0;

 private:
  int64_t pixels_;                 // N * H * W
  std::vector<int64_t> channels_;  // per input
  int64_t total_ = 0;              // channels of y
  Device device_;
};

}  // namespace dlt

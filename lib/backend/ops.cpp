// The op interfaces' public methods (ops.h): every argument check, written once for all
// backends (each tensor defined, of the size the op was set up for, on the op's device), then
// the backend's do_*. What only one backend needs (its own state, a tensor only it reads)
// it checks itself.
#include "backend/ops.h"

#include <initializer_list>
#include <string>

#include "util/check.h"
#include "util/error.h"

namespace dlt {
namespace {

// t is defined, has numel elements and is on device d.
void expect(const Tensor& t, int64_t numel, Device d, const char* op, const char* what) {
  DLT_CHECK(t.defined() && t.numel() == numel, op << ": " << what << " has " << (t.defined() ? t.numel() : 0)
                                                  << " elements, expected " << numel
                                                  << " (set up the op for this shape)");
  DLT_CHECK(t.device() == d, op << ": " << what << " is on " << t.device().str() << ", expected " << d.str()
                                << " (move it with Tensor::to)");
}

// A bias or its gradient: optional, checked when given.
void expect_optional(const Tensor& t, int64_t numel, Device d, const char* op, const char* what) {
  if (t.defined()) expect(t, numel, d, op, what);
}

}  // namespace

// ---- convolution: x (N, H, W, C), w (K, kh, kw, C/G), b (K), y (N, out_h, out_w, K)

ConvOp::ConvOp(const ConvDesc& d, Device device) : desc_(d), device_(device) {
  if (d.groups < 1 || d.c % d.groups != 0 || d.k % d.groups != 0)
    throw ShapeError("conv: " + std::to_string(d.groups) + " groups do not divide the " + std::to_string(d.c) +
                     " input channels and " + std::to_string(d.k) + " filters (each group needs C / G inputs and " +
                     "K / G filters)");
  DLT_CHECK(!d.sum_relu || d.inference_sum, "conv: sum_relu without inference_sum");
  DLT_CHECK(!d.inference_sum || (!d.fuse_relu && !d.inference_relu && d.depthwise.kernel == 0 && !d.scaled_input),
            "conv: a residual sum after the convolution's own activation or post-op is not a kernel of any backend");
}

void ConvOp::forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, bool relu) {
  const ConvDesc& d = desc_;
  DLT_CHECK(!relu || d.fuse_relu || d.inference_relu, "conv forward: relu without ConvDesc::inference_relu");
  expect(x, d.n * d.h * d.w * d.c, device_, "conv forward", "x");
  expect(w, d.weight_numel(), device_, "conv forward", "w");
  expect_optional(b, d.k, device_, "conv forward", "b");
  expect(y, d.n * d.out_h() * d.out_w() * d.k, device_, "conv forward", "y");
  do_forward(x, w, b, y, d.fuse_relu || relu);
}

void ConvOp::forward_depthwise(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& dw_w,
                               const Tensor& dw_b, const Tensor& pj_w, const Tensor& pj_b, Tensor& y) {
  const ConvDesc& d = desc_;
  const DepthwisePostOp& p = d.depthwise;
  DLT_CHECK(depthwise_ready(), "conv forward_depthwise: the op has no depthwise post-op");
  expect(x, d.n * d.h * d.w * d.c, device_, "conv forward_depthwise", "x");
  expect(w, d.weight_numel(), device_, "conv forward_depthwise", "w");
  expect(b, d.k, device_, "conv forward_depthwise", "b");
  expect(dw_w, d.k * p.kernel * p.kernel, device_, "conv forward_depthwise", "dw_w");
  expect(dw_b, d.k, device_, "conv forward_depthwise", "dw_b");
  if (p.project_k > 0) {
    expect(pj_w, p.project_k * d.k, device_, "conv forward_depthwise", "pj_w");
    expect(pj_b, p.project_k, device_, "conv forward_depthwise", "pj_b");
  }
  expect(y, d.n * p.out_h * p.out_w * p.out_channels(d.k), device_, "conv forward_depthwise", "y");
  do_forward_depthwise(x, w, b, dw_w, dw_b, pj_w, pj_b, y);
}

void ConvOp::forward_scaled(const Tensor& x, const Tensor& s, const Tensor& w, const Tensor& b, Tensor& y) {
  const ConvDesc& d = desc_;
  DLT_CHECK(scaled_ready(), "conv forward_scaled: the op has no kernel for a scaled input");
  expect(x, d.n * d.h * d.w * d.c, device_, "conv forward_scaled", "x");
  expect(s, d.n * d.c, device_, "conv forward_scaled", "s");
  expect(w, d.weight_numel(), device_, "conv forward_scaled", "w");
  expect(b, d.k, device_, "conv forward_scaled", "b");
  expect(y, d.n * d.out_h() * d.out_w() * d.k, device_, "conv forward_scaled", "y");
  do_forward_scaled(x, s, w, b, y);
}

void ConvOp::forward_sum(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& r, Tensor& y) {
  const ConvDesc& d = desc_;
  DLT_CHECK(d.inference_sum, "conv forward_sum: the op was made without ConvDesc::inference_sum");
  expect(x, d.n * d.h * d.w * d.c, device_, "conv forward_sum", "x");
  expect(w, d.weight_numel(), device_, "conv forward_sum", "w");
  expect(b, d.k, device_, "conv forward_sum", "b");
  expect(r, d.n * d.out_h() * d.out_w() * d.k, device_, "conv forward_sum", "r");
  expect(y, d.n * d.out_h() * d.out_w() * d.k, device_, "conv forward_sum", "y");
  do_forward_sum(x, w, b, r, y);
}

void ConvOp::do_forward_sum(const Tensor&, const Tensor&, const Tensor&, const Tensor&, Tensor&) {
  DLT_CHECK(false, "conv forward_sum: this kernel has no residual sum (its accepts must decline inference_sum)");
}

void ConvOp::backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) {
  const ConvDesc& d = desc_;
  expect(dy, d.n * d.out_h() * d.out_w() * d.k, device_, "conv backward_data", "dy");
  expect(w, d.weight_numel(), device_, "conv backward_data", "w");
  expect(dx, d.n * d.h * d.w * d.c, device_, "conv backward_data", "dx");
  do_backward_data(dy, w, dx);
}

void ConvOp::backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) {
  const ConvDesc& d = desc_;
  expect(x, d.n * d.h * d.w * d.c, device_, "conv backward_weights", "x");
  expect(dy, d.n * d.out_h() * d.out_w() * d.k, device_, "conv backward_weights", "dy");
  expect(dw, d.weight_numel(), device_, "conv backward_weights", "dw");
  expect_optional(db, d.k, device_, "conv backward_weights", "db");
  do_backward_weights(x, dy, dw, db);
}

// ---- transposed convolution: x (N, H, W, C), w (C, kh, kw, K), b (K), y (N, out_h, out_w, K)

void DeconvOp::forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  const DeconvDesc& d = desc_;
  expect(x, d.n * d.h * d.w * d.c, device_, "transposed conv forward", "x");
  expect(w, d.c * d.kh * d.kw * d.k, device_, "transposed conv forward", "w");
  expect_optional(b, d.k, device_, "transposed conv forward", "b");
  expect(y, d.n * d.out_h() * d.out_w() * d.k, device_, "transposed conv forward", "y");
  do_forward(x, w, b, y);
}

void DeconvOp::backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) {
  const DeconvDesc& d = desc_;
  expect(dy, d.n * d.out_h() * d.out_w() * d.k, device_, "transposed conv backward_data", "dy");
  expect(w, d.c * d.kh * d.kw * d.k, device_, "transposed conv backward_data", "w");
  expect(dx, d.n * d.h * d.w * d.c, device_, "transposed conv backward_data", "dx");
  do_backward_data(dy, w, dx);
}

void DeconvOp::backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) {
  const DeconvDesc& d = desc_;
  expect(x, d.n * d.h * d.w * d.c, device_, "transposed conv backward_weights", "x");
  expect(dy, d.n * d.out_h() * d.out_w() * d.k, device_, "transposed conv backward_weights", "dy");
  expect(dw, d.c * d.kh * d.kw * d.k, device_, "transposed conv backward_weights", "dw");
  expect_optional(db, d.k, device_, "transposed conv backward_weights", "db");
  do_backward_weights(x, dy, dw, db);
}

// ---- fully connected: x (N, in), w (out, in), b (out), y (N, out)

void FcOp::forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  const FcDesc& d = desc_;
  expect(x, d.n * d.in, device_, "fc forward", "x");
  expect(w, d.out * d.in, device_, "fc forward", "w");
  expect_optional(b, d.out, device_, "fc forward", "b");
  expect(y, d.n * d.out, device_, "fc forward", "y");
  do_forward(x, w, b, y);
}

void FcOp::backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) {
  const FcDesc& d = desc_;
  expect(dy, d.n * d.out, device_, "fc backward_data", "dy");
  expect(w, d.out * d.in, device_, "fc backward_data", "w");
  expect(dx, d.n * d.in, device_, "fc backward_data", "dx");
  do_backward_data(dy, w, dx);
}

void FcOp::backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) {
  const FcDesc& d = desc_;
  expect(x, d.n * d.in, device_, "fc backward_weights", "x");
  expect(dy, d.n * d.out, device_, "fc backward_weights", "dy");
  expect(dw, d.out * d.in, device_, "fc backward_weights", "dw");
  expect_optional(db, d.out, device_, "fc backward_weights", "db");
  do_backward_weights(x, dy, dw, db);
}

// ---- pooling: x (N, H, W, C), y (N, out_h, out_w, C)

void PoolOp::forward(const Tensor& x, Tensor& y, bool training) {
  const PoolDesc& d = desc_;
  expect(x, d.n * d.h * d.w * d.c, device_, "pool forward", "x");
  expect(y, d.n * d.out_h() * d.out_w() * d.c, device_, "pool forward", "y");
  do_forward(x, y, training);
}

void PoolOp::backward(const Tensor& dy, Tensor& dx) {
  const PoolDesc& d = desc_;
  expect(dy, d.n * d.out_h() * d.out_w() * d.c, device_, "pool backward", "dy");
  expect(dx, d.n * d.h * d.w * d.c, device_, "pool backward", "dx");
  do_backward(dy, dx);
}

// ---- batch norm + ReLU + max pooling: x (N, H, W, C), pooled (N, out_h, out_w, C), (C) vectors

void BnReluMaxPoolOp::forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& pooled,
                                       Tensor& mean, Tensor& var) {
  const BnReluMaxPoolDesc& d = desc_;
  const char* op = "bn_relu_max_pool forward_training";
  expect(x, d.bn.n * d.bn.h * d.bn.w * d.bn.c, device_, op, "x");
  expect(pooled, d.bn.n * d.out_h() * d.out_w() * d.bn.c, device_, op, "pooled");
  for (const Tensor* t : std::initializer_list<const Tensor*>{&scale, &offset, &mean, &var})
    expect(*t, d.bn.c, device_, op, "a (C) tensor");
  do_forward_training(x, scale, offset, pooled, mean, var);
}

void BnReluMaxPoolOp::backward(const Tensor& x, const Tensor& pooled, const Tensor& dpooled, const Tensor& scale,
                               Tensor& dx, Tensor& dscale, Tensor& doffset) {
  const BnReluMaxPoolDesc& d = desc_;
  const char* op = "bn_relu_max_pool backward";
  expect(x, d.bn.n * d.bn.h * d.bn.w * d.bn.c, device_, op, "x");
  expect(pooled, d.bn.n * d.out_h() * d.out_w() * d.bn.c, device_, op, "pooled");
  expect(dpooled, d.bn.n * d.out_h() * d.out_w() * d.bn.c, device_, op, "dpooled");
  expect_optional(dx, d.bn.n * d.bn.h * d.bn.w * d.bn.c, device_, op, "dx");
  for (const Tensor* t : std::initializer_list<const Tensor*>{&scale, &dscale, &doffset})
    expect(*t, d.bn.c, device_, op, "a (C) tensor");
  do_backward(x, pooled, dpooled, scale, dx, dscale, doffset);
}

// ---- batch normalization: data (N, H, W, C); scale, offset, mean, var and gradients (C)

namespace {

void expect_bn_data(const Tensor& t, const BatchNormDesc& d, Device device, const char* op, const char* what) {
  expect(t, d.n * d.h * d.w * d.c, device, op, what);
}

void expect_bn_channels(std::initializer_list<const Tensor*> ts, const BatchNormDesc& d, Device device,
                        const char* op) {
  for (const Tensor* t : ts) expect(*t, d.c, device, op, "a (C) scale/offset/mean/var tensor");
}

}  // namespace

void BatchNormOp::forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                                   Tensor& var) {
  const char* op = "batch_norm forward_training";
  expect_bn_data(x, desc_, device_, op, "x");
  expect_bn_data(y, desc_, device_, op, "y");
  expect_bn_channels({&scale, &offset, &mean, &var}, desc_, device_, op);
  do_forward_training(x, scale, offset, y, mean, var);
}

void BatchNormOp::forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, const Tensor& mean,
                                    const Tensor& var, Tensor& y) {
  const char* op = "batch_norm forward_inference";
  expect_bn_data(x, desc_, device_, op, "x");
  expect_bn_data(y, desc_, device_, op, "y");
  expect_bn_channels({&scale, &offset, &mean, &var}, desc_, device_, op);
  do_forward_inference(x, scale, offset, mean, var, y);
}

void BatchNormOp::backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean,
                           const Tensor& var, Tensor& dx, Tensor& dscale, Tensor& doffset) {
  const char* op = "batch_norm backward";
  expect_bn_data(x, desc_, device_, op, "x");
  expect_bn_data(dy, desc_, device_, op, "dy");
  expect_bn_data(dx, desc_, device_, op, "dx");
  expect_bn_channels({&scale, &mean, &var}, desc_, device_, op);
  if (dscale.defined()) expect_bn_channels({&dscale}, desc_, device_, op);
  if (doffset.defined()) expect_bn_channels({&doffset}, desc_, device_, op);
  do_backward(x, dy, scale, mean, var, dx, dscale, doffset);
}

// ---- local response normalization: x, y, dy, dx (N, H, W, C)

void LrnOp::forward(const Tensor& x, Tensor& y, bool training) {
  const int64_t numel = desc_.n * desc_.h * desc_.w * desc_.c;
  expect(x, numel, device_, "lrn forward", "x");
  expect(y, numel, device_, "lrn forward", "y");
  do_forward(x, y, training);
}

void LrnOp::backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  const int64_t numel = desc_.n * desc_.h * desc_.w * desc_.c;
  expect(x, numel, device_, "lrn backward", "x");
  expect(dy, numel, device_, "lrn backward", "dy");
  expect(dx, numel, device_, "lrn backward", "dx");
  do_backward(x, dy, dx);
}

// ---- activations: every tensor (numel)

const char* act_name(ActKind kind) {
  switch (kind) {
    case ActKind::kRelu:
      return "relu";
    case ActKind::kLeakyRelu:
      return "leaky relu";
    case ActKind::kElu:
      return "elu";
    case ActKind::kClippedRelu:
      return "clipped relu";
    case ActKind::kSigmoid:
      return "sigmoid";
    case ActKind::kTanh:
      return "tanh";
    case ActKind::kSwish:
      return "swish";
    case ActKind::kGelu:
      return "gelu";
    case ActKind::kGeluTanh:
      return "gelu (tanh)";
    case ActKind::kHardSigmoid:
      return "hard sigmoid";
    case ActKind::kHardSwish:
      return "hard swish";
  }
  return "activation";
}

void ActOp::forward(const Tensor& x, Tensor& y) {
  expect(x, desc_.numel, device_, "activation forward", "x");
  expect(y, desc_.numel, device_, "activation forward", "y");
  do_forward(x, y);
}

void ActOp::backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) {
  expect(x, desc_.numel, device_, "activation backward", "x");
  expect(dy, desc_.numel, device_, "activation backward", "dy");
  expect(dx, desc_.numel, device_, "activation backward", "dx");
  do_backward(x, y, dy, dx);
}

// ---- softmax: every tensor (rows, C)

void SoftmaxOp::forward(const Tensor& x, Tensor& y) {
  expect(x, numel_, device_, "softmax forward", "x");
  expect(y, numel_, device_, "softmax forward", "y");
  do_forward(x, y);
}

void SoftmaxOp::backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  expect(y, numel_, device_, "softmax backward", "y");
  expect(dy, numel_, device_, "softmax backward", "dy");
  expect(dx, numel_, device_, "softmax backward", "dx");
  do_backward(y, dy, dx);
}

// ---- layer normalization: x, y, dy, dx (rows, length); scale, offset and gradients (c); mean, var (rows)

LayerNormOp::LayerNormOp(const LayerNormDesc& d, Device device) : desc_(d), device_(device) {
  if (d.rows < 1 || d.c < 1 || d.length < 1 || d.length % d.c != 0 || !(d.epsilon > 0))
    throw ShapeError("layer normalization: rows of " + std::to_string(d.length) + " values over " +
                     std::to_string(d.c) + " channels (x" + std::to_string(d.rows) + " rows, epsilon " +
                     std::to_string(d.epsilon) +
                     ") is not a normalization: the length must be a multiple of the channels, epsilon > 0");
}

void LayerNormOp::forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                                   Tensor& var) {
  const LayerNormDesc& d = desc_;
  const char* op = "layer_norm forward_training";
  expect(x, d.rows * d.length, device_, op, "x");
  expect(y, d.rows * d.length, device_, op, "y");
  expect(scale, d.c, device_, op, "scale");
  expect(offset, d.c, device_, op, "offset");
  expect(mean, d.rows, device_, op, "mean");
  expect(var, d.rows, device_, op, "var");
  do_forward_training(x, scale, offset, y, mean, var);
}

void LayerNormOp::forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y) {
  const LayerNormDesc& d = desc_;
  const char* op = "layer_norm forward_inference";
  expect(x, d.rows * d.length, device_, op, "x");
  expect(y, d.rows * d.length, device_, op, "y");
  expect(scale, d.c, device_, op, "scale");
  expect(offset, d.c, device_, op, "offset");
  do_forward_inference(x, scale, offset, y);
}

void LayerNormOp::backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean,
                           const Tensor& var, Tensor& dx, Tensor& dscale, Tensor& doffset) {
  const LayerNormDesc& d = desc_;
  const char* op = "layer_norm backward";
  expect(x, d.rows * d.length, device_, op, "x");
  expect(dy, d.rows * d.length, device_, op, "dy");
  expect(dx, d.rows * d.length, device_, op, "dx");
  expect(scale, d.c, device_, op, "scale");
  expect(mean, d.rows, device_, op, "mean");
  expect(var, d.rows, device_, op, "var");
  expect_optional(dscale, d.c, device_, op, "dscale");
  expect_optional(doffset, d.c, device_, op, "doffset");
  do_backward(x, dy, scale, mean, var, dx, dscale, doffset);
}

// ---- concatenation: input i (N, H, W, channels[i]), y (N, H, W, sum of channels)

ConcatOp::ConcatOp(const ConcatDesc& d, Device device)
    : pixels_(d.n * d.h * d.w), channels_(d.channels), device_(device) {
  DLT_CHECK(!channels_.empty(), "concat: no inputs");
  for (int64_t c : channels_) total_ += c;
}

void ConcatOp::forward(const std::vector<const Tensor*>& xs, Tensor& y) {
  DLT_CHECK(xs.size() == channels_.size(),
            "concat forward: " << xs.size() << " inputs, set up for " << channels_.size());
  expect(y, pixels_ * total_, device_, "concat forward", "y");
  for (size_t i = 0; i < xs.size(); ++i) expect(*xs[i], pixels_ * channels_[i], device_, "concat forward", "an input");
  do_forward(xs, y);
}

void ConcatOp::backward(const Tensor& dy, const std::vector<Tensor*>& dxs) {
  DLT_CHECK(dxs.size() == channels_.size(),
            "concat backward: " << dxs.size() << " gradients, set up for " << channels_.size());
  expect(dy, pixels_ * total_, device_, "concat backward", "dy");
  for (size_t i = 0; i < dxs.size(); ++i)
    if (dxs[i]) expect(*dxs[i], pixels_ * channels_[i], device_, "concat backward", "a gradient");
  do_backward(dy, dxs);
}

}  // namespace dlt

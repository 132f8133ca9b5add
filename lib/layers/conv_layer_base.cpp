// ConvLayerBase (conv_layer_base.h): the convolution shared by convolution2d and
// groupedConvolution2d, and the ONNX Conv node both read.
#include "layers/conv_layer_base.h"

#include <cmath>

#include "layers/layer_util.h"

namespace dlt {

ConvLayerBase::ConvLayerBase(const LayerSpec& spec) : Layer(spec) {
  auto fs = spec_.get_ints("FilterSize", {}, 2, 1);
  if (fs.empty()) throw ConfigError(spec.where() + "option FilterSize is required (e.g. FilterSize: 5)");
  kh_ = fs[0];
  kw_ = fs[1];
  auto st = spec_.get_ints("Stride", {1, 1}, 2, 1);
  sh_ = st[0];
  sw_ = st[1];
  auto dl = spec_.get_ints("DilationFactor", {1, 1}, 2, 1);
  dh_ = dl[0];
  dw_ = dl[1];
  weight_init_ = parse_initializer(spec_, "WeightsInitializer", "glorot");
  bias_init_ = parse_initializer(spec_, "BiasInitializer", "zeros");
  spec_.get("Padding");  // read in infer_conv(): 'same' depends on the input size
  weight_param_ = make_param(spec_, "Weight", Shape{}, weight_init_, 1.f);
  bias_param_ = make_param(spec_, "Bias", Shape{}, bias_init_, 0.f);
  traits_.relu_in_op = true;
  traits_.clipped_relu_in_op = true;
  traits_.separate_relu_backward = true;
}

Shape ConvLayerBase::infer_conv(const Shape& in, int64_t k, int64_t groups) {
  h_ = in[0];
  w_ = in[1];
  c_ = in[2];
  k_ = k;
  groups_ = groups;
  auto pad = parse_padding(spec_, h_, w_, (kh_ - 1) * dh_ + 1, (kw_ - 1) * dw_ + 1, sh_, sw_);
  pt_ = pad[0];
  pb_ = pad[1];
  pl_ = pad[2];
  pr_ = pad[3];
  if (input_format(0) == DataFormat::kSCB && pt_ + pb_ + pl_ + pr_ != 0)
    shape_error(spec_, "pads a token sequence; a convolution of tokens is 1x1 without padding");
  ConvDesc d = desc(1);
  int64_t eh = (kh_ - 1) * dh_ + 1, ew = (kw_ - 1) * dw_ + 1;
  if (h_ + pt_ + pb_ < eh || w_ + pl_ + pr_ < ew) {
    std::string pad_s = (pt_ || pb_ || pl_ || pr_) ? "padding [" + std::to_string(pt_) + " " + std::to_string(pb_) +
                                                         " " + std::to_string(pl_) + " " + std::to_string(pr_) + "]"
                                                   : "no padding";
    shape_error(spec_, "input is " + in.str() + " but FilterSize is " + std::to_string(kh_) + "x" +
                           std::to_string(kw_) +
                           (dh_ > 1 || dw_ > 1 ? " dilated to " + std::to_string(eh) + "x" + std::to_string(ew) : "") +
                           " with " + pad_s + " (add Padding: same, or use a smaller FilterSize)");
  }
  // The MATLAB names are Weights and Bias; the option prefixes are Weight... and Bias...
  const int64_t cg = c_ / groups_;
  params_ = weights_and_bias(weight_param_, bias_param_, Shape{k_, kh_, kw_, cg}, k_, kh_ * kw_ * cg,
                             kh_ * kw_ * (k_ / groups_));
  traits_.conv_op = true;
  traits_.conv = d;
  traits_.op = &op_;
  // One 1x1 filter per channel, unpadded, stride 1: x * Weights + Bias per channel (a LayerScale
  // or another per-channel scale), which a convolution before it can fold in inference.
  traits_.affine_in_inference =
      groups_ == c_ && k_ == c_ && kh_ == 1 && kw_ == 1 && sh_ == 1 && sw_ == 1 && !(pt_ || pb_ || pl_ || pr_);
  return Shape{d.out_h(), d.out_w(), k_};
}

void ConvLayerBase::inference_affine(std::vector<float>& scale, std::vector<float>& shift) const {
  DLT_CHECK(fusion_traits().affine_in_inference, "layer '" << name() << "' is not a per-channel affine");
  // Host memory, as folding runs (the plan folds only where the backend's convolution takes it);
  // assign reuses the vectors' storage, called on every inference forward.
  const float* w = params_[0].value.data();
  const float* b = params_[1].value.data();
  scale.assign(w, w + k_);
  shift.assign(b, b + k_);
}

ConvDesc ConvLayerBase::desc(int64_t n) const {
  ConvDesc d;
  d.n = n;
  d.h = h_;
  d.w = w_;
  d.c = c_;
  d.k = k_;
  d.kh = kh_;
  d.kw = kw_;
  d.stride_h = sh_;
  d.stride_w = sw_;
  d.pad_t = pt_;
  d.pad_b = pb_;
  d.pad_l = pl_;
  d.pad_r = pr_;
  d.dilation_h = dh_;
  d.dilation_w = dw_;
  d.groups = groups_;
  d.fuse_relu = fusion_.relu;
  if (fusion_.relu) d.relu_ceiling = fusion_.relu_ceiling;
  d.bf16 = mixed_;
  return d;
}

void ConvLayerBase::setup(int64_t n, Backend& be) {
  const ConvDesc d = desc(n);
  op_ = be.make(d);
  if (fusion_.relu) {
    const bool clipped = std::isfinite(fusion_.relu_ceiling);
    relu_ = be.make(ActDesc{n * d.out_h() * d.out_w() * k_, clipped ? ActKind::kClippedRelu : ActKind::kRelu,
                            clipped ? fusion_.relu_ceiling : 0.f});
  }
}

void ConvLayerBase::forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) {
  op_->forward(*x[0], params_[0].value, params_[1].value, y);
}

void ConvLayerBase::backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy,
                             const std::vector<Tensor*>& dx, const RunContext&) {
  if (fusion_.relu && !fusion_.relu_backward_handed_over) relu_->backward(y, y, dy, dy);
  Param& w = params_[0];
  Param& b = params_[1];
  if (!w.frozen() || !b.frozen()) op_->backward_weights(*x[0], dy, w.grad, b.grad);
  if (dx[0]) op_->backward_data(dy, w.value, *dx[0]);
}

int64_t ConvLayerBase::flops_per_image() const {
  ConvDesc d = desc(1);
  return 2 * k_ * kh_ * kw_ * d.group_c() * d.out_h() * d.out_w();
}

OnnxValue ConvLayerBase::to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const {
  const std::string& n = name();
  const int64_t cg = c_ / groups_;
  if (inputs.at(0).tokens) {
    // On tokens (N, S, C), a channel-wise 1x1 convolution (an imported channel scale): Mul, Add.
    if (kh_ != 1 || kw_ != 1 || sh_ != 1 || sw_ != 1 || groups_ != c_ || k_ != c_ || pt_ + pl_ + pb_ + pr_ != 0)
      throw ModelError(g.path() + ": layer '" + n +
                       "' convolves a token sequence, which has an ONNX form here only as a channel-wise 1x1 "
                       "convolution (a per-channel scale)");
    g.add_floats(n + "_W", {c_}, host_values(params_[0].value));
    g.add_floats(n + "_B", {c_}, host_values(params_[1].value));
    g.add_node("Mul", n + "_scale", {inputs[0].name, n + "_W"}, n + "_scaled");
    g.add_node("Add", n, {n + "_scaled", n + "_B"}, n);
    return OnnxValue{n, out, false, {}, false, false, true};
  }
  OnnxValue x = g.image(n, inputs.at(0));
  g.add_floats(n + "_W", {k_, cg, kh_, kw_}, ohwi_to_oihw(host_values(params_[0].value), k_, cg, kh_, kw_));
  g.add_floats(n + "_B", {k_}, host_values(params_[1].value));
  g.add_node(
      "Conv", n, {x.name, n + "_W", n + "_B"}, n,
      {OnnxAttr("kernel_shape", std::vector<int64_t>{kh_, kw_}), OnnxAttr("strides", std::vector<int64_t>{sh_, sw_}),
       OnnxAttr("dilations", std::vector<int64_t>{dh_, dw_}),
       OnnxAttr("pads", std::vector<int64_t>{pt_, pl_, pb_, pr_}), OnnxAttr("group", groups_)});
  return OnnxValue{n, out, false};
}

OnnxConv read_onnx_conv(OnnxNodeReader& r) {
  OnnxConv c;
  c.in = r.input(0, true);
  r.need_image(c.in);
  auto wd = r.dims(1, "weight");
  if (wd.size() != 4) r.fail("weight has " + std::to_string(wd.size()) + " dimensions (only 2-D convolutions)");
  c.k = wd[0], c.cg = wd[1], c.kh = wd[2], c.kw = wd[3];
  c.group = r.attr_int("group", 1);
  const int64_t channels = c.in.shape[2];
  if (c.group < 1 || channels % c.group != 0 || c.k % c.group != 0)
    r.fail("group is " + std::to_string(c.group) + " but the input has " + std::to_string(channels) +
           " channels and the weight " + std::to_string(c.k) + " filters (group must divide both)");
  if (c.cg != channels / c.group)
    r.fail("weight expects " + std::to_string(c.cg) + " input channels per group but the input has " +
           std::to_string(channels) + (c.group > 1 ? " channels in " + std::to_string(c.group) + " groups" : ""));
  c.strides = r.attr_ints("strides", {1, 1});
  c.dilations = r.attr_ints("dilations", {1, 1});
  const auto& st = c.strides;
  const auto& dl = c.dilations;
  if (st.size() != 2 || dl.size() != 2) r.fail("strides / dilations must have 2 values");
  for (int64_t v : {dl[0], dl[1], c.kh, c.kw, st[0], st[1]})
    if (v < 1 || v > kOnnxMaxWindow)
      r.fail("the kernel, strides and dilations must be in 1.." + std::to_string(kOnnxMaxWindow));
  int64_t ekh = (c.kh - 1) * dl[0] + 1, ekw = (c.kw - 1) * dl[1] + 1;
  auto p = r.pads(c.in.shape, ekh, ekw, st[0], st[1]);  // top, left, bottom, right
  for (int i = 0; i < 4; ++i) p[i] += c.in.pad[i];
  c.pad = {p[0], p[2], p[1], p[3]};
  c.oh = (c.in.shape[0] + p[0] + p[2] - ekh) / st[0] + 1;
  c.ow = (c.in.shape[1] + p[1] + p[3] - ekw) / st[1] + 1;
  if (c.oh < 1 || c.ow < 1) r.fail("the kernel is larger than the padded input");
  c.weights = oihw_to_ohwi(r.floats(1, "weight"), c.k, c.cg, c.kh, c.kw);
  c.bias = r.bias_or_zeros(2, c.k);
  return c;
}

void add_onnx_conv(OnnxNodeReader& r, const std::string& type, const OnnxConv& c,
                   const std::vector<std::pair<std::string, std::string>>& options) {
  LayerSpec& s = r.add_layer(type, {c.in.name});
  set_list(s, "FilterSize", {c.kh, c.kw});
  for (const auto& [key, value] : options) s.set(key, value);
  set_list(s, "Stride", c.strides);
  set_list(s, "DilationFactor", c.dilations);
  set_list(s, "Padding", {c.pad[0], c.pad[1], c.pad[2], c.pad[3]});
  const std::string name = s.name;
  r.add_param(name, "Weights", Shape{c.k, c.kh, c.kw, c.cg}, c.weights);
  r.add_param(name, "Bias", Shape{c.k}, c.bias);
  r.set_output(OnnxValue{name, Shape{c.oh, c.ow, c.k}, false});
}

}  // namespace dlt

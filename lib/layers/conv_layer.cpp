// convolution2d: MATLAB's convolution2dLayer on the backend's ConvOp. Weights (K, kh, kw, C),
// Bias (K). Fuses a following ReLU into the forward pass (the network decides).
#include <memory>

#include "layers/layer_util.h"

namespace dlt {

namespace {

class Convolution2dLayer final : public Layer {
 public:
  explicit Convolution2dLayer(const LayerSpec& spec);
  Shape infer(const std::vector<Shape>& inputs) override;
  void setup(int64_t n, Backend& be) override;
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override;
  void backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext& ctx) override;
  int64_t flops_per_image() const override;
  bool can_fuse_relu() const override { return true; }
  bool can_hand_over_relu_backward() const override { return true; }
  bool can_fold_affine() const override { return true; }
  void forward_folded(const std::vector<const Tensor*>& x, Tensor& y) override;
  std::vector<std::string> learnable_options() const override { return {"Weight", "Bias"}; }
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override;
  static void from_onnx(OnnxNodeReader& r);

 private:
  ConvDesc desc(int64_t n) const;
  int64_t kh_ = 1, kw_ = 1, k_ = 1, sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1;
  int64_t pt_ = 0, pb_ = 0, pl_ = 0, pr_ = 0;
  int64_t h_ = 0, w_ = 0, c_ = 0;  // input (H, W, C)
  Init weight_init_ = Init::kGlorot, bias_init_ = Init::kZeros;
  Param weight_param_, bias_param_;  // factors read from the spec; shapes set in infer()
  std::unique_ptr<ConvOp> op_;
  std::unique_ptr<ActOp> relu_;  // relu backward when fused
  Tensor folded_w_, folded_b_;   // forward_folded's weights and bias
  std::vector<float> fold_scale_, fold_shift_;
};

Convolution2dLayer::Convolution2dLayer(const LayerSpec& spec) : Layer(spec) {
  auto fs = spec_.get_ints("FilterSize", {}, 2, 1);
  if (fs.empty()) throw ConfigError(spec.where() + "option FilterSize is required (e.g. FilterSize: 5)");
  kh_ = fs[0];
  kw_ = fs[1];
  k_ = spec_.get_int("NumFilters", 0, 1);
  if (k_ == 0) throw ConfigError(spec.where() + "option NumFilters is required (e.g. NumFilters: 32)");
  auto st = spec_.get_ints("Stride", {1, 1}, 2, 1);
  sh_ = st[0];
  sw_ = st[1];
  auto dl = spec_.get_ints("DilationFactor", {1, 1}, 2, 1);
  dh_ = dl[0];
  dw_ = dl[1];
  weight_init_ = parse_initializer(spec_, "WeightsInitializer", "glorot");
  bias_init_ = parse_initializer(spec_, "BiasInitializer", "zeros");
  spec_.get("Padding");  // read in infer(): 'same' depends on the input size
  spec_.get("NumChannels");
  weight_param_ = make_param(spec_, "Weight", Shape{}, weight_init_, 1.f);
  bias_param_ = make_param(spec_, "Bias", Shape{}, bias_init_, 0.f);
}

Shape Convolution2dLayer::infer(const std::vector<Shape>& inputs) {
  expect_inputs(spec_, inputs, 1);
  const Shape& in = inputs[0];
  h_ = in[0];
  w_ = in[1];
  c_ = in[2];
  int64_t nc = spec_.get_int("NumChannels", c_, 1);
  if (nc != c_)
    shape_error(spec_,
                "NumChannels is " + std::to_string(nc) + " but the input has " + std::to_string(c_) + " channels");
  auto pad = parse_padding(spec_, h_, w_, (kh_ - 1) * dh_ + 1, (kw_ - 1) * dw_ + 1, sh_, sw_);
  pt_ = pad[0];
  pb_ = pad[1];
  pl_ = pad[2];
  pr_ = pad[3];
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
  params_ = weights_and_bias(weight_param_, bias_param_, Shape{k_, kh_, kw_, c_}, k_, kh_ * kw_ * c_, kh_ * kw_ * k_);
  return Shape{d.out_h(), d.out_w(), k_};
}

ConvDesc Convolution2dLayer::desc(int64_t n) const {
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
  d.fuse_relu = fuse_relu_;
  d.bf16 = mixed_;
  return d;
}

void Convolution2dLayer::setup(int64_t n, Backend& be) {
  ConvDesc d = desc(n);
  d.inference_relu = folded_next_ && folded_next_->fuse_relu();
  op_ = be.make_conv(d);
  if (folded_next_ && !folded_w_.defined()) {
    folded_w_ = Tensor(Shape{k_, kh_, kw_, c_}, be.device());
    folded_b_ = Tensor(Shape{k_}, be.device());
  }
  if (fuse_relu_) {
    ConvDesc d = desc(n);
    relu_ = be.make_act(ActDesc{n * d.out_h() * d.out_w() * k_, ActKind::kRelu, 0.f});
  }
}

void Convolution2dLayer::forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) {
  op_->forward(*x[0], params_[0].value, params_[1].value, y);
}

// w * s and b * s + t per output channel (host values: the Network folds on the CPU only).
void Convolution2dLayer::forward_folded(const std::vector<const Tensor*>& x, Tensor& y) {
  DLT_CHECK(folded_next_ && folded_next_->inference_affine(fold_scale_, fold_shift_),
            "layer '" << name() << "': nothing to fold");
  const int64_t row = kh_ * kw_ * c_;
  const float* w = params_[0].value.data();
  const float* b = params_[1].value.data();
  float* fw = folded_w_.data();
  float* fb = folded_b_.data();
  for (int64_t k = 0; k < k_; ++k) {
    const float s = fold_scale_[static_cast<size_t>(k)];
    for (int64_t i = 0; i < row; ++i) fw[k * row + i] = w[k * row + i] * s;
    fb[k] = b[k] * s + fold_shift_[static_cast<size_t>(k)];
  }
  op_->forward(*x[0], folded_w_, folded_b_, y, folded_next_->fuse_relu());
}

void Convolution2dLayer::backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy,
                                  const std::vector<Tensor*>& dx, const RunContext&) {
  if (fuse_relu_ && !relu_backward_handed_over_) relu_->backward(y, y, dy, dy);
  Param& w = params_[0];
  Param& b = params_[1];
  if (!w.frozen() || !b.frozen()) op_->backward_weights(*x[0], dy, w.grad, b.grad);
  if (dx[0]) op_->backward_data(dy, w.value, *dx[0]);
}

int64_t Convolution2dLayer::flops_per_image() const {
  ConvDesc d = desc(1);
  return 2 * k_ * kh_ * kw_ * c_ * d.out_h() * d.out_w();
}

OnnxValue Convolution2dLayer::to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const {
  const std::string& n = name();
  OnnxValue x = g.image(n, inputs.at(0));
  g.add_floats(n + "_W", {k_, c_, kh_, kw_}, ohwi_to_oihw(host_values(params_[0].value), k_, c_, kh_, kw_));
  g.add_floats(n + "_B", {k_}, host_values(params_[1].value));
  g.add_node(
      "Conv", n, {x.name, n + "_W", n + "_B"}, n,
      {OnnxAttr("kernel_shape", std::vector<int64_t>{kh_, kw_}), OnnxAttr("strides", std::vector<int64_t>{sh_, sw_}),
       OnnxAttr("dilations", std::vector<int64_t>{dh_, dw_}),
       OnnxAttr("pads", std::vector<int64_t>{pt_, pl_, pb_, pr_}), OnnxAttr("group", int64_t{1})});
  return OnnxValue{n, out, false};
}

void Convolution2dLayer::from_onnx(OnnxNodeReader& r) {
  const OnnxValue in = r.input(0, true);
  r.need_image(in);
  auto wd = r.dims(1, "weight");
  if (wd.size() != 4) r.fail("weight has " + std::to_string(wd.size()) + " dimensions (only 2-D convolutions)");
  int64_t group = r.attr_int("group", 1);
  if (group != 1)
    r.fail("group is " + std::to_string(group) +
           " (grouped and depthwise convolutions are not supported; only group 1)");
  int64_t k = wd[0], c = wd[1], kh = wd[2], kw = wd[3];
  if (c != in.shape[2])
    r.fail("weight expects " + std::to_string(c) + " input channels but the input has " + std::to_string(in.shape[2]));
  auto st = r.attr_ints("strides", {1, 1});
  auto dl = r.attr_ints("dilations", {1, 1});
  if (st.size() != 2 || dl.size() != 2) r.fail("strides / dilations must have 2 values");
  for (int64_t v : {dl[0], dl[1], kh, kw, st[0], st[1]})
    if (v < 1 || v > kOnnxMaxWindow)
      r.fail("the kernel, strides and dilations must be in 1.." + std::to_string(kOnnxMaxWindow));
  int64_t ekh = (kh - 1) * dl[0] + 1, ekw = (kw - 1) * dl[1] + 1;
  auto p = r.pads(in.shape, ekh, ekw, st[0], st[1]);
  for (int i = 0; i < 4; ++i) p[i] += in.pad[i];
  int64_t oh = (in.shape[0] + p[0] + p[2] - ekh) / st[0] + 1, ow = (in.shape[1] + p[1] + p[3] - ekw) / st[1] + 1;
  if (oh < 1 || ow < 1) r.fail("the kernel is larger than the padded input");
  LayerSpec& s = r.add_layer("convolution2d", {in.name});
  set_list(s, "FilterSize", {kh, kw});
  s.set("NumFilters", std::to_string(k));
  s.set("NumChannels", std::to_string(c));
  set_list(s, "Stride", st);
  set_list(s, "DilationFactor", dl);
  set_list(s, "Padding", {p[0], p[2], p[1], p[3]});
  const std::string name = s.name;
  r.add_param(name, "Weights", Shape{k, kh, kw, c}, oihw_to_ohwi(r.floats(1, "weight"), k, c, kh, kw));
  r.add_param(name, "Bias", Shape{k}, r.bias_or_zeros(2, k));
  r.set_output(OnnxValue{name, Shape{oh, ow, k}, false});
}

}  // namespace

void pointwise_conv_from_onnx(OnnxNodeReader& r, const OnnxValue& in) {
  auto wd = r.dims(1, "weight");
  const int64_t c = in.shape[2];
  if (wd.size() != 2 || wd[0] != c)
    r.fail("multiplies a channels-last image of " + std::to_string(c) + " channels by a weight of " +
           std::to_string(wd.size()) + " dimensions; expected (" + std::to_string(c) + ", K)");
  const int64_t k = wd[1];
  const std::vector<float> b = r.floats(1, "weight");
  std::vector<float> w(b.size());  // (C, K) -> (K, 1, 1, C)
  for (int64_t o = 0; o < k; ++o)
    for (int64_t i = 0; i < c; ++i) w[static_cast<size_t>(o * c + i)] = b[static_cast<size_t>(i * k + o)];
  LayerSpec& s = r.add_layer("convolution2d", {in.name});
  set_list(s, "FilterSize", {1, 1});
  s.set("NumFilters", std::to_string(k));
  s.set("NumChannels", std::to_string(c));
  const std::string name = s.name;
  r.add_param(name, "Weights", Shape{k, 1, 1, c}, std::move(w));
  r.add_param(name, "Bias", Shape{k}, std::vector<float>(static_cast<size_t>(k), 0.f));
  OnnxValue out{name, Shape{in.shape[0], in.shape[1], k}, false};
  out.channels_last = true;
  r.set_output(out);
}

const LayerType& convolution2d_layer_type() {
  static const LayerType t{
      "convolution2d",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<Convolution2dLayer>(s); },
      {"Conv"},
      Convolution2dLayer::from_onnx};
  return t;
}

}  // namespace dlt

// transposedConv2d: MATLAB's transposedConv2dLayer on the backend's DeconvOp (ONNX
// ConvTranspose). Weights (C, kh, kw, K) (input channels first, ONNX's order with the filter
// before the output channels), Bias (K). Output (H - 1) * Stride + FilterSize - cropping.
// Cropping: a number, [vertical horizontal], [t b l r] or 'same' (output = input * Stride;
// an odd total crops the extra row / column at the bottom / right, as Padding 'same' pads).
// No dilation, groups or fused relu.
#include <memory>

#include "layers/layer_util.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace dlt {

namespace {

class TransposedConv2dLayer final : public Layer {
 public:
  // An image layer: not on token sequences.
  bool takes(DataFormat f) const override { return f != DataFormat::kSCB; }
  explicit TransposedConv2dLayer(const LayerSpec& spec);
  Shape infer(const std::vector<Shape>& inputs) override;
  void setup(int64_t n, Backend& be) override;
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override;
  void backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext& ctx) override;
  int64_t flops_per_image() const override;
  std::vector<std::string> learnable_options() const override { return {"Weight", "Bias"}; }
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override;
  static void from_onnx(OnnxNodeReader& r);

 private:
  DeconvDesc desc(int64_t n) const;
  void read_cropping();
  int64_t kh_ = 1, kw_ = 1, k_ = 1, sh_ = 1, sw_ = 1;
  bool crop_same_ = false;
  int64_t ct_ = 0, cb_ = 0, cl_ = 0, cr_ = 0;
  int64_t h_ = 0, w_ = 0, c_ = 0;    // input (H, W, C)
  Param weight_param_, bias_param_;  // factors read from the spec; shapes set in infer()
  std::unique_ptr<DeconvOp> op_;
};

TransposedConv2dLayer::TransposedConv2dLayer(const LayerSpec& spec) : Layer(spec) {
  auto fs = spec_.get_ints("FilterSize", {}, 2, 1);
  if (fs.empty()) throw ConfigError(spec.where() + "option FilterSize is required (e.g. FilterSize: 2)");
  kh_ = fs[0];
  kw_ = fs[1];
  k_ = spec_.get_int("NumFilters", 0, 1);
  if (k_ == 0) throw ConfigError(spec.where() + "option NumFilters is required (e.g. NumFilters: 32)");
  auto st = spec_.get_ints("Stride", {1, 1}, 2, 1);
  sh_ = st[0];
  sw_ = st[1];
  read_cropping();
  spec_.get("NumChannels");
  weight_param_ = make_param(spec_, "Weight", Shape{}, parse_initializer(spec_, "WeightsInitializer", "glorot"), 1.f);
  bias_param_ = make_param(spec_, "Bias", Shape{}, parse_initializer(spec_, "BiasInitializer", "zeros"), 0.f);
}

void TransposedConv2dLayer::read_cropping() {
  const SpecValue* v = spec_.get("Cropping");
  if (!v) return;
  if (!v->is_list && v->items.size() == 1 && iequals(v->items[0], "same")) {
    crop_same_ = true;
    return;
  }
  std::vector<int64_t> c;
  for (const auto& t : v->items) {
    int64_t x = 0;
    if (!parse_int(t, &x) || x < 0)
      throw ConfigError(spec_.where() +
                        "option Cropping must be 'same', a number >= 0, [vertical horizontal] or "
                        "[t b l r], got '" +
                        v->str() + "'");
    c.push_back(x);
  }
  if (c.size() == 1)
    c = {c[0], c[0], c[0], c[0]};
  else if (c.size() == 2)
    c = {c[0], c[0], c[1], c[1]};
  else if (c.size() != 4)
    throw ConfigError(spec_.where() + "option Cropping must have 1, 2 or 4 values, got '" + v->str() + "'");
  ct_ = c[0];
  cb_ = c[1];
  cl_ = c[2];
  cr_ = c[3];
}

Shape TransposedConv2dLayer::infer(const std::vector<Shape>& inputs) {
  expect_inputs(spec_, inputs, 1);
  h_ = inputs[0][0];
  w_ = inputs[0][1];
  c_ = inputs[0][2];
  int64_t nc = spec_.get_int("NumChannels", c_, 1);
  if (nc != c_)
    shape_error(spec_,
                "NumChannels is " + std::to_string(nc) + " but the input has " + std::to_string(c_) + " channels");
  if (crop_same_) {
    if (kh_ < sh_ || kw_ < sw_)
      shape_error(spec_,
                  "Cropping 'same' needs FilterSize >= Stride (the output is input * Stride), but FilterSize is " +
                      std::to_string(kh_) + "x" + std::to_string(kw_) + " and Stride " + std::to_string(sh_) + "x" +
                      std::to_string(sw_));
    ct_ = (kh_ - sh_) / 2;
    cb_ = kh_ - sh_ - ct_;
    cl_ = (kw_ - sw_) / 2;
    cr_ = kw_ - sw_ - cl_;
  }
  DeconvDesc d = desc(1);
  if (d.out_h() < 1 || d.out_w() < 1)
    shape_error(spec_, "input is " + inputs[0].str() + " with FilterSize " + std::to_string(kh_) + "x" +
                           std::to_string(kw_) + " and Stride " + std::to_string(sh_) + "x" + std::to_string(sw_) +
                           ": the output before cropping is " + std::to_string(d.out_h() + ct_ + cb_) + "x" +
                           std::to_string(d.out_w() + cl_ + cr_) + " but Cropping removes [" + std::to_string(ct_) +
                           " " + std::to_string(cb_) + " " + std::to_string(cl_) + " " + std::to_string(cr_) +
                           "] (crop less)");
  // MATLAB's names Weights and Bias; for a transposed convolution the fan-in counts the
  // filters and the fan-out the input channels (the adjoint convolution's).
  params_ = weights_and_bias(weight_param_, bias_param_, Shape{c_, kh_, kw_, k_}, k_, kh_ * kw_ * k_, kh_ * kw_ * c_);
  return Shape{d.out_h(), d.out_w(), k_};
}

DeconvDesc TransposedConv2dLayer::desc(int64_t n) const {
  DeconvDesc d;
  d.n = n;
  d.h = h_;
  d.w = w_;
  d.c = c_;
  d.k = k_;
  d.kh = kh_;
  d.kw = kw_;
  d.stride_h = sh_;
  d.stride_w = sw_;
  d.crop_t = ct_;
  d.crop_b = cb_;
  d.crop_l = cl_;
  d.crop_r = cr_;
  return d;
}

void TransposedConv2dLayer::setup(int64_t n, Backend& be) { op_ = be.make(desc(n)); }

void TransposedConv2dLayer::forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) {
  op_->forward(*x[0], params_[0].value, params_[1].value, y);
}

void TransposedConv2dLayer::backward(const std::vector<const Tensor*>& x, const Tensor&, Tensor& dy,
                                     const std::vector<Tensor*>& dx, const RunContext&) {
  Param& w = params_[0];
  Param& b = params_[1];
  if (!w.frozen() || !b.frozen()) op_->backward_weights(*x[0], dy, w.grad, b.grad);
  if (dx[0]) op_->backward_data(dy, w.value, *dx[0]);
}

// Every input pixel meets every filter tap: 2 C K kh kw per input pixel (cropped taps included).
int64_t TransposedConv2dLayer::flops_per_image() const { return 2 * h_ * w_ * c_ * k_ * kh_ * kw_; }

OnnxValue TransposedConv2dLayer::to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const {
  const std::string& n = name();
  OnnxValue x = g.image(n, inputs.at(0));
  // (C, kh, kw, K) -> ONNX's (C, K, kh, kw): the OHWI -> OIHW permutation with O = C, I = K.
  g.add_floats(n + "_W", {c_, k_, kh_, kw_}, ohwi_to_oihw(host_values(params_[0].value), c_, k_, kh_, kw_));
  g.add_floats(n + "_B", {k_}, host_values(params_[1].value));
  std::vector<OnnxAttr> attrs = {OnnxAttr("kernel_shape", std::vector<int64_t>{kh_, kw_}),
                                 OnnxAttr("strides", std::vector<int64_t>{sh_, sw_}),
                                 OnnxAttr("dilations", std::vector<int64_t>{1, 1}), OnnxAttr("group", int64_t{1})};
  if (ct_ >= cb_ && cl_ >= cr_ && ct_ - cb_ < sh_ && cl_ - cr_ < sw_) {
    // Less cropped at the bottom / right: symmetric pads and output_padding, as PyTorch writes
    // ConvTranspose2d(padding, output_padding) (OpenCV's importer takes no asymmetric pads).
    attrs.emplace_back("pads", std::vector<int64_t>{ct_, cl_, ct_, cl_});
    if (ct_ > cb_ || cl_ > cr_) attrs.emplace_back("output_padding", std::vector<int64_t>{ct_ - cb_, cl_ - cr_});
  } else {
    attrs.emplace_back("pads", std::vector<int64_t>{ct_, cl_, cb_, cr_});
  }
  g.add_node("ConvTranspose", n, {x.name, n + "_W", n + "_B"}, n, attrs);
  return OnnxValue{n, out, false};
}

// ConvTranspose with explicit pads (and output_padding, which un-crops the bottom / right);
// auto_pad, output_shape, dilations and groups other than 1 are refused.
void TransposedConv2dLayer::from_onnx(OnnxNodeReader& r) {
  const OnnxValue in = r.input(0);
  r.need_image(in);
  auto wd = r.dims(1, "weight");
  if (wd.size() != 4)
    r.fail("weight has " + std::to_string(wd.size()) + " dimensions (only 2-D transposed convolutions)");
  if (r.attr_int("group", 1) != 1) r.fail("group is not 1 (grouped transposed convolutions are not supported)");
  for (int64_t d : r.attr_ints("dilations", {1, 1}))
    if (d != 1) r.fail("dilated transposed convolutions are not supported");
  const std::string ap = r.attr_string("auto_pad", "NOTSET");
  if (ap != "NOTSET" && ap != "VALID") r.fail("auto_pad " + ap + " is not supported (export with explicit pads)");
  if (!r.attr_ints("output_shape", {}).empty()) r.fail("output_shape is not supported (export with explicit pads)");
  const int64_t c = wd[0], k = wd[1], kh = wd[2], kw = wd[3];
  if (c != in.shape[2])
    r.fail("weight expects " + std::to_string(c) + " input channels but the input has " + std::to_string(in.shape[2]));
  auto st = r.attr_ints("strides", {1, 1});
  auto p = r.attr_ints("pads", {0, 0, 0, 0});  // [top, left, bottom, right]
  auto op = r.attr_ints("output_padding", {0, 0});
  if (st.size() != 2 || p.size() != 4 || op.size() != 2) r.fail("strides, pads and output_padding must be 2-D");
  for (int64_t v : {st[0], st[1], kh, kw})
    if (v < 1 || v > kOnnxMaxWindow) r.fail("the kernel and strides must be in 1.." + std::to_string(kOnnxMaxWindow));
  const int64_t cb = p[2] - op[0], cr = p[3] - op[1];
  if (cb < 0 || cr < 0)
    r.fail("output_padding exceeds the bottom / right pads (dltrain's Cropping cannot add rows or columns)");
  const int64_t oh = (in.shape[0] - 1) * st[0] + kh - p[0] - cb, ow = (in.shape[1] - 1) * st[1] + kw - p[1] - cr;
  if (oh < 1 || ow < 1) r.fail("the pads remove the whole output");
  LayerSpec& s = r.add_layer("transposedConv2d", {in.name});
  set_list(s, "FilterSize", {kh, kw});
  s.set("NumFilters", std::to_string(k));
  s.set("NumChannels", std::to_string(c));
  set_list(s, "Stride", st);
  set_list(s, "Cropping", {p[0], cb, p[1], cr});
  const std::string name = s.name;
  r.add_param(name, "Weights", Shape{c, kh, kw, k}, oihw_to_ohwi(r.floats(1, "weight"), c, k, kh, kw));
  r.add_param(name, "Bias", Shape{k}, r.bias_or_zeros(2, k));
  r.set_output(OnnxValue{name, Shape{oh, ow, k}, false});
}

}  // namespace

const LayerType& transposed_conv2d_layer_type() {
  static const LayerType t{
      "transposedConv2d",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<TransposedConv2dLayer>(s); },
      {"ConvTranspose"},
      TransposedConv2dLayer::from_onnx};
  return t;
}

}  // namespace dlt

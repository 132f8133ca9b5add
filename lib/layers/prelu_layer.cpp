// prelu: MATLAB's preluLayer (R2024a), the parametrized ReLU: y = x where x > 0, Alpha x
// elsewhere, Alpha learned. Alpha is one value shared by every channel (a number: MATLAB's
// scalar Alpha, PyTorch's PReLU()) or one per channel (a list of C numbers, or a number with
// dltrain's AlphaPerChannel true: PyTorch's PReLU(C)). The op is backend/prelu_op.h's. ONNX:
// PRelu with a slope of one value or of C values ((C, 1, 1) on images), both ways.
#include <algorithm>
#include <memory>
#include <string>

#include "backend/prelu_op.h"
#include "layers/layer_util.h"

namespace dlt {

namespace {

class PReluLayer final : public Layer {
 public:
  explicit PReluLayer(const LayerSpec& spec) : Layer(spec) {
    const SpecValue* a = spec_.get("Alpha");
    if (a && a->is_list)
      for (double v : spec_.get_doubles("Alpha", {})) init_.push_back(static_cast<float>(v));
    else
      init_ = {static_cast<float>(spec_.get_double("Alpha", 0.25))};
    if (init_.empty()) throw ConfigError(spec.where() + "option Alpha is an empty list (a number, or one per channel)");
    per_channel_ = spec_.get_bool("AlphaPerChannel", false) || init_.size() > 1;
    alpha_ = make_param(spec_, "Alpha", Shape{}, Init::kZeros, 1.f);
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    shape_ = inputs[0];
    const int64_t c = shape_[2];
    if (init_.size() > 1 && static_cast<int64_t>(init_.size()) != c)
      shape_error(spec_, "Alpha has " + std::to_string(init_.size()) + " values but the input has " +
                             std::to_string(c) + " channels (one value, or one per channel)");
    Param a = alpha_;
    a.shape = Shape{per_channel_ ? c : 1};
    params_ = {a};
    return shape_;
  }

  void init_params(Rng& rng) override {
    Layer::init_params(rng);
    Tensor v(params_[0].shape);
    for (int64_t i = 0; i < v.numel(); ++i) v.data()[i] = init_[init_.size() == 1 ? 0 : static_cast<size_t>(i)];
    params_[0].value.copy_from(v);
  }

  void setup(int64_t n, Backend& be) override {
    PReluDesc d;
    d.n = n;
    d.pixels = shape_[0] * shape_[1];
    d.c = shape_[2];
    d.alphas = per_channel_ ? d.c : 1;
    op_ = be.make(d);
  }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    op_->forward(*x[0], params_[0].value, y);
  }

  void backward(const std::vector<const Tensor*>& x, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    Param& a = params_[0];
    Tensor none;
    op_->backward(*x[0], a.value, dy, grad_or_scratch(dx[0], *x[0], scratch_dx_), a.frozen() ? none : a.grad);
  }

  int64_t flops_per_image() const override { return shape_.numel(); }
  std::vector<std::string> learnable_options() const override { return {"Alpha"}; }

  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const OnnxValue& x = inputs.at(0);
    const int64_t c = shape_[2];
    const bool image = !x.flat && !x.tokens && shape_[0] * shape_[1] > 1;
    const std::vector<int64_t> dims = !per_channel_ ? std::vector<int64_t>{1}
                                      : image       ? std::vector<int64_t>{c, 1, 1}
                                                    : std::vector<int64_t>{c};
    g.add_floats(n + "_slope", dims, host_values(params_[0].value));
    g.add_node("PRelu", n, {x.name, n + "_slope"}, n);
    return OnnxValue{n, out, x.flat};
  }

  // PRelu with a constant slope: one value, or one per channel ((C, 1, 1) on an NCHW image,
  // (C) on (N, C) values or tokens, or the last dimension of channels-last data).
  static void from_onnx(OnnxNodeReader& r) {
    const OnnxValue in = r.input(0, false, true);
    const int64_t c = in.shape[2], hw = in.shape[0] * in.shape[1];
    const std::vector<float> slope = r.floats(1, "slope");
    const std::vector<int64_t> dims = r.dims(1, "slope");
    const int64_t count = static_cast<int64_t>(slope.size());
    const bool nchw = !in.flat && !in.tokens && !in.channels_last && hw > 1;
    if (count != 1 && count != c)
      r.fail("its slope has " + std::to_string(count) + " values for " + std::to_string(c) +
             " channels; dltrain's prelu has one, or one per channel");
    if (count == c && c > 1 && nchw && (dims.size() < 3 || dims.back() != 1 || dims[dims.size() - 2] != 1))
      r.fail("its slope of " + std::to_string(c) +
             " values is repeated over the image's rows, not its channels (give it the shape (C, 1, 1))");
    LayerSpec& s = r.add_layer("prelu", {in.name});
    if (count == c && c > 1) s.set("AlphaPerChannel", "true");
    const std::string name = s.name;
    r.add_param(name, "Alpha", Shape{count == c && c > 1 ? c : 1}, slope);
    OnnxValue out = in;
    out.name = name;
    r.set_output(out);
  }

 private:
  std::vector<float> init_;  // Alpha's initial value(s)
  bool per_channel_ = false;
  Param alpha_;
  Shape shape_;
  std::unique_ptr<PReluOp> op_;
  Tensor scratch_dx_;  // dx when the input needs no gradient
};

}  // namespace

const LayerType& prelu_layer_type() {
  static const LayerType t{"prelu",
                           [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<PReluLayer>(s); },
                           {"PRelu"},
                           PReluLayer::from_onnx};
  return t;
}

}  // namespace dlt

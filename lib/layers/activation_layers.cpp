// Element-wise activation layers, each a thin wrapper over one backend ActOp (backend/ops.h
// has the formulas, PyTorch's): relu, leakyRelu, elu, clippedRelu, sigmoid, tanh, swish, gelu
// (MATLAB's layers and options) and hardSigmoid, hardSwish (dltrain's names: MATLAB has no
// such layers). ONNX both ways; export writes opset 13, so operators that are newer become
// their decompositions (HardSwish: x * HardSigmoid(x); Gelu: the Erf or the Tanh form;
// swish: x * Sigmoid(x)), which the import's graph rewrite (onnx/onnx_rewrite.h) turns back
// into single nodes.
#include <cmath>
#include <limits>
#include <memory>

#include "layers/layer_util.h"

namespace dlt {

namespace {

constexpr float kSqrt2 = 1.41421356f;
constexpr float kGeluTanhBeta = 0.797884561f;  // sqrt(2 / pi)
constexpr float kGeluTanhKappa = 0.044715f;

class ActivationLayer final : public Layer {
 public:
  ActivationLayer(const LayerSpec& spec, ActKind kind) : Layer(spec), kind_(kind) {
    traits_.relu = kind == ActKind::kRelu;
    traits_.clipped_relu = kind == ActKind::kClippedRelu;
    if (kind == ActKind::kLeakyRelu) alpha_ = number("Scale", 0.01);
    if (kind == ActKind::kElu) alpha_ = number("Alpha", 1.0);
    if (kind == ActKind::kClippedRelu) {
      if (!spec_.has("Ceiling")) throw ConfigError(spec.where() + "option Ceiling is required (e.g. Ceiling: 6)");
      alpha_ = number("Ceiling", 0);
      if (!(alpha_ > 0)) throw ConfigError(spec.where() + "option Ceiling must be > 0, got " + onnx_number(alpha_));
      traits_.ceiling = alpha_;
    }
    if (kind == ActKind::kGelu && spec_.get_choice("Approximation", "none", {"none", "tanh"}) == "tanh")
      kind_ = ActKind::kGeluTanh;
    if (kind == ActKind::kHardSigmoid) {
      alpha_ = number("Alpha", 1.0 / 6);
      beta_ = number("Beta", 0.5);
    }
    // (after kind_ took Approximation tanh)
    traits_.post_act = kind_ == ActKind::kSwish || kind_ == ActKind::kGelu || kind_ == ActKind::kGeluTanh ||
                       kind_ == ActKind::kHardSwish;
    traits_.post_act_kind = kind_;
  }
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    shape_ = inputs[0];
    return shape_;
  }
  void setup(int64_t n, Backend& be) override { op_ = be.make(ActDesc{n * shape_.numel(), kind_, alpha_, beta_}); }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override { op_->forward(*x[0], y); }
  void backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->backward(*x[0], y, dy, *dx[0]);
  }

  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const std::string& x = inputs.at(0).name;
    switch (kind_) {
      case ActKind::kRelu:
        g.add_node("Relu", n, {x}, n);
        break;
      case ActKind::kLeakyRelu:
        g.add_node("LeakyRelu", n, {x}, n, {OnnxAttr("alpha", alpha_)});
        break;
      case ActKind::kElu:
        g.add_node("Elu", n, {x}, n, {OnnxAttr("alpha", alpha_)});
        break;
      case ActKind::kClippedRelu:
        g.add_node("Clip", n, {x, g.add_floats(n + "_min", {}, {0.f}), g.add_floats(n + "_max", {}, {alpha_})}, n);
        break;
      case ActKind::kSigmoid:
        g.add_node("Sigmoid", n, {x}, n);
        break;
      case ActKind::kTanh:
        g.add_node("Tanh", n, {x}, n);
        break;
      case ActKind::kSwish:
        g.add_node("Sigmoid", n + "_sigmoid", {x}, n + "_sigmoid");
        g.add_node("Mul", n, {x, n + "_sigmoid"}, n);
        break;
      case ActKind::kHardSigmoid:
        g.add_node("HardSigmoid", n, {x}, n, {OnnxAttr("alpha", alpha_), OnnxAttr("beta", beta_)});
        break;
      case ActKind::kHardSwish:  // HardSwish is opset 14
        g.add_node("HardSigmoid", n + "_hardsigmoid", {x}, n + "_hardsigmoid",
                   {OnnxAttr("alpha", 1.f / 6), OnnxAttr("beta", 0.5f)});
        g.add_node("Mul", n, {x, n + "_hardsigmoid"}, n);
        break;
      case ActKind::kGelu:
        gelu_erf_nodes(g, x);
        break;
      case ActKind::kGeluTanh:
        gelu_tanh_nodes(g, x);
        break;
    }
    return OnnxValue{n, out, inputs.at(0).flat};
  }

  static void from_onnx(OnnxNodeReader& r);

 private:
  float number(const std::string& key, double def) const {
    const double v = spec_.get_double(key, def);
    if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max())
      throw ConfigError(spec_.where() + "option " + key + " must be a finite number");
    return static_cast<float>(v);
  }

  // Gelu is opset 20: x (1 + erf(x / sqrt 2)) / 2 as PyTorch's TorchScript exporter writes it.
  void gelu_erf_nodes(OnnxGraph& g, const std::string& x) const {
    const std::string& n = name();
    g.add_floats(n + "_sqrt2", {}, {kSqrt2});
    g.add_floats(n + "_one", {}, {1.f});
    g.add_floats(n + "_half", {}, {0.5f});
    g.add_node("Div", n + "_div", {x, n + "_sqrt2"}, n + "_div");
    g.add_node("Erf", n + "_erf", {n + "_div"}, n + "_erf");
    g.add_node("Add", n + "_erf_plus_one", {n + "_erf", n + "_one"}, n + "_erf_plus_one");
    g.add_node("Mul", n + "_times_x", {x, n + "_erf_plus_one"}, n + "_times_x");
    g.add_node("Mul", n, {n + "_times_x", n + "_half"}, n);
  }

  // x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2, the nodes and order of PyTorch's exporter.
  void gelu_tanh_nodes(OnnxGraph& g, const std::string& x) const {
    const std::string& n = name();
    g.add_floats(n + "_kappa", {}, {kGeluTanhKappa});
    g.add_floats(n + "_beta", {}, {kGeluTanhBeta});
    g.add_floats(n + "_one", {}, {1.f});
    g.add_floats(n + "_half", {}, {0.5f});
    g.add_node("Mul", n + "_square", {x, x}, n + "_square");
    g.add_node("Mul", n + "_cube", {x, n + "_square"}, n + "_cube");
    g.add_node("Mul", n + "_kappa_cube", {n + "_kappa", n + "_cube"}, n + "_kappa_cube");
    g.add_node("Add", n + "_sum", {x, n + "_kappa_cube"}, n + "_sum");
    g.add_node("Mul", n + "_inner", {n + "_beta", n + "_sum"}, n + "_inner");
    g.add_node("Tanh", n + "_tanh", {n + "_inner"}, n + "_tanh");
    g.add_node("Add", n + "_tanh_plus_one", {n + "_one", n + "_tanh"}, n + "_tanh_plus_one");
    g.add_node("Mul", n + "_times_x", {x, n + "_tanh_plus_one"}, n + "_times_x");
    g.add_node("Mul", n, {n + "_half", n + "_times_x"}, n);
  }

  ActKind kind_;
  float alpha_ = 0.f, beta_ = 0.f;  // ActDesc's
  Shape shape_;
  std::unique_ptr<ActOp> op_;
};

// Clip's bounds: attributes before opset 11, optional constant inputs since. Absent: +-inf.
void clip_bounds(OnnxNodeReader& r, float& lo, float& hi) {
  const float inf = std::numeric_limits<float>::infinity();
  lo = -inf, hi = inf;
  if (r.opset() < 11) {
    lo = r.attr_float("min", -inf);
    hi = r.attr_float("max", inf);
    return;
  }
  for (int i : {1, 2}) {
    if (!r.has_input(i)) continue;
    const char* role = i == 1 ? "min" : "max";
    if (!r.is_constant(i)) r.fail(std::string(role) + " is computed; dltrain reads Clip with constant bounds only");
    const std::vector<float> v = r.floats(i, role);
    if (v.size() != 1) r.fail(std::string(role) + " has " + std::to_string(v.size()) + " values, expected one");
    (i == 1 ? lo : hi) = v[0];
  }
}

// Element-wise: a channels-last input stays channels-last, tokens stay tokens.
void ActivationLayer::from_onnx(OnnxNodeReader& r) {
  const OnnxValue in = r.input(0, false, true);
  const std::string& op = r.op();
  auto add = [&](const std::string& type) -> LayerSpec& { return r.add_layer(type, {in.name}); };
  std::string name;
  if (op == "Relu") name = add("relu").name;
  if (op == "Sigmoid") name = add("sigmoid").name;
  if (op == "Tanh") name = add("tanh").name;
  if (op == "HardSwish") name = add("hardSwish").name;
  if (op == "LeakyRelu") {
    LayerSpec& s = add("leakyRelu");
    s.set("Scale", onnx_number(r.attr_float("alpha", 0.01f)));
    name = s.name;
  }
  if (op == "Elu") {
    LayerSpec& s = add("elu");
    s.set("Alpha", onnx_number(r.attr_float("alpha", 1.f)));
    name = s.name;
  }
  if (op == "Clip") {
    float lo = 0, hi = 0;
    clip_bounds(r, lo, hi);
    if (lo != 0 || !(hi > 0))
      r.fail("dltrain reads Clip with min 0 and a max > 0 (clippedRelu) or no max (relu), not min " + onnx_number(lo) +
             " max " + onnx_number(hi));
    if (hi >= std::numeric_limits<float>::max()) {
      name = add("relu").name;
    } else {
      LayerSpec& s = add("clippedRelu");
      s.set("Ceiling", onnx_number(hi));
      name = s.name;
    }
  }
  if (op == "HardSigmoid") {
    LayerSpec& s = add("hardSigmoid");
    s.set("Alpha", onnx_number(r.attr_float("alpha", 0.2f)));  // ONNX's defaults, not PyTorch's
    s.set("Beta", onnx_number(r.attr_float("beta", 0.5f)));
    name = s.name;
  }
  if (op == "Gelu") {
    const std::string approximate = r.attr_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh")
      r.fail("approximate is '" + approximate + "', expected 'none' or 'tanh'");
    LayerSpec& s = add("gelu");
    if (approximate == "tanh") s.set("Approximation", "tanh");
    name = s.name;
  }
  if (op == "Swish") {  // the import's rewrite of x * Sigmoid(x), or ONNX's Swish (opset 24)
    const float alpha = r.attr_float("alpha", 1.f);
    if (alpha != 1.f) r.fail("alpha is " + onnx_number(alpha) + "; dltrain's swish is x * sigmoid(x) (alpha 1)");
    name = add("swish").name;
  }
  OnnxValue out = in;
  out.name = name;
  r.set_output(out);
}

template <ActKind K>
std::unique_ptr<Layer> make_activation(const LayerSpec& s) {
  return std::make_unique<ActivationLayer>(s, K);
}

}  // namespace

const LayerType& relu_layer_type() {
  static const LayerType t{"relu", make_activation<ActKind::kRelu>, {"Relu"}, ActivationLayer::from_onnx};
  return t;
}

const LayerType& leaky_relu_layer_type() {
  static const LayerType t{
      "leakyRelu", make_activation<ActKind::kLeakyRelu>, {"LeakyRelu"}, ActivationLayer::from_onnx};
  return t;
}

const LayerType& elu_layer_type() {
  static const LayerType t{"elu", make_activation<ActKind::kElu>, {"Elu"}, ActivationLayer::from_onnx};
  return t;
}

// ONNX Clip with min 0: clippedRelu with a max, relu without.
const LayerType& clipped_relu_layer_type() {
  static const LayerType t{"clippedRelu", make_activation<ActKind::kClippedRelu>, {"Clip"}, ActivationLayer::from_onnx};
  return t;
}

const LayerType& sigmoid_layer_type() {
  static const LayerType t{"sigmoid", make_activation<ActKind::kSigmoid>, {"Sigmoid"}, ActivationLayer::from_onnx};
  return t;
}

const LayerType& tanh_layer_type() {
  static const LayerType t{"tanh", make_activation<ActKind::kTanh>, {"Tanh"}, ActivationLayer::from_onnx};
  return t;
}

const LayerType& swish_layer_type() {
  static const LayerType t{"swish", make_activation<ActKind::kSwish>, {"Swish"}, ActivationLayer::from_onnx};
  return t;
}

// Approximation: tanh makes the layer's kind kGeluTanh.
const LayerType& gelu_layer_type() {
  static const LayerType t{"gelu", make_activation<ActKind::kGelu>, {"Gelu"}, ActivationLayer::from_onnx};
  return t;
}

const LayerType& hard_sigmoid_layer_type() {
  static const LayerType t{
      "hardSigmoid", make_activation<ActKind::kHardSigmoid>, {"HardSigmoid"}, ActivationLayer::from_onnx};
  return t;
}

const LayerType& hard_swish_layer_type() {
  static const LayerType t{
      "hardSwish", make_activation<ActKind::kHardSwish>, {"HardSwish"}, ActivationLayer::from_onnx};
  return t;
}

}  // namespace dlt

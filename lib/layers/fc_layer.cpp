// fullyConnected: MATLAB's fullyConnectedLayer on the backend's FcOp. OperationDimension
// auto or spatial-channel: the input (H, W, C) is flattened in HWC order, Weights (OutputSize,
// H*W*C), and the output is one vector (CB); channel: the same weights (OutputSize, C) for each
// pixel or token, the output keeping the input's positions and format ((S, 1, C) tokens ->
// (S, 1, OutputSize): a transformer's per-token projection). Bias (OutputSize). Fuses a
// following ReLU.
#include <memory>

#include "layers/layer_util.h"

namespace dlt {

namespace {

class FullyConnectedLayer final : public Layer {
 public:
  explicit FullyConnectedLayer(const LayerSpec& spec) : Layer(spec) {
    out_ = spec_.get_int("OutputSize", 0, 1);
    if (out_ == 0) throw ConfigError(spec.where() + "option OutputSize is required (e.g. OutputSize: 10)");
    spec_.get("InputSize");
    per_position_ = spec_.get_choice("OperationDimension", "auto", {"auto", "spatial-channel", "channel"}) == "channel";
    Init wi = parse_initializer(spec_, "WeightsInitializer", "glorot");
    Init bi = parse_initializer(spec_, "BiasInitializer", "zeros");
    weight_ = make_param(spec_, "Weight", Shape{}, wi, 1.f);
    bias_ = make_param(spec_, "Bias", Shape{}, bi, 0.f);
    traits_.relu_in_op = true;
    traits_.separate_relu_backward = true;
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    positions_ = per_position_ ? inputs[0][0] * inputs[0][1] : 1;
    in_ = per_position_ ? inputs[0][2] : inputs[0].numel();
    int64_t declared = spec_.get_int("InputSize", in_, 1);
    if (declared != in_)
      shape_error(spec_, "InputSize is " + std::to_string(declared) + " but the input is " + inputs[0].str() + " = " +
                             std::to_string(in_) + " values");
    Param w = weight_, b = bias_;
    w.name = "Weights";
    w.shape = Shape{out_, in_};
    w.fan_in = in_;
    w.fan_out = out_;
    b.name = "Bias";
    b.shape = Shape{out_};
    b.fan_in = in_;
    b.fan_out = out_;
    params_ = {w, b};
    return per_position_ ? Shape{inputs[0][0], inputs[0][1], out_} : Shape{1, 1, out_};
  }
  DataFormat output_format() const override { return per_position_ ? input_format(0) : DataFormat::kCB; }

  void setup(int64_t n, Backend& be) override {
    op_ = be.make(FcDesc{n * positions_, in_, out_, fusion_.relu, mixed_});
    if (fusion_.relu) relu_ = be.make(ActDesc{n * positions_ * out_, ActKind::kRelu, 0.f});
  }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    op_->forward(*x[0], params_[0].value, params_[1].value, y);
  }

  void backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (fusion_.relu && !fusion_.relu_backward_handed_over) relu_->backward(y, y, dy, dy);
    Param& w = params_[0];
    Param& b = params_[1];
    if (!w.frozen() || !b.frozen()) op_->backward_weights(*x[0], dy, w.grad, b.grad);
    if (dx[0]) op_->backward_data(dy, w.value, *dx[0]);
  }

  int64_t flops_per_image() const override { return 2 * positions_ * in_ * out_; }
  std::vector<std::string> learnable_options() const override { return {"Weight", "Bias"}; }

  // The first fullyConnected after an image gets a Flatten, and its columns go from HWC to
  // CHW order; per token (OperationDimension channel on tokens): MatMul and Add; per pixel
  // (OperationDimension channel on an image): a 1x1 Conv.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    if (per_position_ && inputs.at(0).tokens) {
      g.tokens_linear(n, inputs[0].name, host_values(params_[0].value), out_, in_, host_values(params_[1].value));
      return OnnxValue{n, out, false};
    }
    if (per_position_ && !inputs[0].flat) {  // per pixel of an image: a 1x1 Conv (weights (k, c, 1, 1))
      g.add_floats(n + "_W", {out_, in_, 1, 1}, host_values(params_[0].value));
      g.add_floats(n + "_B", {out_}, host_values(params_[1].value));
      g.add_node("Conv", n, {inputs[0].name, n + "_W", n + "_B"}, n,
                 {OnnxAttr("kernel_shape", std::vector<int64_t>{1, 1})});
      return OnnxValue{n, out, false};
    }
    OnnxValue x = g.flat(inputs.at(0));
    int64_t h = x.shape[0], w = x.shape[1], c = x.shape[2];
    std::vector<float> wt = host_values(params_[0].value);
    if (h * w > 1) wt = hwc_cols_to_chw(wt, out_, h, w, c);
    g.add_floats(n + "_W", {out_, in_}, wt);
    g.add_floats(n + "_B", {out_}, host_values(params_[1].value));
    g.add_node("Gemm", n, {x.name, n + "_W", n + "_B"}, n, {OnnxAttr("transB", int64_t{1})});
    return OnnxValue{n, out, true};
  }

  // Gemm (alpha, beta and transB folded in) or MatMul (a following Add of a constant becomes
  // the bias: lib/onnx/onnx_import.cpp).
  static void from_onnx(OnnxNodeReader& r) {
    if (adaptive_pool_from_onnx(r)) return;
    const OnnxValue in = r.input(0, false, true);
    bool gemm = r.op() == "Gemm";
    if (in.channels_last) {
      if (gemm) r.fail("its input is a channels-last image (N, H, W, C); Gemm reads (N, K)");
      return pointwise_conv_from_onnx(r, in);
    }
    if (gemm && r.attr_int("transA", 0) != 0) r.fail("transA 1 is not supported");
    auto bd = r.dims(1, "weight");
    if (bd.size() != 2) r.fail("weight has " + std::to_string(bd.size()) + " dimensions, expected 2");
    bool trans_b = gemm && r.attr_int("transB", 0) != 0;
    int64_t k = trans_b ? bd[0] : bd[1], inputs = trans_b ? bd[1] : bd[0];
    int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2];
    if (inputs != in.shape.numel())
      r.fail("weight expects " + std::to_string(inputs) + " inputs but its input has " +
             std::to_string(in.shape.numel()));
    if (!in.flat && h * w > 1) r.fail("its input is an image (N, C, H, W); flatten it first");
    std::vector<float> b = r.floats(1, "weight"), wk(static_cast<size_t>(k * inputs));
    float alpha = gemm ? r.attr_float("alpha", 1.f) : 1.f, beta = gemm ? r.attr_float("beta", 1.f) : 1.f;
    for (int64_t o = 0; o < k; ++o)
      for (int64_t i = 0; i < inputs; ++i)
        wk[static_cast<size_t>(o * inputs + i)] =
            alpha * (trans_b ? b[static_cast<size_t>(o * inputs + i)] : b[static_cast<size_t>(i * k + o)]);
    if (h * w > 1) wk = chw_cols_to_hwc(wk, k, h, w, c);
    std::vector<float> bias(static_cast<size_t>(k), 0.f);
    if (gemm && r.has_input(2)) {
      std::vector<float> cb = r.floats(2, "bias");
      if (cb.size() == 1) cb.assign(static_cast<size_t>(k), cb[0]);
      if (static_cast<int64_t>(cb.size()) != k)
        r.fail("bias has " + std::to_string(cb.size()) + " values for " + std::to_string(k) + " outputs");
      for (size_t o = 0; o < cb.size(); ++o) bias[o] = beta * cb[o];
    }
    LayerSpec& s = r.add_layer("fullyConnected", {in.name});
    s.set("OutputSize", std::to_string(k));
    const std::string name = s.name;
    r.add_param(name, "Weights", Shape{k, inputs}, wk);
    r.add_param(name, "Bias", Shape{k}, bias);
    r.set_output(OnnxValue{name, Shape{1, 1, k}, true});
  }

 private:
  int64_t in_ = 0, out_ = 0;
  bool per_position_ = false;  // OperationDimension channel
  int64_t positions_ = 1;      // rows per image: H * W with per_position_, else 1
  Param weight_, bias_;
  std::unique_ptr<FcOp> op_;
  std::unique_ptr<ActOp> relu_;
};

}  // namespace

const LayerType& fully_connected_layer_type() {
  static const LayerType t{
      "fullyConnected",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<FullyConnectedLayer>(s); },
      {"Gemm", "MatMul"},
      FullyConnectedLayer::from_onnx};
  return t;
}

}  // namespace dlt

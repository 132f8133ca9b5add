// Normalization and regularization layers: crossChannelNormalization, dropout, spatialDropout
// and softmax.
// Each is a thin wrapper over one backend op (the activations: activation_layers.cpp).
#include <memory>

#include "layers/layer_util.h"

namespace dlt {

namespace {

class LrnLayer final : public Layer {
 public:
  // An image layer: not on token sequences.
  bool takes(DataFormat f) const override { return f != DataFormat::kSCB; }
  explicit LrnLayer(const LayerSpec& spec) : Layer(spec) {
    size_ = spec_.get_int("WindowChannelSize", 0, 1);
    if (size_ == 0)
      throw ConfigError(spec.where() + "option WindowChannelSize is required (e.g. WindowChannelSize: 5)");
    alpha_ = static_cast<float>(spec_.get_double("Alpha", 1e-4));
    beta_ = static_cast<float>(spec_.get_double("Beta", 0.75));
    k_ = static_cast<float>(spec_.get_double("K", 2.0));
    if (k_ <= 0) throw ConfigError(spec.where() + "option K must be > 0");
  }
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    shape_ = inputs[0];
    return shape_;
  }
  void setup(int64_t n, Backend& be) override {
    op_ = be.make(LrnDesc{n, shape_[0], shape_[1], shape_[2], size_, alpha_, beta_, k_});
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    op_->forward(*x[0], y, ctx.training);
  }
  void backward(const std::vector<const Tensor*>& x, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->backward(*x[0], dy, *dx[0]);
  }
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    g.add_node("LRN", n, {g.image(n, inputs.at(0)).name}, n,
               {OnnxAttr("size", size_), OnnxAttr("alpha", alpha_), OnnxAttr("beta", beta_), OnnxAttr("bias", k_)});
    return OnnxValue{n, out, false};
  }

  static void from_onnx(OnnxNodeReader& r) {
    const OnnxValue in = r.input(0);
    r.need_image(in);
    LayerSpec& s = r.add_layer("crossChannelNormalization", {in.name});
    s.set("WindowChannelSize", std::to_string(r.attr_int("size", 0)));
    s.set("Alpha", onnx_number(r.attr_float("alpha", 1e-4f)));
    s.set("Beta", onnx_number(r.attr_float("beta", 0.75f)));
    s.set("K", onnx_number(r.attr_float("bias", 1.f)));
    r.set_output(OnnxValue{s.name, in.shape, false});
  }

  int64_t flops_per_image() const override { return 2 * size_ * shape_.numel(); }

 private:
  int64_t size_;
  float alpha_, beta_, k_;
  Shape shape_;
  std::unique_ptr<LrnOp> op_;
};

// What dropout and spatialDropout share: MATLAB's Probability in [0, 1), the output the input's
// shape, training-time randomness, and no ONNX node (the identity in inference).
class DropoutBase : public Layer {
 public:
  explicit DropoutBase(const LayerSpec& spec) : Layer(spec) {
    p_ = spec_.get_double("Probability", 0.5);
    if (p_ < 0 || p_ >= 1)
      throw ConfigError(spec.where() + "option Probability must be in [0, 1), got " + std::to_string(p_));
  }
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    shape_ = inputs[0];
    return shape_;
  }
  bool stochastic() const override { return true; }
  OnnxValue to_onnx(OnnxGraph&, const std::vector<OnnxValue>& inputs, const Shape&) const override {
    return inputs.at(0);
  }

 protected:
  double p_;
  Shape shape_;
};

class DropoutLayer final : public DropoutBase {
 public:
  explicit DropoutLayer(const LayerSpec& spec) : DropoutBase(spec) {}
  void setup(int64_t n, Backend& be) override {
    Shape s = batch_shape(n, shape_);
    if (!mask_.defined()) mask_ = Tensor(s, be.device());
    mask_.resize(s);
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    Backend& be = backend_for(y.device());
    if (!ctx.training || p_ == 0) {
      be.copy(*x[0], y);
      return;
    }
    be.dropout_forward(*x[0], y, mask_, static_cast<float>(p_), ctx.seed, dropout_stream(name(), ctx.iteration));
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (!dx[0]) return;
    Backend& be = backend_for(dy.device());
    if (p_ == 0)
      be.copy(dy, *dx[0]);
    else
      be.multiply(dy, mask_, *dx[0]);
  }
  // Element-wise, so any layout passes through: a channels-last value stays channels-last, tokens
  // stay tokens.
  static void from_onnx(OnnxNodeReader& r) {
    const OnnxValue in = r.input(0, false, true);
    float ratio = r.attr_float("ratio", 0.5f);
    if (r.has_input(1)) ratio = r.floats(1, "ratio").at(0);
    LayerSpec& s = r.add_layer("dropout", {in.name});
    s.set("Probability", onnx_number(ratio));
    OnnxValue out = in;
    out.name = s.name;
    r.set_output(out);
  }

 private:
  Tensor mask_;  // (N, H, W, C): 0 or 1/(1-p)
};

// spatialDropout: MATLAB's spatialDropoutLayer (R2024a), dropout of whole channels: in
// training each channel of each image is zeroed with Probability p (all its pixels or tokens
// together) and the others scaled by 1 / (1 - p); the identity in inference. The mask (N, C)
// comes from the dropout kernel (the same masks on every backend for a seed and iteration)
// and multiplies the input with the multiplication layer's broadcast over the pixels.
class SpatialDropoutLayer final : public DropoutBase {
 public:
  explicit SpatialDropoutLayer(const LayerSpec& spec) : DropoutBase(spec) {}
  void setup(int64_t n, Backend& be) override {
    be_ = &be;
    d_ = ProductDesc{n, shape_[0] * shape_[1], shape_[2], {}};
    const Shape s{n, 1, 1, shape_[2]};
    for (Tensor* t : {&ones_, &mask_, &keep_}) {
      if (!t->defined()) *t = Tensor(s, be.device());
      t->resize(s);
    }
    be.fill(ones_, 1.f);  // read only: the dropout kernel's input
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    if (!ctx.training || p_ == 0) {
      be_->copy(*x[0], y);
      return;
    }
    be_->dropout_forward(ones_, mask_, keep_, static_cast<float>(p_), ctx.seed, dropout_stream(name(), ctx.iteration));
    be_->multiply({x[0], &mask_}, y, d_);
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (!dx[0]) return;
    if (p_ == 0)
      be_->copy(dy, *dx[0]);
    else
      be_->multiply({&dy, &mask_}, *dx[0], d_);
  }

 private:
  ProductDesc d_;
  Backend* be_ = nullptr;
  Tensor ones_, keep_;  // (N, C): the dropout kernel's input and its own mask
  Tensor mask_;         // (N, C): 0 or 1/(1-p) per channel of each image
};

class SoftmaxLayer final : public Layer {
 public:
  explicit SoftmaxLayer(const LayerSpec& spec) : Layer(spec) {}
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    shape_ = inputs[0];
    return shape_;
  }
  void setup(int64_t n, Backend& be) override { op_ = be.make(SoftmaxDesc{n * shape_[0] * shape_[1], shape_[2]}); }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override { op_->forward(*x[0], y); }
  void backward(const std::vector<const Tensor*>&, const Tensor& y, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->backward(y, dy, *dx[0]);
  }

  // Its output is the graph's output "prob": (N, K) class scores, or per pixel (N, K, H, W)
  // (opset 13's Softmax over axis 1 alone).
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const OnnxValue& in = inputs.at(0);
    if (in.tokens)
      throw ModelError(g.path() + ": softmax '" + name() +
                       "' reads tokens, which has no ONNX form here (only class scores or pixels)");
    if (out[0] * out[1] > 1 && !in.flat) {
      g.add_node("Softmax", name(), {in.name}, "prob", {OnnxAttr("axis", int64_t{1})});
      return OnnxValue{"prob", out, false};
    }
    OnnxValue x = g.flat(in);
    g.add_node("Softmax", name(), {x.name}, "prob", {OnnxAttr("axis", int64_t{1})});
    return OnnxValue{"prob", out, true};
  }

  // Over the class scores (N, K), or over the channels of each pixel: axis 1 (-3) of an
  // (N, C, H, W) image from opset 13 on (below 13 it means the C*H*W values together), the
  // last axis of a channels-last (N, H, W, C) value.
  static void from_onnx(OnnxNodeReader& r) {
    const OnnxValue in = r.input(0, false, true);
    const int64_t axis = r.attr_int("axis", r.opset() >= 13 ? -1 : 1);
    const bool one = in.shape[0] * in.shape[1] == 1;
    bool channel = false;
    if (in.channels_last)
      channel = axis == -1 || axis == 3;
    else if (one)
      channel = axis == 1 || (in.flat && axis == -1);
    else
      channel = !in.flat && !in.tokens && r.opset() >= 13 && (axis == 1 || axis == -3);
    if (!channel)
      r.fail(one || in.flat || in.tokens
                 ? "only a softmax over the class scores (N, K) is supported"
                 : "only a softmax over the channels of each pixel (axis 1 of (N, C, H, W), opset 13 or later) "
                   "is supported, not axis " +
                       std::to_string(axis) + " of " + in.shape.str() + " per image at opset " +
                       std::to_string(r.opset()));
    OnnxValue y = in;
    y.name = r.add_layer("softmax", {in.name}).name;
    if (one && !in.channels_last) y.flat = true;
    r.set_output(y);
  }

 private:
  Shape shape_;
  std::unique_ptr<SoftmaxOp> op_;
};

}  // namespace

const LayerType& cross_channel_normalization_layer_type() {
  static const LayerType t{"crossChannelNormalization",
                           [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<LrnLayer>(s); },
                           {"LRN"},
                           LrnLayer::from_onnx};
  return t;
}

const LayerType& dropout_layer_type() {
  static const LayerType t{
      "dropout",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<DropoutLayer>(s); },
      {"Dropout"},
      DropoutLayer::from_onnx};
  return t;
}

const LayerType& spatial_dropout_layer_type() {
  static const LayerType t{
      "spatialDropout",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<SpatialDropoutLayer>(s); },
      {},
      nullptr};
  return t;
}

const LayerType& softmax_layer_type() {
  static const LayerType t{
      "softmax",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<SoftmaxLayer>(s); },
      {"Softmax"},
      SoftmaxLayer::from_onnx};
  return t;
}

}  // namespace dlt

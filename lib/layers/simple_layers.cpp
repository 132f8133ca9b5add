// Element-wise and normalization layers: relu, leakyRelu, elu, crossChannelNormalization,
// dropout and softmax. Each is a thin wrapper over one backend op.
#include <memory>

#include "layers/layer_util.h"

namespace dlt {

namespace {

class ActivationLayer final : public Layer {
 public:
  ActivationLayer(const LayerSpec& spec, ActKind kind) : Layer(spec), kind_(kind) {
    if (kind == ActKind::kLeakyRelu) alpha_ = static_cast<float>(spec_.get_double("Scale", 0.01));
    if (kind == ActKind::kElu) alpha_ = static_cast<float>(spec_.get_double("Alpha", 1.0));
  }
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    shape_ = inputs[0];
    return shape_;
  }
  void setup(int64_t n, Backend& be) override { op_ = be.make_act(ActDesc{n * shape_.numel(), kind_, alpha_}); }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override { op_->forward(*x[0], y); }
  void backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->backward(*x[0], y, dy, *dx[0]);
  }
  bool is_relu() const { return kind_ == ActKind::kRelu; }

 private:
  ActKind kind_;
  float alpha_ = 0.f;
  Shape shape_;
  std::unique_ptr<ActOp> op_;
};

class LrnLayer final : public Layer {
 public:
  explicit LrnLayer(const LayerSpec& spec) : Layer(spec) {
    size_ = spec_.get_int("WindowChannelSize", 0, 1);
    if (size_ == 0) throw ConfigError(spec.where() + "option WindowChannelSize is required (e.g. WindowChannelSize: 5)");
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
    op_ = be.make_lrn(LrnDesc{n, shape_[0], shape_[1], shape_[2], size_, alpha_, beta_, k_});
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    op_->forward(*x[0], y, ctx.training);
  }
  void backward(const std::vector<const Tensor*>& x, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->backward(*x[0], dy, *dx[0]);
  }
  int64_t flops_per_image() const override { return 2 * size_ * shape_.numel(); }

 private:
  int64_t size_;
  float alpha_, beta_, k_;
  Shape shape_;
  std::unique_ptr<LrnOp> op_;
};

class DropoutLayer final : public Layer {
 public:
  explicit DropoutLayer(const LayerSpec& spec) : Layer(spec) {
    p_ = spec_.get_double("Probability", 0.5);
    if (p_ < 0 || p_ >= 1) throw ConfigError(spec.where() + "option Probability must be in [0, 1), got " + std::to_string(p_));
  }
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    shape_ = inputs[0];
    return shape_;
  }
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
    be.dropout_forward(*x[0], y, mask_, static_cast<float>(p_), ctx.seed, stream_id(ctx));
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (!dx[0]) return;
    Backend& be = backend_for(dy.device());
    if (p_ == 0) be.copy(dy, *dx[0]);
    else be.mul(dy, mask_, *dx[0]);
  }

 private:
  uint64_t stream_id(const RunContext& ctx) const {
    uint64_t h = 1469598103934665603ULL;  // FNV-1a of the layer name, mixed with the iteration
    for (char c : name()) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    return h ^ (ctx.iteration * 0x9e3779b97f4a7c15ULL);
  }
  double p_;
  Shape shape_;
  Tensor mask_;  // (N, H, W, C): 0 or 1/(1-p)
};

class SoftmaxLayer final : public Layer {
 public:
  explicit SoftmaxLayer(const LayerSpec& spec) : Layer(spec) {}
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    shape_ = inputs[0];
    return shape_;
  }
  void setup(int64_t n, Backend& be) override { op_ = be.make_softmax(n * shape_[0] * shape_[1], shape_[2]); }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override { op_->forward(*x[0], y); }
  void backward(const std::vector<const Tensor*>&, const Tensor& y, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->backward(y, dy, *dx[0]);
  }

 private:
  Shape shape_;
  std::unique_ptr<SoftmaxOp> op_;
};

}  // namespace

std::unique_ptr<Layer> make_relu_layer(const LayerSpec& s) { return std::make_unique<ActivationLayer>(s, ActKind::kRelu); }
std::unique_ptr<Layer> make_leaky_relu_layer(const LayerSpec& s) {
  return std::make_unique<ActivationLayer>(s, ActKind::kLeakyRelu);
}
std::unique_ptr<Layer> make_elu_layer(const LayerSpec& s) { return std::make_unique<ActivationLayer>(s, ActKind::kElu); }
std::unique_ptr<Layer> make_lrn_layer(const LayerSpec& s) { return std::make_unique<LrnLayer>(s); }
std::unique_ptr<Layer> make_dropout_layer(const LayerSpec& s) { return std::make_unique<DropoutLayer>(s); }
std::unique_ptr<Layer> make_softmax_layer(const LayerSpec& s) { return std::make_unique<SoftmaxLayer>(s); }

}  // namespace dlt

// fullyConnected: MATLAB's fullyConnectedLayer on the backend's FcOp. The input (H, W, C) is
// flattened in HWC order; Weights (OutputSize, H*W*C), Bias (OutputSize). Fuses a following
// ReLU.
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
    Init wi = parse_initializer(spec_, "WeightsInitializer", "glorot");
    Init bi = parse_initializer(spec_, "BiasInitializer", "zeros");
    weight_ = make_param(spec_, "Weight", Shape{}, wi, 1.f);
    bias_ = make_param(spec_, "Bias", Shape{}, bi, 0.f);
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    in_ = inputs[0].numel();
    int64_t declared = spec_.get_int("InputSize", in_, 1);
    if (declared != in_)
      shape_error(spec_, "InputSize is " + std::to_string(declared) + " but the input is " + inputs[0].str() +
                             " = " + std::to_string(in_) + " values");
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
    return Shape{1, 1, out_};
  }

  void setup(int64_t n, Backend& be) override {
    op_ = be.make_fc(FcDesc{n, in_, out_, fuse_relu_, mixed_});
    if (fuse_relu_) relu_ = be.make_act(ActDesc{n * out_, ActKind::kRelu, 0.f});
  }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    op_->forward(*x[0], params_[0].value, params_[1].value, y);
  }

  void backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy,
                const std::vector<Tensor*>& dx, const RunContext&) override {
    if (fuse_relu_) relu_->backward(y, y, dy, dy);
    Param& w = params_[0];
    Param& b = params_[1];
    if (!w.frozen() || !b.frozen()) op_->backward_weights(*x[0], dy, w.grad, b.grad);
    if (dx[0]) op_->backward_data(dy, w.value, *dx[0]);
  }

  int64_t flops_per_image() const override { return 2 * in_ * out_; }
  bool can_fuse_relu() const override { return true; }

 private:
  int64_t in_ = 0, out_ = 0;
  Param weight_, bias_;
  std::unique_ptr<FcOp> op_;
  std::unique_ptr<ActOp> relu_;
};

}  // namespace

std::unique_ptr<Layer> make_fully_connected_layer(const LayerSpec& spec) {
  return std::make_unique<FullyConnectedLayer>(spec);
}

}  // namespace dlt

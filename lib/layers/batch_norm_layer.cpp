// batchNormalization: MATLAB's batchNormalizationLayer. Scale and Offset (C) are learnable;
// TrainedMean and TrainedVariance (C) are moving averages updated in training as
//   trained = (1 - decay) * trained + decay * batch   (MeanDecay, VarianceDecay: 0.1)
// with the unbiased batch variance. Inference uses the trained statistics. Fuses a following
// ReLU (the backend op then applies the relu backward itself).
#include <memory>

#include "layers/layer_util.h"

namespace dlt {

namespace {

class BatchNormLayer final : public Layer {
 public:
  explicit BatchNormLayer(const LayerSpec& spec) : Layer(spec) {
    epsilon_ = spec_.get_double("Epsilon", 1e-5);
    if (epsilon_ <= 0) throw ConfigError(spec.where() + "option Epsilon must be > 0");
    mean_decay_ = spec_.get_double("MeanDecay", 0.1);
    var_decay_ = spec_.get_double("VarianceDecay", 0.1);
    if (mean_decay_ < 0 || mean_decay_ > 1 || var_decay_ < 0 || var_decay_ > 1)
      throw ConfigError(spec.where() + "options MeanDecay and VarianceDecay must be in [0, 1]");
    scale_ = make_param(spec_, "Scale", Shape{}, Init::kOnes, 1.f);
    offset_ = make_param(spec_, "Offset", Shape{}, Init::kZeros, 1.f);
    spec_.get("NumChannels");
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    shape_ = inputs[0];
    c_ = shape_[2];
    int64_t nc = spec_.get_int("NumChannels", c_, 1);
    if (nc != c_)
      shape_error(spec_, "NumChannels is " + std::to_string(nc) + " but the input has " + std::to_string(c_) + " channels");
    Param s = scale_, o = offset_;
    s.shape = Shape{c_};
    o.shape = Shape{c_};
    params_ = {s, o};
    states_ = {State{"TrainedMean", Shape{c_}, 0.f, {}}, State{"TrainedVariance", Shape{c_}, 1.f, {}}};
    return shape_;
  }

  void setup(int64_t n, Backend& be) override {
    n_ = n;
    BatchNormDesc d;
    d.n = n;
    d.h = shape_[0];
    d.w = shape_[1];
    d.c = c_;
    d.epsilon = static_cast<float>(epsilon_);
    d.fuse_relu = fuse_relu_;
    op_ = be.make_batch_norm(d);
    Device dev = be.device();
    if (!batch_mean_.defined()) {
      batch_mean_ = Tensor(Shape{c_}, dev);
      batch_var_ = Tensor(Shape{c_}, dev);
    }
  }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    Param& s = params_[0];
    Param& o = params_[1];
    if (!ctx.training) {
      op_->forward_inference(*x[0], s.value, o.value, states_[0].value, states_[1].value, y);
      return;
    }
    op_->forward_training(*x[0], s.value, o.value, y, batch_mean_, batch_var_);
    Backend& be = backend_for(y.device());
    int64_t m = n_ * shape_[0] * shape_[1];
    float unbias = m > 1 ? static_cast<float>(m) / static_cast<float>(m - 1) : 1.f;
    be.axpby(static_cast<float>(mean_decay_), batch_mean_, static_cast<float>(1 - mean_decay_), states_[0].value);
    be.axpby(static_cast<float>(var_decay_) * unbias, batch_var_, static_cast<float>(1 - var_decay_),
             states_[1].value);
  }

  void backward(const std::vector<const Tensor*>& x, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    Param& s = params_[0];
    Param& o = params_[1];
    // oneDNN/cuDNN compute dx together with dscale/doffset; a scratch dx when none is needed.
    Tensor* out = dx[0];
    if (!out) {
      if (!scratch_dx_.defined() || scratch_dx_.numel() < x[0]->numel()) scratch_dx_ = Tensor(x[0]->shape(), x[0]->device());
      scratch_dx_.resize(x[0]->shape());
      out = &scratch_dx_;
    }
    op_->backward(*x[0], dy, s.value, batch_mean_, batch_var_, *out, s.grad, o.grad);
  }

  int64_t flops_per_image() const override { return 2 * shape_.numel(); }
  bool can_fuse_relu() const override { return true; }

 private:
  double epsilon_, mean_decay_, var_decay_;
  Param scale_, offset_;
  Shape shape_;
  int64_t c_ = 0, n_ = 0;
  Tensor batch_mean_, batch_var_;  // (C) statistics of the last training forward
  Tensor scratch_dx_;
  std::unique_ptr<BatchNormOp> op_;
};

}  // namespace

std::unique_ptr<Layer> make_batch_norm_layer(const LayerSpec& spec) {
  return std::make_unique<BatchNormLayer>(spec);
}

}  // namespace dlt

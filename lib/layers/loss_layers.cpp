// The output layers of the other losses (backend/loss.h; the formulas are Backend::loss's):
//   regression               MATLAB's regressionLayer: half mean squared error by default; its
//                            LossFunction also takes trainnet's mae and huber (dltrain's), with
//                            TransitionPoint for huber. Follows any layer with 1x1xR outputs;
//                            the network's output is that layer's, the predicted responses.
//   multilabelClassification dltrain's own (MATLAB writes trainnet(..., "binary-crossentropy")):
//                            binary cross-entropy after a sigmoid over 1x1xK scores.
//   dicePixelClassification  MATLAB's: generalized Dice loss after a softmax over HxWxK scores.
//   focalLoss                MATLAB's focalLossLayer (Gamma, Alpha): focal cross-entropy after a
//                            softmax, per image (1x1xK) or per pixel (HxWxK).
//   tverskyPixelClassification  MATLAB's example layer (Alpha, Beta): Tversky loss after a softmax
//                            over HxWxK scores.
// Like classification, they hold no data and run nothing: the network computes the loss.
#include <cmath>
#include <memory>

#include "layers/io_layers.h"
#include "layers/layer_util.h"
#include "util/error.h"
#include "util/strings.h"

namespace dlt {

namespace {

// An output layer whose input is the network's output (ONNX: the graph's output).
class LossOutputLayer : public Layer {
 public:
  explicit LossOutputLayer(const LayerSpec& spec) : Layer(spec) {}
  Role role() const override { return Role::kOutput; }
  OnnxValue to_onnx(OnnxGraph&, const std::vector<OnnxValue>& inputs, const Shape&) const override {
    return inputs.at(0);
  }
  void setup(int64_t, Backend&) override {}
  void forward(const std::vector<const Tensor*>&, Tensor&, const RunContext&) override {}
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor&, const std::vector<Tensor*>&,
                const RunContext&) override {}
  int64_t flops_per_image() const override { return 0; }

 protected:
  void check_after(const std::vector<const Layer*>& producers, const char* activation) const {
    if (producers.at(0)->type() != activation)
      throw ConfigError(spec_.loc.prefix() + "layer '" + name() + "': the " + type() + " layer must follow a " +
                        activation + " layer, not " + producers[0]->type());
  }
  void expect_vector(const std::vector<Shape>& inputs, const std::string& what) {
    expect_inputs(spec_, inputs, 1);
    if (inputs[0][0] != 1 || inputs[0][1] != 1)
      shape_error(spec_, "input is " + inputs[0].str() + " but " + type() + " needs 1x1x" + what);
  }
};

class RegressionLayer final : public LossOutputLayer {
 public:
  explicit RegressionLayer(const LayerSpec& spec) : LossOutputLayer(spec) {
    const std::string f = spec_.get_choice("LossFunction", "mean-squared-error",
                                           {"mean-squared-error", "mse", "mean-absolute-error", "mae", "huber"});
    loss_.kind = f == "mean-squared-error" || f == "mse" ? LossKind::kMse
                 : f == "huber"                          ? LossKind::kHuber
                                                         : LossKind::kMae;
    loss_.follows = Follows::kNone;
    const double d = spec_.get_double("TransitionPoint", 1.0);
    if (!(d > 0) || !std::isfinite(d))
      throw ConfigError(spec_.where() + "TransitionPoint must be a number > 0, got " + std::to_string(d));
    if (loss_.kind != LossKind::kHuber && spec_.get("TransitionPoint"))
      throw ConfigError(spec_.where() + "TransitionPoint applies to LossFunction huber only");
    loss_.huber_delta = static_cast<float>(d);
    spec_.get("ResponseNames");  // MATLAB's property: the table's header names them here
  }
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_vector(inputs, "R responses (put a fullyConnected layer with OutputSize R before it)");
    return inputs[0];
  }
  LossSpec loss_spec() const override { return loss_; }

 private:
  LossSpec loss_;
};

class MultilabelLayer final : public LossOutputLayer {
 public:
  explicit MultilabelLayer(const LayerSpec& spec) : LossOutputLayer(spec) { spec_.get("Classes"); }
  void check_producers(const std::vector<const Layer*>& producers) const override { check_after(producers, "sigmoid"); }
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_vector(inputs, "K class scores (a fullyConnected and a sigmoid layer before it)");
    return inputs[0];
  }
  LossSpec loss_spec() const override {
    LossSpec s;
    s.kind = LossKind::kBinaryCrossEntropy;
    s.follows = Follows::kSigmoid;
    return s;
  }
};

// A loss over a softmax's HxWxK score map whose loss_spec is loss_ (per pixel).
class PixelOverlapLayer : public LossOutputLayer {
 public:
  explicit PixelOverlapLayer(const LayerSpec& spec) : LossOutputLayer(spec) {
    spec_.get("Classes");
    loss_.per_pixel = true;
  }
  void check_producers(const std::vector<const Layer*>& producers) const override { check_after(producers, "softmax"); }
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    if (inputs[0][2] < 2)
      shape_error(spec_, "input is " + inputs[0].str() + " but " + type() + " needs HxWxK class scores, K >= 2");
    return inputs[0];
  }
  LossSpec loss_spec() const override { return loss_; }

 protected:
  LossSpec loss_;
};

class DiceLayer final : public PixelOverlapLayer {
 public:
  explicit DiceLayer(const LayerSpec& spec) : PixelOverlapLayer(spec) { loss_.kind = LossKind::kGeneralizedDice; }
};

class TverskyLayer final : public PixelOverlapLayer {
 public:
  explicit TverskyLayer(const LayerSpec& spec) : PixelOverlapLayer(spec) {
    const double alpha = spec_.get_double("Alpha", 0.3), beta = spec_.get_double("Beta", 0.7);
    for (const auto& [key, v] : {std::pair{"Alpha", alpha}, std::pair{"Beta", beta}})
      if (!(v >= 0) || !std::isfinite(v))
        throw ConfigError(spec_.where() + key + " must be a number >= 0, got " + std::to_string(v));
    if (alpha + beta <= 0) throw ConfigError(spec_.where() + "Alpha and Beta must not both be 0");
    loss_.kind = LossKind::kTversky;
    loss_.tversky_alpha = static_cast<float>(alpha);
    loss_.tversky_beta = static_cast<float>(beta);
  }
};

class FocalLayer final : public LossOutputLayer {
 public:
  explicit FocalLayer(const LayerSpec& spec) : LossOutputLayer(spec) {
    spec_.get("Classes");
    const double gamma = spec_.get_double("Gamma", 2.0), alpha = spec_.get_double("Alpha", 0.25);
    if (!(gamma >= 0) || !std::isfinite(gamma))
      throw ConfigError(spec_.where() + "Gamma must be a number >= 0, got " + std::to_string(gamma));
    if (!(alpha > 0) || !std::isfinite(alpha))
      throw ConfigError(spec_.where() + "Alpha must be a number > 0, got " + std::to_string(alpha));
    loss_.kind = LossKind::kFocalCrossEntropy;
    loss_.focal_gamma = static_cast<float>(gamma);
    loss_.focal_alpha = static_cast<float>(alpha);
  }
  void check_producers(const std::vector<const Layer*>& producers) const override { check_after(producers, "softmax"); }
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    if (inputs[0][2] < 2)
      shape_error(spec_, "input is " + inputs[0].str() + " but focalLoss needs class scores of K >= 2 classes");
    loss_.per_pixel = inputs[0][0] * inputs[0][1] > 1;
    return inputs[0];
  }
  LossSpec loss_spec() const override { return loss_; }

 private:
  LossSpec loss_;
};

template <class L>
LayerType output_type(const char* name) {
  return LayerType{
      name, [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<L>(s); }, {}, nullptr};
}

}  // namespace

const LayerType& regression_layer_type() {
  static const LayerType t = output_type<RegressionLayer>("regression");
  return t;
}
const LayerType& multilabel_classification_layer_type() {
  static const LayerType t = output_type<MultilabelLayer>("multilabelClassification");
  return t;
}
const LayerType& dice_pixel_classification_layer_type() {
  static const LayerType t = output_type<DiceLayer>("dicePixelClassification");
  return t;
}
const LayerType& tversky_pixel_classification_layer_type() {
  static const LayerType t = output_type<TverskyLayer>("tverskyPixelClassification");
  return t;
}
const LayerType& focal_loss_layer_type() {
  static const LayerType t = output_type<FocalLayer>("focalLoss");
  return t;
}

}  // namespace dlt

// pixelClassification (MATLAB's pixelClassificationLayer): the output layer of a semantic-
// segmentation network. It follows a softmax over an (H, W, K) score map; the network computes
// the per-pixel cross-entropy from the softmax output (Backend::cross_entropy with
// LossOptions): pixels labelled undefined (-1) count in no loss or metric, and ClassWeights
// weighs each pixel by its true class:
//   loss = sum over counted pixels of w[class] * -log p[class] / sum of their weights w[class]
// (the weighted mean, as PyTorch's CrossEntropyLoss(weight, ignore_index) computes it).
// ClassWeights: none (default), a list of K positive numbers, or median-frequency, which
// `dltrain train` replaces by the numbers seed 003 computes from the training labels
// (median(imageFreq) ./ imageFreq) before the network is built.
#include <cmath>
#include <memory>

#include "layers/io_layers.h"
#include "layers/layer_util.h"
#include "util/error.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace dlt {

namespace {

class PixelClassificationLayer final : public SoftmaxOutputLayer {
 public:
  explicit PixelClassificationLayer(const LayerSpec& spec) : SoftmaxOutputLayer(spec) {
    const SpecValue* w = spec_.get("ClassWeights");
    if (!w) return;
    if (!w->is_list && w->items.size() == 1) {
      const std::string& word = w->items[0];
      if (iequals(word, "none")) return;
      if (iequals(word, "median-frequency")) {
        median_frequency_ = true;
        return;
      }
    }
    for (const std::string& item : w->items) {
      double v = 0;
      if (!parse_double(item, &v) || !std::isfinite(v) || v < 0)
        throw ConfigError(spec_.where() +
                          "ClassWeights must be none, median-frequency or a list of one "
                          "non-negative number per class, got '" +
                          w->str() + "'");
      weights_.push_back(static_cast<float>(v));
    }
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    if (inputs[0][2] < 2)
      shape_error(spec_, "input is " + inputs[0].str() +
                             " but pixelClassification needs HxWxK class scores with K >= 2 classes");
    if (!weights_.empty() && static_cast<int64_t>(weights_.size()) != inputs[0][2])
      throw ConfigError(spec_.where() + "ClassWeights has " + std::to_string(weights_.size()) + " weights for " +
                        std::to_string(inputs[0][2]) + " classes (give one per class)");
    return inputs[0];
  }
  LossSpec loss_spec() const override { return {weights_, true, median_frequency_}; }

 private:
  std::vector<float> weights_;
  bool median_frequency_ = false;  // still to be computed from the training labels
};

}  // namespace

const LayerType& pixel_classification_layer_type() {
  static const LayerType t{
      "pixelClassification",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<PixelClassificationLayer>(s); },
      {},
      nullptr};
  return t;
}

}  // namespace dlt

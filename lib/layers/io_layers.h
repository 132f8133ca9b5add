// The image input layer, which the network and trainer address directly (normalization
// statistics). The other layer types are reached only through make_layer().
#pragma once
#include <string>
#include <vector>

#include "layers/layer.h"

namespace dlt {

class ImageInputLayer final : public Layer {
 public:
  explicit ImageInputLayer(const LayerSpec& spec);
  int num_inputs() const override { return 0; }
  Role role() const override { return Role::kInput; }
  // The graph input "input" (N, C, H, W); zerocenter / zscore become Sub / Div nodes, the
  // rescalings Sub / Mul.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override;
  Shape infer(const std::vector<Shape>& inputs) override;
  // The states' initial values; the statistics the config gives (Mean, StandardDeviation, Min,
  // Max) as given.
  void init_params(Rng& rng) override;
  void setup(int64_t n, Backend& be) override;
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override;
  void backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext& ctx) override;

  const Shape& input_size() const { return shape_; }  // (H, W, C)
  const std::string& normalization() const { return normalization_; }
  // The config gives this normalization's statistics (Mean; Mean and StandardDeviation; Min and
  // Max): init_params writes them into the states.
  bool given_statistics() const { return !given_.empty(); }
  // mean_image (H, W, C), channel_mean, channel_std, channel_min and channel_max (C), host or
  // device tensors: what the normalization uses of them (given statistics too).
  void set_statistics(const Tensor& mean_image, const Tensor& channel_mean, const Tensor& channel_std,
                      const Tensor& channel_min, const Tensor& channel_max);
  // Values stored for normalization that count toward the memory footprint (seed 001's
  // getMemoryFootprint counts the zerocenter mean image).
  int64_t stored_statistics() const;
  // Call after the states were loaded from a model file or set: the per-channel shift and scale
  // the forward pass applies.
  void refresh_normalization();

 private:
  bool rescale() const { return normalization_ == "rescale-symmetric" || normalization_ == "rescale-zero-one"; }
  // zscore's and the rescalings' y = (x - shift) * mul per channel, from the states.
  void coefficients(std::vector<float>& shift, std::vector<float>& mul) const;
  Shape shape_;
  std::string normalization_;
  // The statistics' option names for this normalization, in the order of its states.
  std::vector<std::string> statistic_names() const;
  std::vector<std::vector<double>> given_;  // the config's values of them (one or one per channel), if given
  Tensor shift_, mul_;                      // (C) y = (x - shift) * mul: zscore (shift the Mean state), the rescalings
};

// The output layers after a softmax (classification, pixelClassification): the network
// computes their loss from the softmax output (Layer::loss_spec), so they hold no data, run
// nothing, and in ONNX the softmax output is the graph's output. `what` names the layer type
// in the message when it does not follow a softmax.
class SoftmaxOutputLayer : public Layer {
 public:
  explicit SoftmaxOutputLayer(const LayerSpec& spec) : Layer(spec) { spec_.get("Classes"); }
  Role role() const override { return Role::kOutput; }
  void check_producers(const std::vector<const Layer*>& producers) const override;
  OnnxValue to_onnx(OnnxGraph&, const std::vector<OnnxValue>& inputs, const Shape&) const override {
    return inputs.at(0);
  }
  void setup(int64_t, Backend&) override {}
  void forward(const std::vector<const Tensor*>&, Tensor&, const RunContext&) override {}
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor&, const std::vector<Tensor*>&,
                const RunContext&) override {}
};

}  // namespace dlt

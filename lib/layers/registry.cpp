// The one list of layer types: MATLAB's names (without the "Layer" suffix) and factories.
#include <functional>
#include <memory>
#include <utility>

#include "layers/layer.h"
#include "util/error.h"
#include "util/strings.h"

namespace dlt {

std::unique_ptr<Layer> make_image_input_layer(const LayerSpec&);
std::unique_ptr<Layer> make_convolution_layer(const LayerSpec&);
std::unique_ptr<Layer> make_batch_norm_layer(const LayerSpec&);
std::unique_ptr<Layer> make_relu_layer(const LayerSpec&);
std::unique_ptr<Layer> make_leaky_relu_layer(const LayerSpec&);
std::unique_ptr<Layer> make_elu_layer(const LayerSpec&);
std::unique_ptr<Layer> make_max_pooling_layer(const LayerSpec&);
std::unique_ptr<Layer> make_average_pooling_layer(const LayerSpec&);
std::unique_ptr<Layer> make_global_average_pooling_layer(const LayerSpec&);
std::unique_ptr<Layer> make_lrn_layer(const LayerSpec&);
std::unique_ptr<Layer> make_dropout_layer(const LayerSpec&);
std::unique_ptr<Layer> make_fully_connected_layer(const LayerSpec&);
std::unique_ptr<Layer> make_softmax_layer(const LayerSpec&);
std::unique_ptr<Layer> make_classification_layer(const LayerSpec&);
std::unique_ptr<Layer> make_addition_layer(const LayerSpec&);
std::unique_ptr<Layer> make_depth_concatenation_layer(const LayerSpec&);

namespace {

using Factory = std::unique_ptr<Layer> (*)(const LayerSpec&);

const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> kLayers = {
      {"imageInput", make_image_input_layer},
      {"convolution2d", make_convolution_layer},
      {"batchNormalization", make_batch_norm_layer},
      {"relu", make_relu_layer},
      {"leakyRelu", make_leaky_relu_layer},
      {"elu", make_elu_layer},
      {"maxPooling2d", make_max_pooling_layer},
      {"averagePooling2d", make_average_pooling_layer},
      {"globalAveragePooling2d", make_global_average_pooling_layer},
      {"crossChannelNormalization", make_lrn_layer},
      {"dropout", make_dropout_layer},
      {"fullyConnected", make_fully_connected_layer},
      {"softmax", make_softmax_layer},
      {"classification", make_classification_layer},
      {"addition", make_addition_layer},
      {"depthConcatenation", make_depth_concatenation_layer},
  };
  return kLayers;
}

}  // namespace

std::vector<std::string> layer_types() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

std::unique_ptr<Layer> make_layer(const LayerSpec& spec) {
  for (const auto& [name, factory] : registry()) {
    if (!iequals(name, spec.type)) continue;
    LayerSpec canonical = spec;
    canonical.type = name;
    auto layer = factory(canonical);
    return layer;
  }
  throw ConfigError(spec.loc.prefix() + "layer '" + spec.name + "': unknown layer type '" + spec.type + "'" +
                    did_you_mean(spec.type, layer_types()));
}

}  // namespace dlt

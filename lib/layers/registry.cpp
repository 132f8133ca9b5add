// The one list of layer types. Adding a type: its file defines a function returning its
// LayerType (name, factory, ONNX operators it imports); declare it here and list it below.
#include <memory>
#include <utility>

#include "layers/layer.h"
#include "util/error.h"
#include "util/strings.h"

namespace dlt {

const LayerType& image_input_layer_type();
const LayerType& convolution2d_layer_type();
const LayerType& grouped_convolution2d_layer_type();
const LayerType& transposed_conv2d_layer_type();
const LayerType& batch_normalization_layer_type();
const LayerType& relu_layer_type();
const LayerType& leaky_relu_layer_type();
const LayerType& elu_layer_type();
const LayerType& clipped_relu_layer_type();
const LayerType& sigmoid_layer_type();
const LayerType& tanh_layer_type();
const LayerType& swish_layer_type();
const LayerType& gelu_layer_type();
const LayerType& hard_sigmoid_layer_type();
const LayerType& hard_swish_layer_type();
const LayerType& prelu_layer_type();
const LayerType& max_pooling_layer_type();
const LayerType& max_unpooling_layer_type();
const LayerType& average_pooling_layer_type();
const LayerType& global_average_pooling_layer_type();
const LayerType& global_max_pooling_layer_type();
const LayerType& adaptive_average_pooling_layer_type();
const LayerType& cross_channel_normalization_layer_type();
const LayerType& dropout_layer_type();
const LayerType& spatial_dropout_layer_type();
const LayerType& flatten_layer_type();
const LayerType& fully_connected_layer_type();
const LayerType& softmax_layer_type();
const LayerType& classification_layer_type();
const LayerType& pixel_classification_layer_type();
const LayerType& regression_layer_type();
const LayerType& multilabel_classification_layer_type();
const LayerType& dice_pixel_classification_layer_type();
const LayerType& focal_loss_layer_type();
const LayerType& tversky_pixel_classification_layer_type();
const LayerType& addition_layer_type();
const LayerType& depth_concatenation_layer_type();
const LayerType& crop2d_layer_type();
const LayerType& multiplication_layer_type();
const LayerType& layer_normalization_layer_type();
const LayerType& group_normalization_layer_type();
const LayerType& instance_normalization_layer_type();
const LayerType& channel_shuffle_layer_type();
const LayerType& channel_slice_layer_type();
const LayerType& depth_to_space_layer_type();
const LayerType& space_to_depth_layer_type();
const LayerType& resize2d_layer_type();
const LayerType& patch_embedding_layer_type();
const LayerType& embedding_concatenation_layer_type();
const LayerType& position_embedding_layer_type();
const LayerType& self_attention_layer_type();
const LayerType& attention_layer_type();
const LayerType& channel_attention_layer_type();
const LayerType& window_attention_layer_type();
const LayerType& separable_attention_layer_type();
const LayerType& linear_attention_layer_type();
const LayerType& indexing1d_layer_type();
const LayerType& global_average_pooling1d_layer_type();
const LayerType& global_max_pooling1d_layer_type();
const LayerType& average_pooling1d_layer_type();
const LayerType& max_pooling1d_layer_type();
const LayerType& token_slice_layer_type();
const LayerType& concatenation_layer_type();

const std::vector<const LayerType*>& layer_registry() {
  static const std::vector<const LayerType*> kLayers = {
      &image_input_layer_type(),
      &convolution2d_layer_type(),
      &grouped_convolution2d_layer_type(),
      &transposed_conv2d_layer_type(),
      &batch_normalization_layer_type(),
      &relu_layer_type(),
      &leaky_relu_layer_type(),
      &elu_layer_type(),
      &clipped_relu_layer_type(),
      &sigmoid_layer_type(),
      &tanh_layer_type(),
      &swish_layer_type(),
      &gelu_layer_type(),
      &hard_sigmoid_layer_type(),
      &hard_swish_layer_type(),
      &prelu_layer_type(),
      &max_pooling_layer_type(),
      &max_unpooling_layer_type(),
      &average_pooling_layer_type(),
      &global_average_pooling_layer_type(),
      &global_max_pooling_layer_type(),
      &adaptive_average_pooling_layer_type(),
      &cross_channel_normalization_layer_type(),
      &dropout_layer_type(),
      &spatial_dropout_layer_type(),
      &flatten_layer_type(),
      &fully_connected_layer_type(),
      &softmax_layer_type(),
      &classification_layer_type(),
      &pixel_classification_layer_type(),
      &regression_layer_type(),
      &multilabel_classification_layer_type(),
      &dice_pixel_classification_layer_type(),
      &focal_loss_layer_type(),
      &tversky_pixel_classification_layer_type(),
      &addition_layer_type(),
      &depth_concatenation_layer_type(),
      &crop2d_layer_type(),
      &multiplication_layer_type(),
      &layer_normalization_layer_type(),
      &group_normalization_layer_type(),
      &instance_normalization_layer_type(),
      &channel_shuffle_layer_type(),
      &channel_slice_layer_type(),
      &depth_to_space_layer_type(),
      &space_to_depth_layer_type(),
      &resize2d_layer_type(),
      &patch_embedding_layer_type(),
      &embedding_concatenation_layer_type(),
      &position_embedding_layer_type(),
      &self_attention_layer_type(),
      &attention_layer_type(),
      &channel_attention_layer_type(),
      &window_attention_layer_type(),
      &separable_attention_layer_type(),
      &linear_attention_layer_type(),
      &indexing1d_layer_type(),
      &global_average_pooling1d_layer_type(),
      &global_max_pooling1d_layer_type(),
      &average_pooling1d_layer_type(),
      &max_pooling1d_layer_type(),
      &token_slice_layer_type(),
      &concatenation_layer_type(),
  };
  return kLayers;
}

std::vector<std::string> layer_types() {
  std::vector<std::string> names;
  for (const LayerType* t : layer_registry()) names.push_back(t->name);
  return names;
}

const LayerType* layer_type_for_onnx(const std::string& op) {
  for (const LayerType* t : layer_registry())
    for (const auto& o : t->onnx_ops)
      if (o == op) return t;
  return nullptr;
}

std::unique_ptr<Layer> make_layer(const LayerSpec& spec) {
  for (const LayerType* t : layer_registry()) {
    if (!iequals(t->name, spec.type)) continue;
    LayerSpec canonical = spec;
    canonical.type = t->name;
    return t->make(canonical);
  }
  throw ConfigError(spec.loc.prefix() + "layer '" + spec.name + "': unknown layer type '" + spec.type + "'" +
                    did_you_mean(spec.type, layer_types()));
}

void freeze_layer(LayerSpec& spec) {
  for (const std::string& prefix : make_layer(spec)->learnable_options()) spec.set(prefix + "LearnRateFactor", "0");
}

}  // namespace dlt

// Helpers shared by the layer implementations: MATLAB's Padding forms, initializer names,
// the learn-rate / L2 factor options, and the ReLU-fusion backward step.
#pragma once
#include <array>
#include <string>

#include "layers/layer.h"

namespace dlt {

// MATLAB's "same" padding of one dimension: ceil(in / stride) outputs, the total padding split
// as evenly as it goes, the odd one after ({before, after}).
std::array<int64_t, 2> same_padding(int64_t in, int64_t kernel, int64_t stride);
// [top, bottom, left, right] from MATLAB's Padding: a number, [vertical horizontal],
// [t b l r] or 'same' (output = ceil(input / stride); odd totals put the extra pixel at the
// bottom / right, as MATLAB does).
std::array<int64_t, 4> parse_padding(const LayerSpec& spec, int64_t in_h, int64_t in_w, int64_t k_h, int64_t k_w,
                                     int64_t s_h, int64_t s_w);
Init parse_initializer(const LayerSpec& spec, const std::string& key, const std::string& def);
// A learnable declared with MATLAB's <Name>LearnRateFactor and <Name>L2Factor options.
Param make_param(const LayerSpec& spec, const std::string& name, const Shape& shape, Init init,
                 float default_l2_factor);
// The "Weights" and "Bias" learnables of a filter layer (convolution2d, transposedConv2d) from
// the factors read at construction (make_param's "Weight" and "Bias"): their MATLAB names, the
// weights' shape, the bias' (k), and the fans both initializers use.
std::vector<Param> weights_and_bias(Param weight, Param bias, const Shape& weight_shape, int64_t k, int64_t fan_in,
                                    int64_t fan_out);
[[noreturn]] void shape_error(const LayerSpec& spec, const std::string& what);
void expect_inputs(const LayerSpec& spec, const std::vector<Shape>& inputs, size_t n);
// The stream of a layer's dropout masks at an iteration (with the run's seed, Backend::
// dropout_forward's and the attention's key): the layer's name hashed (FNV-1a), mixed with the
// iteration, so each layer and step draws its own mask.
uint64_t dropout_stream(const std::string& layer_name, uint64_t iteration);
// Where an op that computes the input gradient together with its learnables' writes dx: the
// network's dx, or (dx null: the input needs no gradient) scratch, made x's size when it is not.
Tensor& grad_or_scratch(Tensor* dx, const Tensor& x, Tensor& scratch);
// The attention layers' options: NumHeads (required, at least 1) and Scale ("auto": 0; otherwise
// a finite number other than 0, which would weigh every `alike` the same).
int64_t num_heads_option(const LayerSpec& spec);
double scale_option(const LayerSpec& spec, const std::string& alike);
// Sets option key to the list v (ONNX import).
void set_list(LayerSpec& spec, const std::string& key, const std::vector<int64_t>& v);

}  // namespace dlt

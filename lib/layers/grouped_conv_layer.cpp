// groupedConvolution2d: MATLAB's groupedConvolution2dLayer(FilterSize, NumFiltersPerGroup,
// NumGroups) (ConvLayerBase with G groups). The C input channels split into G groups of C/G;
// each group has NumFiltersPerGroup (F) filters over its own channels. NumGroups: channel-wise
// is one group per input channel (a depthwise convolution, F its depth multiplier). Weights
// (G*F, kh, kw, C/G), Bias (G*F); output channel k belongs to group k / F (ONNX's and
// PyTorch's order). ONNX: Conv with group > 1 both ways.
// On token sequences (dltrain's own) only as a per-channel scale: 1x1, stride 1, no padding,
// channel-wise with one filter per group (each token a pixel; an imported LayerScale that cannot
// be folded), written to ONNX as Mul and Add.
#include <memory>

#include "layers/conv_layer_base.h"
#include "layers/layer_util.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace dlt {

namespace {

class GroupedConvolution2dLayer final : public ConvLayerBase {
 public:
  explicit GroupedConvolution2dLayer(const LayerSpec& spec);
  Shape infer(const std::vector<Shape>& inputs) override;
  bool takes(DataFormat f) const override {
    return f != DataFormat::kSCB ||
           (num_groups_ == 0 && filters_per_group_ == 1 && kh_ == 1 && kw_ == 1 && sh_ == 1 && sw_ == 1);
  }

 private:
  int64_t filters_per_group_ = 1;  // NumFiltersPerGroup
  int64_t num_groups_ = 0;         // NumGroups, or 0 for channel-wise (C groups)
};

GroupedConvolution2dLayer::GroupedConvolution2dLayer(const LayerSpec& spec) : ConvLayerBase(spec) {
  if (spec_.has("NumFilters"))
    throw ConfigError(spec.where() +
                      "option NumFilters is convolution2d's: a groupedConvolution2d has NumFiltersPerGroup filters in "
                      "each of its NumGroups groups (write NumFiltersPerGroup)");
  filters_per_group_ = spec_.get_int("NumFiltersPerGroup", 0, 1);
  if (filters_per_group_ == 0)
    throw ConfigError(spec.where() +
                      "option NumFiltersPerGroup is required (e.g. NumFiltersPerGroup: 1; with NumGroups: "
                      "channel-wise it is the depth multiplier)");
  const SpecValue* g = spec_.get("NumGroups");
  if (!g)
    throw ConfigError(spec.where() +
                      "option NumGroups is required (a number of groups, or channel-wise for a depthwise convolution)");
  const bool scalar = !g->is_list && g->items.size() == 1;
  if (scalar && iequals(g->items[0], "channel-wise")) {
    num_groups_ = 0;
  } else if (!scalar || !parse_int(g->items[0], &num_groups_) || num_groups_ < 1) {
    const std::string at =
        g->loc.prefix().empty() ? spec.where() : g->loc.prefix() + "layer '" + spec.name + "' (" + spec.type + "): ";
    throw ConfigError(at + "option NumGroups must be a whole number >= 1 or channel-wise, got '" + g->str() + "'");
  }
  spec_.get("NumChannelsPerGroup");  // read in infer()
}

Shape GroupedConvolution2dLayer::infer(const std::vector<Shape>& inputs) {
  expect_inputs(spec_, inputs, 1);
  const Shape& in = inputs[0];
  const int64_t c = in[2];
  const int64_t groups = num_groups_ == 0 ? c : num_groups_;
  if (c % groups != 0)
    shape_error(spec_, "NumGroups is " + std::to_string(groups) + " but the input has " + std::to_string(c) +
                           " channels, which " + std::to_string(groups) +
                           " groups cannot split evenly (use a divisor of " + std::to_string(c) + ", or channel-wise)");
  const int64_t per_group = spec_.get_int("NumChannelsPerGroup", c / groups, 1);
  if (per_group != c / groups)
    shape_error(spec_, "NumChannelsPerGroup is " + std::to_string(per_group) + " but the input's " + std::to_string(c) +
                           " channels in " + std::to_string(groups) + " groups give " + std::to_string(c / groups) +
                           " per group");
  return infer_conv(in, groups * filters_per_group_, groups);
}

}  // namespace

void grouped_convolution2d_from_onnx(OnnxNodeReader& r) {
  const OnnxConv c = read_onnx_conv(r);
  // One input channel per group: a depthwise convolution, written as MATLAB writes it.
  const std::string groups = c.cg == 1 ? "channel-wise" : std::to_string(c.group);
  add_onnx_conv(r, "groupedConvolution2d", c,
                {{"NumFiltersPerGroup", std::to_string(c.k / c.group)},
                 {"NumGroups", groups},
                 {"NumChannelsPerGroup", std::to_string(c.cg)}});
}

const LayerType& grouped_convolution2d_layer_type() {
  static const LayerType t{
      "groupedConvolution2d",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<GroupedConvolution2dLayer>(s); },
      // No operator of its own: Conv nodes reach convolution2d's reader, which hands those with
      // group > 1 to grouped_convolution2d_from_onnx.
      {},
      nullptr};
  return t;
}

}  // namespace dlt

// convolution2d: MATLAB's convolution2dLayer (ConvLayerBase with one group). Weights
// (K, kh, kw, C), Bias (K). Its ONNX reader hands Conv nodes with group > 1 to
// groupedConvolution2d's.
#include <memory>

#include "layers/conv_layer_base.h"
#include "layers/layer_util.h"

namespace dlt {

namespace {

class Convolution2dLayer final : public ConvLayerBase {
 public:
  explicit Convolution2dLayer(const LayerSpec& spec);
  Shape infer(const std::vector<Shape>& inputs) override;
  static void from_onnx(OnnxNodeReader& r);

 private:
  int64_t filters_ = 1;  // NumFilters
};

Convolution2dLayer::Convolution2dLayer(const LayerSpec& spec) : ConvLayerBase(spec) {
  filters_ = spec_.get_int("NumFilters", 0, 1);
  if (filters_ == 0) throw ConfigError(spec.where() + "option NumFilters is required (e.g. NumFilters: 32)");
  spec_.get("NumChannels");  // read in infer()
}

Shape Convolution2dLayer::infer(const std::vector<Shape>& inputs) {
  expect_inputs(spec_, inputs, 1);
  const Shape& in = inputs[0];
  int64_t nc = spec_.get_int("NumChannels", in[2], 1);
  if (nc != in[2])
    shape_error(spec_,
                "NumChannels is " + std::to_string(nc) + " but the input has " + std::to_string(in[2]) + " channels");
  return infer_conv(in, filters_, 1);
}

void Convolution2dLayer::from_onnx(OnnxNodeReader& r) {
  if (r.attr_int("group", 1) != 1) return grouped_convolution2d_from_onnx(r);
  const OnnxConv c = read_onnx_conv(r);
  add_onnx_conv(r, "convolution2d", c, {{"NumFilters", std::to_string(c.k)}, {"NumChannels", std::to_string(c.cg)}});
}

}  // namespace

void pointwise_conv_from_onnx(OnnxNodeReader& r, const OnnxValue& in) {
  auto wd = r.dims(1, "weight");
  const int64_t c = in.shape[2];
  if (wd.size() != 2 || wd[0] != c)
    r.fail("multiplies a channels-last image of " + std::to_string(c) + " channels by a weight of " +
           std::to_string(wd.size()) + " dimensions; expected (" + std::to_string(c) + ", K)");
  const int64_t k = wd[1];
  const std::vector<float> b = r.floats(1, "weight");
  std::vector<float> w(b.size());  // (C, K) -> (K, 1, 1, C)
  for (int64_t o = 0; o < k; ++o)
    for (int64_t i = 0; i < c; ++i) w[static_cast<size_t>(o * c + i)] = b[static_cast<size_t>(i * k + o)];
  LayerSpec& s = r.add_layer("convolution2d", {in.name});
  set_list(s, "FilterSize", {1, 1});
  s.set("NumFilters", std::to_string(k));
  s.set("NumChannels", std::to_string(c));
  const std::string name = s.name;
  r.add_param(name, "Weights", Shape{k, 1, 1, c}, std::move(w));
  r.add_param(name, "Bias", Shape{k}, std::vector<float>(static_cast<size_t>(k), 0.f));
  OnnxValue out{name, Shape{in.shape[0], in.shape[1], k}, false};
  out.channels_last = true;
  r.set_output(out);
}

const LayerType& convolution2d_layer_type() {
  static const LayerType t{
      "convolution2d",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<Convolution2dLayer>(s); },
      {"Conv"},
      Convolution2dLayer::from_onnx};
  return t;
}

}  // namespace dlt

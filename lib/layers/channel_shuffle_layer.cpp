// channelShuffle (dltrain's name; ShuffleNet's channel shuffle): NumGroups G, which must divide
// the C input channels; output channel j * G + g is input channel g * (C / G) + j, as
// torchvision's channel_shuffle (view (N, G, C/G, H, W), transpose 1 and 2, view back). The
// backward is the inverse permutation. ONNX: exported as that Reshape - Transpose - Reshape;
// the importer recognizes the pattern and emits this layer (it reads no operator itself).
#include <memory>

#include "layers/layer_util.h"

namespace dlt {

namespace {

class ChannelShuffleLayer final : public Layer {
 public:
  explicit ChannelShuffleLayer(const LayerSpec& spec) : Layer(spec) {
    groups_ = spec_.get_int("NumGroups", 0, 1);
    if (groups_ == 0)
      throw ConfigError(spec_.where() +
                        "option NumGroups is required (e.g. NumGroups: 2; it must divide the channels)");
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    h_ = inputs[0][0];
    w_ = inputs[0][1];
    d_.c = inputs[0][2];
    d_.groups = groups_;
    if (d_.c % groups_ != 0)
      shape_error(spec_, "input is " + inputs[0].str() + " but NumGroups " + std::to_string(groups_) +
                             " does not divide its " + std::to_string(d_.c) + " channels");
    return inputs[0];
  }
  void setup(int64_t n, Backend& be) override {
    be_ = &be;
    d_.pixels = n * h_ * w_;
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    be_->channel_shuffle(*x[0], y, d_);
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) be_->channel_shuffle_backward(dy, *dx[0], d_);
  }

  // Reshape (N, G, C/G, H, W) -> Transpose (0, 2, 1, 3, 4) -> Reshape (N, C, H, W); 0 keeps
  // the batch size.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const OnnxValue x = g.image(n, inputs.at(0));
    const int64_t c = d_.c;
    g.add_ints(n + "_grouped_shape", {5}, {0, groups_, c / groups_, h_, w_});
    g.add_node("Reshape", n + "_group", {x.name, n + "_grouped_shape"}, n + "_grouped");
    g.add_node("Transpose", n + "_transpose", {n + "_grouped"}, n + "_transposed",
               {OnnxAttr("perm", std::vector<int64_t>{0, 2, 1, 3, 4})});
    g.add_ints(n + "_shape", {4}, {0, c, h_, w_});
    g.add_node("Reshape", n, {n + "_transposed", n + "_shape"}, n);
    return OnnxValue{n, out, false};
  }

 private:
  int64_t groups_ = 1;
  int64_t h_ = 1, w_ = 1;
  ChannelShuffleDesc d_;
  Backend* be_ = nullptr;
};

}  // namespace

const LayerType& channel_shuffle_layer_type() {
  static const LayerType t{
      "channelShuffle",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<ChannelShuffleLayer>(s); },
      {},
      nullptr};
  return t;
}

}  // namespace dlt

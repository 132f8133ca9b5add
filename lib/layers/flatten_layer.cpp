// flatten: MATLAB's flattenLayer, the spatial dimensions collapsed into the channels: an image
// (H, W, C) or a token sequence (S, 1, C) becomes one vector (CB) of H W C values; a vector
// passes as it is. The values keep dltrain's memory order (the channels of a pixel together,
// the pixels in row order: PyTorch's flatten of a channels-last tensor); MATLAB's column-major
// order differs, which matters only to weights carried between the two. No data moves but a
// copy. ONNX: Transpose (0, 2, 3, 1) and Flatten (axis 1) of an image, Flatten of tokens; the
// importer reads a Flatten of a channels-last image or of tokens as this layer.
#include <memory>

#include "layers/layer_util.h"

namespace dlt {

namespace {

class FlattenLayer final : public Layer {
 public:
  explicit FlattenLayer(const LayerSpec& spec) : Layer(spec) {}

  DataFormat output_format() const override { return DataFormat::kCB; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    in_ = inputs[0];
    return Shape{1, 1, in_.numel()};
  }
  void setup(int64_t, Backend& be) override { be_ = &be; }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override { be_->copy(*x[0], y); }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) be_->copy(dy, *dx[0]);
  }

  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const OnnxValue& in = inputs.at(0);
    const std::string& n = name();
    if (in_[0] * in_[1] == 1) return g.flat(in);
    std::string x = in.name;
    if (in.flat)
      throw ModelError(g.path() + ": flatten '" + n + "' reads a flat image of " + in_.str() +
                       ", which has no channels-last ONNX form here");
    if (!in.tokens) {
      g.add_node("Transpose", n + "_channels_last", {x}, n + "_nhwc",
                 {OnnxAttr("perm", std::vector<int64_t>{0, 2, 3, 1})});
      x = n + "_nhwc";
    }
    g.add_node("Flatten", n, {x}, n, {OnnxAttr("axis", int64_t{1})});
    return OnnxValue{n, out, true};
  }

 private:
  Shape in_;
  Backend* be_ = nullptr;
};

}  // namespace

const LayerType& flatten_layer_type() {
  static const LayerType t{
      "flatten",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<FlattenLayer>(s); },
      {},
      nullptr};
  return t;
}

}  // namespace dlt

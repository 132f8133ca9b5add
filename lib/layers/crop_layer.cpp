// crop2d: MATLAB's crop2dLayer. Two inputs: the first ('in') is cropped to the height and
// width of the second ('ref'), which only gives its size (its gradient is zero). Mode
// 'centercrop' (the default) centers the window (an odd margin leaves the extra row / column
// at the bottom / right); 'custom' places its top-left corner at Location [x y] (1-based
// column and row, as MATLAB). The backward pass scatters dy into a zero gradient.
#include <memory>

#include "layers/layer_util.h"

namespace dlt {

namespace {

class Crop2dLayer final : public Layer {
 public:
  // An image layer: not on token sequences.
  bool takes(DataFormat f) const override { return f != DataFormat::kSCB; }
  explicit Crop2dLayer(const LayerSpec& spec) : Layer(spec) {
    center_ = spec_.get_choice("Mode", "centercrop", {"centercrop", "custom"}) == "centercrop";
    if (center_) {
      if (spec_.has("Location"))
        throw ConfigError(spec_.where() + "option Location applies to Mode: custom only (Mode is centercrop)");
      return;
    }
    auto loc = spec_.get_ints("Location", {}, 2, 1);
    if (loc.empty())
      throw ConfigError(spec_.where() +
                        "option Location ([x y], 1-based: the window's top-left column and row) is "
                        "required with Mode: custom");
    left_ = loc[0] - 1;
    top_ = loc[1] - 1;
  }
  int num_inputs() const override { return 2; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 2);
    const Shape& in = inputs[0];
    const Shape& ref = inputs[1];
    if (ref[0] > in[0] || ref[1] > in[1])
      shape_error(spec_, "the reference input is " + ref.str() + " but the input to crop is " + in.str() +
                             " (the window must fit: crop the larger map to the smaller)");
    d_.h = in[0];
    d_.w = in[1];
    d_.c = in[2];
    d_.out_h = ref[0];
    d_.out_w = ref[1];
    if (center_) {
      d_.top = (in[0] - ref[0]) / 2;
      d_.left = (in[1] - ref[1]) / 2;
    } else {
      d_.top = top_;
      d_.left = left_;
      if (top_ + ref[0] > in[0] || left_ + ref[1] > in[1])
        shape_error(spec_, "Location [" + std::to_string(left_ + 1) + " " + std::to_string(top_ + 1) + "] puts the " +
                               std::to_string(ref[0]) + "x" + std::to_string(ref[1]) + " window outside the " +
                               std::to_string(in[0]) + "x" + std::to_string(in[1]) + " input");
    }
    return Shape{ref[0], ref[1], in[2]};
  }
  void setup(int64_t n, Backend& be) override {
    be_ = &be;
    d_.n = n;
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    be_->crop2d(*x[0], y, d_);
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) be_->crop2d_backward(dy, *dx[0], d_);
    if (dx[1]) be_->fill(*dx[1], 0.f);  // the reference gives only its size
  }

 private:
  bool center_ = true;
  int64_t top_ = 0, left_ = 0;  // Mode custom, 0-based
  CropDesc d_;
  Backend* be_ = nullptr;
};

}  // namespace

const LayerType& crop2d_layer_type() {
  static const LayerType t{
      "crop2d",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<Crop2dLayer>(s); },
      {},
      nullptr};
  return t;
}

}  // namespace dlt

// multiplication: MATLAB's multiplicationLayer, the element-wise product of its NumInputs (>= 2)
// inputs. An input of 1x1xC repeats over the height and width of the others (H x W x C):
// squeeze-and-excitation's per-channel weights times its feature map. No other sizes mix.
// Backward gives each input dy times the product of the others, summed over height and width
// for a repeated input. ONNX: Mul of two computed values (NCHW's (N, C, 1, 1) and channels-last
// (N, 1, 1, C) broadcast the same way; the output keeps the inputs' layout); export writes one
// Mul per further input.
#include <memory>
#include <string>

#include "layers/layer_util.h"

namespace dlt {

namespace {

// b repeats over the height and width of a: 1x1 with a's channels.
bool repeats_over(const Shape& b, const Shape& a) { return b[0] == 1 && b[1] == 1 && b[2] == a[2]; }

class MultiplicationLayer final : public Layer {
 public:
  explicit MultiplicationLayer(const LayerSpec& spec) : Layer(spec) { num_ = spec_.get_int("NumInputs", 0, 2); }
  int num_inputs() const override { return -1; }

  Shape infer(const std::vector<Shape>& inputs) override {
    if (inputs.size() < 2)
      shape_error(spec_, "multiplication needs at least 2 Inputs, got " + std::to_string(inputs.size()));
    if (num_ && static_cast<int64_t>(inputs.size()) != num_)
      shape_error(spec_, "NumInputs is " + std::to_string(num_) + " but " + std::to_string(inputs.size()) +
                             " Inputs are named");
    size_t widest = 0;
    for (size_t i = 1; i < inputs.size(); ++i)
      if (inputs[i][0] * inputs[i][1] > inputs[widest][0] * inputs[widest][1]) widest = i;
    out_ = inputs[widest];
    k_ = static_cast<int64_t>(inputs.size());
    traits_.channel_scale_input = -1;
    if (inputs.size() == 2 && out_[0] * out_[1] > 1)
      for (int i = 0; i < 2; ++i)
        if (inputs[static_cast<size_t>(i)] != out_ && inputs[static_cast<size_t>(1 - i)] == out_)
          traits_.channel_scale_input = i;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] != out_ && !repeats_over(inputs[i], out_))
        shape_error(spec_, "inputs " + input_name(widest) + " (" + out_.str() + ") and " + input_name(i) + " (" +
                               inputs[i].str() + ") cannot be multiplied: the sizes must be equal, or 1x1x" +
                               std::to_string(out_[2]) + " to repeat over height and width");
    return out_;
  }

  void setup(int64_t, Backend&) override {}

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    backend_for(y.device()).multiply(x, y, desc(y));
  }

  void backward(const std::vector<const Tensor*>& x, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    Backend& be = backend_for(dy.device());
    for (size_t i = 0; i < dx.size(); ++i)
      if (dx[i]) be.multiply_backward(dy, x, i, *dx[i], desc(dy));
  }

  int64_t flops_per_image() const override { return out_.numel() * (k_ - 1); }

  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    bool all_flat = true;
    for (const auto& in : inputs) all_flat = all_flat && in.flat;
    // A flattened 1x1xC input next to images becomes (N, C, 1, 1), which ONNX repeats over H, W.
    std::vector<std::string> names;
    for (size_t i = 0; i < inputs.size(); ++i)
      names.push_back(all_flat ? inputs[i].name : g.image(n + "_" + std::to_string(i), inputs[i]).name);
    std::string acc = names[0];
    for (size_t i = 1; i < names.size(); ++i) {
      const std::string o = i + 1 == names.size() ? n : n + "_" + std::to_string(i);
      g.add_node("Mul", o, {acc, names[i]}, o);
      acc = o;
    }
    return OnnxValue{n, out, all_flat};
  }

  // Mul of computed values (a constant factor is input normalization or a per-channel scale:
  // lib/onnx/onnx_import.cpp takes those before this).
  static void from_onnx(OnnxNodeReader& r) {
    std::vector<OnnxValue> vs;
    for (int i = 0; i < r.num_inputs(); ++i) {
      if (r.is_constant(i))
        r.fail("multiplying by a constant is supported only at the input or by one value per channel");
      vs.push_back(r.input(i, false, true));
    }
    if (vs.size() < 2) r.fail("needs two inputs");
    size_t widest = 0;
    for (size_t i = 1; i < vs.size(); ++i)
      if (vs[i].shape[0] * vs[i].shape[1] > vs[widest].shape[0] * vs[widest].shape[1]) widest = i;
    const OnnxValue& big = vs[widest];
    std::vector<std::string> names;
    for (const OnnxValue& v : vs) {
      if (v.flat != big.flat) r.fail("it multiplies a flattened (N, C*H*W) value and an image (N, C, H, W)");
      if (v.channels_last != big.channels_last)
        r.fail("it multiplies a channels-last (N, H, W, C) value and an (N, C, H, W) one");
      if (v.shape != big.shape && (v.flat || !repeats_over(v.shape, big.shape)))
        r.fail("its inputs are " + big.shape.str() + " and " + v.shape.str() +
               " (HxWxC); dltrain multiplies equal sizes, or 1x1xC repeated over height and width");
      names.push_back(v.name);
    }
    LayerSpec& s = r.add_layer("multiplication", names);
    s.set("NumInputs", std::to_string(names.size()));
    s.inputs = names;
    OnnxValue out = big;  // the same layout (flat, channels-last) as the inputs
    out.name = s.name;
    r.set_output(out);
  }

 private:
  std::string input_name(size_t i) const {
    return i < spec_.inputs.size() ? spec_.inputs[i] : "input " + std::to_string(i + 1);
  }
  // The product's geometry for an output tensor y (N, H, W, C).
  ProductDesc desc(const Tensor& y) const {
    const int64_t pixels = out_[0] * out_[1];
    return ProductDesc{y.numel() / (pixels * out_[2]), pixels, out_[2]};
  }

  int64_t num_ = 0, k_ = 0;  // NumInputs (0: any), inputs named
  Shape out_;                // per image (H, W, C)
};

}  // namespace

const LayerType& multiplication_layer_type() {
  static const LayerType t{
      "multiplication",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<MultiplicationLayer>(s); },
      {"Mul"},
      MultiplicationLayer::from_onnx};
  return t;
}

}  // namespace dlt

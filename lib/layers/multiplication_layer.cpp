// multiplication: MATLAB's multiplicationLayer, the element-wise product of its NumInputs (>= 2)
// inputs. The output is H x W x C, the height and width of the input with the most pixels and
// the most channels of any; an input of 1x1xC repeats over the height and width
// (squeeze-and-excitation's per-channel weights times its feature map), one of HxWx1 over the
// channels (FocalNet's gates: a value per pixel); no other sizes mix (1x1xC times HxWx1 gives
// HxWxC). Backward gives each input dy times the product of the others, summed over what it
// was repeated over. ONNX: Mul of two computed values (NCHW's (N, C, 1, 1) and (N, 1, H, W),
// channels-last (N, 1, 1, C) broadcast the same way; the output keeps the inputs' layout);
// export writes one Mul per further input.
#include <algorithm>
#include <memory>
#include <string>

#include "layers/layer_util.h"

namespace dlt {

namespace {

// b repeats over the height and width of a: 1x1 with a's channels.
bool repeats_over(const Shape& b, const Shape& a) { return b[0] == 1 && b[1] == 1 && b[2] == a[2]; }
// b repeats over the channels of a: a's height and width, one channel.
bool repeats_across(const Shape& b, const Shape& a) { return b[0] == a[0] && b[1] == a[1] && b[2] == 1; }

// The product's shape: the height and width of the input with the most pixels (the first of
// them), the most channels of any.
Shape product_shape(const std::vector<Shape>& inputs) {
  size_t widest = 0;
  int64_t c = inputs[0][2];
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i][0] * inputs[i][1] > inputs[widest][0] * inputs[widest][1]) widest = i;
    c = std::max(c, inputs[i][2]);
  }
  return Shape{inputs[widest][0], inputs[widest][1], c};
}

// Input `in`'s extent in a product of shape out; false when it neither equals out nor repeats
// over its pixels or its channels.
bool extent_in(const Shape& in, const Shape& out, ProductDesc::Extent& e) {
  if (in == out)
    e = ProductDesc::kFull;
  else if (repeats_over(in, out))
    e = ProductDesc::kChannels;
  else if (repeats_across(in, out))
    e = ProductDesc::kPixels;
  else
    return false;
  return true;
}

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
    out_ = product_shape(inputs);
    k_ = static_cast<int64_t>(inputs.size());
    extents_.clear();
    for (size_t i = 0; i < inputs.size(); ++i) {
      ProductDesc::Extent e = ProductDesc::kFull;
      if (!extent_in(inputs[i], out_, e)) {
        std::string names;
        for (size_t j = 0; j < inputs.size(); ++j)
          names += (j == 0                   ? ""
                    : j + 1 == inputs.size() ? " and "
                                             : ", ") +
                   input_name(j) + " (" + inputs[j].str() + ")";
        shape_error(spec_, "inputs " + names + " cannot be multiplied: each must be " + out_.str() + ", 1x1x" +
                               std::to_string(out_[2]) + " to repeat over height and width, or " +
                               std::to_string(out_[0]) + "x" + std::to_string(out_[1]) +
                               "x1 to repeat over the channels");
      }
      extents_.push_back(e);
    }
    // A per-channel scale of the other input (the fusion plan folds it into that input's
    // convolution in inference).
    traits_.channel_scale_input = -1;
    if (inputs.size() == 2 && out_[0] * out_[1] > 1)
      for (int i = 0; i < 2; ++i)
        if (extents_[static_cast<size_t>(i)] == ProductDesc::kChannels &&
            extents_[static_cast<size_t>(1 - i)] == ProductDesc::kFull)
          traits_.channel_scale_input = i;
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
    std::vector<Shape> shapes;
    for (const OnnxValue& v : vs) shapes.push_back(v.shape);
    const Shape out_shape = product_shape(shapes);
    std::vector<std::string> names;
    for (const OnnxValue& v : vs) {
      if (v.flat != big.flat) r.fail("it multiplies a flattened (N, C*H*W) value and an image (N, C, H, W)");
      if (v.channels_last != big.channels_last)
        r.fail("it multiplies a channels-last (N, H, W, C) value and an (N, C, H, W) one");
      ProductDesc::Extent e = ProductDesc::kFull;
      if (v.flat ? v.shape != out_shape : !extent_in(v.shape, out_shape, e)) {
        std::string all;
        for (size_t j = 0; j < shapes.size(); ++j)
          all += (j == 0 ? "" : j + 1 == shapes.size() ? " and " : ", ") + shapes[j].str();
        r.fail("its inputs are " + all +
               " (HxWxC); dltrain multiplies equal sizes, 1x1xC repeated over height and width, or HxWx1 repeated "
               "over the channels");
      }
      names.push_back(v.name);
    }
    LayerSpec& s = r.add_layer("multiplication", names);
    s.set("NumInputs", std::to_string(names.size()));
    s.inputs = names;
    OnnxValue out = big;  // the same layout (flat, channels-last) as the inputs
    out.name = s.name;
    out.shape = out_shape;
    r.set_output(out);
  }

 private:
  std::string input_name(size_t i) const {
    return i < spec_.inputs.size() ? spec_.inputs[i] : "input " + std::to_string(i + 1);
  }
  // The product's geometry for an output tensor y (N, H, W, C).
  ProductDesc desc(const Tensor& y) const {
    const int64_t pixels = out_[0] * out_[1];
    return ProductDesc{y.numel() / (pixels * out_[2]), pixels, out_[2], extents_};
  }

  int64_t num_ = 0, k_ = 0;  // NumInputs (0: any), inputs named
  Shape out_;                // per image (H, W, C)
  std::vector<ProductDesc::Extent> extents_;  // each input's
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

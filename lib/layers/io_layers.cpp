// imageInput (with zerocenter / zscore / rescale normalization from training-data statistics),
// classification (the output layer: the network computes its cross-entropy loss), addition,
// depthConcatenation and concatenation (the DAG joins).
#include "layers/io_layers.h"

#include <algorithm>
#include <utility>

#include "layers/layer_util.h"
#include "util/strings.h"

namespace dlt {

ImageInputLayer::ImageInputLayer(const LayerSpec& spec) : Layer(spec) {
  const SpecValue* v = spec_.get("InputSize");
  if (!v) throw ConfigError(spec.where() + "option InputSize is required (e.g. InputSize: [32, 32, 3])");
  size_t n = v->items.size();
  if (n != 2 && n != 3)
    throw ConfigError(spec.where() + "option InputSize must be [height, width, channels] or [height, width], got '" +
                      v->str() + "'");
  auto sz = spec_.get_ints("InputSize", {}, n, 1);
  if (n == 2) sz.push_back(1);
  shape_ = Shape{sz[0], sz[1], sz[2]};
  normalization_ = spec_.get_choice("Normalization", "zerocenter",
                                    {"none", "zerocenter", "zscore", "rescale-symmetric", "rescale-zero-one"});
  // The statistics the config may give (MATLAB's imageInputLayer properties): one value or one
  // per channel each, for this normalization's states.
  const std::vector<std::string> names = statistic_names();
  for (const auto& [option, applies] :
       std::vector<std::pair<std::string, std::string>>{{"Mean", "zerocenter or zscore"},
                                                        {"StandardDeviation", "zscore"},
                                                        {"Min", "rescale-symmetric or rescale-zero-one"},
                                                        {"Max", "rescale-symmetric or rescale-zero-one"}}) {
    std::vector<double> values = spec_.get_doubles(option, {});
    if (values.empty()) continue;
    if (std::find(names.begin(), names.end(), option) == names.end())
      throw ConfigError(spec.where() + "option " + option + " applies to Normalization " + applies + ", not " +
                        normalization_);
    if (values.size() != 1 && static_cast<int64_t>(values.size()) != shape_[2])
      throw ConfigError(spec.where() + "option " + option + " takes one value or one per channel (" +
                        std::to_string(shape_[2]) + "), got " + std::to_string(values.size()));
    given_.resize(names.size());
    given_[static_cast<size_t>(std::find(names.begin(), names.end(), option) - names.begin())] = std::move(values);
  }
  if (!given_.empty() && std::any_of(given_.begin(), given_.end(), [](const auto& g) { return g.empty(); }))
    throw ConfigError(spec.where() + "give both " + names[0] + " and " + names[1] +
                      " (or neither: then they are computed from the training data, per channel)");
  auto at = [](const std::vector<double>& v, size_t c) { return v[std::min(c, v.size() - 1)]; };
  for (size_t c = 0; c < static_cast<size_t>(shape_[2]) && !given_.empty(); ++c) {
    if (rescale() && !(at(given_[0], c) < at(given_[1], c)))
      throw ConfigError(spec.where() + "Min must be below Max (channel " + std::to_string(c + 1) + ")");
    if (normalization_ == "zscore" && !(at(given_[1], c) > 0))
      throw ConfigError(spec.where() + "StandardDeviation must be > 0 (channel " + std::to_string(c + 1) + ")");
  }
  spec_.get("DataAugmentation");
}

Shape ImageInputLayer::infer(const std::vector<Shape>& inputs) {
  if (!inputs.empty()) shape_error(spec_, "imageInput must be the first layer and takes no Inputs");
  states_.clear();
  if (normalization_ == "zerocenter") states_.push_back(State{"Mean", shape_, 0.f, {}});
  if (normalization_ == "zscore") {
    states_.push_back(State{"Mean", Shape{1, 1, shape_[2]}, 0.f, {}});
    states_.push_back(State{"StandardDeviation", Shape{1, 1, shape_[2]}, 1.f, {}});
  }
  if (rescale()) {
    states_.push_back(State{"Min", Shape{1, 1, shape_[2]}, 0.f, {}});
    states_.push_back(State{"Max", Shape{1, 1, shape_[2]}, 1.f, {}});
  }
  return shape_;
}

std::vector<std::string> ImageInputLayer::statistic_names() const {
  if (normalization_ == "zerocenter") return {"Mean"};
  if (normalization_ == "zscore") return {"Mean", "StandardDeviation"};
  if (rescale()) return {"Min", "Max"};
  return {};
}

// The given statistics per channel into their states (zerocenter's mean image: each pixel).
void ImageInputLayer::init_params(Rng& rng) {
  Layer::init_params(rng);
  for (size_t k = 0; k < given_.size(); ++k) {
    const std::vector<double>& v = given_[k];
    Tensor h(states_[k].shape);
    for (int64_t i = 0; i < h.numel(); ++i)
      h.data()[i] = static_cast<float>(v[v.size() == 1 ? 0 : static_cast<size_t>(i % shape_[2])]);
    states_[k].value.copy_from(h);
  }
}

void ImageInputLayer::setup(int64_t, Backend& be) {
  if ((normalization_ == "zscore" || rescale()) && !mul_.defined()) {
    shift_ = Tensor(Shape{shape_[2]}, be.device());
    mul_ = Tensor(Shape{shape_[2]}, be.device());
  }
  refresh_normalization();
}

// zscore: (x - Mean) / StandardDeviation (1 where it is 0). rescale-zero-one: (x - Min) /
// (Max - Min); rescale-symmetric: 2 (x - Min) / (Max - Min) - 1 = (x - (Min + Max) / 2) * 2 /
// (Max - Min); a channel with Max = Min is only shifted (by Min).
void ImageInputLayer::coefficients(std::vector<float>& shift, std::vector<float>& mul) const {
  const std::vector<float> a = host_values(states_[0].value), b = host_values(states_[1].value);
  shift.resize(a.size());
  mul.resize(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (normalization_ == "zscore") {
      shift[i] = a[i];
      mul[i] = b[i] > 0 ? 1.f / b[i] : 1.f;
      continue;
    }
    const float range = b[i] - a[i];
    const bool symmetric = normalization_ == "rescale-symmetric";
    shift[i] = symmetric && range > 0 ? a[i] + range / 2 : a[i];
    mul[i] = range > 0 ? (symmetric ? 2.f : 1.f) / range : 1.f;
  }
}

void ImageInputLayer::refresh_normalization() {
  if (!mul_.defined()) return;
  std::vector<float> shift, mul;
  coefficients(shift, mul);
  const Shape s{shape_[2]};
  Tensor hs(s), hm(s);
  std::copy(shift.begin(), shift.end(), hs.data());
  std::copy(mul.begin(), mul.end(), hm.data());
  shift_.copy_from(hs);
  mul_.copy_from(hm);
}

void ImageInputLayer::set_statistics(const Tensor& mean_image, const Tensor& channel_mean, const Tensor& channel_std,
                                     const Tensor& channel_min, const Tensor& channel_max) {
  if (normalization_ == "zerocenter") states_[0].value.copy_from(mean_image);
  if (normalization_ == "zscore") {
    states_[0].value.copy_from(channel_mean);
    states_[1].value.copy_from(channel_std);
  }
  if (rescale()) {
    states_[0].value.copy_from(channel_min);
    states_[1].value.copy_from(channel_max);
  }
  refresh_normalization();
}

void ImageInputLayer::forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) {
  Backend& be = backend_for(y.device());
  if (normalization_ == "none")
    be.copy(*x[0], y);
  else if (normalization_ == "zerocenter")
    be.shift_scale(*x[0], states_[0].value, Tensor(), y);
  else
    be.shift_scale(*x[0], shift_, mul_, y);
}

void ImageInputLayer::backward(const std::vector<const Tensor*>&, const Tensor&, Tensor&, const std::vector<Tensor*>&,
                               const RunContext&) {}

OnnxValue ImageInputLayer::to_onnx(OnnxGraph& g, const std::vector<OnnxValue>&, const Shape& out) const {
  const std::string& n = name();
  int64_t h = shape_[0], w = shape_[1], c = shape_[2];
  g.add_input("input", {c, h, w});
  if (normalization_ == "zerocenter") {
    g.add_floats(n + "_mean", {1, c, h, w}, hwc_to_chw(host_values(states_[0].value), h, w, c));
    g.add_node("Sub", n + "_zerocenter", {"input", n + "_mean"}, n + "_norm");
  } else if (normalization_ == "zscore") {
    std::vector<float> sd = host_values(states_[1].value);
    for (float& v : sd) v = v > 0 ? v : 1.f;  // as forward: 1 / sd, or 1 where sd is 0
    g.add_floats(n + "_mean", {1, c, 1, 1}, host_values(states_[0].value));
    g.add_floats(n + "_std", {1, c, 1, 1}, sd);
    g.add_node("Sub", n + "_center", {"input", n + "_mean"}, n + "_centered");
    g.add_node("Div", n + "_scale", {n + "_centered", n + "_std"}, n + "_norm");
  } else if (rescale()) {  // the forward's shift and scale (the importer reads them as zscore)
    std::vector<float> shift, mul;
    coefficients(shift, mul);
    g.add_floats(n + "_shift", {1, c, 1, 1}, shift);
    g.add_floats(n + "_mul", {1, c, 1, 1}, mul);
    g.add_node("Sub", n + "_center", {"input", n + "_shift"}, n + "_centered");
    g.add_node("Mul", n + "_scale", {n + "_centered", n + "_mul"}, n + "_norm");
  } else {
    return OnnxValue{"input", out, false};
  }
  return OnnxValue{n + "_norm", out, false};
}

int64_t ImageInputLayer::stored_statistics() const { return normalization_ == "zerocenter" ? shape_.numel() : 0; }

void SoftmaxOutputLayer::check_producers(const std::vector<const Layer*>& producers) const {
  if (producers.at(0)->type() != "softmax")
    throw ConfigError(spec_.loc.prefix() + "layer '" + name() + "': the " + type() +
                      " layer must follow a softmax layer, not " + producers[0]->type());
}

namespace {

class ClassificationLayer final : public SoftmaxOutputLayer {
 public:
  explicit ClassificationLayer(const LayerSpec& spec) : SoftmaxOutputLayer(spec) {}
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    if (inputs[0][0] != 1 || inputs[0][1] != 1)
      shape_error(
          spec_,
          "input is " + inputs[0].str() +
              " but classification needs 1x1xK class scores (put a fullyConnected and a softmax layer before it)");
    return inputs[0];
  }
};

class AdditionLayer final : public Layer {
 public:
  explicit AdditionLayer(const LayerSpec& spec) : Layer(spec) { num_ = spec_.get_int("NumInputs", 0, 2); }
  int num_inputs() const override { return -1; }
  Shape infer(const std::vector<Shape>& inputs) override {
    if (inputs.size() < 2) shape_error(spec_, "addition needs at least 2 Inputs, got " + std::to_string(inputs.size()));
    if (num_ && static_cast<int64_t>(inputs.size()) != num_)
      shape_error(spec_, "NumInputs is " + std::to_string(num_) + " but " + std::to_string(inputs.size()) +
                             " Inputs are named");
    for (size_t i = 1; i < inputs.size(); ++i)
      if (inputs[i] != inputs[0])
        shape_error(spec_, "inputs " + spec_.inputs[0] + " (" + inputs[0].str() + ") and " + spec_.inputs[i] + " (" +
                               inputs[i].str() + ") differ in size");
    traits_.residual_sum = inputs.size() == 2;
    return inputs[0];
  }
  void setup(int64_t, Backend&) override {}
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    backend_for(y.device()).sum(x, y);
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    Backend& be = backend_for(dy.device());
    for (Tensor* d : dx)
      if (d) be.copy(dy, *d);
  }
  int64_t flops_per_image() const override { return 0; }

  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    std::string acc = inputs.at(0).name;
    for (size_t i = 1; i < inputs.size(); ++i) {
      if (inputs[i].flat != inputs[0].flat)
        throw ModelError(g.path() + ": layer '" + n + "' adds a flattened and an image input");
      std::string o = i + 1 == inputs.size() ? n : n + "_" + std::to_string(i);
      g.add_node("Add", o, {acc, inputs[i].name}, o);
      acc = o;
    }
    return OnnxValue{n, out, inputs[0].flat};
  }

  // Add / Sum of computed values (an Add of a constant after MatMul is that layer's bias:
  // lib/onnx/onnx_import.cpp takes it before this).
  static void from_onnx(OnnxNodeReader& r) {
    std::vector<std::string> ins;
    OnnxValue first = r.input(0, false, true);
    for (int i = 0; i < r.num_inputs(); ++i) {
      if (r.is_constant(i)) r.fail("adding a constant is supported only as the bias after MatMul or at the input");
      const OnnxValue v = r.input(i, false, true);
      if (v.shape != first.shape || v.flat != first.flat)
        r.fail("its inputs have different shapes (" + first.shape.str() + " and " + v.shape.str() + ")");
      if (v.channels_last != first.channels_last) r.fail("adds a channels-last (N, H, W, C) and an (N, C, H, W) value");
      if (v.tokens != first.tokens) r.fail("adds a token sequence (N, S, C) and an image");
      ins.push_back(v.name);
    }
    if (ins.size() < 2) r.fail("needs at least two inputs");
    LayerSpec& s = r.add_layer("addition", ins);
    s.set("NumInputs", std::to_string(ins.size()));
    s.inputs = ins;
    OnnxValue out = first;
    out.name = s.name;
    r.set_output(out);
  }

 private:
  int64_t num_ = 0;
};

// concatenation (MATLAB's concatenationLayer(dim, numInputs)): the inputs joined along dimension
// Dim of their data format: images (SSCB) along 1 (height), 2 (width) or 3 (the channels, as
// depthConcatenation), token sequences (SCB) along 1 (the tokens) or 2 (the channels), vectors
// (CB) along 1. Along the tokens an image among token sequences is the sequence of its pixels in
// row order (dltrain's extension: PiT's class token in front of its feature map's pixels). The
// other dimensions must agree. Per image, joining along a dimension joins blocks of memory (of
// the image, a row, a pixel): one concat op over those blocks.
class ConcatenationLayer final : public Layer {
 public:
  explicit ConcatenationLayer(const LayerSpec& spec) : Layer(spec) {
    dim_ = spec_.get_int("Dim", 0, 1);
    if (dim_ == 0)
      throw ConfigError(spec_.where() +
                        "option Dim is required (e.g. Dim: 1: the tokens of sequences, the height "
                        "of images)");
    num_ = spec_.get_int("NumInputs", 0, 2);
  }
  int num_inputs() const override { return -1; }
  DataFormat output_format() const override { return format_; }

  Shape infer(const std::vector<Shape>& inputs) override {
    if (inputs.size() < 2)
      shape_error(spec_, "concatenation needs at least 2 Inputs, got " + std::to_string(inputs.size()));
    if (num_ && static_cast<int64_t>(inputs.size()) != num_)
      shape_error(spec_, "NumInputs is " + std::to_string(num_) + " but " + std::to_string(inputs.size()) +
                             " Inputs are named");
    bool tokens = false, images = false, vectors = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const DataFormat f = input_format(i);
      tokens = tokens || f == DataFormat::kSCB;
      images = images || f == DataFormat::kSSCB;
      vectors = vectors || f == DataFormat::kCB;
    }
    if (vectors && (tokens || images))
      shape_error(spec_, "joins vectors (CB) with " + std::string(tokens ? "token sequences" : "images") +
                             "; their inputs must be all vectors, or images and token sequences");
    if (tokens && images && dim_ != 1)
      shape_error(spec_, "joins token sequences and images along Dim " + std::to_string(dim_) +
                             "; dltrain joins them only along the tokens (Dim 1: an image as its pixels)");
    format_ = vectors ? DataFormat::kCB : tokens ? DataFormat::kSCB : DataFormat::kSSCB;
    const int64_t dims = format_ == DataFormat::kSSCB ? 3 : format_ == DataFormat::kSCB ? 2 : 1;
    if (dim_ > dims)
      shape_error(spec_, "Dim " + std::to_string(dim_) + " is not a dimension of " + format_name(format_) +
                             " data (1.." + std::to_string(dims) + "; the batch is not joined)");
    // (h, w, c) per input as the output's format sees it; the axis joined.
    std::vector<Shape> in;
    for (const Shape& x : inputs) in.push_back(format_ == DataFormat::kSCB ? Shape{x[0] * x[1], 1, x[2]} : x);
    axis_ = format_ == DataFormat::kSSCB               ? static_cast<size_t>(dim_ - 1)
            : format_ == DataFormat::kSCB && dim_ == 1 ? 0
                                                       : 2;
    Shape out = in[0];
    out[axis_] = 0;
    parts_.clear();
    for (size_t i = 0; i < in.size(); ++i) {
      for (size_t a = 0; a < 3; ++a)
        if (a != axis_ && in[i][a] != in[0][a])
          shape_error(spec_, "inputs " + input_name(0) + " (" + inputs[0].str() + ") and " + input_name(i) + " (" +
                                 inputs[i].str() + ") differ in a dimension other than Dim " + std::to_string(dim_));
      out[axis_] += in[i][axis_];
      parts_.push_back(axis_ == 0 ? in[i][0] * in[i][1] * in[i][2] : axis_ == 1 ? in[i][1] * in[i][2] : in[i][2]);
    }
    outer_ = axis_ == 0 ? 1 : axis_ == 1 ? out[0] : out[0] * out[1];
    return out;
  }
  void setup(int64_t n, Backend& be) override { op_ = be.make(ConcatDesc{n, outer_, 1, parts_}); }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override { op_->forward(x, y); }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    op_->backward(dy, dx);
  }

  // Concat: images (N, C, H, W) on axis 2, 3 or 1; tokens (N, S, C) on axis 1 or 2 (an image's
  // pixels made tokens first); vectors (N, C) on axis 1.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    std::vector<std::string> names;
    for (const auto& in : inputs)
      names.push_back(format_ == DataFormat::kSSCB  ? g.image(n, in).name
                      : format_ == DataFormat::kSCB ? g.pixel_tokens(n, in)
                                                    : g.flat(in).name);
    const int64_t axis = format_ == DataFormat::kSSCB ? (dim_ == 3 ? 1 : dim_ + 1) : dim_;
    g.add_node("Concat", n, names, n, {OnnxAttr("axis", axis)});
    return OnnxValue{n, out, format_ == DataFormat::kCB};
  }

  // Concat of images along their height or width: axis 2 or 3 of (N, C, H, W), 1 or 2 of
  // channels-last (N, H, W, C); all inputs in one layout (along the channels:
  // depthConcatenation; along tokens: the importer's token reading).
  static void from_onnx(OnnxNodeReader& r, int64_t dim) {
    const OnnxValue first = r.input(0, false, true);
    std::vector<std::string> ins;
    Shape out = first.shape;
    out[static_cast<size_t>(dim - 1)] = 0;
    for (int i = 0; i < r.num_inputs(); ++i) {
      const OnnxValue v = r.input(i, false, true);
      if (v.channels_last != first.channels_last || v.flat || v.tokens)
        r.fail("concatenates images of different layouts (or a flattened value) along their height or width");
      for (size_t a = 0; a < 3; ++a)
        if (static_cast<int64_t>(a) != dim - 1 && v.shape[a] != first.shape[a])
          r.fail("its inputs (" + first.shape.str() + " and " + v.shape.str() +
                 ") differ in a dimension other than the one joined");
      out[static_cast<size_t>(dim - 1)] += v.shape[static_cast<size_t>(dim - 1)];
      ins.push_back(v.name);
    }
    LayerSpec& s = r.add_layer("concatenation", ins);
    s.set("Dim", std::to_string(dim));
    s.set("NumInputs", std::to_string(ins.size()));
    s.inputs = ins;
    OnnxValue v{s.name, out, false};
    v.channels_last = first.channels_last;
    r.set_output(v);
  }

 private:
  std::string input_name(size_t i) const { return i < spec_.inputs.size() ? spec_.inputs[i] : std::to_string(i + 1); }

  int64_t dim_ = 1, num_ = 0, outer_ = 1;
  size_t axis_ = 0;
  DataFormat format_ = DataFormat::kSSCB;
  std::vector<int64_t> parts_;
  std::unique_ptr<ConcatOp> op_;
};

class DepthConcatenationLayer final : public Layer {
 public:
  explicit DepthConcatenationLayer(const LayerSpec& spec) : Layer(spec) { num_ = spec_.get_int("NumInputs", 0, 2); }
  int num_inputs() const override { return -1; }
  Shape infer(const std::vector<Shape>& inputs) override {
    if (inputs.size() < 2)
      shape_error(spec_, "depthConcatenation needs at least 2 Inputs, got " + std::to_string(inputs.size()));
    if (num_ && static_cast<int64_t>(inputs.size()) != num_)
      shape_error(spec_, "NumInputs is " + std::to_string(num_) + " but " + std::to_string(inputs.size()) +
                             " Inputs are named");
    channels_.clear();
    int64_t c = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i][0] != inputs[0][0] || inputs[i][1] != inputs[0][1])
        shape_error(spec_, "inputs " + spec_.inputs[0] + " (" + inputs[0].str() + ") and " + spec_.inputs[i] + " (" +
                               inputs[i].str() + ") differ in height or width");
      channels_.push_back(inputs[i][2]);
      c += inputs[i][2];
    }
    h_ = inputs[0][0];
    w_ = inputs[0][1];
    return Shape{h_, w_, c};
  }
  void setup(int64_t n, Backend& be) override { op_ = be.make(ConcatDesc{n, h_, w_, channels_}); }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override { op_->forward(x, y); }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    op_->backward(dy, dx);
  }

  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    std::vector<std::string> names;
    for (const auto& in : inputs) names.push_back(g.image(name(), in).name);
    g.add_node("Concat", name(), names, name(), {OnnxAttr("axis", int64_t{1})});
    return OnnxValue{name(), out, false};
  }

  // Concat along the channels: axis 1 (or -3 of an image, -1 of a flat value), or 3 or -1 of
  // channels-last (N, H, W, C) values (the same memory), all inputs in one layout.
  static void from_onnx(OnnxNodeReader& r) {
    OnnxValue first = r.input(0, false, true);
    int64_t axis = r.attr_int("axis", 1);
    int64_t rank = first.flat ? 2 : 4;
    if (!first.flat && !first.tokens) {  // along the height or width: the concatenation layer
      const int64_t a = axis < 0 ? axis + 4 : axis;
      const int64_t dim = first.channels_last ? (a == 1 || a == 2 ? a : 0) : (a == 2 || a == 3 ? a - 1 : 0);
      if (dim) return ConcatenationLayer::from_onnx(r, dim);
    }
    if (first.channels_last ? axis != 3 && axis != -1 : axis != 1 && axis != 1 - rank)
      r.fail(first.channels_last ? "only concatenation along the channels of channels-last values (axis 3) is supported"
                                 : "only concatenation along channels (axis 1) is supported");
    std::vector<std::string> ins;
    int64_t c = 0;
    for (int i = 0; i < r.num_inputs(); ++i) {
      const OnnxValue v = r.input(i, false, true);
      if (v.channels_last != first.channels_last)
        r.fail("concatenates a channels-last (N, H, W, C) and an (N, C, H, W) value");
      if (v.shape[0] != first.shape[0] || v.shape[1] != first.shape[1] || v.flat != first.flat)
        r.fail("its inputs differ in height or width (" + first.shape.str() + " and " + v.shape.str() + ")");
      if (v.flat && v.shape[0] * v.shape[1] > 1) r.fail("concatenating flattened images is not supported");
      c += v.shape[2];
      ins.push_back(v.name);
    }
    if (ins.size() < 2) return r.set_output(first);
    LayerSpec& s = r.add_layer("depthConcatenation", ins);
    s.set("NumInputs", std::to_string(ins.size()));
    s.inputs = ins;
    OnnxValue out{s.name, Shape{first.shape[0], first.shape[1], c}, first.flat};
    out.channels_last = first.channels_last;
    r.set_output(out);
  }

 private:
  int64_t num_ = 0, h_ = 0, w_ = 0;
  std::vector<int64_t> channels_;
  std::unique_ptr<ConcatOp> op_;
};

}  // namespace

const LayerType& concatenation_layer_type() {
  static const LayerType t{
      "concatenation",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<ConcatenationLayer>(s); },
      {},
      nullptr};
  return t;
}

const LayerType& image_input_layer_type() {
  static const LayerType t{
      "imageInput",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<ImageInputLayer>(s); },
      {},
      nullptr};
  return t;
}

const LayerType& classification_layer_type() {
  static const LayerType t{
      "classification",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<ClassificationLayer>(s); },
      {},
      nullptr};
  return t;
}

const LayerType& addition_layer_type() {
  static const LayerType t{
      "addition",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<AdditionLayer>(s); },
      {"Add", "Sum"},
      AdditionLayer::from_onnx};
  return t;
}

const LayerType& depth_concatenation_layer_type() {
  static const LayerType t{
      "depthConcatenation",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<DepthConcatenationLayer>(s); },
      {"Concat"},
      DepthConcatenationLayer::from_onnx};
  return t;
}

}  // namespace dlt

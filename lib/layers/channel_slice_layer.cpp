// channelSlice (dltrain's own name): the NumChannels channels from StartChannel (1-based, as
// MATLAB counts) of its input; the backward writes the gradient into those channels and zeros
// into the others. ONNX: each output of a Split over the channels becomes one channelSlice
// reading the same input (a dltrain layer has one output), a Slice over the channels one;
// exported as an opset-13 Slice.
#include <algorithm>
#include <memory>

#include "layers/layer_util.h"

namespace dlt {

namespace {

class ChannelSliceLayer final : public Layer {
 public:
  explicit ChannelSliceLayer(const LayerSpec& spec) : Layer(spec) {
    const int64_t start = spec_.get_int("StartChannel", 0, 1);
    d_.count = spec_.get_int("NumChannels", 0, 1);
    if (start == 0 || d_.count == 0)
      throw ConfigError(spec_.where() +
                        "options StartChannel (1-based) and NumChannels are required (e.g. StartChannel: 1, "
                        "NumChannels: 16)");
    d_.start = start - 1;
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    h_ = inputs[0][0];
    w_ = inputs[0][1];
    d_.c = inputs[0][2];
    if (d_.start + d_.count > d_.c)
      shape_error(spec_, "input is " + inputs[0].str() + " but StartChannel " + std::to_string(d_.start + 1) +
                             " and NumChannels " + std::to_string(d_.count) + " take channels " +
                             std::to_string(d_.start + 1) + ".." + std::to_string(d_.start + d_.count) +
                             " (the input has " + std::to_string(d_.c) + ")");
    return Shape{h_, w_, d_.count};
  }
  void setup(int64_t n, Backend& be) override {
    be_ = &be;
    d_.pixels = n * h_ * w_;
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    be_->channel_slice(*x[0], y, d_);
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) be_->channel_slice_backward(dy, *dx[0], d_);
  }

  // Slice(x, starts, ends, axes) over axis 1 (opset 13: inputs, not attributes).
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const OnnxValue x = inputs.at(0);
    g.add_ints(n + "_starts", {1}, {d_.start});
    g.add_ints(n + "_ends", {1}, {d_.start + d_.count});
    g.add_ints(n + "_axes", {1}, {1});
    g.add_node("Slice", n, {x.name, n + "_starts", n + "_ends", n + "_axes"}, n);
    return OnnxValue{n, out, x.flat};  // a flat (N, C) input slices the same channels
  }

  static void from_onnx(OnnxNodeReader& r) {
    if (r.op() == "Split")
      split_from_onnx(r);
    else
      slice_from_onnx(r);
  }

 private:
  // The input's channel axis: 1 (or -3 of an image, -1 of a flat (N, C) value), 3 or -1 of a
  // channels-last (N, H, W, C) value (the same memory); flattened images of more than one pixel
  // have none.
  static OnnxValue channel_input(OnnxNodeReader& r, int64_t axis) {
    const OnnxValue in = r.input(0, false, true);
    r.need_image(in);
    const int64_t channels = in.channels_last ? 3 : 1;
    if (axis != channels && axis != (in.flat || in.channels_last ? -1 : -3))
      r.fail("only splitting / slicing the channels (axis " + std::to_string(channels) +
             (in.channels_last ? " of a channels-last value" : "") + ") is supported, not axis " +
             std::to_string(axis));
    return in;
  }

  static void add_slice(OnnxNodeReader& r, int output, const OnnxValue& in, int64_t start, int64_t count) {
    LayerSpec& s = r.add_layer("channelSlice", {in.name});
    s.set("StartChannel", std::to_string(start + 1));
    s.set("NumChannels", std::to_string(count));
    OnnxValue v{s.name, Shape{in.shape[0], in.shape[1], count}, in.flat};
    v.channels_last = in.channels_last;
    if (output == 0)
      r.set_output(v);
    else
      r.set_output_at(output, v);
  }

  // Split: the sizes from the `split` attribute (opset < 13) or input (13+), else equal
  // parts, one per output (or num_outputs of them from opset 18, the last one smaller when
  // the channels do not divide).
  static void split_from_onnx(OnnxNodeReader& r) {
    const OnnxValue in = channel_input(r, r.attr_int("axis", 0));
    const int64_t c = in.shape[2], outputs = r.num_outputs();
    std::vector<int64_t> sizes;
    if (r.opset() < 13)
      sizes = r.attr_ints("split", {});
    else if (r.has_input(1))
      sizes = r.ints(1, "split");
    if (sizes.empty()) {
      const int64_t parts = r.opset() >= 18 ? r.attr_int("num_outputs", outputs) : outputs;
      if (parts < 1 || parts > c)
        r.fail("cannot split " + std::to_string(c) + " channels into " + std::to_string(parts) + " parts");
      const int64_t size = r.opset() >= 18 ? (c + parts - 1) / parts : c / parts;
      if (r.opset() < 18 && c % parts != 0)
        r.fail(std::to_string(c) + " channels do not split into " + std::to_string(parts) + " equal parts");
      for (int64_t i = 0, left = c; i < parts; ++i, left -= size) sizes.push_back(std::min(size, left));
    }
    if (static_cast<int64_t>(sizes.size()) != outputs)
      r.fail("has " + std::to_string(outputs) + " outputs but " + std::to_string(sizes.size()) + " split sizes");
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 1 || s > c) r.fail("split size " + std::to_string(s) + " is not in 1.." + std::to_string(c));
      total += s;
    }
    if (total != c)
      r.fail("split sizes add up to " + std::to_string(total) + " but the input has " + std::to_string(c) +
             " channels");
    for (int64_t i = 0, start = 0; i < outputs; start += sizes[i], ++i) {
      if (!r.has_output(static_cast<int>(i))) continue;
      add_slice(r, static_cast<int>(i), in, start, sizes[i]);
    }
  }

  // Slice with constant starts / ends over axes [1] and steps 1 (opset 10+: inputs; before:
  // attributes). Negative starts / ends count from the end; both are clamped to 0..C (an end
  // of INT64_MAX means "to the end").
  static void slice_from_onnx(OnnxNodeReader& r) {
    const bool inputs = r.opset() >= 10;
    auto list = [&](int i, const char* name, bool required) -> std::vector<int64_t> {
      if (!inputs) return r.attr_ints(name, {});
      if (!r.has_input(i)) {
        if (required) r.fail(std::string("has no ") + name + " input");
        return {};
      }
      if (!r.is_constant(i)) r.fail(std::string(name) + " is computed, not a constant (dltrain slices fixed channels)");
      return r.ints(i, name);
    };
    const std::vector<int64_t> starts = list(1, "starts", true), ends = list(2, "ends", true);
    std::vector<int64_t> axes = list(3, "axes", false), steps = list(4, "steps", false);
    if (axes.empty()) axes = {0};  // ONNX's default: the first axes in order (here: the batch)
    if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1)
      r.fail("only a Slice of one axis, the channels (axes [1], or [3] of a channels-last value), is supported");
    if (!steps.empty() && (steps.size() != 1 || steps[0] != 1)) r.fail("only steps of 1 are supported");
    const OnnxValue in = channel_input(r, axes[0]);
    const int64_t c = in.shape[2];
    auto clamp = [c](int64_t v) { return std::clamp<int64_t>(v < 0 ? (v < -c ? 0 : v + c) : v, 0, c); };
    const int64_t start = clamp(starts[0]), end = clamp(ends[0]);
    if (end <= start)
      r.fail("takes channels [" + std::to_string(starts[0]) + ", " + std::to_string(ends[0]) + ") of " +
             std::to_string(c) + ", which is empty");
    add_slice(r, 0, in, start, end - start);
  }

  int64_t h_ = 1, w_ = 1;
  ChannelSliceDesc d_;
  Backend* be_ = nullptr;
};

}  // namespace

const LayerType& channel_slice_layer_type() {
  static const LayerType t{
      "channelSlice",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<ChannelSliceLayer>(s); },
      {"Split", "Slice"},
      ChannelSliceLayer::from_onnx};
  return t;
}

}  // namespace dlt

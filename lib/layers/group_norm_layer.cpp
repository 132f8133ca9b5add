// groupNormalization and instanceNormalization: MATLAB's groupNormalizationLayer(NumGroups) and
// instanceNormalizationLayer on H x W x C images (PyTorch's GroupNorm and InstanceNorm2d with
// affine). The channels are NumGroups contiguous groups; each image's group is normalized by its
// own mean and biased variance over its pixels and channels, then scaled and shifted per channel
// by the learnables Scale and Offset (C):
//   NumGroups  a number dividing C; all-channels (one group: layerNormalization's
//              spatial-channel); channel-wise (a group per channel: instanceNormalization).
// Training and inference compute the same (no running statistics), so small batches train as
// well as large ones. The op is backend/group_norm_op.h's. ONNX: export writes PyTorch's form
// (Reshape (N, G, -1), InstanceNormalization with G ones and zeros, Reshape back, Mul and Add
// per channel; instanceNormalization one InstanceNormalization), which OpenCV's dnn reads;
// import reads InstanceNormalization of an image and GroupNormalization (the rewrite of
// PyTorch's form, onnx_rewrite.cpp; opset 18's per-group scale and bias repeated per channel).
#include <memory>
#include <string>

#include "backend/group_norm_op.h"
#include "layers/layer_util.h"

namespace dlt {

namespace {

class GroupNormLayer final : public Layer {
 public:
  GroupNormLayer(const LayerSpec& spec, bool instance) : Layer(spec), channel_wise_(instance) {
    epsilon_ = spec_.get_double("Epsilon", 1e-5);
    if (!(epsilon_ > 0)) throw ConfigError(spec.where() + "option Epsilon must be > 0");
    if (!instance) {
      const SpecValue* g = spec_.get("NumGroups");
      if (!g)
        throw ConfigError(spec.where() +
                          "option NumGroups is required (a number dividing the channels, all-channels or "
                          "channel-wise; e.g. NumGroups: 8)");
      const std::string word = !g->is_list && g->items.size() == 1 ? g->items[0] : "";
      if (word == "all-channels")
        groups_ = 1;
      else if (word == "channel-wise")
        channel_wise_ = true;
      else if (!word.empty() && word.find_first_not_of("0123456789") != std::string::npos)
        throw ConfigError(spec.where() + "option NumGroups must be a number >= 1, all-channels or channel-wise, got '" +
                          word + "'");
      else
        groups_ = spec_.get_int("NumGroups", 1, 1);
    }
    scale_ = make_param(spec_, "Scale", Shape{}, Init::kOnes, 1.f);
    offset_ = make_param(spec_, "Offset", Shape{}, Init::kZeros, 1.f);
    spec_.get("NumChannels");
  }

  bool takes(DataFormat f) const override { return f == DataFormat::kSSCB; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    shape_ = inputs[0];
    const int64_t c = shape_[2];
    const int64_t nc = spec_.get_int("NumChannels", c, 1);
    if (nc != c)
      shape_error(spec_,
                  "NumChannels is " + std::to_string(nc) + " but the input has " + std::to_string(c) + " channels");
    if (channel_wise_) groups_ = c;
    if (c % groups_ != 0)
      shape_error(spec_, "NumGroups " + std::to_string(groups_) + " does not divide the input's " + std::to_string(c) +
                             " channels");
    Param s = scale_, o = offset_;
    s.shape = Shape{c};
    o.shape = Shape{c};
    params_ = {s, o};
    return shape_;
  }

  void setup(int64_t n, Backend& be) override {
    GroupNormDesc d;
    d.n = n;
    d.pixels = shape_[0] * shape_[1];
    d.c = shape_[2];
    d.groups = groups_;
    d.epsilon = static_cast<float>(epsilon_);
    op_ = be.make(d);
    mean_ = Tensor(Shape{d.stats()}, be.device());
    var_ = Tensor(Shape{d.stats()}, be.device());
  }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    if (ctx.training)
      op_->forward_training(*x[0], params_[0].value, params_[1].value, y, mean_, var_);
    else
      op_->forward_inference(*x[0], params_[0].value, params_[1].value, y);
  }

  void backward(const std::vector<const Tensor*>& x, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    Param& s = params_[0];
    Param& o = params_[1];
    Tensor none;
    op_->backward(*x[0], dy, s.value, mean_, var_, grad_or_scratch(dx[0], *x[0], scratch_dx_),
                  s.frozen() ? none : s.grad, o.frozen() ? none : o.grad);
  }

  int64_t flops_per_image() const override { return 8 * shape_.numel(); }
  std::vector<std::string> learnable_options() const override { return {"Scale", "Offset"}; }

  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const OnnxValue& x = inputs.at(0);
    const int64_t h = shape_[0], w = shape_[1], c = shape_[2];
    if (x.flat || x.tokens) throw ModelError("layer '" + n + "' (" + type() + "): its input is not an image");
    if (groups_ == c) {  // InstanceNormalization applies the per-channel scale and offset itself
      g.add_floats(n + "_scale", {c}, host_values(params_[0].value));
      g.add_floats(n + "_offset", {c}, host_values(params_[1].value));
      g.add_node("InstanceNormalization", n, {x.name, n + "_scale", n + "_offset"}, n,
                 {OnnxAttr("epsilon", static_cast<float>(epsilon_))});
      return OnnxValue{n, out, false};
    }
    g.add_ints(n + "_groups_shape", {3}, {0, groups_, -1});
    g.add_node("Reshape", n + "_to_groups", {x.name, n + "_groups_shape"}, n + "_groups");
    g.add_floats(n + "_ones", {groups_}, std::vector<float>(static_cast<size_t>(groups_), 1.f));
    g.add_floats(n + "_zeros", {groups_}, std::vector<float>(static_cast<size_t>(groups_), 0.f));
    g.add_node("InstanceNormalization", n + "_normalize", {n + "_groups", n + "_ones", n + "_zeros"}, n + "_normalized",
               {OnnxAttr("epsilon", static_cast<float>(epsilon_))});
    g.add_ints(n + "_image_shape", {4}, {0, c, h, w});
    g.add_node("Reshape", n + "_from_groups", {n + "_normalized", n + "_image_shape"}, n + "_image");
    g.add_floats(n + "_scale", {c, 1, 1}, host_values(params_[0].value));
    g.add_floats(n + "_offset", {c, 1, 1}, host_values(params_[1].value));
    g.add_node("Mul", n + "_scaled", {n + "_image", n + "_scale"}, n + "_scaled");
    g.add_node("Add", n, {n + "_scaled", n + "_offset"}, n);
    return OnnxValue{n, out, false};
  }

  // InstanceNormalization (instance) or GroupNormalization (num_groups) of an NCHW image: scale
  // and bias of C values, or (GroupNormalization at opset 18) of one per group, repeated over
  // its channels.
  static void from_onnx(OnnxNodeReader& r) {
    const OnnxValue in = r.input(0);
    const int64_t c = in.shape[2];
    if (in.tokens || in.flat || in.channels_last)
      r.fail("its input is not an (N, C, H, W) image; dltrain normalizes groups of an image's channels");
    const bool instance = r.op() == "InstanceNormalization";
    const int64_t groups = instance ? c : r.attr_int("num_groups", 0);
    if (groups < 1 || c % groups != 0)
      r.fail("num_groups " + std::to_string(groups) + " does not divide the image's " + std::to_string(c) +
             " channels");
    auto per_channel = [&](int i, const char* role) {
      std::vector<float> v = r.floats(i, role);
      if (static_cast<int64_t>(v.size()) == groups && groups != c) {  // one per group
        std::vector<float> e(static_cast<size_t>(c));
        for (int64_t ch = 0; ch < c; ++ch) e[static_cast<size_t>(ch)] = v[static_cast<size_t>(ch / (c / groups))];
        v = std::move(e);
      }
      if (static_cast<int64_t>(v.size()) != c)
        r.fail(std::string(role) + " has " + std::to_string(v.size()) + " values for " + std::to_string(c) +
               " channels (" + std::to_string(groups) + " groups)");
      return v;
    };
    std::vector<float> scale = per_channel(1, "scale");
    std::vector<float> bias = per_channel(2, "bias");
    LayerSpec& s = r.add_layer(groups == c ? "instanceNormalization" : "groupNormalization", {in.name});
    if (groups != c) s.set("NumGroups", std::to_string(groups));
    s.set("Epsilon", onnx_number(r.attr_float("epsilon", 1e-5f)));
    const std::string name = s.name;
    r.add_param(name, "Scale", Shape{c}, std::move(scale));
    r.add_param(name, "Offset", Shape{c}, std::move(bias));
    OnnxValue out = in;
    out.name = name;
    r.set_output(out);
  }

 private:
  bool channel_wise_ = false;  // a group per channel (instanceNormalization, NumGroups channel-wise)
  int64_t groups_ = 1;         // the channels' groups (set by infer() when channel-wise)
  double epsilon_ = 1e-5;
  Param scale_, offset_;
  Shape shape_;  // per image (H, W, C)
  std::unique_ptr<GroupNormOp> op_;
  Tensor mean_, var_;  // (n * groups) statistics of the last training forward
  Tensor scratch_dx_;  // dx when the input needs no gradient
};

}  // namespace

const LayerType& group_normalization_layer_type() {
  static const LayerType t{
      "groupNormalization",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<GroupNormLayer>(s, false); },
      {"GroupNormalization"},
      GroupNormLayer::from_onnx};
  return t;
}

const LayerType& instance_normalization_layer_type() {
  static const LayerType t{
      "instanceNormalization",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<GroupNormLayer>(s, true); },
      {"InstanceNormalization"},
      GroupNormLayer::from_onnx};
  return t;
}

}  // namespace dlt

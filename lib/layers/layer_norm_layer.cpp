// layerNormalization: MATLAB's layerNormalizationLayer on H x W x C images. Each image (or
// each pixel) is normalized by its own mean and biased variance, then scaled and shifted per
// channel by the learnables Scale and Offset (C):
//   OperationDimension  spatial-channel  over H, W and C of each image (MATLAB's 'auto' for
//                                        images, and its 'batch-excluded', which for images is
//                                        the same)
//                       channel-only     over the C channels of each pixel (PyTorch's LayerNorm
//                                        on channels-last data, ConvNeXt's LayerNorm2d), and
//                                        over the C channels of each token: MATLAB's 'auto'
//                                        for token sequences (SCB), a transformer's LayerNorm
//   The default, auto, is spatial-channel for images and channel-only for tokens.
// Training and inference compute the same (no running statistics). ONNX: LayerNormalization
// (opset 17) over the channels of a channels-last value, or over axis 1 of an NCHW image;
// export writes opset 13 (InstanceNormalization on reshaped rows, then Mul and Add).
#include <memory>
#include <string>

#include "layers/layer_util.h"

namespace dlt {

namespace {

class LayerNormLayer final : public Layer {
 public:
  explicit LayerNormLayer(const LayerSpec& spec) : Layer(spec) {
    epsilon_ = spec_.get_double("Epsilon", 1e-5);
    if (!(epsilon_ > 0)) throw ConfigError(spec.where() + "option Epsilon must be > 0");
    const std::string dim =
        spec_.get_choice("OperationDimension", "auto", {"auto", "spatial-channel", "channel-only", "batch-excluded"});
    channel_only_ = dim == "channel-only";
    auto_ = dim == "auto";
    scale_ = make_param(spec_, "Scale", Shape{}, Init::kOnes, 1.f);
    offset_ = make_param(spec_, "Offset", Shape{}, Init::kZeros, 1.f);
    spec_.get("NumChannels");
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    shape_ = inputs[0];
    if (auto_) channel_only_ = input_format(0) == DataFormat::kSCB;
    const int64_t c = shape_[2];
    const int64_t nc = spec_.get_int("NumChannels", c, 1);
    if (nc != c)
      shape_error(spec_,
                  "NumChannels is " + std::to_string(nc) + " but the input has " + std::to_string(c) + " channels");
    Param s = scale_, o = offset_;
    s.shape = Shape{c};
    o.shape = Shape{c};
    params_ = {s, o};
    return shape_;
  }

  void setup(int64_t n, Backend& be) override {
    LayerNormDesc d;
    d.c = shape_[2];
    d.rows = channel_only_ ? n * shape_[0] * shape_[1] : n;
    d.length = channel_only_ ? d.c : shape_.numel();
    d.epsilon = static_cast<float>(epsilon_);
    op_ = be.make(d);
    mean_ = Tensor(Shape{d.rows}, be.device());
    var_ = Tensor(Shape{d.rows}, be.device());
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

  // Opset 13 has no LayerNormalization, and OpenCV 4.6's dnn cannot subtract a broadcast
  // (N, 1, H, W) mean from (N, C, H, W): each row to normalize becomes an instance of
  // InstanceNormalization (biased variance, epsilon inside the square root: the same formula),
  // then Mul and Add apply Scale and Offset (C, 1, 1). spatial-channel: Reshape (N, 1, C*H*W);
  // channel-only: Transpose (0, 2, 3, 1) and Reshape (N, H*W, C), and back; tokens (N, S, C) are
  // those rows already.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const OnnxValue& x = inputs.at(0);
    const int64_t h = shape_[0], w = shape_[1], c = shape_[2];
    const bool per_pixel = channel_only_ && !x.flat && !x.tokens && h * w > 1;
    const bool per_token = channel_only_ && x.tokens;
    const int64_t instances = per_pixel || per_token ? h * w : 1;  // InstanceNormalization's "channels"
    std::string v = x.name;
    if (per_pixel) {
      g.add_node("Transpose", n + "_to_nhwc", {v}, n + "_nhwc", {OnnxAttr("perm", std::vector<int64_t>{0, 2, 3, 1})});
      v = n + "_nhwc";
    }
    g.add_ints(n + "_rows_shape", {3}, {0, instances, -1});
    g.add_node("Reshape", n + "_to_rows", {v, n + "_rows_shape"}, n + "_rows");
    g.add_floats(n + "_ones", {instances}, std::vector<float>(static_cast<size_t>(instances), 1.f));
    g.add_floats(n + "_zeros", {instances}, std::vector<float>(static_cast<size_t>(instances), 0.f));
    g.add_node("InstanceNormalization", n + "_normalize", {n + "_rows", n + "_ones", n + "_zeros"}, n + "_normalized",
               {OnnxAttr("epsilon", static_cast<float>(epsilon_))});
    const std::vector<int64_t> back = x.flat      ? std::vector<int64_t>{0, c}
                                      : per_pixel ? std::vector<int64_t>{0, h, w, c}
                                      : x.tokens  ? std::vector<int64_t>{0, h * w, c}
                                                  : std::vector<int64_t>{0, c, h, w};
    g.add_ints(n + "_image_shape", {static_cast<int64_t>(back.size())}, back);
    g.add_node("Reshape", n + "_from_rows", {n + "_normalized", n + "_image_shape"}, n + "_image");
    v = n + "_image";
    if (per_pixel) {
      g.add_node("Transpose", n + "_to_nchw", {v}, n + "_nchw", {OnnxAttr("perm", std::vector<int64_t>{0, 3, 1, 2})});
      v = n + "_nchw";
    }
    const std::vector<int64_t> per_channel =
        x.flat || x.tokens ? std::vector<int64_t>{c} : std::vector<int64_t>{c, 1, 1};
    g.add_floats(n + "_scale", per_channel, host_values(params_[0].value));
    g.add_floats(n + "_offset", per_channel, host_values(params_[1].value));
    g.add_node("Mul", n + "_scaled", {v, n + "_scale"}, n + "_scaled");
    g.add_node("Add", n, {n + "_scaled", n + "_offset"}, n);
    return OnnxValue{n, out, x.flat};
  }

  // Layouts: an (N, C, H, W) image over axis 1 (-3): spatial-channel; a channels-last
  // (N, H, W, C) value over axis 3 (-1): channel-only, over axis 1 (-3): spatial-channel; an
  // (N, C) value over axis 1 (-1); tokens (N, S, C) over axis 2 (-1): channel-only. The output keeps the input's
  // layout.
  static void from_onnx(OnnxNodeReader& r) {
    const OnnxValue in = r.input(0, false, true);
    const int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2], axis = r.attr_int("axis", -1);
    for (int i = 1; i < 3; ++i)
      if (r.has_output(i)) r.fail("its Mean and InvStdDev outputs are not supported (only Y)");
    bool channel_only = false;
    if (in.tokens) {
      if (axis != 2 && axis != -1)
        r.fail("axis " + std::to_string(axis) +
               " of a token sequence (N, S, C) is not supported: dltrain normalizes "
               "each token over its channels (axis -1)");
      channel_only = true;
    } else if (in.flat) {
      if (h * w != 1) r.fail("its input is flattened (N, C*H*W); dltrain normalizes images or (N, C) values");
      if (axis != 1 && axis != -1) r.fail("on (N, C) values only axis 1 (the channels) is supported");
      channel_only = true;
    } else if (in.channels_last) {
      if (axis != 3 && axis != -1 && axis != 1 && axis != -3)
        r.fail("axis " + std::to_string(axis) +
               " of channels-last (N, H, W, C) data is not supported: dltrain normalizes over C (axis -1) or over "
               "H, W and C (axis 1)");
      channel_only = axis == 3 || axis == -1 || h * w == 1;
    } else if (axis != 1 && axis != -3) {
      r.fail("axis " + std::to_string(axis) +
             " of an (N, C, H, W) image is not supported: dltrain normalizes over C, H and W (axis 1), or over the "
             "channels of channels-last data (Transpose(0, 2, 3, 1), LayerNormalization over axis -1)");
    }
    // One value per channel: 1 or C values that ONNX repeats over the pixels, or one per
    // value of the normalized block (H, W, C or C, H, W) equal over the pixels.
    const bool hwc = in.channels_last;
    auto per_channel = [&](int i, const char* role) {
      std::vector<float> v = r.floats(i, role);
      const int64_t count = static_cast<int64_t>(v.size()), hw = h * w;
      const std::vector<int64_t> dims = r.dims(i, role);
      // C values over axis 1 of an NCHW image must be (C, 1, 1) to repeat over height and width.
      if (!channel_only && !hwc && hw > 1 && count == c &&
          (dims.size() < 3 || dims.back() != 1 || dims[dims.size() - 2] != 1))
        r.fail(std::string(role) + " has " + std::to_string(c) + " values that ONNX repeats over the image's " +
               "rows, not its pixels (give it the shape (C, 1, 1))");
      if (count == 1) v.assign(static_cast<size_t>(c), v[0]);
      if (count == c * hw && hw > 1) {
        std::vector<float> first(static_cast<size_t>(c));
        for (int64_t ch = 0; ch < c; ++ch) {
          first[static_cast<size_t>(ch)] = v[static_cast<size_t>(hwc ? ch : ch * hw)];
          for (int64_t p = 0; p < hw; ++p)
            if (v[static_cast<size_t>(hwc ? p * c + ch : ch * hw + p)] != first[static_cast<size_t>(ch)])
              r.fail(std::string(role) + " varies over height and width; layerNormalization has one per channel");
        }
        v = first;
      }
      if (static_cast<int64_t>(v.size()) != c)
        r.fail(std::string(role) + " has " + std::to_string(count) + " values for " + std::to_string(c) + " channels");
      return v;
    };
    std::vector<float> scale = per_channel(1, "scale");
    std::vector<float> bias = r.has_input(2) ? per_channel(2, "bias") : std::vector<float>(static_cast<size_t>(c), 0.f);
    LayerSpec& s = r.add_layer("layerNormalization", {in.name});
    s.set("Epsilon", onnx_number(r.attr_float("epsilon", 1e-5f)));
    s.set("OperationDimension", channel_only ? "channel-only" : "spatial-channel");
    const std::string name = s.name;
    r.add_param(name, "Scale", Shape{c}, std::move(scale));
    r.add_param(name, "Offset", Shape{c}, std::move(bias));
    OnnxValue out = in;
    out.name = name;
    r.set_output(out);
  }

 private:
  double epsilon_;
  bool channel_only_ = false;
  bool auto_ = false;  // OperationDimension auto: decided by the input's format in infer()
  Param scale_, offset_;
  Shape shape_;  // per image (H, W, C)
  std::unique_ptr<LayerNormOp> op_;
  Tensor mean_, var_;  // (rows) statistics of the last training forward
  Tensor scratch_dx_;  // dx when the input needs no gradient
};

}  // namespace

const LayerType& layer_normalization_layer_type() {
  static const LayerType t{
      "layerNormalization",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<LayerNormLayer>(s); },
      {"LayerNormalization"},
      LayerNormLayer::from_onnx};
  return t;
}

}  // namespace dlt

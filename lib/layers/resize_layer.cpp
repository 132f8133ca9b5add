// resize2d (MATLAB's resize2dLayer): an image resized by Scale (a scalar or [height width]; the
// output is floor(input size x scale)) or to OutputSize ([height width]), by Method "nearest"
// (the default), "bilinear" or "bicubic" (dltrain's: MATLAB's layer has the first two), with
// GeometricTransformMode "half-pixel" (the default), "asymmetric" or "align-corners" (dltrain's:
// PyTorch's align_corners=True) and, for nearest, NearestRoundingMode "round" (the default) or "floor"
// (backend/resize_op.h has the arithmetic). PyTorch's interpolate(mode="nearest") is nearest,
// asymmetric, floor; mode="bilinear" (align_corners=False) is bilinear, half-pixel;
// mode="nearest-exact" is nearest, half-pixel, round; mode="bicubic" (align_corners=False) is
// bicubic, half-pixel; align_corners=True is align-corners. ONNX: Resize (opset 11 on) both ways,
// refusing what this layer does not compute (antialias, a cubic coefficient other than -0.75, ...) in one line.
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include "backend/resize_op.h"
#include "layers/layer_util.h"

namespace dlt {

namespace {

// Whether a source coordinate of one of the out outputs falls on a half, where ONNX's
// round_prefer_floor (halves down) and the layer's round (halves up) pick different inputs.
bool has_tie(const ResizeDesc& d, int64_t in, int64_t out, double scale) {
  for (int64_t o = 0; o < out; ++o) {
    const double s = d.source(o, in, out, scale);
    if (s > -0.5 && s - std::floor(s) == 0.5) return true;
  }
  return false;
}

// A float32 scale whose product with `in` gives `out` after truncation both in float32 (as
// onnxruntime's kernel computes the output size) and in double (as its shape inference does):
// the layer's scale, moved by a few ulps where needed; 0 where none is that close.
float export_scale(int64_t in, int64_t out, double scale) {
  auto gives = [&](float f) {
    return static_cast<int64_t>(f * static_cast<float>(in)) == out &&
           static_cast<int64_t>(std::floor(static_cast<double>(f) * static_cast<double>(in))) == out;
  };
  const float f = static_cast<float>(scale);
  float up = f, down = f;
  for (int i = 0; i < 16; ++i, up = std::nextafter(up, 2.f * up), down = std::nextafter(down, 0.f)) {
    if (gives(up)) return up;
    if (gives(down)) return down;
  }
  return 0.f;
}

// The layer's Scale for an imported float32 scale s whose output size (in float32) is out: s
// itself where the layer's floor(in x scale) in double gives out too, else the double nearest
// to s that does (s differs from it in the last bits of float32 only).
double import_scale(int64_t in, int64_t out, float s) {
  const double n = static_cast<double>(in);
  double sc = s;
  if (static_cast<int64_t>(std::floor(n * sc)) < out) sc = static_cast<double>(out) / n;
  if (static_cast<int64_t>(std::floor(n * sc)) > out) sc = static_cast<double>(out + 1) / n;
  for (int i = 0; i < 64 && static_cast<int64_t>(std::floor(n * sc)) < out; ++i) sc = std::nextafter(sc, 2 * sc);
  for (int i = 0; i < 64 && static_cast<int64_t>(std::floor(n * sc)) > out; ++i) sc = std::nextafter(sc, 0.0);
  return sc;
}

class ResizeLayer final : public Layer {
 public:
  bool takes(DataFormat f) const override { return f != DataFormat::kSCB; }
  explicit ResizeLayer(const LayerSpec& spec) : Layer(spec) {
    scale_ = spec_.get_doubles("Scale", {});
    size_ = spec_.get_ints("OutputSize", {}, 2, 1);
    if (scale_.empty() == size_.empty())
      throw ConfigError(spec_.where() + "give exactly one of Scale (e.g. Scale: 2, or [2 1.5]) and OutputSize " +
                        "(e.g. OutputSize: [64 64])");
    if (scale_.size() == 1) scale_.push_back(scale_[0]);
    if (scale_.size() > 2)
      throw ConfigError(spec_.where() + "Scale has " + std::to_string(scale_.size()) +
                        " values; give one, or [height width]");
    for (double s : scale_)
      if (!(s > 0) || !std::isfinite(s) || s > 1e6)
        throw ConfigError(spec_.where() + "Scale " + std::to_string(s) + " is not a positive factor");
    const std::string method = spec_.get_choice("Method", "nearest", {"nearest", "bilinear", "bicubic"});
    d_.bilinear = method == "bilinear";
    d_.bicubic = method == "bicubic";
    const std::string mode =
        spec_.get_choice("GeometricTransformMode", "half-pixel", {"half-pixel", "asymmetric", "align-corners"});
    d_.half_pixel = mode == "half-pixel";
    d_.align_corners = mode == "align-corners";
    d_.floor = spec_.get_choice("NearestRoundingMode", "round", {"round", "floor"}) == "floor";
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    d_.h = inputs[0][0];
    d_.w = inputs[0][1];
    d_.c = inputs[0][2];
    if (!size_.empty()) {
      d_.oh = size_[0];
      d_.ow = size_[1];
      d_.scale_h = static_cast<double>(d_.oh) / static_cast<double>(d_.h);
      d_.scale_w = static_cast<double>(d_.ow) / static_cast<double>(d_.w);
    } else {
      d_.scale_h = scale_[0];
      d_.scale_w = scale_[1];
      d_.oh = static_cast<int64_t>(std::floor(static_cast<double>(d_.h) * d_.scale_h));
      d_.ow = static_cast<int64_t>(std::floor(static_cast<double>(d_.w) * d_.scale_w));
    }
    if (d_.oh < 1 || d_.ow < 1 || d_.oh > kMaxSide || d_.ow > kMaxSide)
      shape_error(spec_, "input is " + inputs[0].str() + " and the output would be " + std::to_string(d_.oh) + "x" +
                             std::to_string(d_.ow) + " pixels (1 to " + std::to_string(kMaxSide) + " each way)");
    return Shape{d_.oh, d_.ow, d_.c};
  }
  void setup(int64_t n, Backend& be) override {
    d_.n = n;
    op_ = be.make(d_);
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override { op_->forward(*x[0], y); }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->backward(dy, *dx[0]);
  }
  int64_t flops_per_image() const override { return (d_.bicubic ? 48 : d_.bilinear ? 11 : 0) * d_.oh * d_.ow * d_.c; }

  // Resize (opset 11 on). Scale: a scales input of the layer's scales (in float32; ONNX's
  // coordinates use the scale given). OutputSize: a sizes input, the batch and channels of
  // Shape(x) and the output size (ONNX's coordinates then use output / input, as the layer's).
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const OnnxValue x = g.image(n, inputs.at(0));
    std::vector<std::string> in = {x.name, ""};
    if (!size_.empty()) {
      g.add_node("Shape", n + "_shape", {x.name}, n + "_shape");
      const std::string from = g.add_ints(n + "_from", {1}, {0}), to = g.add_ints(n + "_to", {1}, {2});
      g.add_node("Slice", n + "_batch_channels", {n + "_shape", from, to}, n + "_batch_channels");
      const std::string hw = g.add_ints(n + "_size", {2}, {d_.oh, d_.ow});
      g.add_node("Concat", n + "_sizes", {n + "_batch_channels", hw}, n + "_sizes", {OnnxAttr("axis", int64_t{0})});
      in.push_back("");
      in.push_back(n + "_sizes");
    } else {
      const float sh = export_scale(d_.h, d_.oh, d_.scale_h), sw = export_scale(d_.w, d_.ow, d_.scale_w);
      if (sh == 0.f || sw == 0.f)
        throw ModelError(g.path() + ": layer '" + n + "' (resize2d): no float32 Scale near [" +
                         std::to_string(d_.scale_h) + " " + std::to_string(d_.scale_w) + "] gives its " +
                         std::to_string(d_.oh) + "x" + std::to_string(d_.ow) + " output in ONNX (give OutputSize)");
      in.push_back(g.add_floats(n + "_scales", {4}, {1.f, 1.f, sh, sw}));
    }
    std::vector<OnnxAttr> attrs = {
        OnnxAttr("mode", std::string(d_.bicubic    ? "cubic"
                                     : d_.bilinear ? "linear"
                                                   : "nearest")),
        OnnxAttr("coordinate_transformation_mode", std::string(d_.align_corners ? "align_corners"
                                                               : d_.half_pixel  ? "half_pixel"
                                                                                : "asymmetric"))};
    if (d_.bicubic) attrs.push_back(OnnxAttr("cubic_coeff_a", static_cast<float>(ResizeDesc::kCubicA)));
    if (!d_.bilinear && !d_.bicubic)
      attrs.push_back(OnnxAttr("nearest_mode", std::string(d_.floor ? "floor" : "round_prefer_ceil")));
    g.add_node("Resize", n, in, n, attrs);
    return OnnxValue{n, out, false};
  }

  static void from_onnx(OnnxNodeReader& r) {
    const OnnxValue in = r.input(0);
    r.need_image(in);
    if (r.opset() < 11) r.fail("Resize before opset 11 is not supported (export at opset 11 or later)");
    const std::string mode = r.attr_string("mode", "nearest");
    if (mode != "nearest" && mode != "linear" && mode != "cubic")
      r.fail("mode '" + mode +
             "' is not supported (nearest, linear and cubic: resize2d's Method nearest, bilinear and bicubic)");
    if (mode == "cubic" && std::fabs(r.attr_float("cubic_coeff_a", -0.75f) + 0.75f) > 1e-6f)
      r.fail("cubic_coeff_a " + std::to_string(r.attr_float("cubic_coeff_a", -0.75f)) +
             " is not supported (dltrain's bicubic is PyTorch's and ONNX's default, -0.75)");
    std::string ctm = r.attr_string("coordinate_transformation_mode", "half_pixel");
    const std::string nearest = r.attr_string("nearest_mode", "round_prefer_floor");
    if (r.attr_int("exclude_outside", 0) != 0) r.fail("exclude_outside 1 is not supported");
    if (r.attr_int("antialias", 0) != 0) r.fail("antialias 1 is not supported");
    if (!r.attr_ints("axes", {}).empty()) r.fail("the axes attribute is not supported (give all four dimensions)");
    if (r.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch")
      r.fail("keep_aspect_ratio_policy other than stretch is not supported");
    const int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2];
    ResizeDesc d;
    d.h = h, d.w = w, d.c = c;
    d.bilinear = mode == "linear";
    d.bicubic = mode == "cubic";
    bool by_size = false;
    if (r.has_input(2) && !r.dims(2, "scales").empty() && r.dims(2, "scales")[0] > 0) {
      const std::vector<float> s = r.floats(2, "scales");
      if (s.size() != 4 || s[0] != 1.f || s[1] != 1.f || !(s[2] > 0) || !(s[3] > 0) || !(s[2] <= 1e6f) ||
          !(s[3] <= 1e6f))
        r.fail("scales must be [1, 1, height, width] with factors in (0, 1e6] (only the image is resized)");
      d.oh = static_cast<int64_t>(static_cast<float>(h) * s[2]);
      d.ow = static_cast<int64_t>(static_cast<float>(w) * s[3]);
      d.scale_h = import_scale(h, d.oh, s[2]);
      d.scale_w = import_scale(w, d.ow, s[3]);
    } else if (r.has_input(3)) {
      const std::vector<int64_t> s = r.ints(3, "sizes");
      // (sizes[0] is the batch, whatever it reads: a fixed one, or the symbolic one of Shape(x).)
      if (s.size() != 4 || s[1] != c)
        r.fail("sizes must be [batch, " + std::to_string(c) + ", height, width] (only the image is resized)");
      d.oh = s[2], d.ow = s[3];
      d.scale_h = static_cast<double>(d.oh) / static_cast<double>(h);
      d.scale_w = static_cast<double>(d.ow) / static_cast<double>(w);
      by_size = true;
    } else {
      r.fail("has neither scales nor sizes");
    }
    if (d.oh < 1 || d.ow < 1 || d.oh > kMaxSide || d.ow > kMaxSide)
      r.fail("resizes " + std::to_string(h) + "x" + std::to_string(w) + " to " + std::to_string(d.oh) + "x" +
             std::to_string(d.ow) + " pixels (1 to " + std::to_string(kMaxSide) + " each way)");
    // pytorch_half_pixel is half_pixel where the output has more than one pixel.
    if (ctm == "pytorch_half_pixel" && d.oh > 1 && d.ow > 1) ctm = "half_pixel";
    if (ctm != "half_pixel" && ctm != "asymmetric" && ctm != "align_corners")
      r.fail("coordinate_transformation_mode '" + ctm +
             "' is not supported (half_pixel, asymmetric and align_corners: resize2d's GeometricTransformMode)");
    d.half_pixel = ctm == "half_pixel";
    d.align_corners = ctm == "align_corners";
    if (!d.bilinear && !d.bicubic) {
      if (nearest == "floor") {
        d.floor = true;
      } else if (nearest == "round_prefer_floor") {
        if (has_tie(d, h, d.oh, d.scale_h) || has_tie(d, w, d.ow, d.scale_w))
          r.fail(
              "nearest_mode round_prefer_floor rounds source coordinates that fall on a half down; dltrain "
              "rounds them up (round_prefer_ceil, MATLAB's round)");
      } else if (nearest != "round_prefer_ceil") {
        r.fail("nearest_mode '" + nearest + "' is not supported (floor, round_prefer_ceil)");
      }
    }
    LayerSpec& s = r.add_layer("resize2d", {in.name});
    if (by_size) {
      set_list(s, "OutputSize", {d.oh, d.ow});
    } else {
      SpecValue v;
      v.is_list = true;
      for (double f : {d.scale_h, d.scale_w}) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", f);
        v.items.push_back(buf);
      }
      s.options["Scale"] = v;
    }
    s.set("Method", d.bicubic ? "bicubic" : d.bilinear ? "bilinear" : "nearest");
    s.set("GeometricTransformMode", d.align_corners ? "align-corners" : d.half_pixel ? "half-pixel" : "asymmetric");
    if (!d.bilinear && !d.bicubic) s.set("NearestRoundingMode", d.floor ? "floor" : "round");
    r.set_output(OnnxValue{s.name, Shape{d.oh, d.ow, c}, false});
  }

 private:
  static constexpr int64_t kMaxSide = int64_t(1) << 20;
  std::vector<double> scale_;
  std::vector<int64_t> size_;
  ResizeDesc d_;
  std::unique_ptr<ResizeOp> op_;
};

}  // namespace

const LayerType& resize2d_layer_type() {
  static const LayerType t{
      "resize2d",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<ResizeLayer>(s); },
      {"Resize"},
      ResizeLayer::from_onnx};
  return t;
}

}  // namespace dlt
